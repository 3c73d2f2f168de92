//! What `taskgate run` prints: every gate, every command, and the tail of
//! each failing command's output, as plain text.
//!
//! Owns: [`render_terminal_report`]. Must not: print (the CLI does) or use
//! colours or Markdown; tool output is shown through [`plain_text`] only.

use std::fmt::Write;

use super::text::{one_line, plain_text, plural, render_duration};
use super::{case_line, RunReport, MAX_FAILING_LISTED};

/// What `taskgate run` prints: every gate, every command, and the tail of
/// each failing command's output. Plain text, no colours.
pub fn render_terminal_report(report: &RunReport) -> String {
    let failed = report.gates.iter().filter(|g| !g.passed).count();
    let verdict = if report.cancelled {
        "cancelled".to_string()
    } else if report.gates.is_empty() {
        "nothing to run".to_string()
    } else if failed == 0 {
        format!(
            "all {} gate{} passed",
            report.gates.len(),
            plural(report.gates.len())
        )
    } else {
        format!(
            "{failed} of {} gate{} failed",
            report.gates.len(),
            plural(report.gates.len())
        )
    };
    let at = report
        .sha
        .as_deref()
        .map(|s| format!(" at {}", &s[..s.len().min(12)]))
        .unwrap_or_default();
    let mut out = format!(
        "taskgate run: task `{}`{at}: {verdict} ({})\n",
        report.task,
        render_duration(report.duration_ms)
    );
    for g in &report.gates {
        let status = match (g.cancelled, g.passed, g.kind) {
            (true, ..) => "CANCELLED".to_string(),
            (false, true, _) => "PASSED".to_string(),
            (false, false, Some(kind)) => format!("FAILED ({kind})"),
            (false, false, None) => "FAILED".to_string(),
        };
        let _ = writeln!(out, "\ngate {}: {status}", g.gate);
        for c in &g.commands {
            let exit = c
                .exit_code
                .map_or_else(|| "-".to_string(), |e| e.to_string());
            let _ = writeln!(
                out,
                "  {:<9} {}  [{}, exit {exit}]",
                c.result_word(),
                one_line(&c.cmd),
                render_duration(c.duration_ms)
            );
            if c.passed() && !c.flaky {
                continue;
            }
            if let Some(class) = &c.classification {
                for (i, line) in class.summary.lines().enumerate() {
                    let label = if i == 0 {
                        format!("{}:", class.kind)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(out, "      {label:<14} {line}");
                }
            }
            if !c.passed() {
                for line in tail_lines(&plain_text(&c.output), 15) {
                    let _ = writeln!(out, "      | {line}");
                }
            }
        }
        if let Some(tests) = g.tests.as_ref().filter(|t| t.has_cases()) {
            let _ = writeln!(out, "  tests: {}", tests.counts_line());
            for case in tests.failing().take(MAX_FAILING_LISTED) {
                let _ = writeln!(out, "    FAILED {}", one_line(&case_line(case)));
            }
        }
        for r in g.tests.iter().flat_map(|t| &t.required) {
            let _ = writeln!(out, "  {r}");
        }
        for a in &g.missing_artifacts {
            let _ = writeln!(out, "  missing artifact: {a}");
        }
        for m in &g.metric_failures {
            let _ = writeln!(out, "  metric: {m}");
        }
        for w in &g.warnings {
            let _ = writeln!(out, "  warning: {w}");
        }
    }
    out
}

fn tail_lines(s: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::failing_gate;
    use crate::report::REPORT_VERSION;

    #[test]
    fn terminal_report_reads_well() {
        let mut lint = failing_gate();
        lint.gate = "lint".into();
        lint.commands.truncate(1);
        lint.passed = true;
        lint.kind = None;
        lint.missing_artifacts.clear();
        lint.metric_failures.clear();
        lint.warnings = vec!["`flaky.sh` failed then passed on an immediate re-run".into()];
        let report = RunReport {
            version: REPORT_VERSION,
            task: crate::task::RunSubject::Task("data".into()),
            sha: Some("0123456789abcdef0123".into()),
            gates: vec![failing_gate(), lint],
            duration_ms: 75_500,
            cancelled: false,
            runner_fault: None,
            tested: None,
        };
        insta::assert_snapshot!(render_terminal_report(&report), @r"
            taskgate run: task `data` at 0123456789ab: 1 of 2 gates failed (1 min 15 s)

            gate test: FAILED (test_failure)
              passed    ruff check .  [1.2 s, exit 0]
              passed    true  [1.2 s, exit 0]
              failed    pytest -q | tee log  [1.2 s, exit 1]
                  test_failure:  1 failed: tests/test_a.py::test_x - assert 1 == 2
                  | F.
                  | FAILED tests/test_a.py::test_x - assert 1 == 2 (cc @octocat, #12)
                  | ```
                  | breakout
              missing artifact: Backtest/adapter.py
              metric: rows_min = 3, expected >= 10

            gate lint: PASSED
              passed    ruff check .  [1.2 s, exit 0]
              warning: `flaky.sh` failed then passed on an immediate re-run
            ");
        let json = serde_json::to_string(&report).unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        assert!(!back.passed());
    }
}
