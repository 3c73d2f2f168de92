//! A writer's push racing taskgate's build of what it proves and lands
//! (issue 51, item 1), end to end. Mallory may push to the repository:
//! she pushes onto the branch taskgate builds a ship batch, a one-story
//! proof or a revert on, right after taskgate pointed it at the base and
//! before it merges (fakehub's `on_next_write_to`; on GitHub the branch's
//! `create` webhook tells her when). GitHub's merge then comes back built
//! on her commit: taskgate does not use it, builds again on a fresh
//! branch, and what lands is what it built and proved. Her file never
//! reaches the default branch.

use crate::support::eventually;
use crate::support::shipped::Shipped;

/// Mallory's file.
const HERS: &str = "mallory.txt";

/// Mallory (write access) pushes her file onto the branch matching
/// `pattern` that taskgate writes next, at once.
fn mallory_races(sh: &Shipped, pattern: &str) {
    sh.s.app.fake.add_user("mallory", 99, "write");
    sh.repo().on_next_write_to(pattern, |repo, branch| {
        let files = [(HERS, "unreviewed\n")];
        repo.push_files(branch, &files, "One more thing", "mallory");
    });
}

/// Her push came in, and nothing of it is on the default branch; the
/// story's work is.
fn assert_only_the_story_landed(sh: &Shipped) {
    assert_eq!(sh.repo().races_armed(), 0, "her push came in");
    assert_eq!(sh.repo().file("main", HERS), None, "her file did not land");
    assert!(
        sh.repo().file("main", "check.sh").is_some(),
        "the story did"
    );
}

/// The landed commit merges exactly the base before it and the story's
/// head: nothing else is in its history.
fn assert_landed_as_the_storys_merge(sh: &Shipped, base: &str) {
    let head = sh.repo().branch_sha(&sh.branch).unwrap();
    assert_eq!(sh.parents(&sh.main_head()), [base.to_owned(), head]);
}

#[tokio::test]
async fn a_push_racing_a_ship_batchs_build_never_reaches_the_default_branch() {
    let sh = Shipped::story()
        .config("ship_label: ship\n")
        .shippable()
        .await;
    let base = sh.main_head();
    mallory_races(&sh, "taskgate/ship-batch-*");
    sh.add_ship_label().await;
    sh.landed().await;
    assert_only_the_story_landed(&sh);
    assert_landed_as_the_storys_merge(&sh, &base);
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_push_racing_a_one_story_proof_commit_never_reaches_the_default_branch() {
    let sh = Shipped::story()
        .config("ship_label: ship\nship_train: false\n")
        .shippable()
        .await;
    let base = sh.main_head();
    mallory_races(&sh, "taskgate/ship-*");
    sh.add_ship_label().await;
    sh.landed().await;
    assert_only_the_story_landed(&sh);
    assert_landed_as_the_storys_merge(&sh, &base);
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_merge_of_her_own_with_the_proofs_parents_is_never_taken_for_the_proof() {
    // Her commit has the parents taskgate's proof would have, the base
    // and the story's head, and any tree: GitHub finds nothing to merge.
    let sh = Shipped::story()
        .config("ship_label: ship\nship_train: false\n")
        .shippable()
        .await;
    let base = sh.main_head();
    let head = sh.repo().branch_sha(&sh.branch).unwrap();
    sh.s.app.fake.add_user("mallory", 99, "write");
    sh.repo()
        .on_next_write_to("taskgate/ship-*", move |repo, branch| {
            let files = [(HERS, "unreviewed\n")];
            repo.push_merge(branch, &[base.as_str(), head.as_str()], &files, "mallory");
        });
    let base = sh.main_head();
    sh.add_ship_label().await;
    sh.landed().await;
    assert_only_the_story_landed(&sh);
    assert_landed_as_the_storys_merge(&sh, &base);
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_push_racing_a_rollbacks_revert_never_reaches_the_default_branch() {
    let sh = Shipped::story().config("ship_label: ship\n").landed().await;
    // Later work, so the revert is merged with the default branch.
    sh.s.app.push_to_main(&[("later.txt", "kept\n")]).await;
    mallory_races(&sh, "taskgate/revert-*");
    sh.s.app
        .comment(
            sh.story_issue,
            "octocat",
            "/taskgate rollback --now checkout is down",
        )
        .await;
    let revert_branch = format!("taskgate/revert-{}", sh.story_issue);
    eventually("the revert landed", || async {
        sh.pull_of(&revert_branch).is_some_and(|p| p.merged)
    })
    .await;
    sh.s.app.settle().await;
    assert_eq!(sh.repo().races_armed(), 0, "her push came in");
    assert_eq!(sh.repo().file("main", HERS), None, "her file did not land");
    assert_eq!(
        sh.repo().file("main", "check.sh"),
        None,
        "the story is reverted"
    );
    assert!(
        sh.repo().file("main", "later.txt").is_some(),
        "later work kept"
    );
    assert_eq!(sh.state().await, "rolled-back");
    sh.s.app.assert_contract_kept();
}

/// Mallory pushes onto the branch after every write taskgate makes to a
/// branch matching `pattern`.
fn mallory_races_every_write(repo: &fakehub::RepoHandle, pattern: &'static str) {
    repo.on_next_write_to(pattern, move |repo, branch| {
        let files = [(HERS, "unreviewed\n")];
        repo.push_files(branch, &files, "One more thing", "mallory");
        mallory_races_every_write(repo, pattern);
    });
}

#[tokio::test]
async fn a_proof_raced_on_every_branch_is_refused_with_why_and_nothing_lands() {
    let sh = Shipped::story()
        .config("ship_label: ship\nship_train: false\n")
        .shippable()
        .await;
    let before = sh.main_head();
    sh.s.app.fake.add_user("mallory", 99, "write");
    mallory_races_every_write(&sh.repo(), "taskgate/ship-*");
    sh.add_ship_label().await;
    let pr = sh.story_pr().unwrap().number;
    let why = "Someone else's commit landed on the branch while taskgate built the proof commit, on 3 branches in a row";
    eventually("the ship is refused, saying why", || async {
        let said = [
            sh.s.app.bot_comments(sh.story_issue),
            sh.s.app.bot_comments(pr),
        ];
        said.iter().flatten().any(|c| c.contains(why))
    })
    .await;
    sh.s.app.settle().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert_eq!(sh.repo().file("main", HERS), None);
    assert!(!sh.story_pr().unwrap().merged);
    sh.s.app.assert_contract_kept();
}
