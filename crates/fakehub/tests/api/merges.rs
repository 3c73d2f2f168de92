//! Merging on the server (`POST /merges`, pull request merges) with the
//! fake's 3-way merge, comparing commits (`GET /compare/{basehead}`), and
//! landing by fast-forward (`PATCH /git/refs` with `force: false`): status
//! codes, GitHub's messages, the webhooks each sends.

use serde_json::{json, Value};

use crate::echoes::{echoing, expect, settled, summary, BOT};
use crate::*;

const MERGES: &str = "/repos/acme/widgets/merges";

/// `main` and `feature` both changed from their fork point: `main` wrote
/// `base.txt`, `feature` wrote `head.txt`; both keep `README.md`.
fn diverged(repo: &fakehub::RepoHandle) -> (String, String) {
    let head = repo.push_files("feature", &[("head.txt", "h\n")], "Head", "alice");
    let base = repo.push_files("main", &[("base.txt", "b\n")], "Base", "bob");
    (base, head)
}

fn parents(commit: &Value) -> Vec<String> {
    commit["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["sha"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn merging_a_branch_writes_a_merge_commit_of_both_sides_and_pushes_the_base() {
    let (gh, repo, c, inbox) = echoing().await;
    let (base, head) = diverged(&repo);
    settled(&gh, &inbox).await;
    let r = c
        .post(MERGES, json!({"base": "main", "head": "feature"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let merge = r.body["sha"].as_str().unwrap().to_string();
    assert_eq!(parents(&r.body), [base.clone(), head]);
    assert_eq!(r.body["commit"]["message"], "Merge feature into main");
    assert_eq!(repo.branch_sha("main"), Some(merge.clone()));
    assert_eq!(repo.file("main", "base.txt").as_deref(), Some("b\n"));
    assert_eq!(repo.file("main", "head.txt").as_deref(), Some("h\n"));
    assert_eq!(
        repo.file("main", "README.md").as_deref(),
        Some("# widgets\n")
    );
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[("push", "-", BOT), ("check_suite", "requested", BOT)])
    );
    assert_eq!(
        (got[0].1["before"].clone(), got[0].1["after"].clone()),
        (json!(base), json!(merge))
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn merging_a_head_the_base_already_contains_is_204_and_changes_nothing() {
    let (gh, repo, c, inbox) = echoing().await;
    let (base, head) = diverged(&repo);
    settled(&gh, &inbox).await;
    for already in ["main", base.as_str(), &base[..7]] {
        let r = c
            .post(MERGES, json!({"base": "main", "head": already}))
            .await;
        assert_eq!((r.status, r.body.clone()), (204, Value::Null), "{already}");
    }
    let r = c
        .post(MERGES, json!({"base": "feature", "head": "feature"}))
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(repo.branch_sha("main"), Some(base));
    assert_eq!(repo.branch_sha("feature"), Some(head));
    assert!(settled(&gh, &inbox).await.is_empty());
    gh.assert_contract_kept();
}

#[tokio::test]
async fn merging_into_an_ancestor_of_the_head_writes_a_merge_commit_not_a_fast_forward() {
    let (gh, repo, c, _inbox) = echoing().await;
    let main = repo.branch_sha("main").unwrap();
    let head = repo.push_files("feature", &[("a.txt", "a\n")], "A", "alice");
    let r = c
        .post(
            MERGES,
            json!({"base": "main", "head": head, "commit_message": "Ship it"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_ne!(r.body["sha"], json!(head));
    assert_eq!(parents(&r.body), [main, head]);
    assert_eq!(r.body["commit"]["message"], "Ship it");
    assert_eq!(repo.file("main", "a.txt").as_deref(), Some("a\n"));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_missing_base_or_head_is_404_with_githubs_message() {
    let (gh, repo, c, inbox) = echoing().await;
    diverged(&repo);
    settled(&gh, &inbox).await;
    let r = c
        .post(MERGES, json!({"base": "nope", "head": "feature"}))
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (404, json!("Base does not exist"))
    );
    let r = c
        .post(MERGES, json!({"base": "main", "head": "nope"}))
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (404, json!("Head does not exist"))
    );
    let r = c
        .post(MERGES, json!({"base": "main", "head": "0".repeat(40)}))
        .await;
    assert_eq!(r.status, 404);
    // The contract: `head` is required.
    let r = c.post(MERGES, json!({"base": "main"})).await;
    assert_eq!(r.status, 422);
    assert_eq!(gh.contract_violations().len(), 1);
    assert!(settled(&gh, &inbox).await.is_empty());
}

#[tokio::test]
async fn branches_that_change_a_file_differently_are_409_merge_conflict_and_nothing_moves() {
    let (gh, repo, c, inbox) = echoing().await;
    let head = repo.push_files("feature", &[("README.md", "feature\n")], "F", "alice");
    let base = repo.push_files("main", &[("README.md", "main\n")], "M", "bob");
    settled(&gh, &inbox).await;
    let r = c
        .post(MERGES, json!({"base": "main", "head": "feature"}))
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (409, json!("Merge conflict"))
    );
    assert_eq!(repo.branch_sha("main"), Some(base));
    assert_eq!(repo.branch_sha("feature"), Some(head));
    assert!(settled(&gh, &inbox).await.is_empty());
    // A deletion against a change conflicts too.
    repo.without_file("feature", "README.md");
    let r = c
        .post(MERGES, json!({"base": "main", "head": "feature"}))
        .await;
    assert_eq!(r.status, 409);
    gh.assert_contract_kept();
}

async fn open_pull(c: &Client, head: &str, body: &str) -> u64 {
    let r = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "Work", "head": head, "base": "main", "body": body}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["number"].as_u64().unwrap()
}

#[tokio::test]
async fn a_pull_request_merge_keeps_what_the_base_changed_and_the_head_did_not() {
    let (gh, repo, c, _inbox) = echoing().await;
    repo.with_file("main", "shared.txt", "v1\n");
    repo.push_files("feature", &[("head.txt", "h\n")], "Head", "alice");
    // main moves on after the fork: the head still has the old version.
    repo.push_files("main", &[("shared.txt", "v2\n")], "Base", "bob");
    let n = open_pull(&c, "feature", "").await;
    let r = c.get(&format!("/repos/acme/widgets/pulls/{n}")).await;
    assert_eq!(
        (
            r.body["mergeable"].clone(),
            r.body["mergeable_state"].clone()
        ),
        (json!(true), json!("clean"))
    );
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(repo.file("main", "shared.txt").as_deref(), Some("v2\n"));
    assert_eq!(repo.file("main", "head.txt").as_deref(), Some("h\n"));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_pull_request_whose_branches_conflict_reads_unmergeable_and_its_merge_is_405() {
    let (gh, repo, c, inbox) = echoing().await;
    repo.push_files("feature", &[("README.md", "feature\n")], "F", "alice");
    let base = repo.push_files("main", &[("README.md", "main\n")], "M", "bob");
    let n = open_pull(&c, "feature", "").await;
    settled(&gh, &inbox).await;
    let r = c.get(&format!("/repos/acme/widgets/pulls/{n}")).await;
    assert_eq!(
        (
            r.body["mergeable"].clone(),
            r.body["mergeable_state"].clone()
        ),
        (json!(false), json!("dirty"))
    );
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(json!({})),
        )
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (405, json!("Pull Request is not mergeable"))
    );
    assert_eq!(repo.branch_sha("main"), Some(base));
    assert!(!repo.pulls()[0].merged);
    assert!(settled(&gh, &inbox).await.is_empty());
    gh.assert_contract_kept();
}

#[tokio::test]
async fn compare_counts_commits_ahead_and_behind_from_the_merge_base() {
    let (gh, repo, c, _inbox) = echoing().await;
    let fork = repo.branch_sha("main").unwrap();
    let h1 = repo.push_files("feature", &[("a.txt", "1\n")], "A1", "alice");
    let h2 = repo.push_files(
        "feature",
        &[("a.txt", "2\n"), ("b.txt", "b\n")],
        "A2",
        "alice",
    );
    let cmp = |basehead: &str| {
        let c = &c;
        let path = format!("/repos/acme/widgets/compare/{basehead}");
        async move { c.get(&path).await }
    };
    let r = cmp("main...feature").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let counts = |b: &Value| {
        (
            b["status"].clone(),
            b["ahead_by"].clone(),
            b["behind_by"].clone(),
            b["total_commits"].clone(),
        )
    };
    assert_eq!(
        counts(&r.body),
        (json!("ahead"), json!(2), json!(0), json!(2))
    );
    let listed: Vec<&Value> = r.body["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["sha"])
        .collect();
    assert_eq!(listed, [&json!(h1), &json!(h2)]);
    assert_eq!(r.body["merge_base_commit"]["sha"], json!(fork));
    assert_eq!(r.body["base_commit"]["sha"], json!(fork));
    let files: Vec<(&Value, &Value)> = r.body["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (&f["filename"], &f["status"]))
        .collect();
    assert_eq!(
        files,
        [
            (&json!("a.txt"), &json!("added")),
            (&json!("b.txt"), &json!("added"))
        ]
    );

    assert_eq!(
        counts(&cmp("feature...main").await.body),
        (json!("behind"), json!(0), json!(2), json!(0))
    );
    assert_eq!(
        counts(&cmp(&format!("{h2}...feature")).await.body).0,
        json!("identical")
    );
    let base = repo.push_files("main", &[("c.txt", "c\n")], "C", "bob");
    let r = cmp("main...feature").await;
    assert_eq!(
        counts(&r.body),
        (json!("diverged"), json!(2), json!(1), json!(2))
    );
    assert_eq!(r.body["base_commit"]["sha"], json!(base));
    assert_eq!(r.body["merge_base_commit"]["sha"], json!(fork));
    // Paging lists one page of the commits ahead, oldest first.
    let r = cmp("main...feature?per_page=1&page=2").await;
    assert_eq!(r.body["commits"][0]["sha"], json!(h2));
    assert_eq!(cmp("main...nope").await.status, 404);
    gh.assert_contract_kept();
}

/// What taskgate's ship does: a temporary branch at main, the story
/// merged into it, the result landed by fast-forwarding main.
#[tokio::test]
async fn landing_a_tested_merge_by_fast_forward_merges_the_pull_request_and_closes_its_issue() {
    let (gh, repo, c, inbox) = echoing().await;
    let issue = repo.create_issue("Story", "", "alice");
    let (base, head) = diverged(&repo);
    let n = open_pull(&c, "feature", &format!("The story.\n\nCloses #{issue}")).await;
    let ship = json!({"ref": "refs/heads/taskgate/ship-1", "sha": base});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", ship).await.status,
        201
    );
    let r = c
        .post(MERGES, json!({"base": "taskgate/ship-1", "head": head}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let tested = r.body["sha"].as_str().unwrap().to_string();
    settled(&gh, &inbox).await;

    let land = |sha: &str| {
        let body = json!({"sha": sha, "force": false});
        let c = &c;
        async move {
            c.call(
                "PATCH",
                "/repos/acme/widgets/git/refs/heads/main",
                Some(body),
            )
            .await
        }
    };
    let r = land(&tested).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("push", "-", BOT),
            ("pull_request", "closed", BOT),
            ("issues", "closed", BOT),
        ])
    );
    let closed = &got[1].1["pull_request"];
    assert_eq!(
        (
            closed["merged"].clone(),
            closed["merge_commit_sha"].clone(),
            closed["merged_by"]["login"].clone()
        ),
        (json!(true), json!(tested), json!(BOT))
    );
    assert_eq!(got[2].1["issue"]["state_reason"], "completed");
    let p = repo.pulls().into_iter().find(|p| p.number == n).unwrap();
    assert_eq!(p.merged_by.as_deref(), Some(BOT));
    assert_eq!(repo.issue(issue).unwrap().state, "closed");
    gh.assert_contract_kept();
}

#[tokio::test]
async fn landing_after_the_base_moved_is_refused_as_not_a_fast_forward() {
    let (gh, repo, c, inbox) = echoing().await;
    let (base, head) = diverged(&repo);
    let n = open_pull(&c, "feature", "").await;
    let ship = json!({"ref": "refs/heads/taskgate/ship-1", "sha": base});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", ship).await.status,
        201
    );
    let r = c
        .post(MERGES, json!({"base": "taskgate/ship-1", "head": head}))
        .await;
    let tested = r.body["sha"].as_str().unwrap().to_string();
    let moved = repo.push_files("main", &[("late.txt", "l\n")], "Late", "bob");
    settled(&gh, &inbox).await;
    let r = c
        .call(
            "PATCH",
            "/repos/acme/widgets/git/refs/heads/main",
            Some(json!({"sha": tested, "force": false})),
        )
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (422, json!("Update is not a fast forward"))
    );
    assert_eq!(repo.branch_sha("main"), Some(moved));
    assert!(
        !repo
            .pulls()
            .into_iter()
            .find(|p| p.number == n)
            .unwrap()
            .merged
    );
    assert!(settled(&gh, &inbox).await.is_empty());
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_merge_into_another_branch_closes_no_issue() {
    let (gh, repo, c, inbox) = echoing().await;
    let issue = repo.create_issue("Task", "", "alice");
    repo.push_files("story", &[("s.txt", "s\n")], "Story", "alice");
    repo.push_files("task", &[("t.txt", "t\n")], "Task", "alice");
    let r = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "Task", "head": "task", "base": "story", "body": format!("Fixes #{issue}")}),
        )
        .await;
    let n = r.body["number"].as_u64().unwrap();
    settled(&gh, &inbox).await;
    repo.merge_pull(n, "bob");
    let got = settled(&gh, &inbox).await;
    assert!(!summary(&got).iter().any(|(e, _, _)| e == "issues"));
    assert_eq!(repo.issue(issue).unwrap().state, "open");
    let p = repo.pulls().into_iter().find(|p| p.number == n).unwrap();
    assert_eq!(p.merged_by.as_deref(), Some("bob"));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn compare_lists_at_most_300_changed_files_as_github_does() {
    let (gh, repo, c, _inbox) = echoing().await;
    let names: Vec<String> = (0..301).map(|i| format!("f{i:03}.txt")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x\n")).collect();
    repo.push_files("feature", &files, "many", "alice");
    let r = c
        .get("/repos/acme/widgets/compare/main...feature?per_page=1")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["files"].as_array().unwrap().len(), 300);
    assert_eq!(r.body["commits"].as_array().unwrap().len(), 1, "per_page");
    gh.assert_contract_kept();
}
