use std::collections::BTreeMap;

use super::view::{duration, CheckLink, Trigger};
use super::*;
use crate::store::{AttemptSummary, IssueLink, StoryTasks};
use taskgate_core::classify::FailureKind;
use taskgate_core::failure::{
    Bound, ClosedTodo, Escalation, FixTotals, LoopState, LoopTotals, OpenTodo, Resolution,
};
use taskgate_core::ids::{IssueNumber, RepoName};
use taskgate_core::plan::{parse_plan, TaskId, TaskState};
use taskgate_core::ship::{ShipState, StoryRecord};
use taskgate_core::story::Marker;
use taskgate_core::task::{GateVerdict, TaskRecord};

const PLAN: &str = r#"
story: Momentum <strategy> with RSI
settings: { max_debug_attempts: 2 }
integration:
  - { id: backtest, after: [data, entry], cmd: "pytest tests/integration -q" }
tasks:
  - id: data
    title: Data loading
    acceptance: { tests: [{ cmd: "pytest -q", gate: unit }, { cmd: "ruff check .", gate: lint }] }
  - id: signals
    title: Signals
    tasks:
      - { id: entry, title: Entry conditions, depends_on: [data], acceptance: { tests: [{ cmd: "pytest tests/test_entry.py" }] } }
      - { id: docs, title: Strategy notes, requires_testing: false }
"#;

const NOW: i64 = 1_764_158_400; // 2025-11-26 12:00 UTC

const STORY: &str = "file:momentum";

fn plan() -> Plan {
    parse_plan(PLAN).0.expect("the plan parses")
}

fn repo() -> RepoName {
    RepoName::parse("acme/strategies").unwrap()
}

fn issue(number: u64, labels: &[&str]) -> IssueLink {
    IssueLink {
        number: IssueNumber::new(number),
        labels: labels.iter().map(|l| l.to_string()).collect(),
    }
}

fn task_key(task: &str) -> String {
    Marker::Task {
        story: STORY.into(),
        task: TaskId::new(task),
    }
    .key()
}

fn todo_key(task: &str, depth: u32) -> String {
    Marker::BranchTodo {
        story: STORY.into(),
        task: TaskId::new(task),
        depth,
        round: 1,
    }
    .key()
}

fn verdict(passed: bool, kind: Option<FailureKind>) -> GateVerdict {
    GateVerdict {
        sha: crate::testing::sha(&"a".repeat(40)),
        attempt: 1,
        passed,
        kind,
        summary: None,
    }
}

fn closed(resolution: Resolution) -> ClosedTodo {
    ClosedTodo {
        marker: todo_key("data", 1),
        depth: 1,
        kind: FailureKind::TestFailure,
        role: "coder".into(),
        opened_at: NOW - 7_200,
        closed_at: NOW - 3_600,
        resolution,
        failed_runs: 1,
        agent: "none".into(),
    }
}

/// `data` failing with an open todo (one fixed before, by a person), `entry`
/// completed, `docs` pending by its label only.
struct Fixture {
    record: StoryRecord,
    attempts: Vec<AttemptSummary>,
    plan: Plan,
    tasks: BTreeMap<String, TaskRecord>,
    issues: BTreeMap<String, IssueLink>,
}

impl Fixture {
    fn new() -> Fixture {
        let data = TaskRecord {
            state: Some(TaskState::TestFailed),
            attempts: 3,
            verdicts: BTreeMap::from([
                ("lint".into(), verdict(true, None)),
                (
                    "unit".into(),
                    verdict(false, Some(FailureKind::TestFailure)),
                ),
            ]),
            failure: LoopState {
                open: Some(OpenTodo {
                    marker: todo_key("data", 1),
                    depth: 1,
                    failed_runs: 2,
                    kind: FailureKind::TestFailure,
                    role: "coder".into(),
                    opened_at: NOW - 720,
                    agent: "mention:@claude".into(),
                }),
                history: vec![closed(Resolution::Fixed)],
                totals: LoopTotals {
                    opened: BTreeMap::from([("test_failure/coder".into(), 2)]),
                    fixed: 1,
                    fixed_seconds: 3_600,
                    ..LoopTotals::default()
                },
                fixed_with_human: 1,
                ..LoopState::default()
            },
            ..TaskRecord::default()
        };
        let entry = TaskRecord {
            state: Some(TaskState::Completed),
            attempts: 1,
            verdicts: BTreeMap::from([("default".into(), verdict(true, None))]),
            ..TaskRecord::default()
        };
        // The milestone failed once: its todo allows one run per round.
        let milestone = TaskRecord {
            state: Some(TaskState::TestFailed),
            attempts: 1,
            failure: LoopState {
                open: Some(OpenTodo {
                    marker: todo_key("@integration/backtest", 1),
                    depth: 1,
                    failed_runs: 1,
                    kind: FailureKind::TestFailure,
                    role: "debugger".into(),
                    opened_at: NOW - 60,
                    agent: "none".into(),
                }),
                ..LoopState::default()
            },
            ..TaskRecord::default()
        };
        Fixture {
            attempts: vec![
                attempt("data", 3, "running", None),
                attempt("data", 2, "failed", Some(12_300)),
                attempt("entry", 1, "passed", Some(800)),
            ],
            record: StoryRecord {
                state: ShipState::Building,
                missing: vec!["Data loading is test-failed".into()],
                ..StoryRecord::default()
            },
            plan: plan(),
            tasks: BTreeMap::from([
                ("data".into(), data),
                ("entry".into(), entry),
                ("@integration/backtest".into(), milestone),
            ]),
            issues: BTreeMap::from([
                (
                    task_key("data"),
                    issue(2, &["taskgate:task", "state:test-failed"]),
                ),
                (task_key("signals"), issue(3, &["taskgate:task"])),
                (
                    task_key("entry"),
                    issue(4, &["taskgate:task", "state:completed"]),
                ),
                (
                    task_key("docs"),
                    issue(5, &["taskgate:task", "state:ready"]),
                ),
                (todo_key("data", 1), issue(9, &["taskgate:branch-todo"])),
            ]),
        }
    }

    fn input(&self) -> StoryInput<'_> {
        StoryInput {
            repo: Box::leak(Box::new(repo())),
            story: Box::leak(Box::new(taskgate_core::ids::StoryId::new(STORY))),
            issue: IssueNumber::new(1),
            record: &self.record,
            plan: Some((&self.plan, None)),
            tasks: &self.tasks,
            // As the store reads it, from the records as they are now.
            summary: Box::leak(Box::new(StoryTasks::of_records(&self.tasks))),
            issues: &self.issues,
            attempts: &self.attempts,
        }
    }
}

fn attempt(task: &str, n: u32, status: &str, took_ms: Option<i64>) -> AttemptSummary {
    let started = (NOW - 600) * 1000;
    AttemptSummary {
        task: task.into(),
        attempt: n,
        sha: crate::testing::sha(&format!("{n}{}", "b".repeat(39))),
        status: status.into(),
        queued_ms: started - 50,
        started_ms: Some(started),
        finished_ms: took_ms.map(|t| started + t),
        runner: "local".into(),
        checks: vec![("unit".into(), 700 + u64::from(n))],
    }
}

#[test]
fn the_dashboard_shows_states_progress_runs_gates_and_the_open_todo() {
    let f = Fixture::new();
    let shipped = StoryRecord {
        state: ShipState::ReviewReady,
        pr: Some(IssueNumber::new(40)),
        ..StoryRecord::default()
    };
    let empty = BTreeMap::new();
    let second = StoryInput {
        issue: IssueNumber::new(30),
        story: &taskgate_core::ids::StoryId::new("issue:30"),
        record: &shipped,
        plan: None,
        tasks: &empty,
        summary: &StoryTasks::default(),
        issues: &BTreeMap::new(),
        attempts: &[],
        ..f.input()
    };
    let view = dashboard_view(&[f.input(), second], "https://github.com", NOW);
    insta::assert_snapshot!(render_dashboard(&view));
}

#[test]
fn a_repository_filter_counts_only_its_stories_and_offers_every_repository() {
    let f = Fixture::new();
    let other = RepoName::parse("acme/site").unwrap();
    let empty = BTreeMap::new();
    let elsewhere = StoryInput {
        repo: &other,
        issue: IssueNumber::new(7),
        story: &taskgate_core::ids::StoryId::new("file:launch"),
        plan: None,
        tasks: &empty,
        summary: &StoryTasks::default(),
        issues: &BTreeMap::new(),
        attempts: &[],
        ..f.input()
    };
    let repos = [repo(), other.clone()];
    let unfiltered = filtered_view(
        &[f.input(), elsewhere],
        &repos,
        None,
        "https://github.com",
        NOW,
    );
    assert_eq!(unfiltered.totals.stories, 2);
    assert!(unfiltered.repos.iter().all(|r| !r.current));

    // The handler reads only the chosen repository's stories.
    let only = filtered_view(
        &[f.input()],
        &repos,
        Some(&repo()),
        "https://github.com",
        NOW,
    );
    assert_eq!(only.totals.stories, 1);
    assert_eq!(only.totals.todos_open, unfiltered.totals.todos_open);
    let page = render_dashboard(&only);
    let nav = page
        .lines()
        .find(|l| l.starts_with("<nav"))
        .expect("a repository filter");
    insta::assert_snapshot!(nav, @r#"<nav class="repos"><a href="./">All repositories</a> · <a href="?repo=acme/site">acme/site</a> · <strong>acme/strategies</strong></nav>"#);
    assert!(page.contains("1 story in acme/strategies"), "{page}");

    let none = filtered_view(&[], &repos, Some(&other), "https://github.com", NOW);
    let page = render_dashboard(&none);
    assert!(page.contains("No stories in acme/site."), "{page}");
    assert!(!page.contains("No stories yet"), "{page}");
}

#[test]
fn one_repository_needs_no_filter() {
    let f = Fixture::new();
    let page = render_dashboard(&filtered_view(
        &[f.input()],
        &[repo()],
        None,
        "https://github.com",
        NOW,
    ));
    assert!(!page.contains("<nav"), "{page}");
}

#[test]
fn an_empty_dashboard_says_how_to_start() {
    let view = dashboard_view(&[], "https://github.com", NOW);
    let page = render_dashboard(&view);
    assert!(page.contains("No stories yet"), "{page}");
    assert!(page.contains("No review trigger has fired"), "{page}");
}

#[test]
fn text_from_plans_is_escaped() {
    let f = Fixture::new();
    let page = render_dashboard(&dashboard_view(&[f.input()], "https://github.com", NOW));
    assert!(
        page.contains("Momentum &#60;strategy&#62; with RSI"),
        "{page}"
    );
    assert!(!page.contains("<strategy>"));
}

#[test]
fn parents_count_their_children_and_the_story_counts_leaves() {
    let f = Fixture::new();
    let s = story_view(&f.input(), "https://github.com", NOW);
    let signals = s.tasks.iter().find(|t| t.id == "signals").unwrap();
    assert_eq!(signals.progress, Some((1, 2)));
    assert_eq!(signals.indent, 0);
    assert_eq!(s.tasks.iter().find(|t| t.id == "entry").unwrap().indent, 1);
    // data, entry, docs are leaves; entry is complete.
    assert_eq!((s.done, s.total), (1, 3));
    // No record: the issue's state label, else pending.
    assert_eq!(
        s.tasks.iter().find(|t| t.id == "docs").unwrap().state,
        "ready"
    );
}

#[test]
fn a_plan_of_thousands_lists_its_first_tasks_and_counts_every_one() {
    let mut f = Fixture::new();
    let n = view::SHOWN_TASKS + 5;
    let mut yaml = String::from("story: Big\ntasks:\n");
    for i in 0..n {
        yaml += &format!("  - {{ id: t{i}, title: Task {i}, requires_testing: false }}\n");
    }
    f.plan = parse_plan(&yaml).0.expect("the plan parses");
    // The last task, not listed, is complete: the progress still counts it.
    let last = format!("t{}", n - 1);
    f.issues.insert(
        task_key(&last),
        issue(7, &["taskgate:task", "state:completed"]),
    );
    let s = story_view(&f.input(), "https://github.com", NOW);
    assert_eq!(s.tasks.len(), view::SHOWN_TASKS);
    assert_eq!(s.more_tasks, 5);
    assert_eq!((s.done, s.total), (1, n));
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    // The totals count every leaf too, listed or not (the fixture's
    // records name tasks of another plan: not leaves of this one).
    let counted: usize = view.totals.by_state.iter().map(|(_, n)| n).sum();
    assert_eq!(counted, n);
    assert!(view.totals.by_state.contains(&("completed", 1)));
    let page = render_dashboard(&view);
    let said = page
        .lines()
        .find(|l| l.contains("more tasks"))
        .unwrap_or_default();
    insta::assert_snapshot!(said, @r#"<p class="muted">And 5 more tasks, not listed here: <code>GET /api/stories/1?repo=acme/strategies</code> lists every one.</p>"#);
}

#[test]
fn the_open_todo_cell_names_the_agent_working_on_it() {
    let f = Fixture::new();
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    let page = render_dashboard(&view);
    let cell = page
        .lines()
        .find(|l| l.contains("attempt 2/2"))
        .expect("the open todo's cell");
    insta::assert_snapshot!("open_todo_cell", cell.trim());
    for (recorded, named) in [
        ("copilot", Some("Copilot")),
        ("label:fix-me", Some("the agent labelled fix-me")),
        (
            "workflow:agent-coder.yml",
            Some("the workflow agent-coder.yml"),
        ),
        (taskgate_core::failure::NO_AGENT, None),
        (taskgate_core::failure::UNRECORDED_AGENT, None),
    ] {
        let mut f = Fixture::new();
        let task = f.tasks.get_mut("data").unwrap();
        task.failure.open.as_mut().unwrap().agent = recorded.into();
        let s = story_view(&f.input(), "https://github.com", NOW);
        let todo = s.tasks[0].todo.clone().expect("an open todo");
        assert_eq!(todo.agent.as_deref(), named, "{recorded}");
    }
}

#[test]
fn the_open_todo_shows_attempt_n_of_n_from_the_story_settings() {
    let f = Fixture::new();
    let s = story_view(&f.input(), "https://ghe.example.com", NOW);
    let todo = s.tasks[0].todo.clone().expect("an open todo");
    assert_eq!((todo.attempt, todo.max_attempts), (2, 2));
    assert_eq!((todo.depth, todo.max_depth), (1, 2));
    assert_eq!(todo.age, "12 min");
    assert_eq!(todo.agent.as_deref(), Some("@claude"));
    assert_eq!(
        todo.issue.unwrap().url,
        "https://ghe.example.com/acme/strategies/issues/9"
    );
}

#[test]
fn a_fix_rate_below_half_is_a_review_trigger_and_half_is_not() {
    let mut f = Fixture::new();
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(view.totals.fixed_without_human, "0 %");
    assert_eq!(view.triggers.len(), 1, "{:?}", view.triggers);
    assert!(view.triggers[0]
        .title
        .starts_with("Autonomous fix rate 0 %"));

    f.tasks.get_mut("data").unwrap().failure.fixed_without_human = 1;
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(view.totals.fixed_without_human, "50 %");
    assert_eq!(view.triggers, Vec::<Trigger>::new());
}

#[test]
fn no_fix_yet_is_no_trigger() {
    let mut f = Fixture::new();
    let data = f.tasks.get_mut("data").unwrap();
    data.failure.fixed_with_human = 0;
    data.failure.totals.fixed = 0;
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(view.totals.fixed_without_human, "—");
    assert_eq!(view.totals.mean_resolution, "—");
    assert!(view.triggers.is_empty());
}

#[test]
fn overrides_for_more_than_one_completed_task_in_five_are_a_trigger() {
    let mut f = Fixture::new();
    f.tasks.get_mut("data").unwrap().failure.fixed_without_human = 1;
    // One completed task (entry): one override is more than a fifth.
    f.tasks.get_mut("entry").unwrap().override_count = 1;
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(view.triggers.len(), 1);
    assert_eq!(
        view.triggers[0].title,
        "Frequent overrides (1 for 1 completed tasks)"
    );
    // Five more completed tasks elsewhere: 1 in 6 is not frequent.
    for n in 0..5 {
        f.tasks.insert(
            format!("other{n}"),
            TaskRecord {
                state: Some(TaskState::Completed),
                ..TaskRecord::default()
            },
        );
    }
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert!(view.triggers.is_empty(), "{:?}", view.triggers);
}

#[test]
fn an_escalated_task_says_which_bound_it_hit() {
    let mut f = Fixture::new();
    f.tasks.remove("@integration/backtest");
    let data = f.tasks.get_mut("data").unwrap();
    data.state = Some(TaskState::Blocked);
    data.failure.open = None;
    data.failure.escalation = Some(Escalation {
        reason: Bound::Attempts,
        at: NOW,
        round: 1,
        passed_since: false,
    });
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(view.totals.escalated, 1);
    assert_eq!(view.stories[0].tasks[0].escalated, Some("attempts used up"));
    assert_eq!(view.totals.todos_open, 0);
}

#[test]
fn durations_read_short() {
    assert_eq!(duration(-5), "0 s");
    assert_eq!(duration(59), "59 s");
    assert_eq!(duration(60), "1 min");
    assert_eq!(duration(7_199), "1 h");
    assert_eq!(duration(172_800), "2 d");
}

#[test]
fn recent_attempts_link_their_commit_and_check_runs_and_say_how_long_they_took() {
    let f = Fixture::new();
    let s = story_view(&f.input(), "https://github.com", NOW);
    let data = &s.tasks[0].recent;
    assert_eq!(data.len(), 2);
    assert_eq!((data[0].number, data[0].took.as_deref()), (3, None));
    assert_eq!(data[1].took.as_deref(), Some("12.3 s"));
    assert_eq!(data[1].sha, "2bbbbbb");
    assert_eq!(
        data[1].commit_url,
        format!(
            "https://github.com/acme/strategies/commit/2{}",
            "b".repeat(39)
        )
    );
    assert_eq!(
        data[1].checks,
        vec![CheckLink {
            gate: "unit".into(),
            url: "https://github.com/acme/strategies/runs/702".into()
        }]
    );
    // Parents have none of their own.
    assert!(s.tasks[1].recent.is_empty());
}

#[test]
fn a_milestone_has_its_own_row_and_bounds_and_is_not_a_task() {
    let f = Fixture::new();
    let s = story_view(&f.input(), "https://github.com", NOW);
    let m = s.tasks.last().unwrap();
    assert!(m.milestone);
    assert_eq!(m.id, "@integration/backtest");
    assert_eq!(
        m.title,
        "Integration milestone backtest (after data, entry)"
    );
    let todo = m.todo.clone().unwrap();
    assert_eq!((todo.attempt, todo.max_attempts, todo.max_depth), (1, 1, 1));
    // Not counted with the tasks.
    assert_eq!((s.done, s.total), (1, 3));
    let view = dashboard_view(&[f.input()], "https://github.com", NOW);
    assert_eq!(
        view.totals.by_state,
        vec![("ready", 1), ("test-failed", 1), ("completed", 1)]
    );
}

#[test]
fn a_story_shows_its_slowest_and_most_failing_tests() {
    let f = Fixture::new();
    let mut view = dashboard_view(&[f.input()], "https://github.com", NOW);
    let stat = |test: &str, failures: u64, mean_ms: u64| crate::store::TestStat {
        task: "data".into(),
        test_id: test.into(),
        runs: 3,
        failures,
        mean_ms: Some(mean_ms),
    };
    view.stories[0].tests = story_tests(
        &[stat("tests/test_slow.py::test_<big>", 0, 61_000)],
        &[stat("tests/test_a.py::test_fetch", 2, 12)],
    );
    let page = render_dashboard(&view);
    let start = page
        .find("<details class=\"tests\">")
        .expect("the tests section");
    let end = start + page[start..].find("</details>").unwrap() + "</details>".len();
    insta::assert_snapshot!(&page[start..end], @r#"
    <details class="tests"><summary>Tests: slowest and most failing</summary>
    <table>
    <thead><tr><th>Slowest</th><th>Task</th><th>Mean</th><th>Failed</th></tr></thead>
    <tbody>

    <tr><td><code>tests/test_slow.py::test_&#60;big&#62;</code></td><td>data</td><td>1 min 01 s</td><td>0 of 3 runs</td></tr>

    </tbody>
    <thead><tr><th>Most failing</th><th>Task</th><th>Mean</th><th>Failed</th></tr></thead>
    <tbody>

    <tr><td><code>tests/test_a.py::test_fetch</code></td><td>data</td><td>12 ms</td><td>2 of 3 runs</td></tr>


    </tbody>
    </table>
    </details>
    "#);
    // No history, no section.
    let plain = render_dashboard(&dashboard_view(&[f.input()], "https://github.com", NOW));
    assert!(!plain.contains("class=\"tests\""));
}

#[test]
fn quarantined_tests_are_listed_per_repository() {
    let f = Fixture::new();
    let mut view = dashboard_view(&[f.input()], "https://github.com", NOW);
    let event = |attempt: u32| taskgate_core::flaky::FlakyEvent {
        task: "s/data".into(),
        sha: "a".repeat(40),
        attempt,
        kind: taskgate_core::flaky::EventKind::Retry,
    };
    let q = |test: &str| taskgate_core::flaky::Quarantine {
        test_id: taskgate_core::results::TestId::new(test),
        since_s: NOW - 86_400,
        until_s: NOW + 13 * 86_400,
        events: vec![event(2), event(4), event(6)],
        lifted_by: None,
    };
    view.quarantined = quarantine_sections(&[
        (repo(), q("tests/test_net.py::test_<retry>")),
        (repo(), q("tests/test_net.py::test_timeout")),
    ]);
    let page = render_dashboard(&view);
    let start = page
        .find("<section class=\"quarantined\">")
        .expect("the quarantine section");
    let end = start + page[start..].find("</section>").unwrap() + "</section>".len();
    insta::assert_snapshot!(&page[start..end], @r#"
        <section class="quarantined">
        <h2>Quarantined tests</h2>
        <p class="muted">Flaky tests whose failures do not fail a gate until the quarantine ends or <code>/taskgate unquarantine &lt;test id&gt;</code> lifts it.</p>

        <h3>acme/strategies</h3>
        <table>
        <thead><tr><th>Test</th><th>Since</th><th>Until</th><th>Flaky events</th></tr></thead>
        <tbody>

        <tr><td><code>tests/test_net.py::test_&#60;retry&#62;</code></td><td>2025-11-25 12:00 UTC</td><td>2025-12-09 12:00 UTC</td><td>3</td></tr>

        <tr><td><code>tests/test_net.py::test_timeout</code></td><td>2025-11-25 12:00 UTC</td><td>2025-12-09 12:00 UTC</td><td>3</td></tr>

        </tbody>
        </table>

        </section>
    "#);
    // Nothing quarantined, no section.
    let plain = render_dashboard(&dashboard_view(&[f.input()], "https://github.com", NOW));
    assert!(!plain.contains("class=\"quarantined\""));
}

#[test]
fn the_fix_rate_is_a_table_by_agent_and_failure_kind() {
    let mut f = Fixture::new();
    let fix = |opened, alone, person, escalated, attempts, seconds| FixTotals {
        opened,
        fixed_without_human: alone,
        fixed_with_human: person,
        escalated,
        greened: alone + person,
        attempts_to_green: attempts,
        seconds_to_green: seconds,
        ..FixTotals::default()
    };
    f.tasks.get_mut("data").unwrap().failure.totals.fixes = BTreeMap::from([
        (
            "test_failure/mention:@claude".into(),
            fix(4, 2, 1, 1, 5, 2_700),
        ),
        ("timeout/label:<fix-me>".into(), fix(1, 0, 0, 1, 0, 0)),
    ]);
    let page = render_dashboard(&dashboard_view(&[f.input()], "https://github.com", NOW));
    let start = page
        .find("<section class=\"fix-rate\">")
        .expect("the fix-rate section");
    let end = start + page[start..].find("</section>").unwrap() + "</section>".len();
    insta::assert_snapshot!(&page[start..end], @r#"
    <section class="fix-rate">
    <h2>Fix rate</h2>
    <p class="muted">Branch todos by the agent their role named when they opened and by failure kind. A person stepped in when a person's command touched the task since its last green run.</p>
    <table>
    <thead><tr><th>Agent</th><th>Kind</th><th>Todos</th><th>Fixed without a person</th><th>Fixed after a person stepped in</th><th>Escalated</th><th>Attempts to green</th><th>Time to green</th></tr></thead>
    <tbody>

    <tr><td><code>label:&#60;fix-me&#62;</code></td><td>timeout</td><td>1</td><td>0</td><td>0</td><td>1</td><td>—</td><td>—</td></tr>

    <tr><td><code>mention:@claude</code></td><td>test_failure</td><td>4</td><td>2</td><td>1</td><td>1</td><td>1.7</td><td>15 min</td></tr>

    </tbody>
    </table>
    </section>
    "#);
    // No todo was ever counted by agent, no section.
    let plain = render_dashboard(&dashboard_view(
        &[Fixture::new().input()],
        "https://github.com",
        NOW,
    ));
    assert!(!plain.contains("class=\"fix-rate\""));
}
