//! GitHub refuses an App without `workflows: write` any change to a file
//! under `.github/workflows/`: a ref update, a merge through the merges
//! API, a pull request's merge; with the permission each goes through.

use serde_json::json;

use crate::*;

const REFUSED: &str = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";

fn manifest_and(extra: Option<(&str, &str)>) -> serde_json::Value {
    let mut p = json!({"actions": "write", "checks": "write", "contents": "write",
        "issues": "write", "metadata": "read", "pull_requests": "write"});
    if let Some((k, v)) = extra {
        p[k] = json!(v);
    }
    p
}

#[tokio::test]
async fn a_workflow_change_needs_the_workflows_permission_to_land() {
    let (gh, repo, c) = setup().await;
    repo.with_file("ci", ".github/workflows/ci.yml", "on: push\n");
    repo.with_file("docs", "README.md", "docs\n");
    let ci = repo.branch_sha("ci").unwrap();
    let main = repo.branch_sha("main").unwrap();

    // A fast-forward of main to the workflow change: 422.
    let r = c
        .call(
            "PATCH",
            "/repos/acme/widgets/git/refs/heads/main",
            Some(json!({"sha": ci})),
        )
        .await;
    assert_eq!((r.status, r.body["message"].as_str()), (422, Some(REFUSED)));
    // The merges API: 409, and main stays.
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "ci"}),
        )
        .await;
    assert_eq!((r.status, r.body["message"].as_str()), (409, Some(REFUSED)));
    // A pull request's merge: 405.
    let pr = repo.create_pull("ci", "main", "CI", "alice");
    let merge = format!("/repos/acme/widgets/pulls/{pr}/merge");
    let r = c.call("PUT", &merge, Some(json!({}))).await;
    assert_eq!((r.status, r.body["message"].as_str()), (405, Some(REFUSED)));
    assert_eq!(repo.branch_sha("main").unwrap(), main, "nothing moved");
    // Other changes land as ever.
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "docs"}),
        )
        .await;
    assert_eq!(r.status, 201);

    gh.grant(7, manifest_and(Some(("workflows", "write"))));
    let c = installation_client(&gh, 7).await;
    let r = c.call("PUT", &merge, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}
