use super::*;
use crate::ship::decide::tests::{assert_out_of_queue, names, octocat, shippable_with_pr, World};
use crate::ship::train::FailingTest;
use crate::ship::{on_ship_request, on_story_pr_merged, ShipVia};

fn sha(c: char) -> CommitSha {
    crate::ids::sha(&c.to_string().repeat(40))
}

fn queued(w: &World) -> StoryRecord {
    on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Api), &w.ctx()).record
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

fn batch() -> Vec<BatchStory> {
    [
        ("file:s", 1, Some(9)),
        ("file:t", 3, Some(10)),
        ("file:u", 5, None),
    ]
    .into_iter()
    .map(|(story, issue, pr)| BatchStory {
        story: StoryId::new(story),
        issue: IssueNumber::new(issue),
        pr: pr.map(IssueNumber::new),
    })
    .collect()
}

fn landing(first: bool) -> (CommitSha, CommitSha, bool) {
    (sha('c'), sha('d'), first)
}

#[test]
fn a_story_of_a_proven_car_lands_like_a_proven_story_and_only_the_first_asks_the_fast_forward() {
    let w = World::new();
    let record = queued(&w);
    let (base, commit, _) = landing(true);
    let car = |first| CarLanding {
        car: CarId(4),
        base: &base,
        commit: &commit,
        first,
    };
    let first = on_car_landing(&record, car(true), &w.ctx());
    assert_eq!(first.record.state, ShipState::Shipping);
    let proof = first.record.proof.clone().expect("a proof at the car");
    assert_eq!(
        (proof.base, proof.commit),
        (base.clone(), Some(commit.clone()))
    );
    assert_eq!(
        names(&first.effects),
        ["open_check_run", "update_check_run", "land_ship_commit"]
    );
    let Some(Effect::LandShipCommit {
        car: Some(id),
        commit: at,
        branch,
        ..
    }) = first.effects.last()
    else {
        panic!("{:?}", first.effects);
    };
    assert_eq!((*id, at, branch.as_str()), (CarId(4), &commit, "main"));
    let other = on_car_landing(&record, car(false), &w.ctx());
    assert_eq!(other.record.state, ShipState::Shipping);
    assert!(other.effects.is_empty(), "one fast-forward per car");
    // The story PR merged by the fast-forward: landed at the car's commit.
    let merged = on_story_pr_merged(&other.record, None, &w.ctx());
    assert_eq!(merged.record.landed, Some(commit));
    assert_eq!(merged.record.landed_at_ms, Some(1_000));
}

#[test]
fn each_story_pr_is_told_its_batch_and_whether_its_tree_was_proven_before() {
    let w = World::new();
    let (base, commit, _) = landing(false);
    let car = CarLanding {
        car: CarId(4),
        base: &base,
        commit: &commit,
        first: false,
    };
    let shipping = on_car_landing(&queued(&w), car, &w.ctx()).record;
    let proven = on_car_landed(&shipping, (CarId(4), false), &batch(), &w.ctx());
    assert_eq!(names(&proven.effects), ["post_comment"]);
    insta::assert_snapshot!(comment(&proven.effects), @"**Landed in ship batch 4** (with 3 stories: #1 (PR #9), #3 (PR #10), #5). `main` was fast-forwarded to `ddddddd`, the batch's commit. Its gates passed on exactly that commit.");
    let reused = on_car_landed(&shipping, (CarId(4), true), &batch()[..1], &w.ctx());
    insta::assert_snapshot!(comment(&reused.effects), @"**Landed in ship batch 4** (on its own). `main` was fast-forwarded to `ddddddd`, the batch's commit. Its tree had already been proven green with the same gates, so no new proof run was needed.");
}

#[test]
fn a_landing_refused_because_main_moved_puts_the_story_back_in_the_train() {
    let w = World::new();
    let (base, commit, _) = landing(true);
    let car = CarLanding {
        car: CarId(4),
        base: &base,
        commit: &commit,
        first: true,
    };
    let shipping = on_car_landing(&queued(&w), car, &w.ctx()).record;
    let undone = on_car_land_undone(&shipping);
    assert_eq!(undone.record.state, ShipState::Queued);
    assert!(undone.effects.is_empty());
    // Told twice: the second does nothing.
    assert_eq!(on_car_land_undone(&undone.record).record, undone.record);
}

#[test]
fn a_refused_story_gets_todays_report_with_the_batch_it_was_tried_in() {
    let w = World::new();
    let failing = vec![FailingTest {
        name: "`ship/check/test` (test): FAILED test_story".into(),
        file: None,
        case: None,
    }];
    let why = Refusal::Failed {
        failing,
        base: sha('c'),
        commit: sha('d'),
        batch: batch().into_iter().map(|s| s.story).collect(),
    };
    let d = on_train_refused(&queued(&w), &why, &batch(), &w.ctx());
    assert_out_of_queue(&d);
    insta::assert_snapshot!(comment(&d.effects), @r"
        **Not shipped: the story does not pass on the current base.** Nothing landed and the `ship` label was removed.

        - the story at `bbbbbbb` fails on the merge with base `ccccccc` (tested at `ddddddd`): `ship/check/test` (test): FAILED test_story

        The story's branch todo says what failed; ship again once it is fixed.

        It was tried in a ship batch of 3 stories with #3 (PR #10), #5; the failure was narrowed down to this story, and the others go on without it.
    ");
    // Proven on its own: no batch to name.
    let alone = on_train_refused(&queued(&w), &why, &batch()[..1], &w.ctx());
    assert!(!comment(&alone.effects).contains("batch"));
    let conflict = Refusal::Conflict { base: sha('c') };
    let d = on_train_refused(&queued(&w), &conflict, &[], &w.ctx());
    insta::assert_snapshot!(comment(&d.effects), @r"
        **Not shipped: the story does not pass on the current base.** Nothing landed and the `ship` label was removed.

        - the story at `bbbbbbb` fails with base `ccccccc`: it does not merge cleanly with the default branch

        The story's branch todo says what failed; ship again once it is fixed.
    ");
}

#[test]
fn a_story_github_refused_to_merge_into_a_batch_is_told_the_permission_as_a_landing_is() {
    let w = World::new();
    let why = Refusal::Rules {
        message: "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission".into(),
    };
    let d = on_train_refused(&queued(&w), &why, &[], &w.ctx());
    assert_out_of_queue(&d);
    insta::assert_snapshot!(comment(&d.effects), @r"
    **Not shipped: GitHub does not let taskgate change the story's workflow files.** Nothing landed and the `ship` label was removed.

    - the story changes `.github/workflows/ci.yml`, and taskgate's installation lacks the `workflows` permission.

    GitHub said: refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission

    To let taskgate land this story:
    - grant the taskgate App the `Workflows: Read and write` repository permission and accept it on the installation ([GitHub's docs](https://docs.github.com/en/apps/maintaining-github-apps/modifying-a-github-app-registration#changing-the-permissions-of-a-github-app)).

    Then ship again.
    ");
}

#[test]
fn a_cars_proof_run_is_counted_on_its_first_story_and_changes_nothing_else() {
    let w = World::new();
    let before = queued(&w);
    let d = on_car_proof_started(&before);
    assert_eq!(d.record.proof_runs, before.proof_runs + 1);
    assert_eq!(d.record.state, before.state);
    assert!(d.effects.is_empty());
}
