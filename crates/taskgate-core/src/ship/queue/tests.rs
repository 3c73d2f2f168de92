use super::*;
use crate::ship::decide::tests::{
    assert_out_of_queue, head, names, octocat, shippable_with_pr, World,
};
use crate::ship::{on_ship_request, Priority, ShipRefusal, ShipVia, Shipper};

fn sha(c: char) -> CommitSha {
    crate::ids::sha(&c.to_string().repeat(40))
}

fn queued(w: &World) -> StoryRecord {
    on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Label), &w.ctx()).record
}

fn proving(w: &World) -> StoryRecord {
    let d = start_proof(
        &queued(w),
        (&sha('c'), &head()),
        &crate::ship::BranchRules::default(),
        &w.ctx(),
    );
    let (d, step) = on_proof_commit(&d.record, 1, &sha('d'), &[sha('c'), head()], &w.ctx());
    assert_eq!(step, ProofStep::Run(sha('d')));
    d.record
}

fn story(name: &str, state: ShipState, at: i64) -> (StoryId, StoryRecord) {
    let record = StoryRecord {
        state,
        queued_at_ms: Some(at),
        ..StoryRecord::default()
    };
    (StoryId::new(name), record)
}

#[test]
fn the_earliest_queued_story_proves_next_and_only_one_at_a_time() {
    let mut stories = vec![
        story("b", ShipState::Queued, 20),
        story("a", ShipState::Queued, 10),
        story("c", ShipState::Shippable, 5),
    ];
    assert_eq!(
        next_in_queue(&stories, false).map(|s| s.0.as_str()),
        Some("a")
    );
    assert_eq!(
        next_in_queue(&stories, true),
        None,
        "a freeze holds the queue"
    );
    assert_eq!(queue_length(&stories, Priority::Normal), 2);
    stories.push(story("d", ShipState::Proving, 1));
    assert_eq!(next_in_queue(&stories, false), None, "one proves at a time");
    stories.pop();
    stories.push(story("d", ShipState::Shipping, 1));
    assert_eq!(next_in_queue(&stories, false), None, "landing counts too");
}

fn shipped(name: &str, state: ShipState, at: i64, priority: Priority) -> (StoryId, StoryRecord) {
    let (id, mut record) = story(name, state, at);
    record.shipped_by = Some(Shipper {
        priority,
        ..octocat(ShipVia::Command)
    });
    (id, record)
}

#[test]
fn hotfixes_go_first_then_high_then_normal_each_in_arrival_order() {
    let stories = vec![
        shipped("n1", ShipState::Queued, 10, Priority::Normal),
        shipped("h1", ShipState::Queued, 40, Priority::High),
        shipped("n2", ShipState::Queued, 20, Priority::Normal),
        shipped("x1", ShipState::Queued, 50, Priority::Hotfix),
        shipped("h0", ShipState::Queued, 30, Priority::High),
        story("old", ShipState::Queued, 5),
    ];
    let order: Vec<&str> = queue_order(&stories).iter().map(|s| s.0.as_str()).collect();
    assert_eq!(order, ["x1", "h0", "h1", "old", "n1", "n2"]);
    assert_eq!(
        next_in_queue(&stories, false).map(|s| s.0.as_str()),
        Some("x1")
    );
    assert_eq!(queue_length(&stories, Priority::Hotfix), 1);
    assert_eq!(queue_length(&stories, Priority::High), 3);
    assert_eq!(queue_length(&stories, Priority::Normal), 6);
}

#[test]
fn a_proof_under_way_is_not_interrupted_by_a_hotfix() {
    let mut stories = vec![
        shipped("n1", ShipState::Proving, 10, Priority::Normal),
        shipped("x1", ShipState::Queued, 50, Priority::Hotfix),
    ];
    assert_eq!(next_in_queue(&stories, false), None, "the proof finishes");
    let order: Vec<&str> = queue_order(&stories).iter().map(|s| s.0.as_str()).collect();
    assert_eq!(order, ["n1", "x1"], "under way first, the hotfix next");
    assert_eq!(queue_length(&stories, Priority::Hotfix), 2);
    stories[0].1.state = ShipState::Deployed;
    assert_eq!(
        next_in_queue(&stories, false).map(|s| s.0.as_str()),
        Some("x1")
    );
}

#[test]
fn a_priority_is_the_ship_requests_reason_in_the_audit_log() {
    let w = World::new();
    let high = Shipper {
        priority: Priority::High,
        ..octocat(ShipVia::Command)
    };
    let entry = ship_audit(&high, &w.ctx());
    assert_eq!(entry.reason.as_deref(), Some("priority high"));
    assert_eq!(
        ship_audit(&octocat(ShipVia::Command), &w.ctx()).reason,
        None
    );
    let d = on_ship_request(&shippable_with_pr(&w), &high, &w.ctx());
    assert_eq!(
        d.record.shipped_by.map(|b| b.priority),
        Some(Priority::High)
    );
}

#[test]
fn a_record_from_before_priorities_reads_as_normal() {
    let old = r#"{"user":5,"login":"octocat","via":"label"}"#;
    let by: Shipper = serde_json::from_str(old).unwrap();
    assert_eq!(by.priority, Priority::Normal);
}

#[test]
fn its_turn_merges_the_story_with_the_base_on_the_ship_branch() {
    let w = World::new();
    let d = start_proof(
        &queued(&w),
        (&sha('c'), &head()),
        &crate::ship::BranchRules::default(),
        &w.ctx(),
    );
    assert_eq!(d.record.state, ShipState::Proving);
    let proof = d.record.proof.clone().unwrap();
    assert_eq!((proof.round, proof.commit), (1, None));
    let [Effect::PrepareShipCommit {
        branch,
        base,
        head: merged,
        round,
        ..
    }] = d.effects.as_slice()
    else {
        panic!("one prepare effect: {:?}", d.effects);
    };
    assert_eq!(
        (branch.as_str(), base, merged, *round),
        ("taskgate/ship-1", &sha('c'), &head(), 1)
    );
    // Not queued: nothing starts.
    let again = start_proof(
        &d.record,
        (&sha('c'), &head()),
        &crate::ship::BranchRules::default(),
        &w.ctx(),
    );
    assert!(again.effects.is_empty());
}

#[test]
fn a_proving_commit_of_another_round_or_a_second_time_is_ignored() {
    let w = World::new();
    let proving = proving(&w);
    let (d, step) = on_proof_commit(&proving, 1, &sha('e'), &[sha('c'), head()], &w.ctx());
    assert_eq!((d.record, step), (proving.clone(), ProofStep::None));
    let (d, step) = on_proof_commit(&proving, 2, &sha('e'), &[sha('c'), head()], &w.ctx());
    assert_eq!((d.record, step), (proving, ProofStep::None));
}

#[test]
fn a_passing_proof_lands_exactly_the_tested_commit() {
    let w = World::new();
    let d = on_proof_passed(&proving(&w), &sha('d'), &w.ctx());
    assert_eq!(d.record.state, ShipState::Shipping);
    assert_eq!(
        names(&d.effects),
        ["open_check_run", "update_check_run", "land_ship_commit"]
    );
    let Some(Effect::LandShipCommit { branch, commit, .. }) = d.effects.last() else {
        unreachable!()
    };
    assert_eq!((branch.as_str(), commit), ("main", &sha('d')));
    // A verdict on another commit is not this proof's.
    let other = on_proof_passed(&proving(&w), &sha('e'), &w.ctx());
    assert!(other.effects.is_empty());
}

#[test]
fn a_proof_passing_during_a_freeze_waits_at_the_head_of_the_queue() {
    let mut w = World::new();
    let proving = proving(&w);
    w.config.ship_label = "ship".into();
    let ctx = ShipContext {
        frozen: Some("release in progress"),
        ..w.ctx()
    };
    let d = on_proof_passed(&proving, &sha('d'), &ctx);
    assert_eq!(d.record.state, ShipState::Queued);
    assert_eq!(d.record.proof, None, "the next proof starts at round 1");
    assert_eq!(
        d.record.queued_at_ms, proving.queued_at_ms,
        "its place is kept"
    );
    assert_eq!(names(&d.effects), ["post_comment"]);
}

#[test]
fn a_failing_proof_refuses_the_ship_and_keeps_the_gate_red_until_the_story_moves() {
    let w = World::new();
    let failures = vec!["`ship/a/test` (test_failure): test_x: assert 1 == 2".to_owned()];
    let d = on_proof_failed(&proving(&w), Some(&sha('d')), 1, failures, &w.ctx());
    assert_out_of_queue(&d);
    assert_eq!(d.record.proof, None);
    assert_eq!(d.record.queued_at_ms, None);
    let failed = d.record.proof_failed.clone().unwrap();
    assert_eq!((failed.base, failed.commit), (sha('c'), Some(sha('d'))));
    let Some(Effect::UpdateCheckRun { update, .. }) = d.effects.get(2) else {
        unreachable!()
    };
    assert_eq!(update.conclusion.map(|c| c.as_str()), Some("failure"));
    let summary = &update.output.as_ref().unwrap().summary;
    assert!(
        summary.contains("fails on the merge with base `ccccccc`"),
        "{summary}"
    );
    assert!(summary.contains("test_x: assert 1 == 2"), "{summary}");
    // Shipping again re-proves (the base may have been fixed meanwhile).
    let again = on_ship_request(&d.record, &octocat(ShipVia::Command), &w.ctx());
    assert!(again.accepted);
}

#[test]
fn a_story_that_does_not_merge_with_the_base_is_refused() {
    let w = World::new();
    let d = start_proof(
        &queued(&w),
        (&sha('c'), &head()),
        &crate::ship::BranchRules::default(),
        &w.ctx(),
    );
    let why = vec!["it does not merge cleanly; GitHub: Merge conflict".to_owned()];
    let refused = on_proof_failed(&d.record, None, 1, why.clone(), &w.ctx());
    assert_eq!(refused.record.state, ShipState::Shippable);
    assert_eq!(refused.record.proof_failed.unwrap().commit, None);
    // Of an earlier round: ignored.
    let stale = on_proof_failed(&d.record, None, 2, why, &w.ctx());
    assert!(stale.effects.is_empty());
}

#[test]
fn a_base_that_moves_is_proven_again_a_bounded_number_of_times() {
    let w = World::new();
    let mut record = on_proof_passed(&proving(&w), &sha('d'), &w.ctx()).record;
    for round in 1..MAX_PROOF_ROUNDS {
        let d = on_base_moved(&record, round, &w.ctx());
        assert_eq!(d.record.state, ShipState::Queued, "round {round}");
        assert_eq!(names(&d.effects), ["post_comment", "advance_ship_queue"]);
        let d = start_proof(
            &d.record,
            (&sha('e'), &head()),
            &crate::ship::BranchRules::default(),
            &w.ctx(),
        );
        assert_eq!(d.record.proof.as_ref().unwrap().round, round + 1);
        record = on_proof_commit(
            &d.record,
            round + 1,
            &sha('f'),
            &[sha('e'), head()],
            &w.ctx(),
        )
        .0
        .record;
    }
    let d = on_base_moved(&record, MAX_PROOF_ROUNDS, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    let failure = d.record.proof_failed.unwrap();
    assert!(failure.failures[0].contains("moved during each of 3 proofs"));
    // An echo of an earlier round changes nothing.
    let stale = on_base_moved(&record, 1, &w.ctx());
    assert!(stale.effects.is_empty());
}

#[test]
fn a_ship_request_while_frozen_is_refused_with_the_reason() {
    let w = World::new();
    let ctx = ShipContext {
        frozen: Some("frozen by @alice: release"),
        ..w.ctx()
    };
    let d = on_ship_request(&shippable_with_pr(&w), &octocat(ShipVia::Label), &ctx);
    assert_eq!(
        d.refused,
        Some(ShipRefusal::Frozen {
            because: "frozen by @alice: release".into()
        })
    );
    assert_eq!(names(&d.effects), ["label_issue", "post_comment"]);
}

#[test]
fn a_story_pr_merged_by_hand_while_queued_leaves_the_queue() {
    let w = World::new();
    let d = crate::ship::on_story_pr_merged(&queued(&w), None, &w.ctx());
    assert!(d.record.merged_past_gate);
    assert_eq!(d.record.state, ShipState::Shippable);
    assert_eq!(names(&d.effects), ["post_comment", "advance_ship_queue"]);
}
