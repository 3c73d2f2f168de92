//! Several repositories in one installation, one in another owner: what an
//! installation lists and reaches, and the links GitHub allows across
//! repositories (sub-issues within one owner, blocked-by across any
//! repositories the caller can see).

use serde_json::json;

use crate::*;

/// `acme/api` and `acme/web` in installation 7, `acme/docs` not installed
/// (private), `other/lib` in installation 9 (public) and `other/secret`
/// there too (private).
async fn two_owners() -> (FakeGitHub, Client) {
    let gh = FakeGitHub::start().await;
    gh.install(7, "acme/api");
    gh.install(7, "acme/web");
    gh.repo("acme/docs").make_private();
    gh.install(9, "other/lib");
    gh.install(9, "other/secret").make_private();
    let c = installation_client(&gh, 7).await;
    (gh, c)
}

#[tokio::test]
async fn an_installation_lists_its_own_repositories_paged() {
    let (gh, c) = two_owners().await;
    let r = c.get("/installation/repositories").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["total_count"], 2);
    assert_eq!(r.body["repository_selection"], "selected");
    let names: Vec<&str> = r.body["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["full_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme/api", "acme/web"]);
    let r = c.get("/installation/repositories?per_page=1").await;
    assert_eq!(r.body["total_count"], 2);
    assert_eq!(r.body["repositories"].as_array().unwrap().len(), 1);
    let link = r.headers["link"].to_str().unwrap();
    assert!(link.contains("page=2>; rel=\"next\""), "{link}");
    // The other installation sees only its own.
    let other = installation_client(&gh, 9).await;
    assert_eq!(
        other.get("/installation/repositories").await.body["total_count"],
        2
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_repositorys_installation_is_found_and_a_repository_without_one_is_404() {
    let (gh, _) = two_owners().await;
    let app = app_client(&gh);
    assert_eq!(app.get("/repos/acme/web/installation").await.body["id"], 7);
    assert_eq!(app.get("/repos/other/lib/installation").await.body["id"], 9);
    assert_eq!(app.get("/repos/acme/docs/installation").await.status, 404);
    assert_eq!(
        app.get("/repos/acme/nothing/installation").await.status,
        404
    );
}

#[tokio::test]
async fn sub_issues_cross_repositories_of_one_owner_only() {
    let (gh, c) = two_owners().await;
    let story = gh.repo("acme/api").create_issue("story", "", "alice");
    let web = gh.repo("acme/web");
    let task = web.create_issue("task", "", "alice");
    let task_id = web.issue(task).unwrap().id;
    let url = format!("/repos/acme/api/issues/{story}/sub_issues");
    let r = c.post(&url, json!({"sub_issue_id": task_id})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["sub_issues_summary"]["total"], 1);
    let listed = c.get(&url).await.body;
    assert_eq!(listed[0]["number"], json!(task));
    assert!(
        listed[0]["repository_url"]
            .as_str()
            .unwrap()
            .ends_with("/repos/acme/web"),
        "{listed}"
    );
    // Closing the sub-issue in its own repository completes it.
    web.close_issue(task, "alice");
    let parent = c.get(&format!("/repos/acme/api/issues/{story}")).await.body;
    assert_eq!(parent["sub_issues_summary"]["completed"], 1);

    // Another owner's issue, though the caller can read it: 422.
    let lib = gh.repo("other/lib");
    let foreign = lib.issue(lib.create_issue("x", "", "bob")).unwrap().id;
    let r = c.post(&url, json!({"sub_issue_id": foreign})).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.body["message"], fakehub::SUB_ISSUE_SAME_OWNER);
    // An issue the caller cannot see, in its owner or another: 404.
    for hidden in ["acme/docs", "other/secret"] {
        let repo = gh.repo(hidden);
        let id = repo.issue(repo.create_issue("x", "", "bob")).unwrap().id;
        let r = c.post(&url, json!({"sub_issue_id": id})).await;
        assert_eq!(r.status, 404, "{hidden}: {}", r.body);
    }
}

#[tokio::test]
async fn blocked_by_crosses_repositories_the_caller_can_see() {
    let (gh, c) = two_owners().await;
    let api = gh.repo("acme/api");
    let provider = api.create_issue("api", "", "alice");
    let provider_id = api.issue(provider).unwrap().id;
    let web = gh.repo("acme/web");
    let consumer = web.create_issue("web", "", "alice");
    let url = format!("/repos/acme/web/issues/{consumer}/dependencies/blocked_by");
    let r = c.post(&url, json!({"issue_id": provider_id})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["number"], json!(provider));
    assert_eq!(web.issue(consumer).unwrap().blocked_by, [provider_id]);
    let listed = c.get(&url).await.body;
    assert!(
        listed[0]["repository_url"]
            .as_str()
            .unwrap()
            .ends_with("/repos/acme/api"),
        "{listed}"
    );
    let docs = gh.repo("acme/docs");
    let hidden = docs.issue(docs.create_issue("x", "", "bob")).unwrap().id;
    assert_eq!(c.post(&url, json!({"issue_id": hidden})).await.status, 404);
}
