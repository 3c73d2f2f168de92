//! The agents people run, end to end (issue 30): a task's run fails, its
//! branch todo opens, the role's agent is started exactly as GitHub starts
//! it (fakehub's agents: a mention, a label, a dispatch, an assignment to
//! Copilot), gets the todo with its evidence, pushes a fix to the task
//! branch as its bot, the run passes and the todo closes.

use fakehub::{AgentCall, AgentPush, AgentTrigger, COPILOT};

use crate::support::eventually;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

/// A real failing unittest, and its fix.
const RED: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(0, 10, 'expected 10 rows')\n";
const GREEN: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(10, 10)\n";
/// The gate's command: what reproduces the failure.
const COMMAND: &str = "python3 -m unittest -q test_rows";

fn plan() -> String {
    Plan::story("Agent work")
        .settings("max_debug_attempts: 2, max_branch_depth: 1")
        .task(
            Task::new("check", "Make the check pass")
                .role("coder")
                .runs(COMMAND),
        )
        .yaml()
}

/// The story, with `config`'s roles, on a git remote the fake's own
/// commits (the agents' pushes) are real in.
async fn story(config: &str) -> Story {
    Story::of(&plan()).config(config).backed().start().await
}

/// An agent `login` started by `trigger` that pushes the fix to the task
/// branch.
fn fixing_agent(s: &Story, login: &str, trigger: AgentTrigger) {
    let branch = s.branch.clone();
    s.app.fake.add_agent(REPO, login, trigger, move |_| {
        Some(AgentPush::to(&branch, &[("test_rows.py", GREEN)]))
    });
}

/// The task's run fails: its todo opens (and whatever the todo starts).
async fn red_run(s: &Story) {
    let sha = s.push(&[("test_rows.py", RED)], "try").await;
    s.completed(&sha, 1).await;
}

fn todos(s: &Story) -> Vec<fakehub::Issue> {
    let mut found: Vec<_> = s
        .app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with("Debug Make the check pass"))
        .collect();
    found.sort_by_key(|i| i.number);
    found
}

/// The one todo, once the agent's fix has been tested and it is closed;
/// the agent's commit on the task branch passed.
async fn fixed_by(s: &Story, login: &str) -> fakehub::Issue {
    eventually("the todo closed by the agent's fix", || async {
        todos(s).iter().any(|t| t.state == "closed")
    })
    .await;
    s.app.settle().await;
    let repo = s.app.fake.repo(REPO);
    let head = repo.branch_sha(&s.branch).unwrap();
    let author = repo.commit(&head).unwrap().authorship.unwrap().author;
    assert_eq!(author.name, login, "the fix is the agent's commit");
    let checks = s.checks(&head);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    let todos = todos(s);
    assert_eq!(todos.len(), 1, "{todos:#?}");
    assert_eq!(todos[0].state, "closed");
    todos[0].clone()
}

/// The evidence taskgate gives an agent: the failing gate's summary and
/// the command that reproduces it.
fn assert_evidence(text: &str) {
    assert!(text.contains("expected 10 rows"), "the summary: {text}");
    assert!(text.contains(COMMAND), "the command: {text}");
}

fn one_call(s: &Story) -> AgentCall {
    let calls = s.app.fake.agent_calls();
    assert_eq!(calls.len(), 1, "started once: {calls:#?}");
    calls[0].clone()
}

#[tokio::test]
async fn a_mentioned_agent_gets_the_todo_pushes_a_fix_and_the_todo_closes() {
    let s = story("roles:\n  coder: { agent: { mention: \"@claude\" } }\n").await;
    fixing_agent(&s, "claude[bot]", AgentTrigger::Mention("@claude".into()));

    red_run(&s).await;

    let todo = fixed_by(&s, "claude[bot]").await;
    let call = one_call(&s);
    assert_eq!(call.issue, Some(todo.number));
    assert_evidence(call.issue_body.as_deref().unwrap());
    let comment = call.instructions.unwrap();
    assert!(
        comment.starts_with("@claude ") && comment.contains(&s.branch),
        "{comment}"
    );
}

#[tokio::test]
async fn a_labelled_agent_gets_the_todo_pushes_a_fix_and_the_todo_closes() {
    let s = story("roles:\n  coder: { agent: { label: fix-me } }\n").await;
    fixing_agent(&s, "openhands[bot]", AgentTrigger::Label("fix-me".into()));

    red_run(&s).await;

    let todo = fixed_by(&s, "openhands[bot]").await;
    let call = one_call(&s);
    assert_eq!(call.issue, Some(todo.number));
    assert_evidence(call.issue_body.as_deref().unwrap());
}

#[tokio::test]
async fn a_dispatched_agent_gets_the_todo_pushes_a_fix_and_the_todo_closes() {
    let s = story("roles:\n  coder: { agent: { workflow: agent.yml } }\n").await;
    s.app.fake.repo(REPO).add_workflow("agent.yml");
    fixing_agent(&s, "agent[bot]", AgentTrigger::Dispatch("agent.yml".into()));

    red_run(&s).await;

    let todo = fixed_by(&s, "agent[bot]").await;
    let call = one_call(&s);
    assert_eq!(call.branch.as_deref(), Some(s.branch.as_str()));
    let inputs: serde_json::Value = serde_json::from_str(&call.instructions.unwrap()).unwrap();
    assert_eq!(inputs["branch"], s.branch.as_str(), "{inputs}");
    assert_eq!(inputs["role"], "coder", "{inputs}");
    // The todo named in the inputs is the issue with the evidence.
    let marker = inputs["todo"].as_str().unwrap();
    assert!(todo.body.as_deref().unwrap().contains(marker), "{inputs}");
    assert_evidence(todo.body.as_deref().unwrap());
}

#[tokio::test]
async fn copilot_is_started_by_a_person_after_the_todo_says_how_then_it_fixes() {
    let s = story("roles:\n  coder: { agent: copilot }\n").await;
    s.app.fake.set_permission("alice", "write");
    fixing_agent(&s, COPILOT, AgentTrigger::Assigned);

    red_run(&s).await;

    let todo = todos(&s).pop().unwrap();
    let said: Vec<String> = s
        .app
        .bot_comments(todo.number)
        .into_iter()
        .filter(|c| c.contains("Assign this issue to Copilot yourself"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:#?}");
    assert!(s.app.fake.agent_calls().is_empty(), "nothing started it");

    s.app.fake.repo(REPO).assign(todo.number, COPILOT, "alice");

    let todo = fixed_by(&s, COPILOT).await;
    let call = one_call(&s);
    assert_eq!(call.issue, Some(todo.number));
    assert_evidence(call.issue_body.as_deref().unwrap());
}
