use serde_json::json;

use crate::*;

#[tokio::test]
async fn refs_branches_contents_and_commits() {
    let (_gh, repo, c) = setup().await;
    repo.with_file("main", ".taskgate/stories/s.yml", "story: S\n");
    let main = repo.branch_sha("main").unwrap();
    let r = c.get("/repos/acme/widgets/git/ref/heads/main").await;
    assert_eq!(
        (r.status, r.body["object"]["sha"].clone()),
        (200, json!(main))
    );
    let create = json!({"ref": "refs/heads/taskgate/story-1", "sha": main});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", create.clone())
            .await
            .status,
        201
    );
    let r = c.post("/repos/acme/widgets/git/refs", create).await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (422, json!("Reference already exists"))
    );
    let r = c
        .get("/repos/acme/widgets/git/ref/heads/taskgate/story-1")
        .await;
    assert_eq!(r.body["ref"], "refs/heads/taskgate/story-1");
    assert_eq!(
        c.get("/repos/acme/widgets/branches/taskgate/story-1")
            .await
            .body["commit"]["sha"],
        json!(main)
    );
    let r = c
        .get("/repos/acme/widgets/contents/.taskgate/stories/s.yml?ref=main")
        .await;
    assert_eq!(r.body["encoding"], "base64");
    use base64::Engine;
    let raw: String = r.body["content"].as_str().unwrap().split('\n').collect();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .unwrap(),
        b"story: S\n"
    );
    assert_eq!(
        c.get("/repos/acme/widgets/contents/missing.txt")
            .await
            .status,
        404
    );
    assert_eq!(
        c.get(&format!("/repos/acme/widgets/commits/{main}"))
            .await
            .body["sha"],
        json!(main)
    );
}

#[tokio::test]
async fn pulls_merge_405_when_unmergeable_and_409_on_a_stale_sha() {
    let (_gh, repo, c) = setup().await;
    repo.with_file("feature", "a.txt", "a");
    let head = repo.branch_sha("feature").unwrap();
    let body = json!({"title": "Feature", "head": "feature", "base": "main"});
    let r = c.post("/repos/acme/widgets/pulls", body.clone()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let n = r.body["number"].as_u64().unwrap();
    let r = c.post("/repos/acme/widgets/pulls", body).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["errors"][0]["message"],
        "A pull request already exists for acme:feature."
    );
    let merge = format!("/repos/acme/widgets/pulls/{n}/merge");
    repo.set_mergeable(n, false);
    assert_eq!(
        c.call("PUT", &merge, Some(json!({"sha": head})))
            .await
            .status,
        405
    );
    repo.set_mergeable(n, true);
    assert_eq!(
        c.call("PUT", &merge, Some(json!({"sha": "0".repeat(40)})))
            .await
            .status,
        409
    );
    let r = c
        .call(
            "PUT",
            &merge,
            Some(json!({"sha": head, "merge_method": "squash"})),
        )
        .await;
    assert_eq!((r.status, r.body["merged"].clone()), (200, json!(true)));
    assert_eq!(repo.file("main", "a.txt").as_deref(), Some("a"));
    assert!(repo.pulls()[0].merged);
    // Labels on a pull request go through the issues API, as on GitHub.
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{n}/labels"),
            json!({"labels": ["ship"]}),
        )
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn check_runs_enforce_githubs_limits() {
    let (gh, repo, c) = setup().await;
    let sha = repo.branch_sha("main").unwrap();
    let r = c
        .post(
            "/repos/acme/widgets/check-runs",
            json!({"name": "taskgate/unit", "head_sha": sha, "status": "in_progress"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_u64().unwrap();
    let long = "x".repeat(65536);
    let r = c.call("PATCH", &format!("/repos/acme/widgets/check-runs/{id}"),
        Some(json!({"conclusion": "failure", "output": {"title": "t", "summary": "s", "text": long}}))).await;
    assert_eq!(r.status, 422);
    let annotations: Vec<_> = (0..51).map(|i| json!({"path": "a.rs", "start_line": i + 1, "end_line": i + 1, "annotation_level": "failure", "message": "m"})).collect();
    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/check-runs/{id}"),
            Some(json!({"output": {"title": "t", "summary": "s", "annotations": annotations}})),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(gh.contract_violations().len(), 2);
    let r = c.call("PATCH", &format!("/repos/acme/widgets/check-runs/{id}"),
        Some(json!({"conclusion": "failure", "output": {"title": "1 failed", "summary": "s"},
                    "actions": [{"label": "Retry", "identifier": "retry", "description": "x".repeat(41)}]}))).await;
    assert_eq!(r.status, 422, "description over 40 characters");
    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/check-runs/{id}"),
            Some(json!({"conclusion": "failure", "output": {"title": "1 failed", "summary": "s"}})),
        )
        .await;
    assert_eq!(
        (r.status, r.body["status"].clone()),
        (200, json!("completed"))
    );
    let r = c.get("/repos/acme/widgets/commits/main/check-runs").await;
    assert_eq!(r.body["total_count"], 1);
    assert_eq!(repo.check_runs()[0].conclusion.as_deref(), Some("failure"));
}

#[tokio::test]
async fn workflow_dispatch_runs_and_artifact_redirect() {
    let (gh, repo, c) = setup().await;
    let url = "/repos/acme/widgets/actions/workflows/deploy.yml/dispatches";
    assert_eq!(c.post(url, json!({"ref": "main"})).await.status, 404);
    repo.add_workflow("deploy.yml");
    assert_eq!(
        c.post(url, json!({"ref": "main", "inputs": {"story": "1"}}))
            .await
            .status,
        204
    );
    let first = &repo.dispatches()[0];
    assert_eq!(first.inputs, json!({"story": "1"}));
    let run = repo
        .runs()
        .into_iter()
        .find(|r| r.id == first.run_id)
        .unwrap();
    assert_eq!(
        (run.status.as_str(), run.head_sha),
        ("queued", repo.branch_sha("main").unwrap())
    );
    let r = c
        .post(url, json!({"ref": "main", "return_run_details": true}))
        .await;
    assert_eq!(r.status, 200);
    let id = repo.dispatches()[1].run_id;
    assert_eq!(r.body["workflow_run_id"], json!(id));
    assert!(r.body["run_url"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/repos/acme/widgets/actions/runs/{id}")));
    assert_eq!(
        r.body["html_url"],
        json!(format!("https://github.com/acme/widgets/actions/runs/{id}"))
    );

    let run = repo.add_workflow_run("test.yml", "main", Some("success"));
    let art = repo.add_artifact(run, "report", b"PK\x03\x04zip");
    let r = c
        .get(&format!("/repos/acme/widgets/actions/runs/{run}/artifacts"))
        .await;
    assert_eq!(r.body["artifacts"][0]["name"], "report");
    let r = c
        .get(&format!("/repos/acme/widgets/actions/artifacts/{art}/zip"))
        .await;
    assert_eq!(r.status, 302);
    let location = r.headers["location"].to_str().unwrap();
    assert!(
        !location.starts_with(&gh.url()),
        "storage is another origin"
    );
    let bytes = reqwest::get(location).await.unwrap().bytes().await.unwrap();
    assert_eq!(&bytes[..], b"PK\x03\x04zip");
    gh.assert_contract_kept();
    // Storage refuses GitHub's token: a client must drop it on the redirect.
    let r = http()
        .get(location)
        .header("authorization", &c.auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(gh.contract_violations().len(), 1);
}

#[tokio::test]
async fn collaborator_permission_uses_githubs_legacy_field() {
    let (gh, _repo, c) = setup().await;
    gh.add_user("mia", 501, "maintain");
    let r = c
        .get("/repos/acme/widgets/collaborators/mia/permission")
        .await;
    assert_eq!(
        (r.body["permission"].clone(), r.body["role_name"].clone()),
        (json!("write"), json!("maintain"))
    );
    assert_eq!(
        c.get("/repos/acme/widgets/collaborators/acme/permission")
            .await
            .body["permission"],
        "admin"
    );
    assert_eq!(
        c.get("/repos/acme/widgets/collaborators/ghost/permission")
            .await
            .status,
        404
    );
}

/// GitHub caps a dispatch's inputs at 65,535 characters in all.
#[tokio::test]
async fn a_dispatch_with_inputs_over_githubs_cap_is_refused() {
    let (_gh, repo, c) = setup().await;
    let url = "/repos/acme/widgets/actions/workflows/agent.yml/dispatches";
    repo.add_workflow("agent.yml");
    let big = "x".repeat(65_535);
    let r = c
        .post(url, json!({"ref": "main", "inputs": {"evidence": big}}))
        .await;
    assert_eq!(r.status, 422, "{:?}", r.body);
    assert!(repo.dispatches().is_empty());
    let fits = "x".repeat(16_000);
    let r = c
        .post(url, json!({"ref": "main", "inputs": {"evidence": fits}}))
        .await;
    assert_eq!(r.status, 204);
}
