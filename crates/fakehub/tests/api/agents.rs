//! fakehub plays the coding agents (`fakehub::AgentTrigger`): each starts
//! exactly when GitHub would start it, receives the issue and its
//! instructions, and pushes its fix as its own bot, which arrives as the
//! `push` webhook. Copilot is not assigned with an installation token.

use std::sync::{Arc, Mutex};

use fakehub::{AgentCall, AgentPush, AgentTrigger, FakeGitHub, COPILOT};
use serde_json::{json, Value};

use crate::echoes::{echoing, settled};
use crate::*;

/// An agent that pushes `fix.txt` to branch `todo`, and the calls it got.
fn fixing(gh: &FakeGitHub, login: &str, trigger: AgentTrigger) {
    gh.add_agent("acme/widgets", login, trigger, |_call: &AgentCall| {
        Some(AgentPush::to("todo", &[("fix.txt", "fixed")]))
    });
}

fn pushes_by(got: &[(String, Value)], login: &str) -> Vec<String> {
    got.iter()
        .filter(|(e, p)| e == "push" && p["sender"]["login"] == login)
        .map(|(_, p)| p["ref"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn copilot_starts_when_a_person_assigns_it_and_pushes_as_its_bot() {
    let (gh, repo, _c, inbox) = echoing().await;
    gh.add_user("alice", 11, "write");
    fixing(&gh, COPILOT, AgentTrigger::Assigned);
    let n = repo.create_issue("Fix the parser", "evidence: test_x failed", "alice");
    assert!(
        gh.agent_calls().is_empty(),
        "opening the issue starts nothing"
    );

    repo.assign(n, COPILOT, "alice");

    let calls = gh.agent_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].agent, COPILOT);
    assert_eq!(calls[0].issue, Some(n));
    assert_eq!(
        calls[0].issue_body.as_deref(),
        Some("evidence: test_x failed")
    );
    assert_eq!(repo.file("todo", "fix.txt").as_deref(), Some("fixed"));
    let head = repo.branch_sha("todo").unwrap();
    let author = repo.commit(&head).unwrap().authorship.unwrap().author;
    assert_eq!(author.name, COPILOT);
    let got = settled(&gh, &inbox).await;
    assert_eq!(pushes_by(&got, COPILOT), ["refs/heads/todo"]);
}

#[tokio::test]
async fn copilot_is_silently_not_assigned_with_an_installation_token() {
    let (gh, repo, c) = setup().await;
    fixing(&gh, COPILOT, AgentTrigger::Assigned);
    let n = repo.create_issue("Fix", "b", "acme");

    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/issues/{n}"),
            Some(json!({"assignees": [COPILOT]})),
        )
        .await;
    assert_eq!(r.status, 200, "GitHub accepts the write");
    assert_eq!(r.body["assignees"], json!([]), "and leaves Copilot out");

    let r = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "Todo", "assignees": [COPILOT]}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["assignees"], json!([]));
    assert!(gh.agent_calls().is_empty(), "no agent session starts");
    assert_eq!(repo.branch_sha("todo"), None);
}

#[tokio::test]
async fn a_comment_mentioning_the_handle_starts_the_agent_with_that_comment() {
    let (gh, repo, c, inbox) = echoing().await;
    fixing(&gh, "claude[bot]", AgentTrigger::Mention("@claude".into()));
    let n = repo.create_issue("Fix", "the failing test", "acme");
    let comments = format!("/repos/acme/widgets/issues/{n}/comments");

    let r = c
        .post(&comments, json!({"body": "@claudette, not you"}))
        .await;
    assert_eq!(r.status, 201);
    assert!(gh.agent_calls().is_empty(), "another handle starts nothing");

    let asked = "@claude fix `tests/test_x.py::test_y`: assert 1 == 2";
    assert_eq!(c.post(&comments, json!({"body": asked})).await.status, 201);

    let calls = gh.agent_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].instructions.as_deref(), Some(asked));
    assert_eq!(calls[0].issue_body.as_deref(), Some("the failing test"));
    let got = settled(&gh, &inbox).await;
    assert_eq!(pushes_by(&got, "claude[bot]"), ["refs/heads/todo"]);
}

#[tokio::test]
async fn an_agent_is_not_started_by_its_own_comment() {
    let (gh, repo, _c) = setup().await;
    fixing(&gh, "claude[bot]", AgentTrigger::Mention("@claude".into()));
    let n = repo.create_issue("Fix", "b", "acme");
    repo.add_comment(n, "@claude here: I pushed a fix", "claude[bot]");
    assert!(gh.agent_calls().is_empty());
    repo.add_comment(n, "@claude please look again", "alice");
    assert_eq!(gh.agent_calls().len(), 1, "a person's mention does");
}

#[tokio::test]
async fn its_label_starts_the_agent_and_another_does_not() {
    let (gh, repo, c) = setup().await;
    fixing(
        &gh,
        "openhands-agent[bot]",
        AgentTrigger::Label("fix-me".into()),
    );
    let n = repo.create_issue("Fix", "the whole issue", "acme");
    let labels = format!("/repos/acme/widgets/issues/{n}/labels");

    assert_eq!(
        c.post(&labels, json!({"labels": ["bug"]})).await.status,
        200
    );
    assert!(gh.agent_calls().is_empty());
    assert_eq!(
        c.post(&labels, json!({"labels": ["fix-me"]})).await.status,
        200
    );

    let calls = gh.agent_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].agent, "openhands-agent[bot]");
    assert_eq!(calls[0].issue_body.as_deref(), Some("the whole issue"));
    assert_eq!(repo.file("todo", "fix.txt").as_deref(), Some("fixed"));
}

#[tokio::test]
async fn a_dispatch_of_its_workflow_starts_the_agent_on_the_dispatched_branch() {
    let (gh, repo, c) = setup().await;
    repo.add_workflow("agent.yml");
    repo.add_workflow("other.yml");
    repo.with_file("todo-1", "a.txt", "a");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    gh.add_agent(
        "acme/widgets",
        "runner-agent[bot]",
        AgentTrigger::Dispatch("agent.yml".into()),
        move |call: &AgentCall| {
            log.lock().unwrap().push(call.clone());
            let branch = call.branch.clone()?;
            Some(AgentPush::to(&branch, &[("fix.txt", "fixed")]))
        },
    );
    let dispatch = |file: &str| format!("/repos/acme/widgets/actions/workflows/{file}/dispatches");
    let body = json!({"ref": "todo-1", "inputs": {"issue": "7"}});

    assert_eq!(
        c.post(&dispatch("other.yml"), body.clone()).await.status,
        204
    );
    assert!(gh.agent_calls().is_empty());
    assert_eq!(c.post(&dispatch("agent.yml"), body).await.status, 204);

    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "the reaction ran once");
    assert_eq!(calls[0].branch.as_deref(), Some("todo-1"));
    let inputs: Value = serde_json::from_str(calls[0].instructions.as_deref().unwrap()).unwrap();
    assert_eq!(inputs, json!({"issue": "7"}));
    assert_eq!(repo.file("todo-1", "fix.txt").as_deref(), Some("fixed"));
}

#[tokio::test]
async fn removing_assignees_takes_them_off_and_sends_unassigned_for_each() {
    let (gh, repo, c, inbox) = echoing().await;
    gh.add_user("alice", 11, "write");
    gh.add_user("bob", 12, "write");
    let n = repo.create_issue("Todo", "b", "acme");
    repo.assign(n, "alice", "alice");
    repo.assign(n, "bob", "alice");

    let r = c
        .call(
            "DELETE",
            &format!("/repos/acme/widgets/issues/{n}/assignees"),
            Some(json!({"assignees": ["alice", "carol"]})),
        )
        .await;

    assert_eq!(r.status, 200, "{}", r.body);
    let left: Vec<&str> = r.body["assignees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["login"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["bob"], "one not assigned is ignored");
    assert_eq!(repo.issue(n).unwrap().assignees, ["bob"]);
    let got = settled(&gh, &inbox).await;
    let unassigned: Vec<&str> = got
        .iter()
        .filter(|(e, p)| e == "issues" && p["action"] == "unassigned")
        .map(|(_, p)| p["assignee"]["login"].as_str().unwrap())
        .collect();
    assert_eq!(unassigned, ["alice"]);
}
