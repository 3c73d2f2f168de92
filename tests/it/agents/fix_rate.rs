//! The fix rate, measured (issue 30, item 4; counted at completion,
//! issue 50): failures and fixes driven through the real loop, and the
//! figures `/metrics` then shows per agent and failure kind.

use std::time::Duration;

use crate::support::metric;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;

/// The coder's todos reach Claude by a mention, the debugger's (one level
/// deeper) the OpenHands resolver by a label. Human review: the task
/// completes when a maintainer approves it.
const CONFIG: &str = r#"
review: human
roles:
  coder: { agent: { mention: "@claude" } }
  debugger: { agent: { label: fix-me } }
"#;

const RED: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(0, 10, 'expected 10 rows')\n";
const GREEN: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(10, 10)\n";

fn plan() -> String {
    Plan::story("Measured work")
        .settings("max_debug_attempts: 2, max_branch_depth: 2")
        .task(
            Task::new("check", "Make the check pass")
                .role("coder")
                .runs("python3 -m unittest -q test_rows"),
        )
        .yaml()
}

/// `who` pushes `content` as try `n` and waits for its run's check.
async fn push_as(s: &Story, who: &str, n: u32, content: &str) {
    let sha = s
        .push_as(
            who,
            &[("test_rows.py", &format!("# try {n}\n{content}"))],
            "try",
        )
        .await;
    s.completed(&sha, 1).await;
}

/// A person pushes try `n`.
async fn push(s: &Story, n: u32, content: &str) {
    push_as(s, "agent", n, content).await;
}

const CLAUDE_BOT: &str = "claude[bot]";

#[tokio::test]
async fn metrics_count_each_agents_todos_fixes_escalations_attempts_and_time_to_green() {
    let s = Story::of(&plan()).config(CONFIG).start().await;
    // Claude fixes the first failure alone, on its second attempt, in
    // ten minutes; the task then waits for a person (human review).
    push(&s, 1, RED).await;
    s.app.advance(Duration::from_secs(300));
    push_as(&s, CLAUDE_BOT, 2, RED).await;
    s.app.advance(Duration::from_secs(300));
    push_as(&s, CLAUDE_BOT, 3, GREEN).await;
    // The next failure, a person's push: Claude's two attempts are
    // spent, the debugger's todo goes to the labelled agent, whose two
    // attempts fail too: a person is called.
    for n in 4..=8 {
        push(&s, n, RED).await;
    }
    assert!(s.task_labels().contains(&"needs-human".to_owned()));
    // The person resumes the task; Claude's next todo is fixed at once,
    // after a person stepped in.
    s.app.comment(s.task_issue, "octocat", "/resume").await;
    s.app.settle().await;
    push(&s, 9, RED).await;
    s.app.advance(Duration::from_secs(60));
    push_as(&s, CLAUDE_BOT, 10, GREEN).await;
    s.app.settle().await;
    // Green twice, but nothing is fixed before the task completes.
    let metrics = s.app.metrics().await;
    let claude = r#"agent="mention:@claude",kind="test_failure""#;
    for outcome in ["fixed_without_human", "fixed_with_human"] {
        let line = format!("taskgate_fix_todos_closed{{{claude},outcome=\"{outcome}\"}} 0");
        assert!(metrics.contains(&line), "{line} missing from:\n{metrics}");
    }
    // A maintainer marks the PR ready and approves it: it merges.
    s.app.fake.add_user("mia", 78, "maintain");
    let pr = s.pull().number;
    s.app
        .fake
        .repo(crate::support::REPO)
        .set_draft(pr, false, "mia");
    s.app.settle().await;
    s.app
        .comment(s.task_issue, "mia", "/taskgate approve")
        .await;
    crate::support::eventually("the task completes", || async {
        s.state() == "state:completed"
    })
    .await;
    s.app.settle().await;

    let metrics = s.app.metrics().await;
    let labelled = r#"agent="label:fix-me",kind="test_failure""#;
    for line in [
        format!("taskgate_fix_todos_opened{{{claude}}} 3"),
        // Claude's first fix went green with no person and then waited
        // for one; the second came after a person's `/resume`.
        format!("taskgate_fix_todos_closed{{{claude},outcome=\"fixed_without_human\"}} 0"),
        format!("taskgate_fix_todos_closed{{{claude},outcome=\"fixed_with_human\"}} 2"),
        format!("taskgate_fix_todos_waited_for_person{{{claude}}} 1"),
        format!("taskgate_fix_seconds_waiting_for_person_count{{{claude}}} 1"),
        format!("taskgate_fix_todos_closed{{{claude},outcome=\"superseded\"}} 1"),
        format!("taskgate_fix_todos_closed{{{claude},outcome=\"escalated\"}} 0"),
        format!("taskgate_fix_attempts_to_green_sum{{{claude}}} 3.0"),
        format!("taskgate_fix_attempts_to_green_count{{{claude}}} 2"),
        format!("taskgate_fix_seconds_to_green_count{{{claude}}} 2"),
        // Bucketed: one in five minutes, both within fifteen.
        format!("taskgate_fix_seconds_to_green_bucket{{le=\"300.0\",{claude}}} 1"),
        format!("taskgate_fix_seconds_to_green_bucket{{le=\"900.0\",{claude}}} 2"),
        format!("taskgate_fix_todos_opened{{{labelled}}} 1"),
        format!("taskgate_fix_todos_closed{{{labelled},outcome=\"escalated\"}} 1"),
        format!("taskgate_fix_todos_closed{{{labelled},outcome=\"fixed_without_human\"}} 0"),
        format!("taskgate_fix_attempts_to_green_count{{{labelled}}} 0"),
    ] {
        assert!(metrics.contains(&line), "{line} missing from:\n{metrics}");
    }
    // The clock moved on by 600 s and 60 s; the runs' own seconds add to it.
    let name = format!("taskgate_fix_seconds_to_green_sum{{{claude}}}");
    let seconds = metric(&metrics, &name);
    assert!((660.0..720.0).contains(&seconds), "{seconds}");
    s.app.assert_contract_kept();
}
