//! GitHub's limits on one repository (issue 33): drafts the owner's plan
//! does not have, assignees that cannot be assigned.

use serde_json::json;

use crate::*;

#[tokio::test]
async fn a_repository_without_drafts_refuses_a_draft_and_takes_a_normal_pr() {
    let (_gh, repo, c) = setup().await;
    repo.without_drafts();
    repo.push_files("feature", &[("f.txt", "x")], "work", "alice");
    let ask =
        |draft: bool| json!({"title": "t", "head": "feature", "base": "main", "draft": draft});
    let r = c.post("/repos/acme/widgets/pulls", ask(true)).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["errors"][0]["message"],
        "Draft pull requests are not supported in this repository."
    );
    assert!(repo.pulls().is_empty());
    let r = c.post("/repos/acme/widgets/pulls", ask(false)).await;
    assert_eq!((r.status, r.body["draft"].clone()), (201, json!(false)));
}

#[tokio::test]
async fn an_issue_for_a_login_that_cannot_be_assigned_is_refused_whole() {
    let (gh, repo, c) = setup().await;
    gh.add_user("alice", 77, "write");
    gh.add_user("reader", 78, "read");
    let r = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "t", "assignees": ["alice", "ghost"]}),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["errors"][0],
        json!({"value": "ghost", "resource": "Issue", "field": "assignees", "code": "invalid"})
    );
    let reader = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "t", "assignees": ["reader"]}),
        )
        .await;
    assert_eq!(reader.status, 422, "read access is not enough");
    assert!(repo.issues().is_empty());
    let r = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "t", "assignees": ["alice", "acme"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(repo.issues()[0].assignees, ["alice", "acme"]);
}

#[tokio::test]
async fn another_apps_check_run_is_listed_as_its_own_and_cannot_be_changed() {
    let (_gh, repo, c) = setup().await;
    let sha = repo.branch_sha("main").unwrap();
    let theirs = repo.add_check_run_of_app((9_999, "other-app"), "taskgate/unit", &sha, "k");
    let ours = c
        .post(
            "/repos/acme/widgets/check-runs",
            json!({"name": "taskgate/unit", "head_sha": sha, "external_id": "k"}),
        )
        .await;
    assert_eq!(ours.status, 201);
    let list = c
        .get(&format!(
            "/repos/acme/widgets/commits/{sha}/check-runs?check_name=taskgate/unit&filter=all"
        ))
        .await;
    let apps: Vec<u64> = list.body["check_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["app"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(apps.len(), 2);
    assert!(apps.contains(&9_999));
    let own_app = ours.body["app"]["id"].as_u64().unwrap();
    let mine = c
        .get(&format!(
            "/repos/acme/widgets/commits/{sha}/check-runs?app_id={own_app}&filter=all"
        ))
        .await;
    assert_eq!(mine.body["total_count"], 1);

    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/check-runs/{theirs}"),
            Some(json!({"status": "completed", "conclusion": "success"})),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.body["message"],
        "Invalid app_id `9999` - check run can only be modified by the GitHub App that created it."
    );
    assert_eq!(
        repo.check_runs()
            .iter()
            .find(|c| c.id == theirs)
            .unwrap()
            .status,
        "queued"
    );
}
