//! GitHub's merge queue builds a group's commit by the method its rule
//! names (issue 51 item 2): a merge commit, a squash (one commit, the
//! base its only parent) or a rebase (the story's commits replayed). A
//! story shipped through a queue of each method lands its proven tree:
//! taskgate judges a group by its tree, which must be the tree GitHub
//! makes merging the shipped head into the group's base on a branch of
//! taskgate's own (`taskgate/queue-check-<issue>`, its parents checked).

use fakehub::{Rule, Ruleset};

use crate::support::eventually;
use crate::support::shipped::Shipped;

const CHECK: &str = "exit 0\n";
const CONFIG: &str = "ship_label: ship\n";

/// `main` takes changes through a merge queue of `method`, which
/// requires taskgate's gate.
fn queue_by(sh: &Shipped, method: &str) {
    sh.repo().with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::merge_queue(method))
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
}

/// Someone else's work on `main`, so the group is built on a moved base.
async fn other_work(sh: &Shipped) -> String {
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    sh.main_head()
}

/// Ships the story through the queue and waits for it to land: the
/// queue's group, and what landed.
async fn ship_through_the_queue(sh: &Shipped) -> (fakehub::QueueEntry, String) {
    sh.add_ship_label().await;
    eventually("the merge group is built", || async {
        !sh.repo().merge_queue().is_empty()
    })
    .await;
    let group = sh.repo().merge_queue()[0].clone();
    sh.landed().await;
    (group, sh.main_head())
}

/// What the landed commit must hold: the tree of the base with the
/// shipped head merged, which GitHub made on taskgate's branch.
fn checked_merge(sh: &Shipped, base: &str, shipped: &str) -> String {
    let branch = format!("taskgate/queue-check-{}", sh.story_issue);
    let sha = sh
        .repo()
        .branch_sha(&branch)
        .expect("taskgate's check branch");
    let merge = sh.repo().commit(&sha).unwrap();
    assert_eq!(
        merge.parents,
        [base, shipped],
        "exactly the base and the shipped head"
    );
    merge.tree
}

fn proven_on(sh: &Shipped, sha: &str) -> Vec<(String, Option<String>)> {
    sh.s.checks(sha)
        .into_iter()
        .map(|c| (c.name, c.conclusion))
        .collect()
}

#[tokio::test]
async fn a_squash_merge_queue_lands_the_proven_story_as_one_commit_on_the_base() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    queue_by(&sh, "SQUASH");
    let base = other_work(&sh).await;
    let shipped = sh.repo().branch_sha(&sh.branch).unwrap();
    let (group, landed) = ship_through_the_queue(&sh).await;
    assert_eq!(landed, group.group_sha, "the merge group's commit landed");
    let commit = sh.repo().commit(&landed).unwrap();
    assert_eq!(
        commit.parents,
        std::slice::from_ref(&base),
        "a squash: the base its only parent"
    );
    assert_eq!(
        commit.tree,
        checked_merge(&sh, &base, &shipped),
        "the shipped tree"
    );
    let proven = proven_on(&sh, &landed);
    assert!(
        proven.contains(&("taskgate/ship/check/test".into(), Some("success".into())))
            && proven.contains(&("taskgate/ship-gate".into(), Some("success".into()))),
        "the story's gates ran on the squashed group: {proven:#?}"
    );
    assert!(sh.repo().file("main", "NOTES.md").is_some());
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_rebase_merge_queue_lands_the_proven_story_as_its_commits_replayed_on_the_base() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    queue_by(&sh, "REBASE");
    let base = other_work(&sh).await;
    let shipped = sh.repo().branch_sha(&sh.branch).unwrap();
    let (group, landed) = ship_through_the_queue(&sh).await;
    assert_eq!(landed, group.group_sha, "the merge group's commit landed");
    // A chain of new commits, one parent each, down to the base.
    let mut at = landed.clone();
    let mut replayed = 0;
    while at != base {
        let c = sh.repo().commit(&at).unwrap();
        assert_eq!(c.parents.len(), 1, "no merge commit in a rebase: {c:?}");
        at = c.parents[0].clone();
        replayed += 1;
    }
    assert!(replayed > 0);
    let tree = sh.repo().commit(&landed).unwrap().tree;
    assert_eq!(
        tree,
        checked_merge(&sh, &base, &shipped),
        "the shipped tree"
    );
    let proven = proven_on(&sh, &landed);
    assert!(
        proven.contains(&("taskgate/ship-gate".into(), Some("success".into()))),
        "the gate passed on the rebased group: {proven:#?}"
    );
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_merge_queue_of_a_method_taskgate_cannot_judge_is_refused_before_anything_is_enqueued() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    queue_by(&sh, "FAST_FORWARD");
    let before = sh.main_head();
    sh.add_ship_label().await;
    eventually("the ship was refused", || async {
        sh.state().await == "shippable" && !sh.pr_labels().contains(&"ship".to_owned())
    })
    .await;
    sh.s.app.settle().await;
    assert!(sh.repo().merge_queue().is_empty(), "nothing enqueued");
    assert_eq!(sh.main_head(), before, "nothing landed");
    let notes: Vec<String> =
        sh.s.app
            .bot_comments(sh.story_pr().unwrap().number)
            .into_iter()
            .filter(|n| n.contains("Not shipped"))
            .map(|n| n.split("\n\n<!--").next().unwrap_or_default().to_owned())
            .collect();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0], @r"
        **Not shipped: taskgate cannot ship through the merge queue of `main`.** Nothing landed and the `ship` label was removed.

        - `main` takes changes through GitHub's merge queue, whose merge method `FAST_FORWARD` taskgate cannot judge: it could not tell whether a merge group holds exactly the shipped story.

        To let taskgate land this story:
        - set the merge method of the merge queue rule on `main` to merge, squash or rebase ([GitHub's docs](https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue)).

        Then ship again.
        ");
    sh.s.app.assert_contract_kept();
}
