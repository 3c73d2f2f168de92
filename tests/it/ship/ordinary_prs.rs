//! Ordinary pull requests share the default branch with stories (issue 51
//! item 3). Where `taskgate/ship-gate` is a required check, taskgate
//! reports it neutral on every pull request that is not a story's and on
//! every merge group that holds no story, so GitHub merges or enqueues
//! them on the repository's own checks; a group that holds a story is
//! green only once the story's gates passed on that group's tree, and its
//! gate names the pull requests ahead of the story that the tree holds.

use fakehub::{Rule, Ruleset};

use crate::support::eventually;
use crate::support::shipped::Shipped;

const CHECK: &str = "exit 0\n";
const CONFIG: &str = "ship_label: ship\n";

/// Another CI's check the rules require besides taskgate's.
const CI: &str = "ci";

/// taskgate's gate on `sha`, once written: its conclusion and text.
fn gate_on(sh: &Shipped, sha: &str) -> Option<(String, String)> {
    sh.s.checks(sha)
        .into_iter()
        .rev()
        .find(|c| c.name == "taskgate/ship-gate" && c.status == "completed")
        .map(|c| {
            let text = format!(
                "{}\n{}",
                c.title.unwrap_or_default(),
                c.summary.unwrap_or_default()
            );
            (c.conclusion.unwrap_or_default(), text)
        })
}

/// alice's pull request into `main` from `branch`, changing `file`, once
/// taskgate reported its gate on it: its number and head.
async fn ordinary_pull(sh: &Shipped, branch: &str, file: &str) -> (u64, String) {
    let head = sh
        .repo()
        .push_files(branch, &[(file, "alice's work\n")], "alice's work", "alice");
    let number = sh
        .repo()
        .create_pull(branch, "main", "alice's work", "alice");
    eventually("taskgate's gate on the pull request", || async {
        gate_on(sh, &head).is_some()
    })
    .await;
    (number, head)
}

/// Waits until GitHub's merge queue holds `n` groups: the last one.
async fn group(sh: &Shipped, n: usize) -> fakehub::QueueEntry {
    eventually("the merge group is built", || async {
        sh.repo().merge_queue().len() == n
    })
    .await;
    sh.repo().merge_queue()[n - 1].clone()
}

#[tokio::test]
async fn an_ordinary_pull_request_merges_beside_a_shipped_story_where_the_gate_is_required() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo()
        .with_ruleset(Ruleset::new("gate").rule(Rule::required_checks(&["taskgate/ship-gate"])));
    let (number, head) = ordinary_pull(&sh, "deps/bump", "deps.txt").await;
    let (conclusion, text) = gate_on(&sh, &head).unwrap();
    assert_eq!(conclusion, "neutral", "GitHub counts neutral as passing");
    insta::assert_snapshot!(text.replace(&format!("#{number}"), "#<pr>"), @r"
        Not a story: taskgate does not gate it
        #<pr> is not a taskgate story, so taskgate does not gate it: `taskgate/ship-gate` is neutral here, which GitHub counts as passing. The repository's own required checks and reviews decide whether it merges.
        ");
    sh.add_ship_label().await;
    sh.landed().await;
    sh.repo()
        .merge_pull_as(number, "alice")
        .expect("GitHub merges it: its required gate is neutral");
    assert!(sh.repo().file("main", "deps.txt").is_some());
    assert!(
        sh.repo().file("main", "check.sh").is_some(),
        "the story too"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_ordinary_pull_request_is_enqueued_and_lands_through_the_merge_queue_beside_a_story() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo().with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::MergeQueue)
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    let (number, _) = ordinary_pull(&sh, "deps/bump", "deps.txt").await;
    sh.repo()
        .enqueue_as(number, "alice")
        .expect("GitHub enqueues it: its required gate is neutral");
    eventually("the queue landed it", || async {
        sh.repo()
            .pulls()
            .iter()
            .any(|p| p.number == number && p.merged)
    })
    .await;
    let landed = sh.main_head();
    assert_eq!(
        gate_on(&sh, &landed).map(|g| g.0).as_deref(),
        Some("neutral"),
        "its merge group holds no story"
    );
    sh.add_ship_label().await;
    sh.landed().await;
    assert!(sh.repo().file("main", "deps.txt").is_some());
    assert_eq!(
        gate_on(&sh, &sh.main_head()).map(|g| g.0).as_deref(),
        Some("success"),
        "the story's group was proven"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_story_group_behind_another_pull_request_is_proven_with_it_and_its_gate_names_it() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo().with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::MergeQueue)
            .rule(Rule::required_checks(&["taskgate/ship-gate", CI])),
    );
    // alice's pull request goes first, and waits in the queue for `ci`.
    let (number, head) = ordinary_pull(&sh, "deps/bump", "deps.txt").await;
    sh.repo().other_ci_check(&head, CI, "success");
    sh.repo().enqueue_as(number, "alice").expect("enqueued");
    let ahead = group(&sh, 1).await;
    eventually("taskgate's gate on alice's group", || async {
        gate_on(&sh, &ahead.group_sha).is_some()
    })
    .await;
    // The story goes behind it: its group is built on alice's.
    let story_head = sh.repo().branch_sha(&sh.branch).unwrap();
    sh.repo().other_ci_check(&story_head, CI, "success");
    sh.add_ship_label().await;
    let story_group = group(&sh, 2).await;
    assert_eq!(story_group.group_base, ahead.group_sha);
    eventually("the story proven on its group", || async {
        gate_on(&sh, &story_group.group_sha).is_some_and(|g| g.0 == "success")
    })
    .await;
    let (_, text) = gate_on(&sh, &story_group.group_sha).unwrap();
    assert!(text.contains(&format!("#{number}")), "{text}");
    let text = text
        .replace(&format!("#{number}"), "#<alice>")
        .replace(&format!("#{}", sh.story_issue), "#<story>")
        .replace(&story_group.group_sha[..7], "<group>")
        .replace(&story_head[..7], "<shipped>");
    insta::assert_snapshot!(text, @r"
        Proven on this merge group
        The story of #<story> passed its gates on this merge group's commit `<group>`: its tree is the story at `<shipped>` merged with the group's base, and nothing else.

        The tree also holds the pull requests ahead of the story in GitHub's merge queue: #<alice>. taskgate does not gate them; the story's gates passed with them in the tree.
        ");
    // GitHub lands both once `ci` passed on their groups.
    sh.repo().other_ci_check(&ahead.group_sha, CI, "success");
    sh.repo()
        .other_ci_check(&story_group.group_sha, CI, "success");
    sh.landed().await;
    assert_eq!(
        sh.main_head(),
        story_group.group_sha,
        "the proven group landed"
    );
    sh.s.app.assert_contract_kept();
}
