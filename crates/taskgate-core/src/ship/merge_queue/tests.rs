use super::*;
use crate::ids::IssueNumber;
use crate::ship::decide::tests::{head, names, octocat, shippable_with_pr, World};
use crate::ship::rules::{BranchRule, BranchRules, Bypass, RuleKind};
use crate::ship::{
    on_base_moved, on_proof_failed, on_proof_passed, on_ship_request, on_story_head_moved,
    start_proof, ShipVia, SHIP_GATE,
};

fn queue_rules() -> BranchRules {
    let rule = |rule| BranchRule {
        rule,
        ruleset: Some(4),
        bypass: Bypass::Never,
    };
    BranchRules {
        branch: "main".into(),
        classic: false,
        merge_group_unsubscribed: false,
        queue: Default::default(),
        rules: vec![
            rule(RuleKind::MergeQueue),
            rule(RuleKind::RequiredChecks {
                contexts: vec![SHIP_GATE.into()],
            }),
        ],
    }
}

fn sha(c: char) -> CommitSha {
    crate::ids::sha(&c.to_string().repeat(40))
}

/// Merge group `group` built on `base` (`c` is the branch's head), its
/// tree the one GitHub made merging the shipped head into that base.
fn holding(group: &CommitSha, base: char) -> MergeGroup {
    MergeGroup {
        commit: group.clone(),
        tree: format!("tree of {base} with the story"),
        base: sha(base),
        expected: GroupReference::Tree(format!("tree of {base} with the story")),
        ahead: vec![],
    }
}

/// The title and summary of the last ship gate update in `effects`.
fn gate_summary(effects: &[Effect]) -> String {
    effects
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::UpdateCheckRun { update, .. } => update
                .output
                .as_ref()
                .map(|o| format!("{}\n{}", o.title, o.summary)),
            _ => None,
        })
        .expect("a gate update")
}

/// Shipped, and its PR enqueued at the story head.
fn enqueued(w: &World) -> StoryRecord {
    let queued = on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Label), &w.ctx()).record;
    start_proof(&queued, (&sha('c'), &head()), &queue_rules(), &w.ctx()).record
}

fn comment(effects: &[Effect]) -> String {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::PostComment { body, .. } => Some(body.clone()),
            _ => None,
        })
        .expect("a comment")
}

/// The conclusion of the ship gate written on `sha`, if any.
fn gate_on(effects: &[Effect], sha: &CommitSha) -> Option<String> {
    let key = effects.iter().find_map(|e| match e {
        Effect::OpenCheckRun { key, head_sha, .. } if head_sha == sha => Some(key.clone()),
        _ => None,
    })?;
    effects.iter().find_map(|e| match e {
        Effect::UpdateCheckRun { key: k, update, .. } if *k == key => {
            update.conclusion.map(|c| c.as_str().to_owned())
        }
        _ => None,
    })
}

#[test]
fn a_ship_through_the_merge_queue_proves_nothing_up_front_and_enqueues_the_shipped_head() {
    let w = World::new();
    let queued = on_ship_request(&shippable_with_pr(&w), &octocat(ShipVia::Label), &w.ctx()).record;
    let d = start_proof(&queued, (&sha('c'), &head()), &queue_rules(), &w.ctx());
    assert_eq!(d.record.state, ShipState::Shipping);
    assert_eq!(names(&d.effects), ["post_comment", "land_ship_commit"]);
    let Effect::LandShipCommit {
        pull: Some(pull), ..
    } = &d.effects[1]
    else {
        unreachable!()
    };
    assert!(pull.queue);
    assert_eq!(pull.head, head(), "the head shipped is pinned");
    insta::assert_snapshot!(comment(&d.effects).split("\n\n<!--").next().unwrap(), @"Shipping through GitHub's merge queue: `main` takes changes through it, so taskgate put #9 in the queue at `bbbbbbb` (a later head is not shipped). GitHub merges it with the base in a merge group; the story's gates run on that group's commit, and GitHub lands exactly that commit once `taskgate/ship-gate` passed on it.");
}

#[test]
fn the_merge_group_is_proven_and_its_gate_is_the_landing() {
    let w = World::new();
    let group = sha('9');
    let (d, step) = on_merge_group_checks(&enqueued(&w), &holding(&group, 'c'), &w.ctx());
    assert_eq!(step, ProofStep::Run(group.clone()));
    assert_eq!(d.record.state, ShipState::Proving);
    insta::assert_snapshot!(comment(&d.effects).split("\n\n<!--").next().unwrap(), @"Proving merge group `9999999` of GitHub's merge queue: the story at `bbbbbbb` merged with the base. The story's gates run on it, and `taskgate/ship-gate` reports there.");
    // The base moving is the queue's to handle: no new proof of taskgate's.
    let moved = on_base_moved(&d.record, 1, &w.ctx());
    assert!(moved.effects.is_empty());
    let passed = on_proof_passed(&d.record, &group, &w.ctx());
    assert_eq!(passed.record.state, ShipState::Shipping);
    assert_eq!(gate_on(&passed.effects, &group).as_deref(), Some("success"));
    assert!(
        !names(&passed.effects).contains(&"land_ship_commit"),
        "GitHub lands it, not taskgate"
    );
}

#[test]
fn a_red_merge_group_refuses_the_ship_and_turns_its_gate_red_so_github_dequeues_it() {
    let w = World::new();
    let group = sha('9');
    let (d, _) = on_merge_group_checks(&enqueued(&w), &holding(&group, 'c'), &w.ctx());
    let failed = on_proof_failed(
        &d.record,
        Some(&group),
        1,
        vec!["`t` failed".into()],
        &w.ctx(),
    );
    assert_eq!(failed.record.state, ShipState::Shippable);
    assert_eq!(gate_on(&failed.effects, &group).as_deref(), Some("failure"));
    // GitHub's `destroyed` that follows changes nothing more.
    let after = on_merge_group_destroyed(&failed.record, &group, "dequeued", None, &w.ctx());
    assert!(after.effects.is_empty());
}

#[test]
fn a_group_whose_tree_is_not_the_shipped_head_on_its_base_is_red_and_never_proven() {
    let w = World::new();
    let group = sha('9');
    // A squash of something else, or a rebase that picked up a commit
    // pushed after `ship`: the tree GitHub built differs.
    let other = MergeGroup {
        tree: "a tree with more in it".into(),
        ..holding(&group, 'c')
    };
    let (d, step) = on_merge_group_checks(&enqueued(&w), &other, &w.ctx());
    assert_eq!(step, ProofStep::None);
    assert_eq!(gate_on(&d.effects, &group).as_deref(), Some("failure"));
    assert_eq!(d.record.state, ShipState::Shipping);
    insta::assert_snapshot!(gate_summary(&d.effects), @r"
        Not the story that was shipped
        The merge group `9999999` is not its base `ccccccc` with the shipped story head `bbbbbbb` merged and nothing else: its tree differs.

        taskgate proves a merge group only when its tree is exactly its base with the story head that was shipped merged, so GitHub's merge queue does not land this one.
        ");
    let unjudged = MergeGroup {
        expected: GroupReference::Conflict("Merge conflict".into()),
        ..holding(&group, 'c')
    };
    let (d, step) = on_merge_group_checks(&enqueued(&w), &unjudged, &w.ctx());
    assert_eq!(step, ProofStep::None);
    insta::assert_snapshot!(gate_summary(&d.effects), @r"
        Not the story that was shipped
        The merge group `9999999` could not be checked to hold exactly the story head `bbbbbbb` that was shipped: GitHub could not merge it into the group's base `ccccccc` (Merge conflict).

        taskgate proves a merge group only when its tree is exactly its base with the story head that was shipped merged, so GitHub's merge queue does not land this one.
        ");
}

#[test]
fn a_group_of_any_method_whose_tree_is_the_shipped_head_on_its_base_is_proven_and_names_what_is_ahead(
) {
    let w = World::new();
    let group = sha('9');
    // A squash or a rebase: the parents are not [base, head]; the tree is
    // what is judged.
    let squash = MergeGroup {
        ahead: vec![IssueNumber::new(12), IssueNumber::new(14)],
        ..holding(&group, 'd')
    };
    let (d, step) = on_merge_group_checks(&enqueued(&w), &squash, &w.ctx());
    assert_eq!(step, ProofStep::Run(group.clone()));
    insta::assert_snapshot!(comment(&d.effects).split("\n\n<!--").next().unwrap(), @"Proving merge group `9999999` of GitHub's merge queue: the story at `bbbbbbb` merged with the base and the pull requests ahead of it in the queue (#12, #14: the group's tree holds them too). The story's gates run on it, and `taskgate/ship-gate` reports there.");
    let passed = on_proof_passed(&d.record, &group, &w.ctx());
    assert_eq!(gate_on(&passed.effects, &group).as_deref(), Some("success"));
    insta::assert_snapshot!(gate_summary(&passed.effects), @r"
        Proven on this merge group
        The story of #1 passed its gates on this merge group's commit `9999999`: its tree is the story at `bbbbbbb` merged with the group's base, and nothing else.

        The tree also holds the pull requests ahead of the story in GitHub's merge queue: #12, #14. taskgate does not gate them; the story's gates passed with them in the tree.
        ");
}

#[test]
fn a_dequeued_group_ends_the_ship_and_an_invalidated_one_waits_for_the_next() {
    let w = World::new();
    let group = sha('9');
    let (d, _) = on_merge_group_checks(&enqueued(&w), &holding(&group, 'c'), &w.ctx());
    let invalidated = on_merge_group_destroyed(&d.record, &group, "invalidated", None, &w.ctx());
    assert_eq!(invalidated.record, d.record);
    assert!(invalidated.effects.is_empty());
    let rebuilt = sha('8');
    let (again, step) = on_merge_group_checks(&d.record, &holding(&rebuilt, 'd'), &w.ctx());
    assert_eq!(step, ProofStep::Run(rebuilt.clone()));
    let dequeued =
        on_merge_group_destroyed(&again.record, &rebuilt, "dequeued", Some(&head()), &w.ctx());
    assert_eq!(dequeued.record.state, ShipState::Shippable);
    assert_eq!(
        names(&dequeued.effects),
        [
            "label_issue",
            "post_comment",
            "update_check_run",
            "advance_ship_queue"
        ]
    );
}

#[test]
fn a_dequeue_that_arrives_before_the_push_that_caused_it_says_the_story_changed() {
    let w = World::new();
    let group = sha('9');
    let (d, _) = on_merge_group_checks(&enqueued(&w), &holding(&group, 'c'), &w.ctx());
    let late = sha('7');
    let dequeued = on_merge_group_destroyed(&d.record, &group, "dequeued", Some(&late), &w.ctx());
    assert_eq!(dequeued.record.state, ShipState::Shippable);
    assert_eq!(dequeued.record.head.as_ref(), Some(&late));
    assert!(
        comment(&dequeued.effects).contains("the story changed after `ship`"),
        "{}",
        comment(&dequeued.effects)
    );
    // The push that follows finds the story out already.
    let pushed = on_story_head_moved(&dequeued.record, &late, &w.ctx());
    assert!(pushed.effects.is_empty());
}
