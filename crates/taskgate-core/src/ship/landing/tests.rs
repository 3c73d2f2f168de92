use super::*;
use crate::effect::Effect;
use crate::ship::decide::tests::{assert_out_of_queue, head, landing as shipping, names, World};
use crate::ship::rules::{BranchRule, BranchRules, Bypass, RuleKind};
use crate::ship::{on_ship_request, start_proof, ShipVia};

fn comment_on(effects: &[Effect], number: u64) -> String {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::PostComment { issue, body, .. } if issue.get() == number => Some(body.clone()),
            _ => None,
        })
        .expect("a comment")
}

#[test]
fn a_refused_landing_is_said_once_on_the_story_pr_with_the_rule_and_the_setting() {
    let w = World::new();
    let record = shipping(&w);
    let message =
        "Repository rule violations found\n\nRequired status check \"ci\" is expected.\n\n";
    let found = crate::ship::violations(message);
    let d = on_land_refused(&record, 1, &found, (message, None), &w.ctx());
    // The story head's gate, written before, turns red.
    assert_out_of_queue(&d);
    let Effect::LabelIssue { remove, .. } = &d.effects[0] else {
        unreachable!()
    };
    assert_eq!(remove, &["ship".to_owned()]);
    insta::assert_snapshot!(comment_on(&d.effects, 9), @r#"
    **Not shipped: the rules of `main` refused taskgate.** Nothing landed and the `ship` label was removed.

    - `main` requires a check that has not passed: Required status check "ci" is expected.

    GitHub said: Repository rule violations found Required status check "ci" is expected.

    To let taskgate land this story:
    - make `ci` run and pass on the story PR's head, or take it out of the required checks of `main` ([GitHub's docs](https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-protected-branches/about-protected-branches#require-status-checks-before-merging)).

    Then ship again.
    "#);
    // The gate says why until the story moves on.
    assert_eq!(
        d.record.land_refused.as_ref().map(|r| r.lines.clone()),
        Some(vec![
            "`main` requires a check that has not passed: Required status check \"ci\" is expected."
                .to_owned()
        ])
    );
    // The same refusal told twice is said once.
    let again = on_land_refused(&d.record, 1, &found, (message, None), &w.ctx());
    assert!(again.effects.is_empty(), "{:?}", again.effects);
}

#[test]
fn a_merge_queue_that_would_not_wait_for_the_gate_refuses_the_ship_before_any_proof() {
    let w = World::new();
    let queued = on_ship_request(
        &crate::ship::decide::tests::shippable_with_pr(&w),
        &crate::ship::decide::tests::octocat(ShipVia::Label),
        &w.ctx(),
    )
    .record;
    let rules = BranchRules {
        branch: "main".into(),
        classic: false,
        merge_group_unsubscribed: false,
        queue: Default::default(),
        rules: vec![BranchRule {
            rule: RuleKind::MergeQueue,
            ruleset: Some(4),
            bypass: Bypass::Never,
        }],
    };
    let base = crate::ids::sha(&"c".repeat(40));
    let d = start_proof(&queued, (&base, &head()), &rules, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    assert!(!names(&d.effects).contains(&"prepare_ship_commit"));
    insta::assert_snapshot!(comment_on(&d.effects, 9), @r"
    **Not shipped: the rules of `main` refused taskgate.** Nothing landed and the `ship` label was removed.

    - `main` takes changes through GitHub's merge queue, which does not require `taskgate/ship-gate`: it would land merge groups without waiting for taskgate's proof.

    To let taskgate land this story:
    - add `taskgate/ship-gate` to the required status checks of `main`, so the merge queue waits for taskgate's proof of each merge group ([GitHub's docs](https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue)).

    Then ship again.
    ");
}

#[test]
fn a_merge_queue_of_a_method_taskgate_cannot_judge_is_refused_with_the_setting_to_change() {
    let w = World::new();
    let queued = on_ship_request(
        &crate::ship::decide::tests::shippable_with_pr(&w),
        &crate::ship::decide::tests::octocat(ShipVia::Label),
        &w.ctx(),
    )
    .record;
    let mut rules = BranchRules {
        rules: vec![
            BranchRule {
                rule: RuleKind::MergeQueue,
                ruleset: Some(4),
                bypass: Bypass::Never,
            },
            BranchRule {
                rule: RuleKind::RequiredChecks {
                    contexts: vec![crate::ship::SHIP_GATE.into()],
                },
                ruleset: Some(4),
                bypass: Bypass::Never,
            },
        ],
        ..BranchRules::none("main")
    };
    rules.queue.method = crate::ship::QueueMethod::parse("FAST_FORWARD");
    let base = crate::ids::sha(&"c".repeat(40));
    let d = start_proof(&queued, (&base, &head()), &rules, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    assert!(
        !names(&d.effects).contains(&"land_ship_commit"),
        "nothing enqueued"
    );
    insta::assert_snapshot!(comment_on(&d.effects, 9), @r"
        **Not shipped: taskgate cannot ship through the merge queue of `main`.** Nothing landed and the `ship` label was removed.

        - `main` takes changes through GitHub's merge queue, whose merge method `FAST_FORWARD` taskgate cannot judge: it could not tell whether a merge group holds exactly the shipped story.

        To let taskgate land this story:
        - set the merge method of the merge queue rule on `main` to merge, squash or rebase ([GitHub's docs](https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue)).

        Then ship again.
        ");
}

#[test]
fn a_landing_that_fails_otherwise_takes_the_story_out_of_the_queue_with_a_report() {
    let w = World::new();
    let record = shipping(&w);
    let d = on_land_failed(&record, 1, "gave up after 8 failed attempts: 502", &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    assert!(names(&d.effects).contains(&"advance_ship_queue"));
    insta::assert_snapshot!(comment_on(&d.effects, 9), @"**Not shipped: landing on `main` failed.** GitHub answered: gave up after 8 failed attempts: 502. The story left the ship queue and the `ship` label was removed; ship again to retry.");
    let stale = on_land_failed(&d.record, 1, "again", &w.ctx());
    assert!(stale.effects.is_empty());
}

#[test]
fn a_workflow_change_without_the_permission_names_the_file_and_the_permission() {
    let w = World::new();
    let record = shipping(&w);
    let message = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";
    let found = crate::ship::violations(message);
    let d = on_land_refused(&record, 1, &found, (message, None), &w.ctx());
    let note = comment_on(&d.effects, 9);
    assert!(
        note.contains("the story changes `.github/workflows/ci.yml`, and taskgate's installation lacks the `workflows` permission"),
        "{note}"
    );
    assert!(note.contains("`Workflows: Read and write`"), "{note}");
}

/// A story proven to land through its story PR (the rules ask for one).
fn landing_through_pr(w: &World) -> StoryRecord {
    use crate::ship::decide::tests::{octocat, shippable_with_pr};
    let queued = on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Label), &w.ctx()).record;
    let base = crate::ids::sha(&"c".repeat(40));
    let rules = BranchRules {
        branch: "main".into(),
        rules: vec![BranchRule {
            rule: RuleKind::PullRequest {
                approvals: 1,
                methods: vec![],
                review: Default::default(),
            },
            ruleset: Some(1),
            bypass: Bypass::Never,
        }],
        ..BranchRules::default()
    };
    let proving = start_proof(&queued, (&base, &head()), &rules, &w.ctx()).record;
    let merge = crate::ids::sha(&"d".repeat(40));
    let (d, _) =
        crate::ship::on_proof_commit(&proving, 1, &merge, &[base.clone(), head()], &w.ctx());
    crate::ship::on_proof_passed(&d.record, &merge, &w.ctx()).record
}

#[test]
fn a_landing_refused_for_reviews_waits_for_an_approval_says_once_and_lands_with_the_gate_green() {
    let w = World::new();
    let record = landing_through_pr(&w);
    let message = "Repository rule violations found\n\nAt least 1 approving review is required by reviewers with write access.\n\nWaiting on code owner review from alice.\n\n";
    let found = crate::ship::violations(message);
    let facts = ApprovalFacts {
        reviews: vec![],
        codeowners: Some("* @global\n/src/ @alice\n".into()),
        paths: vec!["src/a.rs".into(), "README.md".into()],
        team_members: vec![],
    };
    let d = on_land_refused(&record, 1, &found, (message, Some(&facts)), &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    let wait = d.record.awaiting.clone().expect("waits for approvals");
    assert_eq!(wait.shipper.login, "octocat");
    insta::assert_snapshot!(comment_on(&d.effects, 9));
    let gate = d.record.gate.clone().expect("the gate");
    assert!(!gate.green);
    // An approval ships it again as its shipper; refused again on the
    // same head, nothing more is said (the gate still says why).
    let by = crate::ship::on_story_approved(&d.record).expect("ships again");
    let again = on_ship_request(&d.record, &by, &w.ctx());
    assert!(again.accepted, "{}", again.outcome);
    let proving = start_proof(
        &again.record,
        (&crate::ids::sha(&"c".repeat(40)), &head()),
        &record_rules(),
        &w.ctx(),
    )
    .record;
    let merge = crate::ids::sha(&"d".repeat(40));
    let (p, _) = crate::ship::on_proof_commit(
        &proving,
        1,
        &merge,
        &[crate::ids::sha(&"c".repeat(40)), head()],
        &w.ctx(),
    );
    let passed = crate::ship::on_proof_passed(&p.record, &merge, &w.ctx());
    // The gate on the story PR's head is green again before it lands.
    assert!(passed.record.gate.as_ref().is_some_and(|g| g.green));
    assert!(passed
        .effects
        .iter()
        .any(|e| matches!(e, Effect::UpdateCheckRun { update, .. } if update.conclusion == Some(crate::effect::CheckConclusion::Success))));
    let refused = on_land_refused(&passed.record, 1, &found, (message, Some(&facts)), &w.ctx());
    assert!(
        !names(&refused.effects).contains(&"post_comment"),
        "said once: {:?}",
        names(&refused.effects)
    );
    assert!(refused.record.awaiting.is_some());
}

fn record_rules() -> BranchRules {
    BranchRules {
        branch: "main".into(),
        classic: true,
        ..BranchRules::default()
    }
}

#[test]
fn an_approval_of_a_story_not_waiting_or_moved_on_ships_nothing() {
    let w = World::new();
    let record = crate::ship::decide::tests::shippable_with_pr(&w);
    assert!(crate::ship::on_story_approved(&record).is_err());
}
