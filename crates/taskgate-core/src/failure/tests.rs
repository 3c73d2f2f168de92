//! One test per transition, and the texts people read.

use super::*;
use crate::config::{AgentRoute, RepoConfig, Role};
use crate::plan::{parse_plan, Plan, TaskId};

/// The story key every context here names.
static STORY: std::sync::LazyLock<crate::ids::StoryId> =
    std::sync::LazyLock::new(|| crate::ids::StoryId::new("file:s"));

pub(super) struct Fixture {
    pub repo: RepoName,
    pub plan: Plan,
    pub config: RepoConfig,
    pub limits: Limits,
    pub auto_fix: bool,
    pub open_todos_in_story: u32,
    pub human_involved: bool,
}

pub(super) const TASK_MARKER: &str = "story=file:s task=data";
pub(super) const BRANCH: &str = "taskgate/task-2-data";

impl Fixture {
    pub fn new() -> Self {
        let (plan, problems) = parse_plan(
            "story: S\ntasks:\n  - id: data\n    title: Data loading\n    description: Implement fetch_and_prepare_data(symbol)\n    acceptance: { tests: [{ cmd: pytest -q, gate: unit }] }\n",
        );
        let mut config = RepoConfig::default();
        config.roles.insert(
            "coder".into(),
            Role {
                assignees: vec!["alice".into()],
                labels: vec!["agent:coder".into()],
                agent: Some(AgentRoute::Workflow("agent-coder.yml".into())),
                ready: crate::config::AgentReady::Auto,
            },
        );
        Fixture {
            repo: RepoName::parse("o/r").unwrap(),
            plan: plan.unwrap_or_else(|| panic!("{problems:?}")),
            limits: Limits {
                max_debug_attempts: 2,
                max_branch_depth: 2,
                ..Limits::default()
            },
            config,
            auto_fix: true,
            open_todos_in_story: 0,
            human_involved: false,
        }
    }

    pub fn task(&self) -> &Task {
        self.plan.task(&TaskId::new("data")).unwrap()
    }

    pub fn ctx(&self) -> LoopContext<'_> {
        LoopContext {
            repo: &self.repo,
            story: &STORY,
            task: self.task(),
            task_marker: TASK_MARKER,
            task_branch: BRANCH,
            config: &self.config,
            limits: &self.limits,
            auto_fix: self.auto_fix,
            open_todos_in_story: self.open_todos_in_story,
            human_involved: self.human_involved,
        }
    }
}

pub(super) fn run(attempt: u32, kind: FailureKind, now: i64) -> FailedRun {
    FailedRun {
        attempt,
        sha: crate::ids::sha(&format!("{attempt:040}")),
        gates: vec![GateFailure {
            gate: "unit".into(),
            kind,
            summary: "1 failed: tests/test_a.py::test_fetch - assert 3 >= 10".into(),
            commands: vec!["pytest -q".into()],
            tests: vec![],
            tests_failed: 0,
            excerpt: None,
            check_run: None,
        }],
        changes_since_green: Some("abc1234 Add fetch".into()),
        now,
        last_green: None,
        repo_url: None,
    }
}

fn names(effects: &[Effect]) -> Vec<&'static str> {
    effects.iter().map(Effect::name).collect()
}

fn comment_bodies(effects: &[Effect]) -> Vec<(&str, &str)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::CommentOnMarker { marker, body, .. } => Some((marker.as_str(), body.as_str())),
            _ => None,
        })
        .collect()
}

const TODO1: &str = "story=file:s task=data todo=1";

#[test]
fn failing_push_opens_branch_todo_routed_to_coder() {
    let f = Fixture::new();
    let d = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 1_000),
        &f.ctx(),
    );
    assert_eq!(d.outcome, LoopOutcome::Opened { depth: 1 });
    assert_eq!(
        names(&d.effects),
        [
            "ensure_label",
            "ensure_label",
            "ensure_label",
            "create_issue",
            "link_sub_issue",
            "dispatch_workflow"
        ]
    );
    let Effect::CreateIssue {
        marker,
        title,
        body,
        labels,
        assignees,
        ..
    } = &d.effects[3]
    else {
        panic!("{:?}", d.effects[3]);
    };
    assert_eq!(marker, TODO1);
    assert_eq!(title, "Debug Data loading — test_failure");
    assert_eq!(
        labels,
        &[
            "taskgate:branch-todo",
            "role:coder",
            "kind:test_failure",
            "agent:coder"
        ]
    );
    assert_eq!(assignees, &["alice"]);
    insta::assert_snapshot!(body, @r#"
        The acceptance run of task **Data loading** failed with **test_failure**; this todo is routed to the **coder** role. Push the fix to `taskgate/task-2-data`: the next green run closes it.

        | attempt | depth | time left |
        |---|---|---|
        | 1/2 | 1/2 | 1 d of 1 d |

        ### Diagnosis (run 1 at `000000000000`)

        #### Gate `unit`: test_failure

        ```text
        1 failed: tests/test_a.py::test_fetch - assert 3 >= 10
        ```

        Reproduce from the repository root:

        - `git checkout 0000000000000000000000000000000000000001 && pytest -q`

        Full log: the check run of gate `unit` on commit `000000000000`.

        ### Changes since the last green run

        No green run is recorded for this task yet.

        ```text
        abc1234 Add fetch
        ```

        ### What happens next

        Each failed run on the task branch counts as one attempt. A failure after attempt 2/2 closes this todo and leads to a deeper branch todo (depth 2/2).

        <!-- taskgate:story=file:s task=data todo=1 -->
        "#);
    assert_eq!(
        d.effects[4],
        Effect::LinkSubIssue {
            repo: f.repo.clone(),
            parent: TASK_MARKER.into(),
            child: TODO1.into(),
            replace_parent: false,
            child_repo: None,
        }
    );
    let Effect::DispatchWorkflow {
        workflow,
        git_ref,
        inputs,
        report_to,
        ..
    } = &d.effects[5]
    else {
        panic!()
    };
    assert_eq!(
        (workflow.as_str(), git_ref.as_str()),
        ("agent-coder.yml", BRANCH)
    );
    assert_eq!(
        serde_json::to_string(inputs).unwrap(),
        r#"{"branch":"taskgate/task-2-data","evidence":"The acceptance run 1 failed at 0000000000000000000000000000000000000001.\n\n## Gate unit: test_failure\n\n1 failed: tests/test_a.py::test_fetch - assert 3 >= 10\n\nReproduce from the repository root: git checkout 0000000000000000000000000000000000000001 && pytest -q\n","role":"coder","task":"data","todo":"story=file:s task=data todo=1"}"#
    );
    assert_eq!(report_to.as_deref(), Some(TODO1));
    let open = d.state.open.as_ref().unwrap();
    assert_eq!(
        (open.depth, open.failed_runs, open.role.as_str()),
        (1, 1, "coder")
    );
    assert_eq!(d.state.round, 1);
}

#[test]
fn a_later_failure_updates_the_todo_and_comments_once_per_attempt() {
    let f = Fixture::new();
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    )
    .state;
    let d = on_failed_run(&s, &run(2, FailureKind::TestFailure, 600), &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Updated { failed_runs: 2 });
    assert_eq!(
        names(&d.effects),
        ["update_issue", "comment_on_marker", "dispatch_workflow"]
    );
    let Effect::CommentOnMarker {
        marker,
        body,
        comment_marker,
        ..
    } = &d.effects[1]
    else {
        panic!()
    };
    assert_eq!(marker, TODO1);
    assert_eq!(comment_marker, &format!("todo-attempt=2 {TODO1}"));
    insta::assert_snapshot!(body, @r#"
        Attempt 2/2 failed at `000000000000`:

        - gate `unit`: **test_failure** — `1 failed: tests/test_a.py::test_fetch - assert 3 >= 10`

        ### Since the previous attempt

        The commits from run 1 (`000000000000`) to this run (`000000000000`): `git diff 0000000000000000000000000000000000000001...0000000000000000000000000000000000000002`.

        - Still failing: `gate unit`

        That was the last attempt of this todo; the body has the full diagnosis.
        "#);
    // A redelivered webhook for the same run changes nothing.
    let again = on_failed_run(&d.state, &run(2, FailureKind::TestFailure, 700), &f.ctx());
    assert_eq!(again.state, d.state);
    assert!(again.effects.is_empty());
    assert_eq!(again.outcome, LoopOutcome::Nothing);
}

#[test]
fn a_spent_todo_is_superseded_by_a_deeper_one_routed_to_debugger() {
    let f = Fixture::new();
    let mut s = LoopState::default();
    for a in 1..=2 {
        s = on_failed_run(&s, &run(a, FailureKind::TestFailure, 0), &f.ctx()).state;
    }
    let d = on_failed_run(&s, &run(3, FailureKind::TestFailure, 60), &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Deepened { depth: 2 });
    let Effect::CommentOnMarker { body, .. } = &d.effects[0] else {
        panic!()
    };
    insta::assert_snapshot!(body, @"Attempts used up (2 failed runs) and the task failed again: this todo is closed and a deeper branch todo (depth 2/2) takes over.");
    assert!(d.effects.contains(&Effect::UpdateIssue {
        repo: f.repo.clone(),
        marker: TODO1.into(),
        title: None,
        body: None,
        labels: None,
        state: Some(IssueState::ClosedNotPlanned)
    }));
    let open = d.state.open.as_ref().unwrap();
    assert_eq!(open.marker, "story=file:s task=data todo=2");
    assert_eq!((open.depth, open.role.as_str()), (2, "debugger"));
    assert_eq!(d.state.history[0].resolution, Resolution::Superseded);
    assert!(
        !d.effects.iter().any(|e| e.name() == "dispatch_workflow"),
        "the debugger role has no agent workflow"
    );
}

#[test]
fn the_deepest_todo_spent_escalates_once_with_a_report() {
    let mut f = Fixture::new();
    f.config.limits.max_debug_attempts = 9; // the story-effective limits win
    let mut s = LoopState::default();
    for a in 1..=4 {
        let d = on_failed_run(&s, &run(a, FailureKind::TestFailure, 0), &f.ctx());
        assert!(!matches!(d.outcome, LoopOutcome::Escalated(_)), "{a}");
        s = d.state;
    }
    let mut last = run(5, FailureKind::BuildFailure, 100);
    last.gates[0].summary = "error[E0308]: mismatched types\n --> src/lib.rs:3:5".into();
    last.gates[0].commands = vec!["cargo build".into()];
    let d = on_failed_run(&s, &last, &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Escalated(Bound::Attempts));
    assert_eq!(
        names(&d.effects),
        [
            "comment_on_marker",
            "update_issue",
            "ensure_label",
            "label_marked",
            "comment_on_marker"
        ]
    );
    assert_eq!(
        is_task_blocked(&d.state).as_deref(),
        Some("every branch todo used its attempts and the task still fails")
    );
    let Effect::CommentOnMarker {
        marker,
        body,
        comment_marker,
        ..
    } = &d.effects[4]
    else {
        panic!()
    };
    assert_eq!(marker, TASK_MARKER);
    assert_eq!(comment_marker, &format!("escalation round=1 {TASK_MARKER}"));
    insta::assert_snapshot!(body, @r"
    ### taskgate needs a person

    Every branch todo used its attempts and the task still fails. The task is blocked and labelled `needs-human`.

    **Goal**: Data loading

    > Implement fetch_and_prepare_data(symbol)

    **Attempts**: 4 failed runs over 2 branch todos (up to 2 attempts each, depth up to 2).

    **Agent budget spent**: the agent workflow `agent-coder.yml` (role `coder`). taskgate counted each attempt, stopped the agent on each closed todo, and starts it no more for this task until a person steps in. A push is still tested.

    | todo | depth | kind | role |
    |---|---|---|---|
    | 1 | 1 | test_failure | coder |
    | 2 | 2 | test_failure | debugger |

    **Last failures**

    Run 5 at `000000000000`:

    #### Gate `unit`: build_failure

    ```text
    error[E0308]: mismatched types
     --> src/lib.rs:3:5
    ```

    Failing commands: `cargo build`

    Run 4 at `000000000000`:

    #### Gate `unit`: test_failure

    ```text
    1 failed: tests/test_a.py::test_fetch - assert 3 >= 10
    ```

    Failing commands: `pytest -q`

    Run 3 at `000000000000`:

    #### Gate `unit`: test_failure

    ```text
    1 failed: tests/test_a.py::test_fetch - assert 3 >= 10
    ```

    Failing commands: `pytest -q`

    **Suggested next step** (test_failure): read the failing assertion against the task's goal: the code, the test or the plan's acceptance may be wrong. Fix it by hand or adjust the test.

    Push a fix to `taskgate/task-2-data`; a green run closes the loop. Remove `needs-human` once it is handled.
    ");
    // Escalated: further failures and ticks do nothing.
    let after = on_failed_run(&d.state, &run(6, FailureKind::TestFailure, 200), &f.ctx());
    assert_eq!(after.outcome, LoopOutcome::Nothing);
    assert!(after.effects.is_empty());
    assert!(on_tick(&after.state, 1_000_000, &f.ctx())
        .effects
        .is_empty());
}

#[test]
fn a_green_run_closes_the_todo_and_records_the_resolution_time() {
    let f = Fixture::new();
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 1_000),
        &f.ctx(),
    )
    .state;
    let sha = crate::ids::sha(&"f".repeat(40));
    let d = on_green_run(&s, &sha, 1_000 + 3 * 3_600 + 300, &f.ctx());
    assert_eq!(
        d.outcome,
        LoopOutcome::Closed {
            resolution_seconds: 11_100
        }
    );
    assert_eq!(
        names(&d.effects),
        ["comment_on_marker", "update_issue"],
        "closed; the role's people stay assigned, and it has no agent to stop"
    );
    let (marker, body) = comment_bodies(&d.effects)[0];
    assert_eq!(marker, TODO1);
    insta::assert_snapshot!(body, @"Fixed: the acceptance run passed at `ffffffffffff` after 1 failed run. Resolved in 3 h 05 min.");
    assert!(d.effects.contains(&Effect::UpdateIssue {
        repo: f.repo.clone(),
        marker: TODO1.into(),
        title: None,
        body: None,
        labels: None,
        state: Some(IssueState::ClosedCompleted)
    }));
    assert_eq!(d.state.open, None);
    assert_eq!(d.state.last_green, Some(sha.clone()));
    assert_eq!(d.state.greened.len(), 1, "fixed once the task completes");
    let done = on_task_completed(&d.state, 20_000);
    assert_eq!((done.fixed_without_human, done.fixed_with_human), (1, 0));
    // The next failure is a new round: new markers, never the closed issue.
    let next = on_failed_run(
        &d.state,
        &run(2, FailureKind::LintFailure, 20_000),
        &f.ctx(),
    );
    assert_eq!(
        next.state.open.unwrap().marker,
        "story=file:s task=data todo=1 round=2"
    );
    // A repeated green run has nothing to close.
    let again = on_green_run(&d.state, &sha, 30_000, &f.ctx());
    assert_eq!((again.state, again.effects), (d.state, vec![]));
}

#[test]
fn a_fix_with_a_human_command_counts_as_fixed_with_human() {
    let mut f = Fixture::new();
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    )
    .state;
    f.human_involved = true;
    let d = on_green_run(&s, &crate::ids::sha(&"a".repeat(40)), 10, &f.ctx());
    let done = on_task_completed(&d.state, 20);
    assert_eq!((done.fixed_without_human, done.fixed_with_human), (0, 1));
}

#[test]
fn an_old_todo_times_out_and_escalates() {
    let f = Fixture::new();
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::Timeout, 0),
        &f.ctx(),
    )
    .state;
    assert_eq!(s.open.as_ref().unwrap().role, "tester");
    assert_eq!(on_tick(&s, 86_399, &f.ctx()).outcome, LoopOutcome::Nothing);
    let d = on_tick(&s, 86_400, &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Escalated(Bound::Timeout));
    let (marker, body) = comment_bodies(&d.effects)[0];
    assert_eq!(marker, "story=file:s task=data todo=1");
    insta::assert_snapshot!(body, @"Closed: the branch todo outlived `branch_timeout_seconds`. taskgate stopped retrying and asked a person on the task issue.");
    assert_eq!(d.state.history[0].resolution, Resolution::Escalated);
    // A failed run that arrives after the limit escalates the same way.
    let late = on_failed_run(&s, &run(2, FailureKind::Timeout, 90_000), &f.ctx());
    assert_eq!(late.outcome, LoopOutcome::Escalated(Bound::Timeout));
}

#[test]
fn manual_mode_proposes_and_approve_branch_opens() {
    let mut f = Fixture::new();
    f.auto_fix = false;
    let d = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::SpecMismatch, 0),
        &f.ctx(),
    );
    assert_eq!(d.outcome, LoopOutcome::Proposed);
    assert_eq!(names(&d.effects), ["comment_on_marker"]);
    let (marker, body) = comment_bodies(&d.effects)[0];
    assert_eq!(marker, TASK_MARKER);
    insta::assert_snapshot!(body, @r"
    The acceptance run failed. This repository proposes branch todos instead of opening them (`auto_fix: false`); taskgate would open:

    - **Debug Data loading — spec\_mismatch**, depth 1/2, routed to the **architect** role

    Reply `/taskgate approve-branch` to open it.

    ### Diagnosis (run 1 at `000000000000`)

    #### Gate `unit`: spec_mismatch

    ```text
    1 failed: tests/test_a.py::test_fetch - assert 3 >= 10
    ```

    Failing commands: `pytest -q`
    ");
    assert_eq!(d.state.open, None);
    // More failures while waiting change nothing visible.
    let waiting = on_failed_run(&d.state, &run(2, FailureKind::SpecMismatch, 5), &f.ctx());
    assert_eq!(
        (waiting.outcome, waiting.effects.len()),
        (LoopOutcome::Nothing, 0)
    );
    let opened = on_approve_branch(&waiting.state, 10, &f.ctx());
    assert_eq!(opened.outcome, LoopOutcome::Opened { depth: 1 });
    assert!(opened.effects.iter().any(|e| e.name() == "create_issue"));
    assert_eq!(opened.state.proposal, None);
    let open = opened.state.open.as_ref().unwrap();
    assert_eq!((open.role.as_str(), open.failed_runs), ("architect", 1));
    // A second approval has nothing to open.
    assert_eq!(
        on_approve_branch(&opened.state, 11, &f.ctx()).outcome,
        LoopOutcome::Nothing
    );
}

#[test]
fn a_green_run_drops_a_pending_proposal() {
    let mut f = Fixture::new();
    f.auto_fix = false;
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    )
    .state;
    let d = on_green_run(&s, &crate::ids::sha(&"b".repeat(40)), 5, &f.ctx());
    assert_eq!(
        (&d.state.proposal, d.outcome),
        (&None, LoopOutcome::Nothing)
    );
    assert_eq!(
        on_approve_branch(&d.state, 6, &f.ctx()).outcome,
        LoopOutcome::Nothing
    );
}

#[test]
fn a_full_story_defers_the_todo_and_says_so_once() {
    let mut f = Fixture::new();
    f.open_todos_in_story = 5;
    let d = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    );
    assert_eq!(d.outcome, LoopOutcome::Deferred);
    let (marker, body) = comment_bodies(&d.effects)[0];
    assert_eq!(marker, TASK_MARKER);
    insta::assert_snapshot!(body, @"The acceptance run failed, but this story already has 5 open branch todos (`max_concurrent_branches`). taskgate waits: the branch todo opens on the next failed run once one of them is closed.");
    let again = on_failed_run(&d.state, &run(2, FailureKind::TestFailure, 5), &f.ctx());
    assert_eq!(
        (again.outcome, again.effects.len()),
        (LoopOutcome::Deferred, 0)
    );
    f.open_todos_in_story = 4;
    let opened = on_failed_run(&again.state, &run(3, FailureKind::TestFailure, 9), &f.ctx());
    assert_eq!(opened.outcome, LoopOutcome::Opened { depth: 1 });
    assert_eq!(opened.state.open.unwrap().marker, TODO1, "same round");
}

#[test]
fn after_an_escalation_a_green_run_rearms_the_loop_but_keeps_the_block() {
    let mut f = Fixture::new();
    f.limits.max_debug_attempts = 1;
    f.limits.max_branch_depth = 1;
    let mut s = LoopState::default();
    for a in 1..=2 {
        s = on_failed_run(&s, &run(a, FailureKind::TestFailure, 0), &f.ctx()).state;
    }
    assert!(is_task_blocked(&s).is_some());
    let s = on_green_run(&s, &crate::ids::sha(&"c".repeat(40)), 10, &f.ctx()).state;
    assert!(is_task_blocked(&s).is_some(), "a person clears it");
    let d = on_failed_run(&s, &run(3, FailureKind::TestFailure, 20), &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Opened { depth: 1 });
    assert_eq!(is_task_blocked(&clear_escalation(&d.state)), None);
}

#[test]
fn routing_prefers_the_task_then_the_config_and_goes_to_debugger_when_deep() {
    let (plan, _) = parse_plan(
        "story: S\ntasks:\n  - id: t\n    title: T\n    acceptance: { tests: [{ cmd: x }] }\n    failure_routing: { test_failure: architect }\n",
    );
    let plan = plan.unwrap();
    let task = plan.task(&TaskId::new("t")).unwrap();
    let mut config = RepoConfig::default();
    config
        .routing
        .insert("lint_failure".into(), "tester".into());
    let r = |kind, depth| route(kind, task, &config, depth);
    assert_eq!(r(FailureKind::TestFailure, 1), "architect");
    assert_eq!(r(FailureKind::TestFailure, 2), "architect");
    assert_eq!(r(FailureKind::BuildFailure, 1), "coder");
    assert_eq!(r(FailureKind::BuildFailure, 2), "debugger");
    assert_eq!(r(FailureKind::LintFailure, 2), "tester");
    assert_eq!(r(FailureKind::FlakyTest, 1), "tester");
}

#[test]
fn tool_output_cannot_ping_or_link_and_huge_summaries_are_clipped() {
    let f = Fixture::new();
    let mut bad = run(1, FailureKind::TestFailure, 0);
    bad.gates[0].summary = format!(
        "cc @someone see #123\n```\n{}\n@tail #456",
        "x".repeat(100_000)
    );
    bad.gates[0].commands = vec!["echo @someone #123 `x`".into()];
    bad.changes_since_green = Some(format!("fix #77 by @dev\n{}", "y".repeat(100_000)));
    bad.gates = vec![bad.gates[0].clone(); 30];
    let mut texts = Vec::new();
    let mut collect = |effects: &[Effect]| {
        for e in effects {
            match e {
                Effect::CreateIssue { body, .. }
                | Effect::CommentOnMarker { body, .. }
                | Effect::UpdateIssue {
                    body: Some(body), ..
                } => texts.push(body.clone()),
                _ => {}
            }
        }
    };
    let mut s = LoopState::default();
    let mut f2 = Fixture::new();
    f2.limits.max_debug_attempts = 2;
    f2.limits.max_branch_depth = 1;
    for a in 1..=3 {
        let mut r = bad.clone();
        r.attempt = a;
        let d = on_failed_run(&s, &r, &f2.ctx());
        collect(&d.effects);
        s = d.state;
    }
    let mut manual = Fixture::new();
    manual.auto_fix = false;
    collect(&on_failed_run(&LoopState::default(), &bad, &manual.ctx()).effects);
    assert!(texts.len() >= 5, "{}", texts.len());
    for t in &texts {
        for forbidden in ["@someone", "#123", "@tail", "#456", "#77", "@dev"] {
            assert!(!t.contains(forbidden), "{forbidden} in {}", &t[..200]);
        }
        assert!(t.len() <= crate::story::MAX_BODY_CHARS, "{}", t.len());
    }
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        json.len() < 300_000,
        "stored state stays small: {}",
        json.len()
    );
    drop(f);
}

#[test]
fn durations_read_naturally() {
    let all: Vec<String> = [0, 59, 60, 3_599, 3_600, 3_660, 11_100, 86_400, 93_600, -5]
        .into_iter()
        .map(render::render_seconds)
        .collect();
    insta::assert_snapshot!(all.join(", "), @"0 s, 59 s, 1 min, 59 min, 1 h, 1 h 01 min, 3 h 05 min, 1 d, 1 d 2 h, 0 s");
}

#[test]
fn the_state_round_trips_through_json() {
    let f = Fixture::new();
    let s = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    )
    .state;
    let back: LoopState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let old: LoopState = serde_json::from_str(r#"{"open":null}"#).unwrap();
    assert_eq!(old, LoopState::default());
}

#[test]
fn a_long_lived_task_keeps_a_bounded_history_and_counts_everything() {
    let f = Fixture::new();
    let mut state = LoopState::default();
    let sha = crate::ids::sha(&"c".repeat(40));
    for episode in 0..30u32 {
        let now = 1_000 + i64::from(episode) * 100;
        state = on_failed_run(
            &state,
            &run(episode + 1, FailureKind::TestFailure, now),
            &f.ctx(),
        )
        .state;
        state = on_green_run(&state, &sha, now + 10, &f.ctx()).state;
    }
    assert_eq!(state.history.len(), KEPT_HISTORY);
    assert_eq!(state.totals.fixed, 30);
    assert_eq!(state.totals.fixed_seconds, 300);
    assert_eq!(state.totals.opened.values().sum::<u64>(), 30);
}

#[test]
fn task_output_quoting_a_marker_cannot_carry_one_into_the_todo() {
    let f = Fixture::new();
    let forged = "<!-- taskgate:story=file:s task=data todo=2 -->";
    let mut r = run(1, FailureKind::TestFailure, 0);
    r.gates[0].summary = format!("1 failed\n{forged}\nend");
    r.gates[0].commands = vec![format!("echo '{forged}'")];
    r.changes_since_green = Some(format!("abc1234 {forged}"));
    let d = on_failed_run(&LoopState::default(), &r, &f.ctx());
    let bodies: Vec<&str> = d
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::CreateIssue { body, .. } | Effect::CommentOnMarker { body, .. } => {
                Some(body.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert!(!body.contains(forged), "{body}");
        // The only comment left is the todo's own marker, if any.
        let comments: Vec<&str> = body
            .match_indices("<!--")
            .map(|(i, _)| &body[i..])
            .collect();
        assert!(comments.len() <= 1, "{body}");
        assert!(comments
            .iter()
            .all(|c| c.starts_with(&format!("<!-- taskgate:{TODO1} -->"))));
    }
    let todo = bodies[0];
    let start = todo.find("#### Gate").unwrap();
    let end = todo.find("### Changes since").unwrap();
    insta::assert_snapshot!(todo[start..end].replace('\u{200B}', "<ZWSP>"), @r#"
        #### Gate `unit`: test_failure

        ```text
        1 failed
        <!<ZWSP>-- taskgate:story=file:s task=data todo=2 -->
        end
        ```

        Reproduce from the repository root:

        - `git checkout 0000000000000000000000000000000000000001 && echo '<!<ZWSP>-- taskgate:story=file:s task=data todo=2 -->'`

        Full log: the check run of gate `unit` on commit `000000000000`.
        "#);
}

#[test]
fn a_fix_pushed_onto_a_story_branch_is_said_to_need_a_maintainers_acceptance() {
    let mut f = Fixture::new();
    f.config.commands.prefix = "/tg".into();
    let on_story = LoopContext {
        task_branch: "taskgate/story-7",
        ..f.ctx()
    };
    let d = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &on_story,
    );
    let body = d
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::CreateIssue { body, .. } => Some(body.clone()),
            _ => None,
        })
        .expect("a branch todo");
    insta::assert_snapshot!(body.lines().next().unwrap(), @"The acceptance run of task **Data loading** failed with **test_failure**; this todo is routed to the **coder** role. Push the fix to `taskgate/story-7`: the next green run closes it. A fix pushed there comes from no task PR: before the story ships, a maintainer accepts it by naming the newest commit (`/tg accept-commits <sha>`).");
    // A task branch's fix comes through its PR: no such note.
    let d = on_failed_run(
        &LoopState::default(),
        &run(1, FailureKind::TestFailure, 0),
        &f.ctx(),
    );
    assert!(!format!("{:?}", d.effects).contains("accept-commits"));
}
