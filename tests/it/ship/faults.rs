//! The ship executor when GitHub's answer is lost (issue 20): the proving
//! merge, the landing fast-forward and the rollback's revert, each retried
//! by the outbox after GitHub applied the request but the answer never
//! came back (`StatusAfterApply`), or after a connection dropped before
//! it was applied (`DropConnection`). A retry finds its own earlier
//! landing and does not do it twice; a proving merge it makes again, since
//! a branch's tip is never adopted (issue 51). And rollback end to end where the core
//! decides: a base that moves while the revert is proven, a revert that
//! conflicts with the default branch as it is now.

use fakehub::Fault;
use taskgate::store::EffectStatus;

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::shipped::Shipped;

const MERGES: &str = "POST /repos/{owner}/{repo}/merges";
const UPDATE_REF: &str = "PATCH /repos/{owner}/{repo}/git/refs/{ref}";
const CREATE_PULL: &str = "POST /repos/{owner}/{repo}/pulls";
const COMPARE: &str = "GET /repos/{owner}/{repo}/compare/{basehead}";

/// Shipped with no deploy workflow: a landed story is `deployed` at once.
/// Through the one-story queue: the faults are injected on its effects
/// (`PrepareShipCommit`, `LandShipCommit`).
const CONFIG: &str = "ship_label: ship\nship_train: false\n";
/// The task's check: passes wherever the story's `check.sh` is.
const CHECK: &str = "exit 0\n";
/// The same, held at `hold` in the proof (where the tree holds
/// `hold-proof`, pushed by [`shipped_held`]), for a test to act while the
/// proof runs.
fn held_check(hold: &Hold) -> String {
    format!("{}exit 0\n", hold.wait_where("hold-proof"))
}

/// Shippable with [`held_check`], `hold-proof` on the default branch, and
/// shipped by the label: its proof waits at `hold`.
async fn shipped_held(hold: &Hold) -> Shipped {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(hold))
        .shippable()
        .await;
    sh.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
    sh.add_ship_label().await;
    sh
}

/// The commits the proof's check (`taskgate/ship/check/test`) ran on.
fn proven_commits(sh: &Shipped) -> Vec<String> {
    sh.repo()
        .check_runs()
        .into_iter()
        .filter(|c| c.name == "taskgate/ship/check/test")
        .map(|c| c.head_sha)
        .collect()
}

/// The answers GitHub gave to the fast-forwards of main.
fn main_moves(sh: &Shipped) -> Vec<u16> {
    sh.s.app
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/git/refs/heads/main"))
        .map(|r| r.status)
        .collect()
}

/// Waits until `branch`'s tip has check runs: its proof runs.
async fn proof_running_on(sh: &Shipped, branch: &str) -> String {
    eventually("the proof runs", || async {
        sh.repo()
            .branch_sha(branch)
            .is_some_and(|tip| !sh.s.checks(&tip).is_empty())
    })
    .await;
    sh.repo().branch_sha(branch).unwrap()
}

/// A shippable story whose proving merge meets `fault` once; returns it
/// landed, with the base and story heads the proof started from.
async fn shipped_through_a_lost_merge(fault: Fault) -> (Shipped, String, String) {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    // Someone else's work lands first: the proof is a real merge.
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    let base = sh.main_head();
    let story_head = sh.repo().branch_sha(&sh.branch).unwrap();
    sh.s.app.fake.inject(MERGES, fault);
    sh.add_ship_label().await;
    sh.landed().await;
    (sh, base, story_head)
}

#[tokio::test]
async fn a_proving_merge_whose_answer_was_lost_is_made_again_never_adopted_from_the_branch() {
    let (sh, base, story_head) =
        shipped_through_a_lost_merge(Fault::StatusAfterApply { status: 502 }).await;

    // GitHub made the merge commit and answered 502. The retry does not
    // take the ship branch's tip for it (a writer could have pushed any
    // tree on those parents: issue 51): it merges again, and proves and
    // lands the commit that answer names.
    assert_eq!(sh.s.app.statuses(MERGES), [502, 201]);
    let landed = sh.main_head();
    assert_eq!(sh.parents(&landed), [base, story_head]);
    assert_eq!(
        sh.repo()
            .branch_sha(&format!("taskgate/ship-{}", sh.story_issue)),
        Some(landed.clone()),
        "the ship branch holds the merge commit the retry made"
    );
    assert_eq!(proven_commits(&sh), [landed], "one proof, on it");
    assert_eq!(main_moves(&sh), [200], "one fast-forward");
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_no_effect_failed().await;
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_proving_merge_whose_connection_dropped_is_made_on_the_retry() {
    let (sh, base, story_head) = shipped_through_a_lost_merge(Fault::DropConnection).await;

    // Nothing was merged: the retry must not take the bare base (the ship
    // branch's tip now) for its proof, and merges.
    assert_eq!(sh.s.app.statuses(MERGES), [0, 201]);
    let landed = sh.main_head();
    assert_eq!(sh.parents(&landed), [base, story_head]);
    assert!(sh.repo().file("main", "check.sh").is_some(), "the story");
    assert_eq!(proven_commits(&sh), [landed], "one proof, on the merge");
    assert_eq!(main_moves(&sh), [200]);
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_no_effect_failed().await;
}

#[tokio::test]
async fn a_landing_whose_answer_was_lost_is_found_landed_and_not_proven_again() {
    let hold = Hold::new();
    let sh = shipped_held(&hold).await;
    let ship_branch = format!("taskgate/ship-{}", sh.story_issue);
    let proven = proof_running_on(&sh, &ship_branch).await;
    // The next ref update is the landing: GitHub moves main, the answer
    // is lost.
    sh.s.app
        .fake
        .inject(UPDATE_REF, Fault::StatusAfterApply { status: 502 });
    hold.release();
    sh.landed().await;

    assert_eq!(sh.main_head(), proven, "main is at the proven commit");
    assert_eq!(
        main_moves(&sh),
        [502],
        "the retry saw main at the commit and did not move it again"
    );
    assert!(sh.story_pr().unwrap().merged);
    assert_eq!(proven_commits(&sh), [proven], "no second proof");
    assert_eq!(sh.state().await, "deployed");
    let notes = sh.s.app.bot_comments(sh.story_issue).join("\n");
    assert!(!notes.contains("Proving again"), "{notes}");
    assert!(!notes.contains("refused"), "{notes}");
    let landing =
        sh.s.app
            .store()
            .effects()
            .await
            .unwrap()
            .into_iter()
            .find(|e| e.effect.name() == "land_ship_commit")
            .expect("the landing");
    assert_eq!((landing.status, landing.attempts), (EffectStatus::Done, 2));
    sh.s.app.assert_no_effect_failed().await;
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_landing_whose_answer_was_lost_is_landed_though_the_base_moved_on_before_the_retry() {
    let hold = Hold::new();
    let sh = shipped_held(&hold).await;
    let ship_branch = format!("taskgate/ship-{}", sh.story_issue);
    let proven = proof_running_on(&sh, &ship_branch).await;
    sh.s.app
        .fake
        .inject(UPDATE_REF, Fault::StatusAfterApply { status: 502 });
    // The retry's look at main waits a second (a rate limit): long enough
    // for someone else's push to land on top of the proven commit first.
    sh.s.app.fake.inject(
        COMPARE,
        Fault::SecondaryRateLimit {
            retry_after_secs: 1,
        },
    );
    hold.release();
    eventually("GitHub moved main and the answer was lost", || async {
        main_moves(&sh) == [502]
    })
    .await;
    sh.s.app
        .push_to_main(&[("NOTES.md", "right after\n")])
        .await;
    sh.landed().await;

    let head = sh.main_head();
    assert_eq!(sh.parents(&head), [proven.as_str()], "the push on top");
    assert_eq!(main_moves(&sh), [502], "no fast-forward GitHub refused");
    // (The ship request's check of the story branch compares too, first.)
    let compares = sh.s.app.statuses(COMPARE);
    assert!(
        compares.ends_with(&[403, 200]),
        "the retry looked: {compares:?}"
    );
    let landing =
        sh.s.app
            .store()
            .effects()
            .await
            .unwrap()
            .into_iter()
            .find(|e| e.effect.name() == "land_ship_commit")
            .expect("the landing");
    assert_eq!(landing.status, EffectStatus::Done);
    assert!(
        landing
            .result
            .as_deref()
            .unwrap()
            .contains(r#""landed":true"#),
        "{landing:?}"
    );
    assert_eq!(proven_commits(&sh), [proven], "no second proof");
    assert_eq!(sh.state().await, "deployed");
    let notes = sh.s.app.bot_comments(sh.story_issue).join("\n");
    assert!(!notes.contains("Proving again"), "{notes}");
    assert!(!notes.contains("Merged past the ship gate"), "{notes}");
    sh.s.app.assert_no_effect_failed().await;
}

impl Shipped {
    fn revert_pulls(&self) -> Vec<fakehub::Pull> {
        let head = format!("taskgate/revert-{}", self.story_issue);
        self.repo()
            .pulls()
            .into_iter()
            .filter(|p| p.head == head)
            .collect()
    }

    async fn revert_landed(&self) {
        eventually("the revert landed", || async {
            self.revert_pulls().iter().any(|p| p.merged)
        })
        .await;
        self.s.app.settle().await;
    }
}

#[tokio::test]
async fn a_revert_whose_merge_and_pull_request_answers_were_lost_opens_one_pull_request() {
    let sh = Shipped::story()
        .config("rollback_gates: [\"sh smoke.sh\"]\n")
        .check(CHECK)
        .landed()
        .await;
    sh.s.app.push_to_main(&[("smoke.sh", "exit 0\n")]).await;
    let merges_before = sh.s.app.statuses(MERGES).len();
    // GitHub merges main into the revert and opens its PR; both answers
    // are lost.
    let fault = || Fault::StatusAfterApply { status: 502 };
    sh.s.app.fake.inject(MERGES, fault());
    sh.s.app.fake.inject(CREATE_PULL, fault());
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    sh.revert_landed().await;

    assert_eq!(sh.revert_pulls().len(), 1, "{:#?}", sh.revert_pulls());
    assert_eq!(sh.s.app.statuses(MERGES)[merges_before..], [502, 201]);
    let opened = sh.s.app.statuses(CREATE_PULL);
    assert_eq!(
        opened[opened.len() - 2..],
        [502, 422],
        "the retry found the PR GitHub had opened"
    );
    assert!(sh.repo().file("main", "check.sh").is_none(), "reverted");
    assert!(sh.repo().file("main", "smoke.sh").is_some(), "later work");
    assert_eq!(sh.state().await, "rolled-back");
    sh.s.app.assert_no_effect_failed().await;
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_base_that_moves_while_the_revert_is_proven_is_merged_and_proven_again() {
    let sh = Shipped::story()
        .config("rollback_gates: [\"sh smoke.sh\"]\n")
        .check(CHECK)
        .landed()
        .await;
    // The rollback gate waits at a hold while main moves.
    let hold = Hold::new();
    let smoke = format!("{}\nexit 0\n", hold.wait());
    sh.s.app.push_to_main(&[("smoke.sh", smoke.as_str())]).await;
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    let revert_branch = format!("taskgate/revert-{}", sh.story_issue);
    let first = proof_running_on(&sh, &revert_branch).await;
    // main moves while the rollback gates run on the first revert.
    sh.s.app.push_to_main(&[("NOTES.md", "meanwhile\n")]).await;
    let moved = sh.main_head();
    hold.release();
    sh.revert_landed().await;

    // The first revert's landing was refused (not a fast-forward any
    // more); the revert was merged with the moved base and proven again.
    assert_eq!(main_moves(&sh)[1..], [422, 200], "{:?}", main_moves(&sh));
    let landed = sh.main_head();
    assert_ne!(landed, first, "the first revert did not land");
    assert_eq!(sh.parents(&landed)[1], moved, "proven on the moved base");
    for proven in [&first, &landed] {
        let gate =
            sh.s.checks(proven)
                .into_iter()
                .find(|c| c.name == "taskgate/rollback/1")
                .unwrap_or_else(|| panic!("the rollback gate on {proven}"));
        assert_eq!(gate.conclusion.as_deref(), Some("success"));
    }
    assert!(sh.repo().file("main", "check.sh").is_none(), "reverted");
    assert!(sh.repo().file("main", "NOTES.md").is_some(), "kept");
    assert_eq!(sh.revert_pulls().len(), 1);
    assert_eq!(sh.state().await, "rolled-back");
    sh.s.app.assert_no_effect_failed().await;
}

#[tokio::test]
async fn a_revert_that_conflicts_with_the_default_branch_is_refused_and_lands_nothing() {
    let sh = Shipped::story()
        .config("ship_label: ship\n")
        .check(CHECK)
        .landed()
        .await;
    // main changes the story's own file after it landed: taking the story
    // out (deleting the file) conflicts with that change.
    sh.s.app
        .push_to_main(&[("check.sh", "echo changed since\nexit 0\n")])
        .await;
    let before = sh.main_head();
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    sh.story_told("the rollback is refused", "The rollback did not land")
        .await;

    let notes = sh.s.app.bot_comments(sh.story_issue);
    let refusal = notes
        .iter()
        .find(|c| c.contains("The rollback did not land"))
        .unwrap();
    insta::assert_snapshot!(refusal, @r"
    **The rollback did not land.** The revert does not merge with `main` as it is now (GitHub: Merge conflict). Nothing changed on `main`; a person decides what follows (fix the revert on `taskgate/revert-1` and ship it by hand, or `/taskgate rollback --now <reason>`).

    <!-- taskgate:rollback-refused round=1 -->
    ");
    assert_eq!(sh.s.app.statuses(MERGES).last(), Some(&409));
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(sh.revert_pulls().is_empty(), "no revert PR");
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_no_effect_failed().await;
}
