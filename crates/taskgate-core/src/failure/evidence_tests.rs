//! The evidence a todo and its agent get, from real tool output: a
//! `cargo test` log through the classifier, a pytest JUnit report through
//! the results parser, and a failure too large for GitHub.

use super::tests::{Fixture, BRANCH};
use super::*;
use crate::classify::{classify, Outcome as Ran};
use crate::config::AgentRoute;
use crate::report::{CommandResult, GateResult, GateTests};
use crate::results::{parse_report, Limits as ReportLimits, ReportFormat};
use crate::story::MAX_BODY_CHARS;

const CARGO_ASSERT: &str = include_str!("../../../../fixtures/failures/cargo-test-assert.log");
const CARGO_PANIC: &str =
    include_str!("../../../../fixtures/failures/cargo-test-panic-message.log");
const JUNIT_XUNIT1: &str = include_str!("../../../../fixtures/reports/pytest/junit-xunit1.xml");
const JUNIT_XUNIT2: &str = include_str!("../../../../fixtures/reports/pytest/junit-xunit2.xml");

const REPO_URL: &str = "https://github.com/o/r";
const GREEN: &str = "9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29";

/// A failed command as the runner reports it: its output classified.
fn failed(cmd: &str, exit: i32, output: &str) -> CommandResult {
    let classification = classify(&Ran {
        command: cmd,
        exit_code: Some(exit),
        signal: None,
        timed_out: false,
        timeout_seconds: Some(600),
        output: output.as_bytes(),
    });
    CommandResult {
        cmd: cmd.into(),
        gate: "unit".into(),
        exit_code: Some(exit),
        signal: None,
        timed_out: false,
        timeout_seconds: 600,
        duration_ms: 2_000,
        output: output.into(),
        output_bytes: output.len() as u64,
        truncated: false,
        flaky: false,
        classification: Some(classification),
    }
}

fn gate(name: &str, command: CommandResult, tests: Option<GateTests>) -> GateResult {
    let c = command.classification.clone().unwrap();
    // As the runner does: the report's failing tests, else the classifier.
    let summary = tests
        .as_ref()
        .and_then(GateTests::failure_summary)
        .unwrap_or(c.summary);
    GateResult {
        gate: name.into(),
        passed: false,
        kind: Some(c.kind),
        summary: Some(summary),
        commands: vec![command],
        missing_artifacts: vec![],
        metric_failures: vec![],
        warnings: vec![],
        cancelled: false,
        tests,
    }
}

/// A pytest JUnit report read as the runner reads it.
fn junit(xml: &str) -> GateTests {
    let results = parse_report(
        ReportFormat::Junit,
        xml.as_bytes(),
        "junit.xml",
        &ReportLimits::default(),
    )
    .unwrap();
    GateTests::new(results.cases, &|_| false, vec!["junit.xml".into()], vec![])
}

/// What `task::follow_verdict` makes of a red gate, with the shell's links.
fn failed_run(attempt: u32, sha: &str, g: &GateResult, check_run: u64) -> FailedRun {
    let (tests, tests_failed) = failing_tests(g, TESTS_KEPT);
    FailedRun {
        attempt,
        sha: crate::ids::sha(sha),
        gates: vec![GateFailure {
            gate: g.gate.clone(),
            kind: g.kind.unwrap(),
            summary: g.summary.clone().unwrap_or_default(),
            commands: g.commands.iter().map(|c| c.cmd.clone()).collect(),
            tests,
            tests_failed,
            excerpt: log_excerpt(g),
            check_run: Some(format!("{REPO_URL}/runs/{check_run}")),
        }],
        changes_since_green: None,
        now: i64::from(attempt) * 1_000,
        last_green: Some(crate::ids::sha(GREEN)),
        repo_url: Some(REPO_URL.into()),
    }
}

fn bodies(d: &LoopDecision) -> Vec<(&'static str, &str)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CreateIssue { body, .. } => Some(("issue", body.as_str())),
            Effect::UpdateIssue {
                body: Some(body), ..
            } => Some(("issue", body.as_str())),
            Effect::CommentOnMarker {
                body,
                comment_marker,
                ..
            } if comment_marker.starts_with("agent ") => Some(("mention", body.as_str())),
            Effect::CommentOnMarker { body, .. } => Some(("comment", body.as_str())),
            _ => None,
        })
        .collect()
}

fn one<'a>(d: &'a LoopDecision, what: &str) -> &'a str {
    let found: Vec<&str> = bodies(d)
        .into_iter()
        .filter(|(w, _)| *w == what)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(found.len(), 1, "{what}: {:#?}", d.effects);
    found[0]
}

fn mentioned() -> Fixture {
    let mut f = Fixture::new();
    f.config.roles.get_mut("coder").unwrap().agent = Some(AgentRoute::Mention("@claude".into()));
    f
}

#[test]
fn a_cargo_test_failure_reaches_the_todo_with_its_tests_log_command_diff_and_check_run() {
    let f = Fixture::new();
    let g = gate("unit", failed("cargo test", 101, CARGO_ASSERT), None);
    let run = failed_run(1, &"a".repeat(40), &g, 41);
    let d = on_failed_run(&LoopState::default(), &run, &f.ctx());
    insta::assert_snapshot!(one(&d, "issue"), @r"
        The acceptance run of task **Data loading** failed with **test_failure**; this todo is routed to the **coder** role. Push the fix to `taskgate/task-2-data`: the next green run closes it.

        | attempt | depth | time left |
        |---|---|---|
        | 1/2 | 1/2 | 1 d of 1 d |

        ### Diagnosis (run 1 at `aaaaaaaaaaaa`)

        #### Gate `unit`: test_failure

        ```text
        test `tests::adds_small_numbers` failed at src/lib.rs:11:9
        assertion `left == right` failed (left: 4, right: 3)
        failed tests: tests::adds_small_numbers, tests::parses_config (1 passed, 2 failed)
        ```

        Findings (2):

        ```text
        src/lib.rs:11
            test `tests::adds_small_numbers` panicked: assertion `left == right` failed (left: 4, right: 3)
        src/lib.rs:17
            test `tests::parses_config` panicked: config should parse
        ```

        Log excerpt (around the first error):

        ```text
             Running unittests src/lib.rs (/work/scratch/failing/target/debug/deps/rs_test-1fa7220de0f68d1e)

        running 3 tests
        test tests::adds_small_numbers ... FAILED
        test tests::zero_is_identity ... ok
        test tests::parses_config ... FAILED

        failures:

        ---- tests::adds_small_numbers stdout ----

        thread 'tests::adds_small_numbers' (4407) panicked at src/lib.rs:11:9:
        assertion `left == right` failed
          left: 4
         right: 3
        stack backtrace:
           0: __rustc::rust_begin_unwind
                     at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
           1: core::panicking::panic_fmt
                     at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
           2: core::panicking::assert_failed_inner
                     at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
           3: core::panicking::assert_failed::<i32, i32>
                     at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
           4: rs_test::tests::adds_small_numbers
                     at ./src/lib.rs:11:9
           5: rs_test::tests::adds_small_numbers::{{closure}}
                     at ./src/lib.rs:10:28
           6: core::ops::function::FnOnce::call_once
                     at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
        ```

        Reproduce from the repository root:

        - `git checkout aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa && cargo test`

        Full log: [the check run of gate `unit`](https://github.com/o/r/runs/41).

        ### Changes since the last green run

        The commits and the diff from the last green run (`9f2c1e7d4b3a`) to this run (`aaaaaaaaaaaa`): [`9f2c1e7d4b3a...aaaaaaaaaaaa`](https://github.com/o/r/compare/9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa); in a checkout, `git diff 9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`.

        ### What happens next

        Each failed run on the task branch counts as one attempt. A failure after attempt 2/2 closes this todo and leads to a deeper branch todo (depth 2/2).

        <!-- taskgate:story=file:s task=data todo=1 -->
        ");
}

#[test]
fn a_later_attempt_tells_the_agent_what_changed_and_what_still_fails() {
    let f = mentioned();
    let first = gate(
        "unit",
        failed("pytest -q", 1, ""),
        Some(junit(JUNIT_XUNIT1)),
    );
    let opened = on_failed_run(
        &LoopState::default(),
        &failed_run(1, &"a".repeat(40), &first, 41),
        &f.ctx(),
    );
    insta::assert_snapshot!(one(&opened, "mention"), @r"
        @claude the acceptance run failed on `taskgate/task-2-data` (attempt 1 of 2). Fix the cause and push the fix to `taskgate/task-2-data`; taskgate tests each push and closes this issue when the run passes. The evidence follows; this issue's body has it too.

        ### Diagnosis (run 1 at `aaaaaaaaaaaa`)

        #### Gate `unit`: test_failure

        ```text
        test_fetch_returns_body (tests/test_fetch.py:12): AssertionError: server said 500
        test_raises_on_garbage (tests/test_fetch.py:26): ValueError: unexpected <token> & more
        ```

        Failing tests (2):

        ```text
        tests/test_fetch.py::test_fetch_returns_body (tests/test_fetch.py:12)
            AssertionError: server said 500
            assert 500 == 200
        tests/test_fetch.py::TestParser::test_raises_on_garbage (tests/test_fetch.py:26)
            ValueError: unexpected <token> & more
        ```

        Reproduce from the repository root:

        - `git checkout aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa && pytest -q`

        Full log: [the check run of gate `unit`](https://github.com/o/r/runs/41).

        ### Changes since the last green run

        The commits and the diff from the last green run (`9f2c1e7d4b3a`) to this run (`aaaaaaaaaaaa`): [`9f2c1e7d4b3a...aaaaaaaaaaaa`](https://github.com/o/r/compare/9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa); in a checkout, `git diff 9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`.
        ");
    let again = gate(
        "unit",
        failed("pytest -q", 1, ""),
        Some(junit(JUNIT_XUNIT2)),
    );
    let d = on_failed_run(
        &opened.state,
        &failed_run(2, &"b".repeat(40), &again, 42),
        &f.ctx(),
    );
    insta::assert_snapshot!(one(&d, "comment"), @r"
        Attempt 2/2 failed at `bbbbbbbbbbbb`:

        - gate `unit`: **test_failure** — `test_fetch_returns_body: AssertionError: server said 500`

        ### Since the previous attempt

        The commits and the diff from run 1 (`aaaaaaaaaaaa`) to this run (`bbbbbbbbbbbb`): [`aaaaaaaaaaaa...bbbbbbbbbbbb`](https://github.com/o/r/compare/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb); in a checkout, `git diff aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb`.

        - Still failing: `tests/test_fetch.py::TestParser::test_raises_on_garbage`, `tests/test_fetch.py::test_fetch_returns_body`

        That was the last attempt of this todo; the body has the full diagnosis.
        ");
    insta::assert_snapshot!(one(&d, "mention"), @r"
        @claude the acceptance run failed on `taskgate/task-2-data` (attempt 2 of 2). Fix the cause and push the fix to `taskgate/task-2-data`; taskgate tests each push and closes this issue when the run passes. The evidence follows; this issue's body has it too.

        ### Since the previous attempt

        The commits and the diff from run 1 (`aaaaaaaaaaaa`) to this run (`bbbbbbbbbbbb`): [`aaaaaaaaaaaa...bbbbbbbbbbbb`](https://github.com/o/r/compare/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb); in a checkout, `git diff aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb`.

        - Still failing: `tests/test_fetch.py::TestParser::test_raises_on_garbage`, `tests/test_fetch.py::test_fetch_returns_body`

        ### Diagnosis (run 2 at `bbbbbbbbbbbb`)

        #### Gate `unit`: test_failure

        ```text
        test_fetch_returns_body: AssertionError: server said 500
        test_raises_on_garbage: ValueError: unexpected <token> & more
        ```

        Failing tests (2):

        ```text
        tests/test_fetch.py::test_fetch_returns_body
            AssertionError: server said 500
            assert 500 == 200
        tests/test_fetch.py::TestParser::test_raises_on_garbage
            ValueError: unexpected <token> & more
        ```

        Reproduce from the repository root:

        - `git checkout bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb && pytest -q`

        Full log: [the check run of gate `unit`](https://github.com/o/r/runs/42).

        ### Changes since the last green run

        The commits and the diff from the last green run (`9f2c1e7d4b3a`) to this run (`bbbbbbbbbbbb`): [`9f2c1e7d4b3a...bbbbbbbbbbbb`](https://github.com/o/r/compare/9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb); in a checkout, `git diff 9f2c1e7d4b3a29f2c1e7d4b3a29f2c1e7d4b3a29...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb`.
        ");
}

#[test]
fn tests_fixed_and_newly_failing_are_told_apart() {
    let f = mentioned();
    let assert = gate("unit", failed("cargo test", 101, CARGO_ASSERT), None);
    let panic = gate("unit", failed("cargo test", 101, CARGO_PANIC), None);
    let opened = on_failed_run(
        &LoopState::default(),
        &failed_run(1, &"a".repeat(40), &assert, 41),
        &f.ctx(),
    );
    let d = on_failed_run(
        &opened.state,
        &failed_run(2, &"b".repeat(40), &panic, 42),
        &f.ctx(),
    );
    let comment = one(&d, "comment");
    let since = &comment[comment.find("### Since").unwrap()..];
    insta::assert_snapshot!(since, @r"
        ### Since the previous attempt

        The commits and the diff from run 1 (`aaaaaaaaaaaa`) to this run (`bbbbbbbbbbbb`): [`aaaaaaaaaaaa...bbbbbbbbbbbb`](https://github.com/o/r/compare/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb); in a checkout, `git diff aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb`.

        - Newly failing: `src/lib.rs:3`
        - Fixed since then: `src/lib.rs:11`, `src/lib.rs:17`

        That was the last attempt of this todo; the body has the full diagnosis.
        ");
}

#[test]
fn a_failure_too_large_for_github_is_clipped_and_says_so() {
    let f = mentioned();
    let huge = format!("{}\n@someone #12\n{}", "x".repeat(50_000), CARGO_ASSERT);
    let mut run = failed_run(
        1,
        &"a".repeat(40),
        &gate("unit", failed("cargo test", 101, &huge), None),
        41,
    );
    run.gates[0].summary = "s".repeat(50_000);
    run.gates[0].tests = vec![
        FailingTest {
            name: "t".repeat(1_000),
            location: Some("src/lib.rs:1".into()),
            message: "m\n".repeat(5_000),
        };
        50
    ];
    run.gates[0].tests_failed = 500;
    run.gates = (0..10)
        .map(|i| GateFailure {
            gate: format!("gate-{i}"),
            ..run.gates[0].clone()
        })
        .collect();
    let d = on_failed_run(&LoopState::default(), &run, &f.ctx());
    for (what, body) in bodies(&d) {
        assert!(body.chars().count() <= MAX_BODY_CHARS, "{what}");
        assert_eq!(body.matches("```").count() % 2, 0, "{what}: fences close");
        assert!(!body.contains("@someone"), "{what}");
    }
    let body = one(&d, "issue");
    assert!(body.ends_with("<!-- taskgate:story=file:s task=data todo=1 -->\n"));
    let notes: Vec<&str> = body.lines().filter(|l| l.contains("lipped")).collect();
    insta::assert_snapshot!(notes.join("\n"), @r#"
        Failing tests (10 of 500, the rest clipped):
        Failing tests (10 of 500, the rest clipped):
        **Clipped** to fit GitHub's size limit: the evidence of gates `gate-2`, `gate-3`, `gate-4`, `gate-5`, `gate-6`, `gate-7`, `gate-8`, `gate-9`; each one's check run has it.
        "#);
}

fn dispatched_evidence(d: &LoopDecision) -> &str {
    let Some(Effect::DispatchWorkflow {
        inputs, git_ref, ..
    }) = d.effects.last()
    else {
        panic!("{:#?}", d.effects);
    };
    assert_eq!(git_ref, BRANCH);
    assert!(inputs.len() <= 10, "GitHub takes at most 10 inputs");
    let mut names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    let mut declared = AGENT_INPUTS.to_vec();
    names.sort_unstable();
    declared.sort_unstable();
    assert_eq!(
        names, declared,
        "what `taskgate init`'s agent workflow declares"
    );
    let all: usize = inputs.iter().map(|(k, v)| k.len() + v.len()).sum();
    assert!(all < 65_535, "GitHub's cap on a dispatch's inputs");
    &inputs["evidence"]
}

fn dispatching() -> Fixture {
    let mut f = Fixture::new();
    f.config.roles.get_mut("coder").unwrap().agent = Some(AgentRoute::Workflow("agent.yml".into()));
    f
}

#[test]
fn a_dispatched_workflow_gets_the_failing_tests_and_the_first_error() {
    let f = dispatching();
    let g = gate("unit", failed("cargo test", 101, CARGO_ASSERT), None);
    let d = on_failed_run(
        &LoopState::default(),
        &failed_run(1, &"a".repeat(40), &g, 41),
        &f.ctx(),
    );
    let evidence = dispatched_evidence(&d);
    assert!(evidence.len() <= EVIDENCE_INPUT_BYTES);
    insta::assert_snapshot!("dispatched_evidence", evidence);
}

#[test]
fn a_huge_failure_fits_the_evidence_input_and_names_the_gates_left_out() {
    let f = dispatching();
    let g = gate(
        "unit",
        failed("pytest -q", 1, &"E   boom\n".repeat(5_000)),
        Some(junit(JUNIT_XUNIT1)),
    );
    let mut run = failed_run(1, &"a".repeat(40), &g, 41);
    run.gates = (0..10)
        .map(|i| GateFailure {
            gate: format!("gate-{i}"),
            excerpt: Some("E   boom\n".repeat(300)),
            ..run.gates[0].clone()
        })
        .collect();
    let d = on_failed_run(&LoopState::default(), &run, &f.ctx());
    let evidence = dispatched_evidence(&d);
    assert!(evidence.len() <= EVIDENCE_INPUT_BYTES, "{}", evidence.len());
    assert!(
        evidence.contains("## Gate gate-0: test_failure"),
        "{evidence}"
    );
    let last = evidence.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "Left out to fit the input (the todo and the check runs have them): gates "
        ) && last.ends_with("gate-9."),
        "{last}"
    );
}

#[test]
fn a_check_run_known_after_its_todo_was_written_is_linked_from_the_todo() {
    let f = Fixture::new();
    let g = gate("unit", failed("cargo test", 101, CARGO_ASSERT), None);
    // The run ended before the check run's create was answered.
    let mut run = failed_run(1, &"a".repeat(40), &g, 41);
    run.gates[0].check_run = None;
    let opened = on_failed_run(&LoopState::default(), &run, &f.ctx());
    assert!(
        one(&opened, "issue")
            .contains("Full log: the check run of gate `unit` on commit `aaaaaaaaaaaa`."),
        "{:#?}",
        opened.effects
    );
    assert_eq!(missing_check_runs(&opened.state, 1), ["unit"]);
    assert!(missing_check_runs(&opened.state, 2).is_empty());

    let links =
        std::collections::BTreeMap::from([("unit".to_owned(), format!("{REPO_URL}/runs/41"))]);
    let d = on_check_runs_known(&opened.state, 1, &links, 1_500, &f.ctx());
    assert_eq!(d.outcome, LoopOutcome::Linked);
    assert!(
        one(&d, "issue")
            .contains("Full log: [the check run of gate `unit`](https://github.com/o/r/runs/41)."),
        "{:#?}",
        d.effects
    );
    assert!(missing_check_runs(&d.state, 1).is_empty());
    // Told again (a redelivery), or of another attempt: nothing changes.
    for attempt in [1, 2] {
        let again = on_check_runs_known(&d.state, attempt, &links, 1_600, &f.ctx());
        assert_eq!(again.outcome, LoopOutcome::Nothing);
        assert!(again.effects.is_empty());
        assert_eq!(again.state, d.state);
    }
}
