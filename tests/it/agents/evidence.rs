//! The evidence in hand (issue 30, item 2), end to end: a red run's branch
//! todo links the failing gate's check run and the diff since the last
//! green run, and an agent's workflow gets the evidence as an input, or,
//! when its workflow does not declare that input, is dispatched without it.

use crate::support::eventually;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

const AGENT: &str = "agent-coder.yml";

fn plan() -> String {
    Plan::story("Evidence")
        .settings("max_debug_attempts: 3, max_branch_depth: 1")
        .task(
            Task::new("check", "Make the check pass")
                .role("coder")
                .runs("python3 -m unittest -q test_rows"),
        )
        .yaml()
}

const CONFIG: &str = r#"
roles:
  coder: { agent: { workflow: agent-coder.yml } }
"#;

/// A real failing unittest.
const RED: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(0, 10, 'expected 10 rows')\n";
const GREEN: &str = "import unittest\n\nclass Rows(unittest.TestCase):\n    def test_fetch(self):\n        self.assertEqual(10, 10)\n";

fn todo(s: &Story) -> Option<fakehub::Issue> {
    s.app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with("Debug Make the check pass"))
        .max_by_key(|i| i.number)
}

async fn dispatched(s: &Story, count: usize) -> Vec<fakehub::WorkflowDispatch> {
    let repo = s.app.fake.repo(REPO);
    eventually("the agent's workflow dispatched", || {
        let n = repo
            .dispatches()
            .iter()
            .filter(|d| d.workflow == AGENT)
            .count();
        async move { n >= count }
    })
    .await;
    repo.dispatches()
        .into_iter()
        .filter(|d| d.workflow == AGENT)
        .collect()
}

#[tokio::test]
async fn a_red_run_after_a_green_one_links_its_check_run_and_the_diff_and_dispatches_the_evidence()
{
    let s = Story::of(&plan()).config(CONFIG).start().await;
    let repo = s.app.fake.repo(REPO);
    repo.add_workflow(AGENT);
    repo.declare_workflow_inputs(AGENT, &["task", "todo", "branch", "role", "evidence"]);
    let green = s.push(&[("test_rows.py", GREEN)], "green").await;
    s.completed(&green, 1).await;
    let red = s
        .push(&[("test_rows.py", RED), ("rows.py", "ROWS = 0\n")], "red")
        .await;
    let checks = s.completed(&red, 1).await;
    eventually("the branch todo", || {
        let found = todo(&s).is_some();
        async move { found }
    })
    .await;
    let body = todo(&s).unwrap().body.unwrap_or_default();
    let check = &checks[0];
    assert!(
        body.contains(&format!("/{REPO}/runs/{})", check.id)),
        "the failing gate's check run: {body}"
    );
    assert!(
        body.contains(&format!("/{REPO}/compare/{green}...{red})")),
        "the diff since the last green run: {body}"
    );
    assert!(
        body.contains("2 files changed:\nrows.py\ntest_rows.py\n"),
        "the files changed since the last green run, from the runner's git: {body}"
    );
    assert!(
        body.contains(&format!(
            "`git checkout {red} && python3 -m unittest -q test_rows`"
        )),
        "{body}"
    );
    assert!(body.contains("expected 10 rows"), "{body}");
    let dispatch = &dispatched(&s, 1).await[0];
    let evidence = dispatch.inputs["evidence"].as_str().unwrap();
    // The failing test with its message, the first error, the command and
    // the check run: what the todo says, as plain lines.
    for part in [
        "expected 10 rows",
        "First error (log excerpt):\n",
        &format!("Reproduce from the repository root: git checkout {red} && python3 -m unittest -q test_rows"),
        &format!("/{REPO}/runs/{}\n", check.id),
    ] {
        assert!(evidence.contains(part), "{part:?} in {evidence}");
    }

    // A second red commit: still counted from the last green one, not
    // from the commit tested before it.
    let again = s.push(&[("more.py", "MORE = 1\n")], "still red").await;
    s.completed(&again, 1).await;
    eventually("the todo tells the second attempt", || {
        let body = todo(&s).unwrap().body.unwrap_or_default();
        async move { body.contains("3 files changed:\nmore.py\nrows.py\ntest_rows.py\n") }
    })
    .await;
}

#[tokio::test]
async fn an_agent_workflow_without_an_evidence_input_is_dispatched_without_it() {
    let s = Story::of(&plan()).config(CONFIG).start().await;
    let repo = s.app.fake.repo(REPO);
    repo.add_workflow(AGENT);
    // Written before taskgate sent `evidence`: GitHub refuses the input.
    repo.declare_workflow_inputs(AGENT, &["task", "todo", "branch", "role"]);
    let red = s.push(&[("test_rows.py", RED)], "red").await;
    s.completed(&red, 1).await;
    let dispatches = dispatched(&s, 1).await;
    assert_eq!(dispatches.len(), 1, "{dispatches:#?}");
    let inputs = dispatches[0].inputs.as_object().unwrap();
    let mut names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["branch", "role", "task", "todo"]);
}

/// The race of issue 50 (item 3): the run finished, and its todo was
/// written, while GitHub's answer to the gate's check-run create was still
/// on its way, so the todo's body had no id to link. Once the answer is
/// recorded, the todo's body is written again with the link.
#[tokio::test]
async fn a_todo_written_before_its_check_run_was_answered_links_it_once_it_is() {
    let config = "roles:\n  coder: { labels: [fix-me] }\n";
    let s = Story::of(&plan()).config(config).start().await;
    let hold = fakehub::Hold::new();
    s.app.fake.inject(
        "POST /repos/{owner}/{repo}/check-runs",
        fakehub::Fault::HoldAfterApply(hold.clone()),
    );
    let red = s.push(&[("test_rows.py", RED)], "red").await;
    hold.reached().await;
    eventually(
        "the todo decided while the create is unanswered",
        || async {
            let effects = s.app.store().effects().await.unwrap();
            effects.iter().any(|e| {
                matches!(&e.effect, taskgate_core::Effect::CreateIssue { title, .. }
                if title.starts_with("Debug Make the check pass"))
            })
        },
    )
    .await;
    hold.release();
    // Settled: the create's answer recorded, the wait for it told the
    // task, and the todo's body written again.
    let checks = s.completed(&red, 1).await;
    let body = todo(&s).unwrap().body.unwrap();
    let link = format!("/{REPO}/runs/{})", checks[0].id);
    assert!(body.contains(&link), "the todo links the check run: {body}");
    // From the diagnosis to what happens next: the table above it tells
    // the time left, which moves with the clock.
    let start = body.find("### Diagnosis").expect("a diagnosis");
    let end = body
        .find("### What happens next")
        .expect("what happens next");
    let evidence: Vec<String> = body[start..end]
        .replace(&red, "<sha>")
        .replace(&red[..12], "<short>")
        .replace(&checks[0].id.to_string(), "<id>")
        .lines()
        .map(
            |l| match (l.find("]("), l.find(&format!("/{REPO}/runs/"))) {
                (Some(open), Some(at)) if open < at => format!("{}](<web>{}", &l[..open], &l[at..]),
                _ if l.starts_with("Ran 1 test in ") => "Ran 1 test in <time>".to_owned(),
                _ => l.to_owned(),
            },
        )
        .collect();
    let evidence = evidence.join("\n");
    insta::assert_snapshot!(evidence);
}
