//! GitHub's merge queue as GitHub documents it: a pull request into a
//! branch whose rules include `merge_queue` is enqueued with GraphQL's
//! `enqueuePullRequest` (refused while a required check has not passed on
//! its head, or when its head is not the expected one); the queue builds
//! the merge group (the base with the pull request merged) on a
//! `gh-readonly-queue/{base}/pr-{number}-{base sha}` branch and sends
//! `merge_group` `checks_requested`; the required checks on the group's
//! head decide: all green, the base moves to that very commit (`push`,
//! the pull request closed as merged, the group `destroyed` `merged`); a
//! failure takes it out (`destroyed` `dequeued`) and rebuilds the groups
//! behind it (`invalidated`). A push to a queued head takes it out too.

use fakehub::{FakeGitHub, RepoHandle, Rule, Ruleset, QUEUE_BOT};
use serde_json::{json, Value};

use crate::echoes::{echoing, expect, settled, summary, Inbox, BOT};
use crate::*;

const GATE: &str = "taskgate/ship-gate";

const ENQUEUE: &str = "mutation Enqueue($id: ID!, $head: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { mergeQueueEntry { position state pullRequest { number } } } }";

/// `main` takes changes through the merge queue, `taskgate/ship-gate`
/// required.
fn queued_main(repo: &RepoHandle) {
    repo.with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::MergeQueue)
            .rule(Rule::required_checks(&[GATE])),
    );
}

/// A pull request from `branch` adding `file`: its number, node id and head.
async fn pull(repo: &RepoHandle, c: &Client, branch: &str, file: &str) -> (u64, String, String) {
    let head = repo.push_files(branch, &[(file, "x\n")], "Work", "alice");
    let n = repo.create_pull(branch, "main", "Work", "alice");
    let r = c.get(&format!("/repos/acme/widgets/pulls/{n}")).await;
    (n, r.body["node_id"].as_str().unwrap().to_string(), head)
}

async fn check(c: &Client, sha: &str, conclusion: &str) {
    let body =
        json!({"name": GATE, "head_sha": sha, "status": "completed", "conclusion": conclusion});
    let r = c.post("/repos/acme/widgets/check-runs", body).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

async fn enqueue(c: &Client, id: &str, head: &str) -> Value {
    let r = c
        .post(
            "/graphql",
            json!({"query": ENQUEUE, "variables": {"id": id, "head": head}}),
        )
        .await;
    assert_eq!(r.status, 200);
    r.body
}

fn merge_groups(got: &[(String, Value)]) -> Vec<(String, String, String)> {
    got.iter()
        .filter(|(e, _)| e == "merge_group")
        .map(|(_, p)| {
            (
                p["action"].as_str().unwrap().to_owned(),
                p["reason"].as_str().unwrap_or("-").to_owned(),
                p["merge_group"]["head_sha"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn quiet(gh: &FakeGitHub, inbox: &Inbox) {
    settled(gh, inbox).await;
}

#[tokio::test]
async fn a_pull_request_enters_the_queue_only_once_its_required_checks_passed_on_its_head() {
    let (gh, repo, c, inbox) = echoing().await;
    queued_main(&repo);
    let (n, id, head) = pull(&repo, &c, "feature", "a.txt").await;
    let refused = enqueue(&c, &id, &head).await;
    assert_eq!(refused["data"]["enqueuePullRequest"], Value::Null);
    assert_eq!(refused["errors"][0]["type"], "UNPROCESSABLE");
    assert_eq!(
        refused["errors"][0]["message"],
        r#"Pull request is not mergeable: required status check "taskgate/ship-gate" has not passed on its head"#
    );
    check(&c, &head, "success").await;
    let stale = enqueue(&c, &id, "0123456789012345678901234567890123456789").await;
    assert!(
        stale["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not the expected head oid"),
        "{stale}"
    );
    assert!(repo.merge_queue().is_empty(), "nothing was queued");
    quiet(&gh, &inbox).await;

    let ok = enqueue(&c, &id, &head).await;
    assert_eq!(
        ok["data"],
        json!({"enqueuePullRequest": {"mergeQueueEntry": {"position": 1, "state": "AWAITING_CHECKS", "pullRequest": {"number": n}}}})
    );
    let main = repo.branch_sha("main").unwrap();
    let entry = &repo.merge_queue()[0];
    let branch = format!("gh-readonly-queue/main/pr-{n}-{main}");
    assert_eq!(entry.group_branch, branch);
    assert_eq!(repo.branch_sha(&branch).as_ref(), Some(&entry.group_sha));
    let group = repo.commit(&entry.group_sha).unwrap();
    assert_eq!(
        group.parents,
        [main.clone(), head.clone()],
        "the base with the PR merged"
    );
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("create", "-", QUEUE_BOT),
            ("push", "-", QUEUE_BOT),
            ("check_suite", "requested", QUEUE_BOT),
            ("merge_group", "checks_requested", BOT),
        ])
    );
    let mg = &got[3].1["merge_group"];
    assert_eq!(mg["head_ref"], json!(format!("refs/heads/{branch}")));
    assert_eq!(
        (mg["base_sha"].clone(), mg["base_ref"].clone()),
        (json!(main), json!("refs/heads/main"))
    );
    // Enqueued twice: the same entry, nothing new.
    let again = enqueue(&c, &id, &head).await;
    assert_eq!(
        again["data"]["enqueuePullRequest"]["mergeQueueEntry"]["position"],
        1
    );
    assert_eq!(repo.merge_queue().len(), 1);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn green_required_checks_on_the_merge_group_land_that_very_commit() {
    let (gh, repo, c, inbox) = echoing().await;
    queued_main(&repo);
    let (n, id, head) = pull(&repo, &c, "feature", "a.txt").await;
    check(&c, &head, "success").await;
    enqueue(&c, &id, &head).await;
    let entry = repo.merge_queue()[0].clone();
    quiet(&gh, &inbox).await;
    // The PR's own merge is refused: the queue is the only way in.
    let direct = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(json!({})),
        )
        .await;
    assert_eq!(direct.status, 405);

    check(&c, &entry.group_sha, "success").await;
    assert_eq!(
        repo.branch_sha("main"),
        Some(entry.group_sha.clone()),
        "the tested commit landed"
    );
    assert!(
        repo.branch_sha(&entry.group_branch).is_none(),
        "the group's branch is gone"
    );
    assert!(repo.merge_queue().is_empty());
    let p = repo.pulls().into_iter().find(|p| p.number == n).unwrap();
    assert!(p.merged);
    assert_eq!(p.merge_commit_sha, Some(entry.group_sha.clone()));
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("check_run", "created", BOT),
            ("check_run", "completed", BOT),
            ("check_suite", "completed", BOT),
            ("push", "-", QUEUE_BOT),
            ("pull_request", "closed", QUEUE_BOT),
            ("merge_group", "destroyed", BOT),
            ("push", "-", QUEUE_BOT),
        ])
    );
    assert_eq!(got[3].1["after"], json!(entry.group_sha));
    assert_eq!(got[4].1["pull_request"]["merged"], true);
    assert_eq!(
        merge_groups(&got),
        [("destroyed".into(), "merged".into(), entry.group_sha.clone())]
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_failed_check_dequeues_the_pull_request_and_rebuilds_the_groups_behind_it() {
    let (gh, repo, c, inbox) = echoing().await;
    queued_main(&repo);
    let (first, first_id, first_head) = pull(&repo, &c, "one", "one.txt").await;
    let (second, second_id, second_head) = pull(&repo, &c, "two", "two.txt").await;
    check(&c, &first_head, "success").await;
    check(&c, &second_head, "success").await;
    enqueue(&c, &first_id, &first_head).await;
    enqueue(&c, &second_id, &second_head).await;
    let [one, two] = <[_; 2]>::try_from(repo.merge_queue()).unwrap();
    assert_eq!(
        two.group_base, one.group_sha,
        "the second group is built on the first"
    );
    quiet(&gh, &inbox).await;
    let main = repo.branch_sha("main").unwrap();

    check(&c, &one.group_sha, "failure").await;
    assert_eq!(
        repo.branch_sha("main"),
        Some(main.clone()),
        "nothing landed"
    );
    let left = repo
        .pulls()
        .into_iter()
        .find(|p| p.number == first)
        .unwrap();
    assert!(!left.merged && left.state == "open", "the PR stays open");
    let [rebuilt] = <[_; 1]>::try_from(repo.merge_queue()).unwrap();
    assert_eq!(rebuilt.number, second);
    assert_eq!(rebuilt.group_base, main, "rebuilt on the base");
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        merge_groups(&got),
        [
            ("destroyed".into(), "dequeued".into(), one.group_sha.clone()),
            (
                "destroyed".into(),
                "invalidated".into(),
                two.group_sha.clone()
            ),
            (
                "checks_requested".into(),
                "-".into(),
                rebuilt.group_sha.clone()
            ),
        ]
    );
    assert!(repo.branch_sha(&one.group_branch).is_none());
    assert!(repo.branch_sha(&two.group_branch).is_none());

    // A push to the queued head takes it out of the queue.
    repo.push_files("two", &[("two.txt", "changed\n")], "More", "alice");
    assert!(repo.merge_queue().is_empty());
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        merge_groups(&got),
        [(
            "destroyed".into(),
            "dequeued".into(),
            rebuilt.group_sha.clone()
        )]
    );
    gh.assert_contract_kept();
}

/// `main` takes changes through a merge queue of `method`.
fn queued_main_by(repo: &RepoHandle, method: &str) {
    repo.with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::merge_queue(method))
            .rule(Rule::required_checks(&[GATE])),
    );
}

/// Enqueues a two-commit pull request onto a `main` that moved: the
/// group's commit, `main` before it, and the PR's head.
async fn group_of(repo: &RepoHandle, c: &Client) -> (String, String, String) {
    repo.push_files("feature", &[("a.txt", "a\n")], "First", "alice");
    let (n, id, head) = pull(repo, c, "feature", "b.txt").await;
    repo.push_files("main", &[("main.txt", "m\n")], "Main moved", "bob");
    check(c, &head, "success").await;
    let ok = enqueue(c, &id, &head).await;
    assert_eq!(
        ok["data"]["enqueuePullRequest"]["mergeQueueEntry"]["pullRequest"]["number"],
        n
    );
    let main = repo.branch_sha("main").unwrap();
    (repo.merge_queue()[0].group_sha.clone(), main, head)
}

#[tokio::test]
async fn a_squash_queue_builds_one_commit_on_the_base_and_a_rebase_queue_replays_the_commits() {
    let (_gh, repo, c, _inbox) = echoing().await;
    queued_main_by(&repo, "SQUASH");
    let (group, main, head) = group_of(&repo, &c).await;
    let squash = repo.commit(&group).unwrap();
    assert_eq!(
        squash.parents,
        std::slice::from_ref(&main),
        "the base its only parent"
    );
    assert!(squash.message.starts_with("Work (#"), "{}", squash.message);
    for file in ["a.txt", "b.txt", "main.txt"] {
        assert!(
            squash.files.contains_key(file),
            "{file} in {:?}",
            squash.files.keys()
        );
    }
    check(&c, &group, "success").await;
    assert_eq!(repo.branch_sha("main"), Some(group.clone()), "landed");
    assert!(
        repo.pulls().iter().all(|p| p.merged),
        "the PR marked merged"
    );
    assert_ne!(
        squash.parents[0], head,
        "the PR's head is not in its history"
    );

    let (_gh, repo, c, _inbox) = echoing().await;
    queued_main_by(&repo, "REBASE");
    let (group, main, head) = group_of(&repo, &c).await;
    let last = repo.commit(&group).unwrap();
    let first = repo.commit(&last.parents[0]).unwrap();
    assert_eq!(
        first.parents,
        [main],
        "the first replayed commit is on the base"
    );
    assert_eq!(
        (first.message.as_str(), last.message.as_str()),
        ("First", "Work")
    );
    assert!(last.files.contains_key("main.txt") && last.files.contains_key("b.txt"));
    assert!(
        group != head && last.parents[0] != head,
        "new commits, not the PR's"
    );
}

#[tokio::test]
async fn merge_group_reaches_only_an_installation_with_the_merge_queues_permission() {
    let (gh, repo, c, inbox) = echoing().await;
    queued_main(&repo);
    gh.grant(
        7,
        json!({"checks": "write", "contents": "write", "issues": "write", "metadata": "read",
               "pull_requests": "write"}),
    );
    let (_, id, head) = pull(&repo, &c, "feature", "a.txt").await;
    check(&c, &head, "success").await;
    quiet(&gh, &inbox).await;
    enqueue(&c, &id, &head).await;
    let got = settled(&gh, &inbox).await;
    assert!(!repo.merge_queue().is_empty(), "queued all the same");
    assert_eq!(
        merge_groups(&got),
        [],
        "no merge_group without `merge_queues`"
    );
}
