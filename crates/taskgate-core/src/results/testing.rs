//! Test helpers for the parsers: the committed fixtures and a compact,
//! readable summary of results for snapshots.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{parse_report, Limits, Outcome, ReportFormat, TestResults};

pub(super) fn path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/reports")
        .join(relative)
}

/// Parses a fixture under `fixtures/reports/` with the default limits.
pub(super) fn fixture(format: ReportFormat, relative: &str) -> TestResults {
    let file = std::fs::File::open(path(relative)).expect("fixture");
    parse_report(format, file, relative, &Limits::default()).expect("fixture parses")
}

/// One line per case: outcome, id, duration, location, then the message
/// (indented) for failures and the reason for skips. Details are left out
/// (they hold temp paths and stack traces).
pub(super) fn summary(results: &TestResults) -> String {
    let c = results.counts();
    let mut out = format!(
        "{}: {} passed, {} failed, {} skipped",
        results.format, c.passed, c.failed, c.skipped
    );
    if let Some(t) = results.truncated {
        let _ = write!(out, " (truncated: {t:?})");
    }
    for case in &results.cases {
        let duration = case
            .duration_ms
            .map(|ms| format!(" {ms}ms"))
            .unwrap_or_default();
        let location = match (&case.file, case.line) {
            (Some(f), Some(l)) => format!(" at {f}:{l}"),
            (Some(f), None) => format!(" in {f}"),
            _ => String::new(),
        };
        let (label, text) = match &case.outcome {
            Outcome::Passed => ("passed ", None),
            Outcome::Failed { message, .. } => ("FAILED ", Some(message)),
            Outcome::Errored { message, .. } => ("ERRORED", Some(message)),
            Outcome::Skipped { reason } => {
                let _ = write!(out, "\nskipped {}: {reason}", case.id);
                continue;
            }
        };
        let _ = write!(out, "\n{label} {}{duration}{location}", case.id);
        if let Some(text) = text {
            for line in text.lines() {
                let _ = write!(out, "\n  {line}");
            }
        }
    }
    out
}
