//! The read-lag fault (`FakeGitHub::set_read_lag`): for a while after a
//! write, reads see the state before it, as GitHub's replicas may; writes
//! apply at once. The test moves GitHub's clock on (`FakeGitHub::advance`)
//! instead of waiting for the lag to run out.

use std::time::Duration;

use serde_json::json;

use crate::*;

#[tokio::test]
async fn read_lag_hides_new_objects_and_merges_for_a_while() {
    let (gh, repo, c) = setup().await;
    gh.set_read_lag(Duration::from_secs(600));
    let main = repo.branch_sha("main").unwrap();
    let r = c
        .post(
            "/repos/acme/widgets/git/refs",
            json!({"ref": "refs/heads/new", "sha": main}),
        )
        .await;
    assert_eq!(r.status, 201, "writes apply at once");
    assert_eq!(
        c.get("/repos/acme/widgets/git/ref/heads/new").await.status,
        404
    );
    assert_eq!(c.get("/repos/acme/widgets/branches/new").await.status, 404);
    let parent = c
        .post("/repos/acme/widgets/issues", json!({"title": "Parent"}))
        .await;
    let sub = c
        .post("/repos/acme/widgets/issues", json!({"title": "Sub"}))
        .await;
    assert_eq!(c.get("/repos/acme/widgets/issues/1").await.status, 404);
    let link = json!({"sub_issue_id": sub.body["id"]});
    let path = format!(
        "/repos/acme/widgets/issues/{}/sub_issues",
        parent.body["number"]
    );
    let r = c.post(&path, link.clone()).await;
    assert_eq!(
        r.status, 404,
        "as GitHub answers a sub-issue it cannot find"
    );

    repo.with_file("feature", "a.txt", "a");
    let n = repo.create_pull("feature", "main", "F", "alice");
    assert_eq!(
        c.get(&format!("/repos/acme/widgets/pulls/{n}"))
            .await
            .status,
        404
    );

    // Once the replicas caught up: visible, and a merge reads open for a while.
    gh.set_read_lag(Duration::from_secs(60));
    let n = {
        repo.with_file("other", "b.txt", "b");
        repo.create_pull("other", "main", "O", "alice")
    };
    gh.advance(Duration::from_secs(61));
    let pull = format!("/repos/acme/widgets/pulls/{n}");
    assert_eq!(c.get(&pull).await.status, 200);
    let r = c
        .call("PUT", &format!("{pull}/merge"), Some(json!({})))
        .await;
    assert_eq!(r.status, 200);
    let r = c.get(&pull).await;
    assert_eq!(
        (r.body["merged"].clone(), r.body["state"].clone()),
        (json!(false), json!("open"))
    );
    assert!(
        repo.pulls().iter().any(|p| p.number == n && p.merged),
        "the write applied"
    );
    gh.advance(Duration::from_secs(61));
    let r = c.get(&pull).await;
    assert_eq!(
        (r.body["merged"].clone(), r.body["state"].clone()),
        (json!(true), json!("closed"))
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn lists_leave_out_new_issues_comments_and_runs_for_a_while() {
    let (gh, repo, c) = setup().await;
    repo.add_workflow("agent.yml");
    gh.set_read_lag(Duration::from_secs(60));
    let issue = c
        .post("/repos/acme/widgets/issues", json!({"title": "New"}))
        .await;
    assert_eq!(issue.status, 201, "writes apply at once");
    let number = issue.body["number"].as_u64().unwrap();
    let comments = format!("/repos/acme/widgets/issues/{number}/comments");
    gh.advance(Duration::from_secs(61));
    let r = c.post(&comments, json!({"body": "hello"})).await;
    assert_eq!(r.status, 201);
    let r = c
        .post(
            "/repos/acme/widgets/actions/workflows/agent.yml/dispatches",
            json!({"ref": "main"}),
        )
        .await;
    assert_eq!(r.status, 204);
    let again = c
        .post("/repos/acme/widgets/issues", json!({"title": "Newer"}))
        .await;
    assert_eq!(again.status, 201);
    assert_eq!(
        listed(&c, &comments).await,
        (1, 0, 0),
        "the new issue, comment and run are not listed yet"
    );
    gh.advance(Duration::from_secs(61));
    assert_eq!(
        listed(&c, &comments).await,
        (2, 1, 1),
        "listed once the lag ran out"
    );
    gh.assert_contract_kept();
}

/// How many issues, comments on the issue and dispatched runs are listed.
async fn listed(c: &Client, comments: &str) -> (usize, usize, usize) {
    let issues = c.get("/repos/acme/widgets/issues?state=all").await.body;
    let comments = c.get(comments).await.body;
    let runs = "/repos/acme/widgets/actions/workflows/agent.yml/runs?event=workflow_dispatch";
    let runs = c.get(runs).await.body;
    (
        issues.as_array().unwrap().len(),
        comments.as_array().unwrap().len(),
        runs["workflow_runs"].as_array().unwrap().len(),
    )
}
