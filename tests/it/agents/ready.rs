//! Who says "done" (issue 50): under `review: auto`, an agent's push that
//! turns the gates green closes its todo, and taskgate marks the draft
//! task PR it opened ready and merges it: the task completes with no
//! person. A person's "Convert to draft" and a role's `ready: never`
//! hold the PR for a person; the fix rate counts each at completion,
//! and the wait for the person.

use crate::agents::end_to_end::{fixing_agent, plan, red_run, todos, GREEN, RED};

use crate::support::story::Story;
use crate::support::{eventually, metric, REPO};
use fakehub::AgentTrigger;

const CLAUDE: &str = r#"agent="mention:@claude",kind="test_failure""#;

/// The lines of the fix rate of Claude's todos at this point.
async fn claude_fixes(s: &Story) -> (f64, f64, f64) {
    let m = s.app.metrics().await;
    let closed = |outcome: &str| {
        metric(
            &m,
            &format!("taskgate_fix_todos_closed{{{CLAUDE},outcome=\"{outcome}\"}}"),
        )
    };
    let waited = metric(
        &m,
        &format!("taskgate_fix_todos_waited_for_person{{{CLAUDE}}}"),
    );
    (
        closed("fixed_without_human"),
        closed("fixed_with_human"),
        waited,
    )
}

#[tokio::test]
async fn a_mention_agents_fix_completes_the_task_under_auto_review_with_no_person() {
    let config = "roles:\n  coder: { agent: { mention: \"@claude\" } }\n";
    let s = Story::of(&plan()).config(config).backed().start().await;
    fixing_agent(&s, "claude[bot]", AgentTrigger::Mention("@claude".into()));

    red_run(&s).await;

    eventually("the task completes", || async {
        s.state() == "state:completed"
    })
    .await;
    s.app.settle().await;
    let pr = s.pull();
    assert!(pr.merged, "{pr:?}");
    assert!(!pr.draft, "taskgate marked its own draft ready");
    let bot = format!("{}[bot]", s.app.fake.app_slug());
    assert_eq!(pr.merged_by.as_deref(), Some(bot.as_str()));
    // GitHub told of the marking as the App's own `ready_for_review`.
    let ready: Vec<String> = (s.app.fake.hook_deliveries().iter())
        .filter(|d| d["event"] == "pull_request" && d["action"] == "ready_for_review")
        .filter_map(|d| s.app.fake.hook_delivery(d["id"].as_u64()?))
        .map(|d| d["request"]["payload"]["sender"]["login"].to_string())
        .collect();
    assert_eq!(ready, [format!("\"{bot}\"")]);
    assert_eq!(todos(&s)[0].state, "closed");
    assert_eq!(
        s.app.fake.repo(REPO).issue(s.task_issue).unwrap().state,
        "closed"
    );
    assert_eq!(claude_fixes(&s).await, (1.0, 0.0, 0.0));
    let m = s.app.metrics().await;
    assert_eq!(metric(&m, "taskgate_autonomous_fix_rate"), 1.0);
    s.app.assert_contract_kept();
}

/// A story whose coder role reaches Claude, whose task's run is red and
/// its todo open; nothing answers the mention: the test pushes for it.
async fn red_todo(config: &str) -> Story {
    let s = Story::of(&plan()).config(config).start().await;
    red_run(&s).await;
    assert_eq!(todos(&s).len(), 1);
    assert!(s.pull().draft, "taskgate's own draft");
    s
}

/// Claude's fix is pushed and tested: its todo closes.
async fn claudes_green_fix(s: &Story) {
    let sha = s
        .push_as("claude[bot]", &[("test_rows.py", GREEN)], "fix")
        .await;
    s.completed(&sha, 1).await;
    assert_eq!(todos(s)[0].state, "closed", "the fix closed the todo");
    assert_eq!(s.state(), "state:review");
}

/// A person marks the held PR ready twenty minutes later; taskgate
/// merges it and the task completes.
pub(crate) async fn person_marks_ready(s: &Story) {
    s.app.advance(std::time::Duration::from_secs(1_200));
    s.app
        .fake
        .repo(REPO)
        .set_draft(s.pull().number, false, "alice");
    eventually("the task completes", || async {
        s.state() == "state:completed"
    })
    .await;
    s.app.settle().await;
}

#[tokio::test]
async fn a_persons_convert_to_draft_holds_the_agents_green_fix_for_them() {
    let s = red_todo("roles:\n  coder: { agent: { mention: \"@claude\" } }\n").await;
    let repo = s.app.fake.repo(REPO);
    let pr = s.pull().number;
    // The agent marks the PR ready early; a person converts it back.
    repo.set_draft(pr, false, "claude[bot]");
    s.app.settle().await;
    repo.set_draft(pr, true, "alice");
    s.app.settle().await;

    claudes_green_fix(&s).await;

    assert!(s.pull().draft, "their signal: it stays a draft");
    assert!(!s.pull().merged);
    assert_eq!(claude_fixes(&s).await, (0.0, 0.0, 0.0), "not complete yet");

    person_marks_ready(&s).await;
    assert!(s.pull().merged);
    assert_eq!(claude_fixes(&s).await, (0.0, 1.0, 1.0));
    let m = s.app.metrics().await;
    let waited = metric(
        &m,
        &format!("taskgate_fix_seconds_waiting_for_person_sum{{{CLAUDE}}}"),
    );
    assert!((1_200.0..1_260.0).contains(&waited), "{waited}");
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_roles_ready_never_holds_the_agents_green_fix_for_a_person() {
    let config = "roles:\n  coder: { agent: { mention: \"@claude\", ready: never } }\n";
    let s = red_todo(config).await;

    claudes_green_fix(&s).await;
    s.app.settle().await;

    assert!(s.pull().draft, "ready: never: a person marks it ready");
    assert!(!s.pull().merged);
    person_marks_ready(&s).await;
    assert_eq!(claude_fixes(&s).await, (0.0, 1.0, 1.0));
}

#[tokio::test]
async fn a_persons_push_during_the_todo_is_a_persons_fix() {
    let s = red_todo("roles:\n  coder: { agent: { mention: \"@claude\" } }\n").await;
    // alice pushes a try of her own while Claude's todo is open.
    let sha = s.push_as("alice", &[("test_rows.py", RED)], "mine").await;
    s.completed(&sha, 1).await;

    claudes_green_fix(&s).await;

    assert!(s.pull().draft, "a person acted: theirs to say done");
    person_marks_ready(&s).await;
    assert_eq!(
        claude_fixes(&s).await,
        (0.0, 1.0, 0.0),
        "no wait: she acted before green"
    );
}
