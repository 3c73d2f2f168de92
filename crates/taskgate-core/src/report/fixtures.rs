//! Test fixtures shared by the report's unit tests: a command result and
//! a failing `test` gate with findings inside and outside the workspace.
//!
//! Owns: nothing but test data. Must not: be compiled outside `cfg(test)`.

use super::{CommandResult, GateResult};
use crate::classify::{Classification, FailureKind, Finding};

pub(super) fn cmd(cmd: &str, exit: i32, output: &str) -> CommandResult {
    CommandResult {
        cmd: cmd.into(),
        gate: "test".into(),
        exit_code: Some(exit),
        signal: None,
        timed_out: false,
        timeout_seconds: 30,
        duration_ms: 1_234,
        output: output.into(),
        output_bytes: output.len() as u64,
        truncated: false,
        flaky: false,
        classification: None,
    }
}

pub(super) fn failing_gate() -> GateResult {
    let mut pytest = cmd(
        "pytest -q | tee log",
        1,
        "F.\n\x1b[31mFAILED\x1b[0m tests/test_a.py::test_x - assert 1 == 2 (cc @octocat, #12)\n```\nbreakout\n",
    );
    pytest.classification = Some(Classification {
        kind: FailureKind::TestFailure,
        summary: "1 failed: tests/test_a.py::test_x - assert 1 == 2".into(),
        findings: vec![
            Finding {
                path: "/ws/abc/tests/test_a.py".into(),
                line: 7,
                column: None,
                message: "assert 1 == 2 @octocat".into(),
            },
            Finding {
                path: "/usr/lib/python3/site.py".into(),
                line: 3,
                column: None,
                message: "outside".into(),
            },
            Finding {
                path: "../escape.py".into(),
                line: 1,
                column: None,
                message: "outside".into(),
            },
        ],
    });
    GateResult {
        gate: "test".into(),
        passed: false,
        kind: Some(FailureKind::TestFailure),
        summary: pytest.classification.as_ref().map(|c| c.summary.clone()),
        commands: vec![
            cmd("ruff check .", 0, "All checks passed!\n"),
            cmd("true", 0, ""),
            pytest,
        ],
        missing_artifacts: vec!["Backtest/adapter.py".into()],
        metric_failures: vec!["rows_min = 3, expected >= 10".into()],
        warnings: vec![],
        cancelled: false,
        tests: None,
    }
}
