//! The agents people run, end to end (issue 30): a task's run fails, its
//! branch todo opens, the role's agent is started exactly as GitHub starts
//! it (fakehub's agents: a mention, a label, a dispatch, an assignment to
//! Copilot), gets the todo with its evidence, pushes a fix to the task
//! branch as its bot, the run passes and the todo closes. And the budget
//! taskgate enforces: an agent that keeps failing is stopped, a person is
//! called, and each budget decision is in the audit log. And the merge
//! guard: an agent with write access cannot merge a red task PR where the
//! story branches require the task's gate (GitHub refuses it, and its
//! auto-merge waits for the gate); where nothing requires it, a red merge
//! completes nothing.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use fakehub::{AgentCall, AgentPush, AgentTrigger, Rule, Ruleset, COPILOT};

use crate::support::eventually;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

/// A real failing unittest, and its fix.
pub(crate) const RED: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(0, 10, 'expected 10 rows')\n";
pub(crate) const GREEN: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(10, 10)\n";
/// The gate's command: what reproduces the failure.
const COMMAND: &str = "python3 -m unittest -q test_rows";

pub(crate) fn plan() -> String {
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
pub(crate) fn fixing_agent(s: &Story, login: &str, trigger: AgentTrigger) {
    let branch = s.branch.clone();
    s.app.fake.add_agent(REPO, login, trigger, move |_| {
        Some(AgentPush::to(&branch, &[("test_rows.py", GREEN)]))
    });
}

/// The task's run fails: its todo opens (and whatever the todo starts).
pub(crate) async fn red_run(s: &Story) {
    let sha = s.push(&[("test_rows.py", RED)], "try").await;
    s.completed(&sha, 1).await;
}

pub(crate) fn todos(s: &Story) -> Vec<fakehub::Issue> {
    crate::agents::failure_loop::issues_titled(s, "Debug Make the check pass")
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

#[tokio::test]
async fn an_agent_that_keeps_failing_spends_its_budget_is_stopped_and_a_person_is_called() {
    let s = story("roles:\n  coder: { assignees: [alice], agent: { label: fix-me } }\n").await;
    s.app.fake.set_permission("alice", "write");
    let (branch, tries) = (s.branch.clone(), Arc::new(AtomicU32::new(0)));
    let counted = tries.clone();
    let agent = AgentTrigger::Label("fix-me".into());
    s.app
        .fake
        .add_agent(REPO, "openhands[bot]", agent, move |_| {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            let still_red = format!("# try {n}\n{RED}");
            Some(AgentPush::to(&branch, &[("test_rows.py", &still_red)]))
        });

    red_run(&s).await;

    eventually("the escalation report", || async {
        s.app
            .bot_comments(s.task_issue)
            .iter()
            .any(|c| c.contains("needs a person"))
    })
    .await;
    s.app.settle().await;
    assert_eq!(
        s.app.fake.agent_calls().len(),
        2,
        "started for attempts 1 and 2 of 2, not for the run that spent them"
    );
    let todo = todos(&s).pop().unwrap();
    assert_eq!(todo.state, "closed");
    assert!(
        !todo.labels.contains(&"fix-me".to_owned()),
        "{:?}",
        todo.labels
    );
    assert_eq!(
        todo.assignees,
        ["alice"],
        "the agent's label is off; the person assigned stays, as on any closed issue"
    );
    let report: Vec<String> = s
        .app
        .bot_comments(s.task_issue)
        .into_iter()
        .filter(|c| c.contains("needs a person"))
        .collect();
    assert_eq!(report.len(), 1, "one escalation");
    assert!(
        report[0].contains("**Agent budget spent**: the agent started by the label `fix-me`"),
        "{}",
        report[0]
    );
    assert!(s.task_labels().contains(&"needs-human".to_owned()));

    // A person's push after that is tested and reported, and starts no agent.
    let sha = s.push(&[("test_rows.py", RED)], "by hand").await;
    let checks = s.completed(&sha, 1).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("failure"));
    assert_eq!(
        s.app.fake.agent_calls().len(),
        2,
        "no agent after the budget"
    );
    assert_eq!(tries.load(Ordering::SeqCst), 2);

    let audited = crate::review::audit::audit(&s.app, "").await;
    insta::assert_snapshot!(audited.join("\n"), @r"
    budget_spent by taskgate on task #2 (check) via loop: every branch todo used its attempts and the task still fails: escalated to a person, no agent is started for this task
    agent_stopped by taskgate on task #2 (check) via loop: branch todo `story=file:checks task=check todo=1` closed (escalated) after 2 attempt(s): the agent started by the label `fix-me` stopped on it (its label and agents' assignees off, no more triggers)
    attempt_counted by taskgate on task #2 (check) via loop: attempt 2 of 2 on branch todo `story=file:checks task=check todo=1` (role `coder`, the agent started by the label `fix-me`)
    attempt_counted by taskgate on task #2 (check) via loop: attempt 1 of 2 on branch todo `story=file:checks task=check todo=1` (role `coder`, the agent started by the label `fix-me`)
    ");
}

/// `claude[bot]`, an agent's account with write access, and a red run on
/// the task: the failing gate's check-run name.
async fn red_with_a_writing_agent(s: &Story) -> String {
    s.app.fake.add_user("claude[bot]", 41, "write");
    let red = s.push(&[("test_rows.py", RED)], "try").await;
    let checks = s.completed(&red, 1).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("failure"));
    checks[0].name.clone()
}

/// The owner's ruleset that makes GitHub refuse a red task PR's merge:
/// story branches require the gate's check.
fn stories_require(gate: &str) -> Ruleset {
    Ruleset::new("taskgate stories")
        .on(&["refs/heads/taskgate/story-*"])
        .rule(Rule::required_checks(&[gate]))
}

#[tokio::test]
async fn an_agent_with_write_access_cannot_merge_a_task_pr_whose_gate_is_red() {
    let s = Story::of(&plan()).start().await;
    let repo = s.app.fake.repo(REPO);
    let gate = red_with_a_writing_agent(&s).await;
    // What makes GitHub refuse: taskgate's check run of the gate on the
    // head, required on story branches by the owner's ruleset (taskgate
    // cannot make one: docs/decisions/agents.md, "The merge guard").
    repo.with_ruleset(stories_require(&gate));
    let pr = s.pull().number;
    assert!(s.pull().draft, "taskgate opens a task PR as a draft");
    assert_eq!(
        repo.merge_pull_as(pr, "claude[bot]"),
        Err("Pull Request is still a draft".to_owned())
    );

    repo.set_draft(pr, false, "claude[bot]");
    s.app.settle().await;
    let refused = repo.merge_pull_as(pr, "claude[bot]").unwrap_err();

    assert!(
        refused.contains(&format!("Required status check \"{gate}\" is failing.")),
        "{refused}"
    );
    assert!(!s.pull().merged, "not by the agent, nor by taskgate");
    let green = s.push(&[("test_rows.py", GREEN)], "fix").await;
    s.completed(&green, 1).await;
    eventually("taskgate merges the proven task PR", || async {
        s.pull().merged
    })
    .await;
}

#[tokio::test]
async fn a_task_pr_an_agent_merges_while_red_completes_nothing_until_its_gate_passes() {
    let s = Story::of(&plan()).start().await;
    let repo = s.app.fake.repo(REPO);
    red_with_a_writing_agent(&s).await;
    let pr = s.pull().number;
    // No rule on the story branches: GitHub lets an account with write
    // access merge the red pull request.
    repo.set_draft(pr, false, "claude[bot]");
    s.app.settle().await;
    repo.merge_pull_as(pr, "claude[bot]")
        .expect("GitHub merges it");
    s.app.settle().await;

    assert_eq!(s.state(), "state:test-failed", "a merge is not a proof");
    assert_eq!(repo.issue(s.task_issue).unwrap().state, "open");
    let told: Vec<_> = repo
        .comments(pr)
        .into_iter()
        .filter(|c| c.body.contains("Merged before its gates passed"))
        .collect();
    assert_eq!(told.len(), 1, "said once, on the merged pull request");
    assert!(told[0].body.contains("add a ruleset on `taskgate/story-*`"));
    let audited = crate::review::audit::audit(&s.app, "").await;
    assert!(
        audited.iter().any(|l| l.starts_with(&format!(
            "merged_past_gates by claude[bot] on task #{} (check) via merge",
            s.task_issue
        ))),
        "{audited:#?}"
    );

    // The fix is tested on a new pull request and completes the task.
    let green = s.push(&[("test_rows.py", GREEN)], "fix").await;
    s.completed(&green, 1).await;
    let again = repo
        .pulls()
        .into_iter()
        .find(|p| p.head == s.branch && p.state == "open")
        .expect("a new task pull request");
    assert_ne!(again.number, pr);
    repo.set_draft(again.number, false, "claude[bot]");
    eventually(
        "the proven task PR merges and the task completes",
        || async { s.state() == "state:completed" },
    )
    .await;
    assert_eq!(repo.issue(s.task_issue).unwrap().state, "closed");
}

#[tokio::test]
async fn an_agents_auto_merge_waits_for_the_gate_and_merges_only_the_proven_head() {
    // Human review: taskgate does not merge by itself, so only GitHub's
    // auto-merge, turned on by the agent, can.
    let s = Story::of(&plan()).config("review: human\n").start().await;
    let repo = s.app.fake.repo(REPO);
    let gate = red_with_a_writing_agent(&s).await;
    repo.with_ruleset(stories_require(&gate));
    let pr = s.pull().number;
    repo.set_draft(pr, false, "claude[bot]");
    s.app.settle().await;
    repo.enable_auto_merge_as(pr, "claude[bot]")
        .expect("the gate is required and red: auto-merge waits");
    s.app.settle().await;
    assert!(!s.pull().merged, "not while the gate is red");

    let green = s.push(&[("test_rows.py", GREEN)], "fix").await;
    s.completed(&green, 1).await;
    eventually("auto-merge merges the proven head", || async {
        s.pull().merged
    })
    .await;
    let merged = s.pull();
    assert_eq!(merged.merged_by.as_deref(), Some("claude[bot]"));
    assert_eq!(
        repo.file(&merged.base, "test_rows.py").as_deref(),
        Some(GREEN),
        "what merged is the head the gate proved"
    );
    // Under human review the agent's merge is not an approval (issue 45):
    // merged past review, until a maintainer approves the merged head.
    eventually("merged past review is said", || async {
        s.app
            .bot_comments(merged.number)
            .iter()
            .any(|c| c.contains("Merged without an approval"))
    })
    .await;
    assert_ne!(s.state(), "state:completed");
    s.app.fake.add_user("mia", 78, "maintain");
    s.app
        .comment(s.task_issue, "mia", "/taskgate approve")
        .await;
    eventually("the task completes", || async {
        s.state() == "state:completed"
    })
    .await;
}
