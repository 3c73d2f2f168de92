//! The failure loop end to end: red runs open routed branch todos, bounded
//! retries go deeper and then escalate once, dependents are blocked until
//! the task passes, and manual mode waits for `approve-branch`.

use fakehub::payloads;
use std::time::Duration;

use crate::support::eventually;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

/// The failure loop's bounds in the tests that do not set their own.
const SETTINGS: &str = "max_debug_attempts: 2, max_branch_depth: 2";

/// A task `check` for the role `coder`, and one depending on it.
fn plan(settings: &str) -> String {
    Plan::story("Looping work")
        .settings(settings)
        .task(
            Task::new("check", "Make the check pass")
                .role("coder")
                .runs("python3 -m unittest -q test_rows"),
        )
        .task(
            Task::new("after", "After the check")
                .depends_on("check")
                .runs("true")
                .no_timeout(),
        )
        .yaml()
}

const CONFIG: &str = r#"
roles:
  coder: { assignees: [alice], agent_workflow: agent-coder.yml }
"#;

/// A real failing unittest whose output tries to ping someone and link an
/// issue.
const RED: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        print('cc @someone, see #123')\n        self.assertEqual(0, 10, 'expected 10 rows')\n";
const GREEN: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(10, 10)\n";

pub(crate) fn issues_titled(s: &Story, prefix: &str) -> Vec<fakehub::Issue> {
    let mut found: Vec<_> = s
        .app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with(prefix))
        .collect();
    found.sort_by_key(|i| i.number);
    found
}

async fn red_push(s: &Story, n: u32) {
    let sha = s
        .push(&[("test_rows.py", &format!("# try {n}\n{RED}"))], "try")
        .await;
    s.completed(&sha, 1).await;
}

fn bot_texts(s: &Story, number: u64) -> Vec<String> {
    s.app.bot_comments(number)
}

#[tokio::test]
async fn failing_runs_open_a_routed_branch_todo_go_deeper_and_escalate_once() {
    let s = Story::of(&plan(SETTINGS)).config(CONFIG).start().await;
    // The coder role's assignee is a collaborator: GitHub can assign her.
    s.app.fake.set_permission("alice", "write");
    let task = s.app.fake.repo(REPO).issue(s.task_issue).unwrap();

    red_push(&s, 1).await;
    let todos = issues_titled(&s, "Debug Make the check pass");
    assert_eq!(todos.len(), 1, "{todos:#?}");
    let todo = &todos[0];
    assert_eq!(todo.title, "Debug Make the check pass — test_failure");
    for label in ["taskgate:branch-todo", "role:coder", "kind:test_failure"] {
        assert!(todo.labels.contains(&label.to_owned()), "{:?}", todo.labels);
    }
    assert_eq!(todo.assignees, vec!["alice".to_owned()]);
    assert_eq!(todo.parent, Some(task.id), "a sub-issue of the task");
    let body = todo.body.clone().unwrap_or_default();
    assert!(body.contains("1/2"), "attempt n/N: {body}");
    assert!(body.contains("python3 -m unittest"), "{body}");
    assert!(body.contains("expected 10 rows"), "{body}");
    assert!(
        !body.contains("@someone") && !body.contains("#123"),
        "{body}"
    );
    // The role's agent workflow does not exist: said on the todo.
    let said = bot_texts(&s, todo.number);
    assert!(
        said.iter().any(|c| c.contains("agent-coder.yml")),
        "{said:#?}"
    );
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));
    let after = issues_titled(&s, "After the check");
    assert!(
        after[0].labels.contains(&"state:blocked".to_owned()),
        "{:?}",
        after[0].labels
    );

    red_push(&s, 2).await;
    let todos = issues_titled(&s, "Debug Make the check pass");
    assert_eq!(todos.len(), 1, "the same todo is updated");
    assert!(todos[0].body.as_deref().unwrap().contains("2/2"));

    // Attempts spent at depth 1: a deeper todo, re-routed to the debugger.
    red_push(&s, 3).await;
    let todos = issues_titled(&s, "Debug Make the check pass");
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[0].state, "closed");
    assert!(
        todos[1].labels.contains(&"role:debugger".to_owned()),
        "{:?}",
        todos[1].labels
    );

    red_push(&s, 4).await;
    red_push(&s, 5).await;
    let reports: Vec<String> = bot_texts(&s, s.task_issue)
        .into_iter()
        .filter(|c| c.contains("needs a person"))
        .collect();
    assert_eq!(reports.len(), 1, "exactly one escalation report");
    let labels = s.task_labels();
    assert!(labels.contains(&"state:blocked".to_owned()), "{labels:?}");
    assert!(labels.contains(&"needs-human".to_owned()), "{labels:?}");
    assert!(issues_titled(&s, "Debug Make the check pass")
        .iter()
        .all(|t| t.state == "closed"));

    // Further failures add nothing: the loop has ended.
    red_push(&s, 6).await;
    assert_eq!(issues_titled(&s, "Debug Make the check pass").len(), 2);
    assert_eq!(
        bot_texts(&s, s.task_issue)
            .iter()
            .filter(|c| c.contains("needs a person"))
            .count(),
        1
    );

    // A fix still counts: the task passes and its dependent is unblocked.
    let green = s.push(&[("test_rows.py", GREEN)], "fix").await;
    s.completed(&green, 1).await;
    assert!(s.task_labels().contains(&"state:review".to_owned()));
    let after = issues_titled(&s, "After the check");
    assert!(
        !after[0].labels.contains(&"state:blocked".to_owned()),
        "{:?}",
        after[0].labels
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_green_run_closes_the_branch_todo_as_fixed() {
    let s = Story::of(&plan(SETTINGS)).start().await;
    red_push(&s, 1).await;
    let green = s.push(&[("test_rows.py", GREEN)], "fix").await;
    s.completed(&green, 1).await;
    let todos = issues_titled(&s, "Debug Make the check pass");
    assert_eq!(todos.len(), 1);
    assert_eq!(todos[0].state, "closed");
    assert_eq!(todos[0].state_reason.as_deref(), Some("completed"));
    assert!(bot_texts(&s, todos[0].number)
        .iter()
        .any(|c| c.contains("Fixed") && c.contains(&green[..7])));

    // The loop's metrics, read back from the store at scrape time.
    let metrics = reqwest::get(format!("{}/metrics", s.app.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "taskgate_branch_todos_opened{kind=\"test_failure\",role=\"coder\"} 1",
        "taskgate_branch_todos_fixed 1",
        // Fixes count when the task completes (issue 50): it is in review.
        "taskgate_autonomous_fix_rate -1",
        "taskgate_escalated_tasks 0",
        "taskgate_tasks{state=\"review\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
}

#[tokio::test]
async fn manual_mode_proposes_the_branch_todo_and_opens_it_on_approve_branch() {
    let plan = plan("auto_fix: false");
    let s = Story::of(&plan).start().await;
    red_push(&s, 1).await;
    assert!(issues_titled(&s, "Debug").is_empty(), "only proposed");
    let proposal = bot_texts(&s, s.task_issue);
    assert!(
        proposal.iter().any(|c| c.contains("approve-branch")),
        "{proposal:#?}"
    );
    let checks = s
        .app
        .fake
        .repo(REPO)
        .check_runs()
        .into_iter()
        .find(|c| c.name == "taskgate/test")
        .unwrap();
    assert!(
        checks
            .actions
            .iter()
            .any(|a| a["identifier"] == "approve_branch"),
        "{:?}",
        checks.actions
    );
    // The check run's "Approve branch todo" button.
    let pressed = payloads::check_run_requested_action(
        &s.app.fake.repo(REPO),
        checks.id,
        "approve_branch",
        "octocat",
    );
    assert_eq!(s.app.deliver("check_run", &pressed).await.0, 202);
    s.app.settle().await;
    assert_eq!(issues_titled(&s, "Debug Make the check pass").len(), 1);
    // Approving again has nothing to open: a reply says so.
    s.app
        .comment(s.task_issue, "octocat", "/taskgate approve-branch")
        .await;
    s.app.settle().await;
    assert_eq!(issues_titled(&s, "Debug Make the check pass").len(), 1);
    assert!(bot_texts(&s, s.task_issue)
        .iter()
        .any(|c| c.contains("`/taskgate approve-branch` did nothing")));
}

#[tokio::test]
async fn a_branch_todo_that_outlives_its_timeout_escalates() {
    let plan = plan("branch_timeout_seconds: 60");
    let s = Story::of(&plan).start().await;
    red_push(&s, 1).await;
    assert_eq!(issues_titled(&s, "Debug Make the check pass").len(), 1);
    // A minute passes with nobody fixing it: the next tick finds it late.
    s.app.clock.advance(Duration::from_secs(61));
    eventually("the escalation report", || async {
        bot_texts(&s, s.task_issue)
            .iter()
            .any(|c| c.contains("needs a person"))
    })
    .await;
    s.app.settle().await;
    assert!(s.task_labels().contains(&"state:blocked".to_owned()));
    assert!(s.task_labels().contains(&"needs-human".to_owned()));
    let todo = &issues_titled(&s, "Debug Make the check pass")[0];
    assert_eq!(todo.state, "closed");
}
