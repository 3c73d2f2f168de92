use super::super::{render_check_output, GateTests, UnmetRequired};
use super::*;
use crate::classify::{Classification, Finding};
use crate::results::{Outcome, TestCase};

const FLAKY: &str = "tests/test_net.py::test_fetch";
const BROKEN: &str = "tests/test_db.py::test_schema";

fn set(ids: &[&str]) -> BTreeSet<TestId> {
    ids.iter().map(|i| TestId::new(*i)).collect()
}

fn passed(id: &str) -> TestCase {
    TestCase {
        id: TestId::new(id),
        name: id.rsplit("::").next().unwrap_or(id).to_string(),
        suite: None,
        file: None,
        line: None,
        outcome: Outcome::Passed,
        duration_ms: Some(3),
    }
}

fn failed(id: &str, file: &str, line: u32, message: &str) -> TestCase {
    TestCase {
        file: Some(file.into()),
        line: Some(line),
        outcome: Outcome::Failed {
            message: message.into(),
            details: String::new(),
        },
        ..passed(id)
    }
}

fn none(_: &TestId) -> bool {
    false
}

/// `pytest` as it ran: failed with exit 1, classified `kind`.
fn pytest(kind: FailureKind) -> CommandResult {
    CommandResult {
        cmd: "pytest -q --junitxml=junit.xml".into(),
        gate: "test".into(),
        exit_code: Some(1),
        signal: None,
        timed_out: false,
        timeout_seconds: 30,
        duration_ms: 900,
        output: "F.\n".into(),
        output_bytes: 3,
        truncated: false,
        flaky: false,
        classification: Some(Classification {
            kind,
            summary: "1 failed: tests/test_net.py::test_fetch".into(),
            findings: vec![Finding {
                path: "tests/test_net.py".into(),
                line: 3,
                column: None,
                message: "assert 1 == 2".into(),
            }],
        }),
    }
}

/// A gate as `taskgate run` on an Actions runner writes it: the job knows
/// no quarantine, so every failing case is failing and the gate failed.
fn gate_from_the_job(command: CommandResult, broken_fails: bool) -> GateResult {
    let cases = vec![
        failed(FLAKY, "tests/test_net.py", 3, "assert 1 == 2"),
        if broken_fails {
            failed(BROKEN, "tests/test_db.py", 9, "no such table")
        } else {
            passed(BROKEN)
        },
    ];
    let tests = GateTests::new(cases, &none, vec!["junit.xml".into()], vec![]);
    let mut gate = GateResult {
        gate: "test".into(),
        passed: false,
        kind: None,
        summary: None,
        commands: vec![command],
        missing_artifacts: vec![],
        metric_failures: vec![],
        warnings: vec![],
        cancelled: false,
        tests: Some(tests),
    };
    decide_verdict(&mut gate, None);
    gate
}

fn counts(gate: &GateResult) -> String {
    gate.tests.as_ref().unwrap().counts_line()
}

#[test]
fn a_failure_of_a_quarantined_test_alone_passes_the_gate_with_a_warning() {
    let mut gate = gate_from_the_job(pytest(FailureKind::TestFailure), false);
    assert!(!gate.passed, "the job failed it");
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    assert!(gate.passed, "{gate:#?}");
    assert_eq!((gate.kind, gate.summary.as_deref()), (None, None));
    insta::assert_snapshot!(counts(&gate), @"1 passed, 1 quarantined");
    insta::assert_snapshot!(gate.warnings.join("\n"), @r#"1 quarantined test failed (flaky, see the "Flaky tests" issue); it does not fail this gate"#);
    let tests = gate.tests.as_ref().unwrap();
    assert_eq!(tests.quarantined_ids, [TestId::new(FLAKY)]);
}

#[test]
fn a_real_failure_beside_the_quarantined_one_still_fails_naming_only_it() {
    let mut gate = gate_from_the_job(pytest(FailureKind::Unknown), true);
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    assert!(!gate.passed);
    assert_eq!(gate.kind, Some(FailureKind::TestFailure));
    insta::assert_snapshot!(gate.summary.clone().unwrap(), @"test_schema (tests/test_db.py:9): no such table");
    insta::assert_snapshot!(counts(&gate), @"1 failed, 0 passed, 1 quarantined");
    assert_eq!(gate.warnings.len(), 1, "the quarantined one is still said");
}

#[test]
fn a_timeout_or_a_build_failure_is_not_excused_by_a_quarantine() {
    let mut timed_out = pytest(FailureKind::Timeout);
    timed_out.exit_code = None;
    timed_out.timed_out = true;
    for (command, kind) in [
        (timed_out, FailureKind::Timeout),
        (pytest(FailureKind::BuildFailure), FailureKind::BuildFailure),
    ] {
        let mut gate = gate_from_the_job(command, false);
        apply_quarantine(&mut gate, &set(&[FLAKY]));
        assert!(!gate.passed, "{kind}");
        assert_eq!(gate.kind, Some(kind));
        assert_eq!(counts(&gate), "1 passed, 1 quarantined", "{kind}");
    }
}

/// What a workflow could claim: the test quarantined, counted apart, the
/// warning said and the gate passed because of it.
fn gate_claiming_quarantine() -> GateResult {
    let cases = vec![
        failed(FLAKY, "tests/test_net.py", 3, "assert 1 == 2"),
        passed(BROKEN),
    ];
    let claimed = |id: &TestId| id.as_str() == FLAKY;
    let mut gate = gate_from_the_job(pytest(FailureKind::TestFailure), false);
    gate.tests = Some(GateTests::new(cases, &claimed, vec![], vec![]));
    gate.warnings.clear();
    decide_verdict(&mut gate, None);
    assert!(gate.passed, "as claimed");
    gate
}

#[test]
fn a_quarantine_the_report_claims_and_the_server_does_not_hold_is_ignored() {
    let mut gate = gate_claiming_quarantine();
    apply_quarantine(&mut gate, &set(&[]));
    assert!(!gate.passed);
    assert_eq!(gate.kind, Some(FailureKind::TestFailure));
    insta::assert_snapshot!(counts(&gate), @"1 failed, 1 passed");
    assert!(gate.warnings.is_empty(), "{:?}", gate.warnings);
    assert!(gate.tests.as_ref().unwrap().quarantined_ids.is_empty());
    // Another test quarantined on the server excuses nothing here.
    let mut gate = gate_claiming_quarantine();
    apply_quarantine(&mut gate, &set(&[BROKEN]));
    assert!(!gate.passed);
}

#[test]
fn failures_counted_but_not_kept_stay_failing() {
    let mut gate = gate_claiming_quarantine();
    // The report says 5 quarantined failures but keeps only one case of them.
    gate.tests.as_mut().unwrap().quarantined = 5;
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    assert!(!gate.passed);
    insta::assert_snapshot!(counts(&gate), @"4 failed, 1 passed, 1 quarantined");
}

#[test]
fn a_required_test_is_quarantined_only_by_the_server() {
    let mut gate = gate_claiming_quarantine();
    gate.tests.as_mut().unwrap().required = vec![UnmetRequired {
        id: TestId::new(FLAKY),
        why: Unmet::Quarantined,
    }];
    apply_quarantine(&mut gate, &set(&[]));
    insta::assert_snapshot!(gate.summary.clone().unwrap(), @"test_fetch (tests/test_net.py:3): assert 1 == 2");
    let required = &gate.tests.as_ref().unwrap().required;
    insta::assert_snapshot!(required[0].to_string(), @"required test `tests/test_net.py::test_fetch` failed");
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    assert!(
        !gate.passed,
        "a required test that proves nothing fails the gate"
    );
    assert_eq!(
        gate.tests.as_ref().unwrap().required[0].why,
        Unmet::Quarantined
    );
}

#[test]
fn applying_the_same_quarantine_again_changes_nothing() {
    for broken_fails in [false, true] {
        let quarantined = set(&[FLAKY]);
        let mut gate = gate_from_the_job(pytest(FailureKind::TestFailure), broken_fails);
        apply_quarantine(&mut gate, &quarantined);
        let once = gate.clone();
        apply_quarantine(&mut gate, &quarantined);
        assert_eq!(gate, once);
    }
    // A gate judged with the quarantine already (the local runner's) too.
    let mut local = gate_from_the_job(pytest(FailureKind::TestFailure), true);
    let cases = vec![
        failed(FLAKY, "tests/test_net.py", 3, "assert 1 == 2"),
        failed(BROKEN, "tests/test_db.py", 9, "no such table"),
    ];
    let quarantined = |id: &TestId| id.as_str() == FLAKY;
    local.tests = Some(GateTests::new(cases, &quarantined, vec![], vec![]));
    local.warnings.clear();
    decide_verdict(&mut local, None);
    let judged = local.clone();
    apply_quarantine(&mut local, &set(&[FLAKY]));
    assert_eq!(local, judged);
}

#[test]
fn a_gate_that_failed_before_running_keeps_its_verdict() {
    let mut gate = GateResult {
        commands: vec![],
        tests: None,
        kind: Some(FailureKind::ToolingError),
        summary: Some("taskgate refused to run task code: no sandbox".into()),
        ..gate_from_the_job(pytest(FailureKind::TestFailure), false)
    };
    let before = gate.clone();
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    assert_eq!(gate, before);
}

#[test]
fn a_command_excused_by_the_quarantine_annotates_as_a_warning() {
    let levels = |gate: &GateResult| -> String {
        render_check_output(gate, "")
            .annotations
            .iter()
            .map(|a| {
                format!(
                    "{:?} {}",
                    a.annotation_level,
                    a.title.as_deref().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut gate = gate_from_the_job(pytest(FailureKind::TestFailure), false);
    insta::assert_snapshot!(levels(&gate), @r"
    Failure test failed: tests/test_net.py::test_fetch
    Failure test_failure: pytest -q --junitxml=junit.xml
    ");
    apply_quarantine(&mut gate, &set(&[FLAKY]));
    insta::assert_snapshot!(levels(&gate), @r"
    Warning quarantined test failed (flaky, not failing): tests/test_net.py::test_fetch
    Warning test_failure: pytest -q --junitxml=junit.xml
    ");
}
