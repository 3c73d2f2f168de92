//! Freeze and the audit log, end to end (issue 20, items 4 and 6): a
//! maintainer freezes and unfreezes the repository, a writer may not, and
//! every human decision that took effect is served by `GET /api/audit`
//! and shown on the dashboard; a refused one is not recorded.

use fakehub::payloads;
use serde_json::Value;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{TestApp, REPO};

const TOKEN: &str = "api-token";

/// `GET {path}` with the API token; the status and the JSON body.
async fn get_json(app: &TestApp, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(format!("{}{path}", app.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The dashboard's page, signed in with the token as the password.
async fn dashboard(app: &TestApp) -> String {
    reqwest::Client::new()
        .get(format!("{}/", app.url))
        .basic_auth("anyone", Some(TOKEN))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Each entry as one line (`action by login on object via …: reason`),
/// newest first.
pub(crate) async fn audit(app: &TestApp, query: &str) -> Vec<String> {
    let (status, body) = get_json(app, &format!("/api/audit{query}"), Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("-").to_owned();
            format!(
                "{} by {} on {} via {}: {}",
                s("action"),
                s("login"),
                s("object"),
                s("via"),
                s("reason")
            )
        })
        .collect()
}

/// Who reacted with +1 to comment `id` on `issue`.
fn plus_ones(app: &TestApp, issue: u64, id: u64) -> usize {
    app.fake
        .repo(REPO)
        .comments(issue)
        .into_iter()
        .find(|c| c.id == id)
        .map_or(0, |c| {
            c.reactions.iter().filter(|r| r.content == "+1").count()
        })
}

#[tokio::test]
async fn a_maintainer_freezes_and_unfreezes_the_repository_from_any_issue() {
    let app = TestApp::start().await;
    app.fake.add_user("mia", 78, "maintain");
    let issue = app
        .fake
        .repo(REPO)
        .create_issue("Release 2.0", "Tracking the release.", "mia");
    app.settle().await;

    // A reason is required.
    app.comment(issue, "mia", "/taskgate freeze").await;
    app.settle().await;
    insta::assert_snapshot!(app.replies(issue).join("\n"), @"@mia Could not run 'freeze': needs a reason. `/taskgate help` shows how each command is used.");
    assert_eq!(app.store().repo_freeze(&repo()).await.unwrap(), None);

    let freeze = app
        .comment(issue, "mia", "/taskgate freeze release 2.0 in progress")
        .await;
    app.settle().await;
    assert_eq!(plus_ones(&app, issue, freeze.id), 1, "done: a +1");
    let frozen = app.store().repo_freeze(&repo()).await.unwrap().unwrap();
    assert_eq!(
        (frozen.reason.as_str(), frozen.by_login.as_str()),
        ("release 2.0 in progress", "mia")
    );
    let page = dashboard(&app).await;
    let line = page
        .lines()
        .find(|l| l.contains("class=\"freeze\""))
        .expect("a freeze line");
    assert!(
        line.contains("octo-org/hello-world: frozen by @mia since ")
            && line.contains(": release 2.0 in progress. Nothing lands until"),
        "{line}"
    );

    let unfreeze = app.comment(issue, "mia", "/unfreeze").await;
    app.settle().await;
    assert_eq!(plus_ones(&app, issue, unfreeze.id), 1);
    assert_eq!(app.store().repo_freeze(&repo()).await.unwrap(), None);
    assert!(!dashboard(&app).await.contains("class=\"freeze\""));

    // Not frozen: a refusal, and nothing recorded for it.
    app.comment(issue, "mia", "/taskgate unfreeze").await;
    app.settle().await;
    insta::assert_snapshot!(app.replies(issue).join("\n"), @r"
    @mia Could not run 'freeze': needs a reason. `/taskgate help` shows how each command is used.
    @mia `/taskgate unfreeze` did nothing: the repository is not frozen.
    ");
    insta::assert_snapshot!(audit(&app, "").await.join("\n"), @r"
    unfreeze by mia on repository via command: -
    freeze by mia on repository via command: release 2.0 in progress
    ");
}

#[tokio::test]
async fn someone_with_write_permission_cannot_freeze() {
    let app = TestApp::start().await;
    let issue = app
        .fake
        .repo(REPO)
        .create_issue("Release 2.0", "Tracking the release.", "octocat");
    app.settle().await;
    app.comment(issue, "octocat", "/taskgate freeze my release")
        .await;
    app.settle().await;
    insta::assert_snapshot!(app.replies(issue).join("\n"), @"@octocat `/taskgate freeze` needs maintain permission on the repository; @octocat has write.");
    assert_eq!(app.store().repo_freeze(&repo()).await.unwrap(), None);
    assert!(
        audit(&app, "").await.is_empty(),
        "a refusal is not recorded"
    );
}

fn repo() -> taskgate_core::ids::RepoName {
    taskgate_core::ids::RepoName::parse(REPO).unwrap()
}

/// Two tested tasks and two done by hand.
fn audited() -> Plan {
    Plan::story("Audited work")
        .task(Task::check())
        .task(Task::new("second", "Second check").runs("sh check.sh"))
        .task(Task::untested("notes", "Release notes"))
        .task(Task::untested("extra", "Extra polish"))
}

/// Pushes `check.sh` exiting with `code` to `branch` and waits for its
/// one check run.
async fn push_check(s: &Story, branch: &str, code: u8, message: &str) {
    let script = format!("echo 'expected 10 rows, got 0' >&2; exit {code}\n");
    let sha = s
        .push_to(branch, &[("check.sh", script.as_str())], message)
        .await;
    s.completed(&sha, 1).await;
}

/// The open pull request from `branch`, marked ready for review.
async fn ready_pull(s: &Story, branch: &str) -> u64 {
    s.app.settle().await;
    let repo = s.app.fake.repo(REPO);
    let pr = repo
        .pulls()
        .into_iter()
        .find(|p| p.head == branch)
        .unwrap_or_else(|| panic!("a pull request from {branch}"))
        .number;
    repo.set_draft(pr, false, "agent");
    s.app.settle().await;
    pr
}

async fn api_post(app: &TestApp, path: &str, body: Option<&str>) -> u16 {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", app.url))
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn each_review_decision_is_audited_and_served_newest_first_with_filters() {
    let s = Story::of(&audited().yaml())
        .config("review: human\n")
        .start()
        .await;
    let app = &s.app;
    app.fake.add_user("mia", 78, "maintain");
    let (_, second_branch) = app.task_and_branch("Second check", "second");
    let (notes, _) = app.task_and_branch("Release notes", "notes");
    let (extra, _) = app.task_and_branch("Extra polish", "extra");

    // `check`: revised, then accepted through the API.
    push_check(&s, &s.branch, 0, "green").await;
    let pr = ready_pull(&s, &s.branch).await;
    app.comment(pr, "octocat", "/taskgate revise use the v2 endpoint")
        .await;
    app.settle().await;
    push_check(&s, &s.branch, 0, "v2").await;
    app.settle().await;
    let accept = format!("/api/tasks/{}/accept", s.task_issue);
    assert_eq!(api_post(app, &accept, None).await, 202);
    app.settle().await;
    assert!(s.pull().merged, "accepted through the API");

    // `second`: approved by a writer.
    push_check(&s, &second_branch, 0, "green").await;
    let second_pr = ready_pull(&s, &second_branch).await;
    app.comment(second_pr, "octocat", "/approve").await;
    app.settle().await;

    // `notes`: paused, resumed, rejected; `extra`: rejected by the API.
    for command in ["/pause", "/resume", "/reject Not needed after all."] {
        app.comment(notes, "octocat", command).await;
        app.settle().await;
    }
    let reject = format!("/api/tasks/{extra}/reject");
    assert_eq!(
        api_post(app, &reject, Some(r#"{"reason":"the plan was wrong"}"#)).await,
        202
    );
    app.settle().await;
    // A refused decision is not recorded: `notes` is rejected already.
    app.comment(notes, "octocat", "/pause").await;
    app.settle().await;

    let all = audit(app, "").await;
    insta::assert_snapshot!(all.join("\n"), @r"
    api_reject by the HTTP API on task #5 (extra) via api: the plan was wrong
    reject by octocat on task #4 (notes) via command: Not needed after all.
    resume by octocat on task #4 (notes) via command: -
    pause by octocat on task #4 (notes) via command: -
    approve by octocat on task #3 (second) via command: -
    api_accept by the HTTP API on task #2 (check) via api: -
    revise by octocat on task #2 (check) via command: use the v2 endpoint
    ");

    // Filters: the repository, a time, a limit.
    assert_eq!(audit(app, "?repo=octo-org/hello-world").await, all);
    assert!(audit(app, "?repo=someone/else").await.is_empty());
    assert_eq!(audit(app, "?limit=2").await, all[..2].to_vec());
    assert!(audit(app, "?since=2999-01-01T00:00:00Z").await.is_empty());
    assert_eq!(audit(app, "?since=0").await, all);
    let (_, body) = get_json(app, "/api/audit?limit=1", Some(TOKEN)).await;
    let at = body["entries"][0]["at"].as_str().unwrap().to_owned();
    assert!(at.ends_with('Z') && at.contains('T'), "{at}");
    assert_eq!(
        body["entries"][0]["user_id"],
        Value::Null,
        "the API: no user"
    );

    // Bad filters: a 400 saying what is wrong.
    for (query, says) in [
        ("?since=yesterday", "`since` must be an RFC 3339 timestamp"),
        ("?limit=0", "`limit` must be a whole number from 1 to 1000"),
        (
            "?limit=5000",
            "`limit` must be a whole number from 1 to 1000",
        ),
        ("?repo=not-a-repo", "`repo`: "),
    ] {
        let (status, body) = get_json(app, &format!("/api/audit{query}"), Some(TOKEN)).await;
        assert_eq!(status, 400, "{query}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(message.starts_with(says), "{query}: {message}");
    }
    assert_eq!(get_json(app, "/api/audit", None).await.0, 401);
    assert_eq!(get_json(app, "/api/audit", Some("wrong")).await.0, 401);
    // A read: a browser's Basic password will do, as for the stories.
    let basic = reqwest::Client::new()
        .get(format!("{}/api/audit", app.url))
        .basic_auth("anyone", Some(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status().as_u16(), 200);

    // The dashboard shows the same log.
    let page = dashboard(app).await;
    assert!(page.contains("<h2>Audit log</h2>"), "{page}");
    assert!(page.contains("<td>use the v2 endpoint</td>"), "{page}");
}

#[tokio::test]
async fn an_approved_branch_todo_and_an_override_are_audited() {
    let plan = audited().settings("auto_fix: false").yaml();
    let s = Story::of(&plan).config("review: human\n").start().await;
    let app = &s.app;
    app.fake.add_user("mia", 78, "maintain");
    push_check(&s, &s.branch, 1, "red").await;
    let check = app
        .fake
        .repo(REPO)
        .check_runs()
        .into_iter()
        .find(|c| c.name == "taskgate/test")
        .expect("the gate's check run");
    let pressed = payloads::check_run_requested_action(
        &app.fake.repo(REPO),
        check.id,
        "approve_branch",
        "octocat",
    );
    assert_eq!(app.deliver("check_run", &pressed).await.0, 202);
    app.settle().await;
    // Nothing left to approve: refused, not recorded.
    app.comment(s.task_issue, "octocat", "/taskgate approve-branch")
        .await;
    app.settle().await;
    let pr = ready_pull(&s, &s.branch).await;
    app.comment(
        pr,
        "mia",
        "/taskgate approve --override \"the flake is the CI's\"",
    )
    .await;
    app.settle().await;
    assert!(s.pull().merged);
    insta::assert_snapshot!(audit(app, "").await.join("\n"), @r#"
    override by mia on task #2 (check) via command: the flake is the CI's
    approve_branch by octocat on task #2 (check) via button: -
    attempt_counted by taskgate on task #2 (check) via loop: attempt 1 of 3 on branch todo `story=file:checks task=check todo=1` (role `coder`, no agent)
    "#);
}
