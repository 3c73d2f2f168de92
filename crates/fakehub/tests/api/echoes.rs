//! Echoes: every write, through the REST API with an installation token
//! (sender: the App's bot) or by a person through `RepoHandle` (sender: that
//! person), sends the webhooks GitHub sends for it, in order, to the App's
//! webhook; each payload is checked against GitHub's webhook schemas, so
//! `assert_contract_kept` ends every test.

use std::sync::{Arc, Mutex};

use fakehub::{FakeGitHub, RepoHandle};
use serde_json::{json, Value};

use crate::*;

pub(crate) const BOT: &str = "taskgate-test[bot]";
const ZERO: &str = "0000000000000000000000000000000000000000";

/// What the receiver got: (`X-GitHub-Event`, payload), in order.
#[derive(Clone, Default)]
pub(crate) struct Inbox(Arc<Mutex<Vec<(String, Value)>>>);

impl Inbox {
    /// Everything received so far, emptied.
    pub(crate) fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// (event, action, sender) of each webhook.
pub(crate) fn summary(got: &[(String, Value)]) -> Vec<(String, String, String)> {
    got.iter()
        .map(|(e, p)| {
            let action = p["action"].as_str().unwrap_or("-").to_string();
            (
                e.clone(),
                action,
                p["sender"]["login"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn expect(list: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|(e, a, s)| (e.to_string(), a.to_string(), s.to_string()))
        .collect()
}

/// A receiver on 127.0.0.1 that records each webhook and answers 202.
pub(crate) async fn receiver() -> (String, Inbox) {
    let inbox = Inbox::default();
    let seen = inbox.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let seen = seen.clone();
                async move {
                    let event = headers["x-github-event"].to_str().unwrap().to_string();
                    let sig = headers["x-hub-signature-256"].to_str().unwrap();
                    assert_eq!(sig, fakehub::signature("echo-secret", &body));
                    let payload: Value = serde_json::from_slice(&body).unwrap();
                    seen.0.lock().unwrap().push((event, payload));
                    axum::http::StatusCode::ACCEPTED
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), inbox)
}

/// `setup()` with the App webhook pointing at a fresh receiver.
pub(crate) async fn echoing() -> (FakeGitHub, RepoHandle, Client, Inbox) {
    let (gh, repo, c) = setup().await;
    let (url, inbox) = receiver().await;
    gh.set_app_webhook(&url, "echo-secret");
    (gh, repo, c, inbox)
}

/// Settles the echoes and returns what the receiver got since last time.
pub(crate) async fn settled(gh: &FakeGitHub, inbox: &Inbox) -> Vec<(String, Value)> {
    gh.echoes_settled().await;
    inbox.take()
}

#[tokio::test]
async fn a_branch_created_at_an_existing_commit_pushes_no_commits() {
    let (gh, repo, c, inbox) = echoing().await;
    let main = repo.branch_sha("main").unwrap();
    let create = json!({"ref": "refs/heads/taskgate/story-1", "sha": main});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", create).await.status,
        201
    );
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("create", "-", BOT),
            ("push", "-", BOT),
            ("check_suite", "requested", BOT)
        ])
    );
    assert_eq!(got[0].1["ref"], "taskgate/story-1");
    assert_eq!(got[0].1["ref_type"], "branch");
    let push = &got[1].1;
    assert_eq!(push["ref"], "refs/heads/taskgate/story-1");
    assert_eq!(
        (push["created"].clone(), push["before"].clone()),
        (json!(true), json!(ZERO))
    );
    assert_eq!(push["after"], json!(main));
    assert_eq!(push["commits"], json!([]));
    assert_eq!(push["head_commit"]["id"], json!(main));
    assert_eq!(push["pusher"]["name"], BOT);
    assert_eq!(got[2].1["check_suite"]["head_sha"], json!(main));

    // The head has a suite now: a second branch there requests none.
    let again = json!({"ref": "refs/heads/other", "sha": main});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", again).await.status,
        201
    );
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[("create", "-", BOT), ("push", "-", BOT)])
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn ref_updates_push_and_a_fast_forward_merges_the_pull_request() {
    let (gh, repo, c, inbox) = echoing().await;
    let main = repo.branch_sha("main").unwrap();
    let head = repo.push_files("feature", &[("a.txt", "a\n")], "Add a", "alice");
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("create", "-", "alice"),
            ("push", "-", "alice"),
            ("check_suite", "requested", "alice")
        ])
    );
    let push = &got[1].1;
    assert_eq!(push["created"], true);
    assert_eq!(push["commits"].as_array().unwrap().len(), 1);
    assert_eq!(push["commits"][0]["id"], json!(head));
    assert_eq!(push["commits"][0]["added"], json!(["a.txt"]));

    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "Feature", "head": "feature", "base": "main"}),
        )
        .await;
    assert_eq!(pr.status, 201);
    let number = pr.body["number"].as_u64().unwrap();
    let got = settled(&gh, &inbox).await;
    assert_eq!(summary(&got), expect(&[("pull_request", "opened", BOT)]));
    assert_eq!(got[0].1["pull_request"]["draft"], false);

    // Fast-forward main onto the pull request's head: GitHub merges it.
    let r = c
        .call(
            "PATCH",
            "/repos/acme/widgets/git/refs/heads/main",
            Some(json!({"sha": head})),
        )
        .await;
    assert_eq!(r.status, 200);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[("push", "-", BOT), ("pull_request", "closed", BOT)])
    );
    let push = &got[0].1;
    assert_eq!(
        (push["before"].clone(), push["after"].clone()),
        (json!(main), json!(head))
    );
    assert_eq!(
        (push["forced"].clone(), push["created"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(push["commits"][0]["id"], json!(head));
    let closed = &got[1].1["pull_request"];
    assert_eq!(
        (closed["merged"].clone(), closed["merge_commit_sha"].clone()),
        (json!(true), json!(head))
    );
    let p = repo
        .pulls()
        .into_iter()
        .find(|p| p.number == number)
        .unwrap();
    assert!(p.merged && p.merged_at.is_some());

    // A forced update, then a deletion.
    let r = c
        .call(
            "PATCH",
            "/repos/acme/widgets/git/refs/heads/feature",
            Some(json!({"sha": main, "force": true})),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = c
        .call("DELETE", "/repos/acme/widgets/git/refs/heads/feature", None)
        .await;
    assert_eq!(r.status, 204);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("push", "-", BOT),
            ("check_suite", "requested", BOT),
            ("push", "-", BOT)
        ])
    );
    assert_eq!(got[0].1["forced"], true);
    assert_eq!(got[0].1["commits"], json!([]));
    assert_eq!(
        (got[2].1["deleted"].clone(), got[2].1["after"].clone()),
        (json!(true), json!(ZERO))
    );
    assert_eq!(got[2].1["head_commit"], Value::Null);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn pull_requests_edit_ready_label_and_merge() {
    let (gh, repo, c, inbox) = echoing().await;
    repo.with_file("feature", "a.txt", "a\n");
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "Feature", "head": "feature", "base": "main", "draft": true}),
        )
        .await;
    let n = pr.body["number"].as_u64().unwrap();
    let path = format!("/repos/acme/widgets/pulls/{n}");
    c.call("PATCH", &path, Some(json!({"title": "Feature!"})))
        .await;
    let query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }";
    let ready = json!({"query": query, "variables": {"id": pr.body["node_id"]}});
    assert_eq!(c.post("/graphql", ready).await.status, 200);
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{n}/labels"),
            json!({"labels": ["ship"]}),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = c
        .call(
            "DELETE",
            &format!("/repos/acme/widgets/issues/{n}/labels/ship"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("pull_request", "opened", BOT),
            ("pull_request", "edited", BOT),
            ("pull_request", "ready_for_review", BOT),
            ("pull_request", "labeled", BOT),
            ("pull_request", "unlabeled", BOT),
        ])
    );
    assert_eq!(got[0].1["pull_request"]["draft"], true);
    assert_eq!(got[1].1["changes"], json!({"title": {"from": "Feature"}}));
    assert_eq!(got[3].1["label"]["name"], "ship");

    let main = repo.branch_sha("main").unwrap();
    let r = c
        .call("PUT", &format!("{path}/merge"), Some(json!({})))
        .await;
    assert_eq!(r.status, 200);
    let merge = r.body["sha"].as_str().unwrap().to_string();
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("pull_request", "closed", BOT),
            ("push", "-", BOT),
            ("check_suite", "requested", BOT)
        ])
    );
    assert_eq!(got[0].1["pull_request"]["merged"], true);
    let push = &got[1].1;
    assert_eq!(
        (push["ref"].clone(), push["before"].clone()),
        (json!("refs/heads/main"), json!(main))
    );
    let commits: Vec<&Value> = push["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert_eq!(commits, [&json!(merge)]);
    assert_eq!(got[2].1["check_suite"]["head_sha"], json!(merge));

    // Closing and reopening an unmerged one.
    repo.with_file("other", "b.txt", "b\n");
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "Other", "head": "other", "base": "main"}),
        )
        .await;
    let path = format!("/repos/acme/widgets/pulls/{}", pr.body["number"]);
    c.call("PATCH", &path, Some(json!({"state": "closed"})))
        .await;
    c.call("PATCH", &path, Some(json!({"state": "open"}))).await;
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("pull_request", "opened", BOT),
            ("pull_request", "closed", BOT),
            ("pull_request", "reopened", BOT)
        ])
    );
    assert_eq!(got[1].1["pull_request"]["merged"], false);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn issues_send_opened_labeled_assigned_then_the_differences() {
    let (gh, _repo, c, inbox) = echoing().await;
    // An assignee must be a collaborator GitHub can assign.
    gh.set_permission("octocat", "write");
    let r = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "Story", "body": "b", "labels": ["story", "p1"], "assignees": ["octocat"]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let n = r.body["number"].as_u64().unwrap();
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("issues", "opened", BOT),
            ("issues", "labeled", BOT),
            ("issues", "labeled", BOT),
            ("issues", "assigned", BOT)
        ])
    );
    assert_eq!(
        (
            got[1].1["label"]["name"].clone(),
            got[2].1["label"]["name"].clone()
        ),
        (json!("story"), json!("p1"))
    );
    assert_eq!(got[3].1["assignee"]["login"], "octocat");

    let path = format!("/repos/acme/widgets/issues/{n}");
    let patch = json!({"title": "Story 2", "state": "closed", "labels": ["story", "done"], "assignees": []});
    assert_eq!(c.call("PATCH", &path, Some(patch)).await.status, 200);
    // Nothing that echoes changed: nothing is sent.
    assert_eq!(
        c.call("PATCH", &path, Some(json!({"title": "Story 2"})))
            .await
            .status,
        200
    );
    assert_eq!(
        c.call("PATCH", &path, Some(json!({"state": "open"})))
            .await
            .status,
        200
    );
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("issues", "edited", BOT),
            ("issues", "closed", BOT),
            ("issues", "unlabeled", BOT),
            ("issues", "labeled", BOT),
            ("issues", "unassigned", BOT),
            ("issues", "reopened", BOT),
        ])
    );
    assert_eq!(got[0].1["changes"], json!({"title": {"from": "Story"}}));
    assert_eq!(got[2].1["label"]["name"], "p1");
    assert_eq!(got[3].1["label"]["name"], "done");

    // Comments, reactions (nothing) and a sub-issue link (nothing).
    let r = c
        .post(&format!("{path}/comments"), json!({"body": "hi"}))
        .await;
    let id = r.body["id"].as_u64().unwrap();
    let comment = format!("/repos/acme/widgets/issues/comments/{id}");
    c.call("PATCH", &comment, Some(json!({"body": "hello"})))
        .await;
    c.post(&format!("{comment}/reactions"), json!({"content": "eyes"}))
        .await;
    let sub = c
        .post("/repos/acme/widgets/issues", json!({"title": "Sub"}))
        .await;
    let sub_id = sub.body["id"].clone();
    let r = c
        .post(
            &format!("{path}/sub_issues"),
            json!({"sub_issue_id": sub_id}),
        )
        .await;
    assert_eq!(r.status, 201);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("issue_comment", "created", BOT),
            ("issue_comment", "edited", BOT),
            ("issues", "opened", BOT),
        ])
    );
    assert_eq!(got[1].1["changes"], json!({"body": {"from": "hi"}}));
    assert_eq!(got[1].1["comment"]["body"], "hello");
    gh.assert_contract_kept();
}

#[tokio::test]
async fn the_suite_completes_only_with_its_last_run() {
    let (gh, repo, c, inbox) = echoing().await;
    let sha = repo.push_files("feature", &[("a.txt", "a\n")], "Add a", "alice");
    let got = settled(&gh, &inbox).await;
    let suite = got[2].1["check_suite"]["id"].clone();
    let create = |name: &str| json!({"name": name, "head_sha": sha});
    let a = c
        .post("/repos/acme/widgets/check-runs", create("build"))
        .await;
    let b = c
        .post("/repos/acme/widgets/check-runs", create("test"))
        .await;
    let done = |conclusion: &str| json!({"status": "completed", "conclusion": conclusion});
    let patch = |r: &Resp| format!("/repos/acme/widgets/check-runs/{}", r.body["id"]);
    c.call("PATCH", &patch(&a), Some(done("success"))).await;
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("check_run", "created", BOT),
            ("check_run", "created", BOT),
            ("check_run", "completed", BOT)
        ])
    );
    for (_, p) in &got {
        assert_eq!(
            p["check_run"]["check_suite"]["id"], suite,
            "one suite per head"
        );
    }
    c.call("PATCH", &patch(&b), Some(done("failure"))).await;
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("check_run", "completed", BOT),
            ("check_suite", "completed", BOT)
        ])
    );
    let s = &got[1].1["check_suite"];
    assert_eq!(
        (s["id"].clone(), s["conclusion"].clone()),
        (suite, json!("failure"))
    );

    // A run on a commit without a suite creates it: no `requested` later.
    let main = repo.branch_sha("main").unwrap();
    let r = c
        .post(
            "/repos/acme/widgets/check-runs",
            json!({"name": "lint", "head_sha": main, "status": "completed", "conclusion": "neutral"}),
        )
        .await;
    assert_eq!(r.status, 201);
    let create = json!({"ref": "refs/heads/x", "sha": main});
    c.post("/repos/acme/widgets/git/refs", create).await;
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("check_run", "created", BOT),
            ("check_run", "completed", BOT),
            ("check_suite", "completed", BOT),
            ("create", "-", BOT),
            ("push", "-", BOT),
        ])
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn workflow_runs_send_requested_in_progress_completed() {
    let (gh, repo, c, inbox) = echoing().await;
    repo.add_workflow("deploy.yml");
    let r = c
        .post(
            "/repos/acme/widgets/actions/workflows/deploy.yml/dispatches",
            json!({"ref": "main", "return_run_details": true}),
        )
        .await;
    let run = r.body["workflow_run_id"].as_u64().unwrap();
    repo.start_run(run);
    repo.complete_run(run, "success", &[]);
    let other = repo.add_workflow_run("deploy.yml", "main", None);
    let r = c
        .post(
            &format!("/repos/acme/widgets/actions/runs/{other}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202);
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("workflow_run", "requested", BOT),
            ("workflow_run", "in_progress", BOT),
            ("workflow_run", "completed", BOT),
            ("workflow_run", "requested", BOT),
            ("workflow_run", "completed", BOT),
        ])
    );
    assert_eq!(got[2].1["workflow_run"]["conclusion"], "success");
    assert_eq!(got[4].1["workflow_run"]["conclusion"], "cancelled");
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_persons_actions_echo_with_that_person_as_sender() {
    let (gh, repo, _c, inbox) = echoing().await;
    let n = repo.create_issue("Bug", "it breaks", "alice");
    let comment = repo.add_comment(n, "+1", "bob");
    repo.edit_comment(comment.id, "+2", "carol");
    repo.add_labels(n, &["bug"], "octocat");
    repo.remove_label(n, "bug", "bob");
    repo.delete_comment(comment.id, "bob");
    repo.close_issue(n, "alice");
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("issues", "opened", "alice"),
            ("issue_comment", "created", "bob"),
            ("issue_comment", "edited", "carol"),
            ("issues", "labeled", "octocat"),
            ("issues", "unlabeled", "bob"),
            ("issue_comment", "deleted", "bob"),
            ("issues", "closed", "alice"),
        ])
    );
    assert_eq!(
        got[2].1["comment"]["user"]["login"], "bob",
        "the author stays"
    );
    assert_eq!(got[2].1["changes"]["body"]["from"], "+1");

    let first = repo.push_files("feature", &[("a.txt", "a\n")], "Add a", "alice");
    let pr = repo.create_pull("feature", "main", "Feature", "alice");
    let head = repo.push_files("feature", &[("c.txt", "c\n")], "Add c", "alice");
    repo.set_draft(pr, true, "alice");
    repo.set_draft(pr, false, "alice");
    repo.add_labels(pr, &["ship"], "octocat");
    let merge = repo.merge_pull(pr, "bob");
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("create", "-", "alice"),
            ("push", "-", "alice"),
            ("check_suite", "requested", "alice"),
            ("pull_request", "opened", "alice"),
            ("push", "-", "alice"),
            ("pull_request", "synchronize", "alice"),
            ("check_suite", "requested", "alice"),
            ("pull_request", "converted_to_draft", "alice"),
            ("pull_request", "ready_for_review", "alice"),
            ("pull_request", "labeled", "octocat"),
            ("pull_request", "closed", "bob"),
            ("push", "-", "bob"),
            ("check_suite", "requested", "bob"),
        ])
    );
    let sync = &got[5].1;
    assert_eq!(
        (sync["before"].clone(), sync["after"].clone()),
        (json!(first), json!(head))
    );
    assert_eq!(got[10].1["pull_request"]["merged"], true);
    assert_eq!(got[11].1["commits"][0]["id"], json!(merge));
    assert_eq!(repo.file("main", "a.txt").as_deref(), Some("a\n"));

    // A real git sha kept, pushed onto an existing branch.
    let sha = "1234567890abcdef1234567890abcdef12345678";
    repo.push_commit("feature", sha, "More", &[("b.txt", "b\n")], "alice");
    let got = settled(&gh, &inbox).await;
    assert_eq!(
        summary(&got),
        expect(&[
            ("push", "-", "alice"),
            ("check_suite", "requested", "alice")
        ])
    );
    assert_eq!(
        (got[0].1["before"].clone(), got[0].1["after"].clone()),
        (json!(head), json!(sha))
    );
    assert_eq!(got[0].1["commits"][0]["id"], json!(sha));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn counters_log_and_delivery_log_agree() {
    let (gh, repo, c, inbox) = echoing().await;
    // Seeding is silent.
    repo.with_file("main", "x.txt", "x");
    repo.record_commit("main", "abcdefabcdefabcdefabcdefabcdefabcdefabcd", "m", &[]);
    assert_eq!(gh.echo_stats(), fakehub::EchoStats::default());
    repo.create_issue("Bug", "b", "alice");
    c.post(
        "/repos/acme/widgets/issues/1/comments",
        json!({"body": "on it"}),
    )
    .await;
    gh.echoes_settled().await;
    let stats = gh.echo_stats();
    assert_eq!(
        (
            stats.queued,
            stats.delivered,
            stats.from_app,
            stats.from_people
        ),
        (2, 2, 1, 1)
    );
    let log = gh.echo_log();
    assert_eq!(
        log.iter()
            .map(|r| (
                r.event.as_str(),
                r.action.as_deref(),
                r.sender.as_str(),
                r.status
            ))
            .collect::<Vec<_>>(),
        [
            ("issues", Some("opened"), "alice", 202),
            ("issue_comment", Some("created"), BOT, 202)
        ]
    );
    let deliveries = gh.hook_deliveries();
    assert_eq!(deliveries.len(), 2);
    for d in &deliveries {
        let guid = d["guid"].as_str().unwrap();
        assert!(
            guid.len() == 32 && guid.chars().all(|c| c.is_ascii_hexdigit()),
            "{guid}"
        );
        assert_eq!(d["redelivery"], false);
    }
    assert_eq!(inbox.take().len(), 2);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn nothing_echoes_without_a_webhook_an_installation_or_when_silenced() {
    let (gh, repo, c) = setup().await;
    repo.create_issue("Bug", "b", "alice");
    let (url, inbox) = receiver().await;
    gh.set_app_webhook(&url, "echo-secret");
    let elsewhere = gh.repo("acme/uninstalled");
    elsewhere.create_issue("Bug", "b", "alice");
    gh.silence_echoes();
    c.post("/repos/acme/widgets/issues", json!({"title": "t"}))
        .await;
    gh.echoes_settled().await;
    assert_eq!(gh.echo_stats(), fakehub::EchoStats::default());
    assert!(inbox.take().is_empty());
}

#[tokio::test]
async fn an_installation_gets_only_the_events_it_is_subscribed_to() {
    let (gh, repo, c, inbox) = echoing().await;
    // Installed before the App asked for `issues`, never accepted.
    gh.subscribe(7, &["issue_comment"]);
    repo.create_issue("Bug", "b", "alice");
    c.post(
        "/repos/acme/widgets/issues/1/comments",
        json!({"body": "on it"}),
    )
    .await;
    let got = settled(&gh, &inbox).await;
    assert_eq!(summary(&got), expect(&[("issue_comment", "created", BOT)]));
    gh.assert_contract_kept();
}
