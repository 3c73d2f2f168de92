use super::*;
use crate::ship::decide::tests::{landing, names, World};
use crate::ship::on_story_pr_merged;

fn sha(c: char) -> CommitSha {
    crate::ids::sha(&c.to_string().repeat(40))
}

/// A story that landed as `dddd…` and was deployed.
fn landed(w: &World) -> StoryRecord {
    let d = on_story_pr_merged(&landing(w), None, &w.ctx());
    assert_eq!(d.record.landed, Some(sha('d')), "the tested commit is kept");
    d.record
}

fn ask(now: Option<&str>) -> RollbackAsk {
    RollbackAsk {
        by: None,
        because: "post-deploy validation run 7 failed".into(),
        now: now.map(str::to_owned),
    }
}

#[test]
fn a_rollback_builds_a_revert_of_the_landed_commit() {
    let w = World::new();
    let d = start_rollback(&landed(&w), ask(None), &w.ctx()).unwrap();
    let r = d.record.rollback.clone().unwrap();
    assert_eq!(
        (r.state, r.round, &r.reverts),
        (RollbackState::Preparing, 1, &sha('d'))
    );
    assert_eq!(names(&d.effects), ["post_comment", "prepare_revert"]);
    let Some(Effect::PrepareRevert {
        branch,
        onto,
        reverts,
        ..
    }) = d.effects.last()
    else {
        unreachable!()
    };
    assert_eq!(
        (branch.as_str(), onto.as_str(), reverts),
        ("taskgate/revert-1", "main", &sha('d'))
    );
    // Twice: refused, the first one is under way.
    let again = start_rollback(&d.record, ask(None), &w.ctx());
    assert_eq!(
        again.unwrap_err().to_string(),
        "the story is being rolled back already"
    );
}

#[test]
fn a_story_taskgate_did_not_land_cannot_be_rolled_back() {
    let w = World::new();
    let never = StoryRecord::default();
    assert!(start_rollback(&never, ask(None), &w.ctx())
        .unwrap_err()
        .to_string()
        .contains("did not land this story"));
}

#[test]
fn the_revert_is_proven_when_there_are_gates_and_lands_at_once_otherwise() {
    let w = World::new();
    let preparing = start_rollback(&landed(&w), ask(None), &w.ctx())
        .unwrap()
        .record;
    let (d, step) = on_revert_commit(&preparing, 1, &sha('r'), true, &w.ctx());
    assert_eq!(step, ProofStep::Run(sha('r')));
    assert_eq!(names(&d.effects), ["create_pull_request"]);
    assert_eq!(
        d.record.rollback.as_ref().unwrap().state,
        RollbackState::Proving
    );
    let passed = on_revert_passed(&d.record, &sha('r'), &w.ctx());
    assert_eq!(names(&passed.effects), ["land_ship_commit"]);
    let Some(Effect::LandShipCommit { revert, commit, .. }) = passed.effects.last() else {
        unreachable!()
    };
    assert!(*revert && *commit == sha('r'));

    // No gates configured: it lands as soon as it is made.
    let (d, step) = on_revert_commit(&preparing, 1, &sha('r'), false, &w.ctx());
    assert_eq!(step, ProofStep::None);
    assert_eq!(
        names(&d.effects),
        ["create_pull_request", "land_ship_commit"]
    );
}

#[test]
fn now_lands_without_the_gates() {
    let w = World::new();
    let preparing = start_rollback(&landed(&w), ask(Some("prod is down")), &w.ctx())
        .unwrap()
        .record;
    let (d, step) = on_revert_commit(&preparing, 1, &sha('r'), true, &w.ctx());
    assert_eq!(step, ProofStep::None);
    assert_eq!(
        names(&d.effects),
        ["create_pull_request", "land_ship_commit"]
    );
    let Some(Effect::CreatePullRequest { body, title, .. }) = d.effects.first() else {
        unreachable!()
    };
    insta::assert_snapshot!(format!("{title}\n{body}"), @r"
    Revert The story
    Rolls story #1 (PR #9) back: this reverts `ddddddd`, the commit it landed as, because post-deploy validation run 7 failed.

    Opened by taskgate. A maintainer asked for it to land at once (`--now`: prod is down).
    ");
}

#[test]
fn a_failed_revert_or_a_base_that_keeps_moving_lands_nothing() {
    let w = World::new();
    let preparing = start_rollback(&landed(&w), ask(None), &w.ctx())
        .unwrap()
        .record;
    let (proving, _) = on_revert_commit(&preparing, 1, &sha('r'), true, &w.ctx());
    let failed = on_revert_failed(&proving.record, 1, "Its gates failed", &w.ctx());
    assert_eq!(
        failed.record.rollback.as_ref().unwrap().state,
        RollbackState::Refused
    );
    assert_eq!(names(&failed.effects), ["post_comment"]);
    // Refused: a person may ask again.
    assert!(start_rollback(&failed.record, ask(Some("by hand")), &w.ctx()).is_ok());

    let mut landing = on_revert_commit(&preparing, 1, &sha('r'), false, &w.ctx())
        .0
        .record;
    for round in 1..MAX_PROOF_ROUNDS {
        let d = on_revert_base_moved(&landing, round, &w.ctx());
        assert_eq!(names(&d.effects), ["prepare_revert"], "round {round}");
        landing = on_revert_commit(&d.record, round + 1, &sha('s'), false, &w.ctx())
            .0
            .record;
    }
    let d = on_revert_base_moved(&landing, MAX_PROOF_ROUNDS, &w.ctx());
    assert_eq!(d.record.rollback.unwrap().state, RollbackState::Refused);
}

#[test]
fn the_revert_pr_is_labelled_and_its_merge_rolls_the_story_back() {
    let w = World::new();
    let preparing = start_rollback(&landed(&w), ask(None), &w.ctx())
        .unwrap()
        .record;
    let seen = on_revert_pr_seen(&preparing, IssueNumber::new(12), &w.ctx());
    assert_eq!(
        names(&seen.effects),
        ["ensure_label", "ensure_label", "label_issue"]
    );
    let d = on_revert_merged(&seen.record, IssueNumber::new(12), &w.ctx());
    assert_eq!(d.record.state, ShipState::RolledBack);
    assert_eq!(
        d.record.rollback.as_ref().unwrap().state,
        RollbackState::Landed
    );
    assert!(start_rollback(&d.record, ask(None), &w.ctx())
        .unwrap_err()
        .to_string()
        .contains("rolled back already"));
}

#[test]
fn a_failed_validation_also_starts_the_rollback() {
    let w = World::new();
    let deployed = crate::ship::on_deploy_finished(&landed(&w), 5, true, "ok", &w.ctx()).record;
    let d = crate::ship::on_validation_finished(&deployed, 7, false, "smoke failed", &w.ctx());
    assert_eq!(d.record.state, ShipState::NeedsFix);
    assert!(
        names(&d.effects).contains(&"prepare_revert"),
        "{:?}",
        names(&d.effects)
    );
    assert_eq!(
        d.record.rollback.unwrap().ask.because,
        "post-deploy validation run 7 failed"
    );
}

#[test]
fn each_rollback_refusal_says_why_in_one_sentence() {
    let said = [
        RollbackRefusal::UnderWay,
        RollbackRefusal::RolledBack,
        RollbackRefusal::NotLanded,
    ]
    .map(|r| r.to_string());
    insta::assert_snapshot!(said.join("\n"), @r"
    the story is being rolled back already
    the story was rolled back already
    taskgate did not land this story, so there is no landed commit it can revert
    ");
}
