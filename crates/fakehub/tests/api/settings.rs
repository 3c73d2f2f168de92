//! What `taskgate doctor` reads: an installation's permissions and events,
//! a repository's visibility, an organisation's plan, whether a user can be
//! assigned, and a workflow's state, as GitHub answers them.

use serde_json::json;

use crate::{app_client, installation_client, setup};

#[tokio::test]
async fn an_installation_shows_the_permissions_and_events_it_granted() {
    let (gh, _repo, _c) = setup().await;
    let app = app_client(&gh);
    let granted = app.get("/app/installations/7").await.body;
    // By default: everything taskgate's app-manifest.yml asks for.
    assert_eq!(granted["permissions"]["issues"], "write");
    assert!(granted["events"]
        .as_array()
        .unwrap()
        .contains(&json!("check_suite")));
    assert_eq!(granted["suspended_at"], json!(null));

    gh.grant(7, json!({"issues": "read", "metadata": "read"}));
    gh.subscribe(7, &["push"]);
    gh.suspend(7);
    let changed = app.get("/repos/acme/widgets/installation").await.body;
    assert_eq!(
        changed["permissions"],
        json!({"issues": "read", "metadata": "read"})
    );
    assert_eq!(changed["events"], json!(["push"]));
    assert!(changed["suspended_at"].is_string());
    let token = app
        .post("/app/installations/7/access_tokens", json!({}))
        .await;
    assert_eq!(token.body["permissions"]["issues"], "read");
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_user_can_be_assigned_with_write_access_or_as_an_organisations_member() {
    let gh = fakehub::FakeGitHub::start().await;
    gh.add_org("acme", "free");
    gh.install(7, "acme/widgets");
    gh.add_user("writer", 501, "write");
    gh.add_user("member", 502, "read");
    gh.add_user("outsider", 503, "none");
    let c = installation_client(&gh, 7).await;
    let status = |login: &'static str| {
        let c = &c;
        async move {
            c.get(&format!("/repos/acme/widgets/assignees/{login}"))
                .await
                .status
        }
    };
    assert_eq!(status("writer").await, 204);
    assert_eq!(status("member").await, 204);
    assert_eq!(status("outsider").await, 404);
    assert_eq!(status("ghost").await, 404);
    // In a person's repository, read access is not enough.
    gh.install(7, "alice/notes");
    let r = c.get("/repos/alice/notes/assignees/member").await;
    assert_eq!(r.status, 404);
    assert_eq!(
        c.get("/repos/alice/notes/assignees/alice").await.status,
        204
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn an_organisations_plan_is_shown_only_with_the_organisation_plan_permission() {
    let gh = fakehub::FakeGitHub::start().await;
    gh.add_org("acme", "team");
    let repo = gh.install(7, "acme/widgets");
    repo.make_private();
    let c = installation_client(&gh, 7).await;
    let about = c.get("/repos/acme/widgets").await.body;
    assert_eq!(
        (about["private"].clone(), about["visibility"].clone()),
        (json!(true), json!("private"))
    );
    let org = c.get("/orgs/acme").await;
    assert_eq!(org.status, 200);
    assert_eq!(org.body["type"], "Organization");
    assert_eq!(org.body.get("plan"), None);

    gh.grant(
        7,
        json!({"issues": "write", "metadata": "read", "organization_plan": "read"}),
    );
    let c = installation_client(&gh, 7).await;
    assert_eq!(c.get("/orgs/acme").await.body["plan"]["name"], "team");
    // A person is not an organisation.
    assert_eq!(c.get("/orgs/octocat").await.status, 404);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_workflow_on_the_default_branch_is_active_until_a_person_disables_it() {
    let (gh, repo, c) = setup().await;
    let path = "/repos/acme/widgets/actions/workflows/taskgate-run.yml";
    assert_eq!(c.get(path).await.status, 404);
    repo.with_file(
        "main",
        ".github/workflows/taskgate-run.yml",
        "on: workflow_dispatch\n",
    );
    let wf = c.get(path).await.body;
    assert_eq!(wf["state"], "active");
    assert_eq!(wf["path"], ".github/workflows/taskgate-run.yml");

    repo.disable_workflow("taskgate-run.yml");
    assert_eq!(c.get(path).await.body["state"], "disabled_manually");
    let dispatch = c
        .post(&format!("{path}/dispatches"), json!({"ref": "main"}))
        .await;
    assert_eq!(dispatch.status, 422);
    assert_eq!(
        dispatch.body["message"],
        "Cannot trigger a 'workflow_dispatch' on a disabled workflow"
    );
    gh.assert_contract_kept();
}
