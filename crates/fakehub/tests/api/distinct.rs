//! `distinct` on a push's commits, as GitHub sets it: a commit is distinct
//! when the push brings it to the repository, not when it was on another
//! branch already. A fast-forward onto commits another branch holds (how
//! taskgate brings a task branch up to date with its story branch) lists
//! them all as not distinct; a merge lists its own merge commit as
//! distinct and the merged branch's commits as not.

use serde_json::{json, Value};

use crate::echoes::{echoing, settled};

/// (id, distinct) of each commit a push lists, and of its head commit.
fn listed(push: &Value) -> (Vec<(String, bool)>, (String, bool)) {
    let pair = |c: &Value| {
        (
            c["id"].as_str().unwrap().to_owned(),
            c["distinct"].as_bool().unwrap(),
        )
    };
    let commits = push["commits"].as_array().unwrap();
    (
        commits.iter().map(pair).collect(),
        pair(&push["head_commit"]),
    )
}

/// The last push of `branch` in what was received.
fn push_of<'a>(got: &'a [(String, Value)], branch: &str) -> &'a Value {
    got.iter()
        .rev()
        .find(|(e, p)| e == "push" && p["ref"] == format!("refs/heads/{branch}"))
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no push of {branch} in {got:#?}"))
}

#[tokio::test]
async fn commits_already_on_another_branch_are_pushed_as_not_distinct() {
    let (gh, repo, c, inbox) = echoing().await;
    let main = repo.branch_sha("main").unwrap();
    // A task branch with no work, and the story branch with two commits.
    repo.push_files("task", &[("t.txt", "t\n")], "Task start", "alice");
    let task_start = repo.branch_sha("task").unwrap();
    c.call(
        "PATCH",
        "/repos/acme/widgets/git/refs/heads/task",
        Some(json!({"sha": main, "force": true})),
    )
    .await;
    let one = repo.push_files("story", &[("core.sh", "1\n")], "Core 1", "alice");
    let two = repo.push_files("story", &[("core.sh", "2\n")], "Core 2", "alice");
    let got = settled(&gh, &inbox).await;
    // New to the repository: distinct.
    assert_eq!(listed(push_of(&got, "story")).1, (two.clone(), true));
    assert_ne!(task_start, one);

    // The task branch fast-forwarded to the story head: nothing new.
    let r = c
        .call(
            "PATCH",
            "/repos/acme/widgets/git/refs/heads/task",
            Some(json!({"sha": two})),
        )
        .await;
    assert_eq!(r.status, 200);
    let got = settled(&gh, &inbox).await;
    let (commits, head) = listed(push_of(&got, "task"));
    assert_eq!(commits, [(one, false), (two.clone(), false)]);
    assert_eq!(head, (two.clone(), false));

    // Work of its own, then the story branch merged in (the merges API):
    // the merge commit is new, what it merges is not.
    repo.push_files("task", &[("cli.sh", "cli\n")], "Cli", "alice");
    repo.push_files("story", &[("core.sh", "3\n")], "Core 3", "alice");
    settled(&gh, &inbox).await;
    let merge = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "task", "head": "story", "commit_message": "Merge story into task"}),
        )
        .await;
    assert_eq!(merge.status, 201);
    let merge = merge.body["sha"].as_str().unwrap().to_owned();
    let got = settled(&gh, &inbox).await;
    let (commits, head) = listed(push_of(&got, "task"));
    assert_eq!(commits.last(), Some(&(merge.clone(), true)));
    assert!(
        commits.iter().all(|(id, d)| *d == (*id == merge)),
        "{commits:?}"
    );
    assert_eq!(head, (merge, true));
    gh.assert_contract_kept();
}
