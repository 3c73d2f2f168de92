//! A gate's verdict from its evidence, flaky-test quarantine included, and
//! the same verdict re-made with the server's quarantine on a report that
//! came from outside (an Actions artifact).
//!
//! Owns: [`decide_verdict`] (`passed`, `kind`, `summary` and the quarantine
//! warning of one gate, from its commands, tests and checks: what the local
//! runner and `taskgate run` decide), [`apply_quarantine`] (that decision
//! re-made with the quarantined set the server holds) and
//! [`excused_by_quarantine`] (which also makes a command's annotations
//! warnings). Must not: do IO, read the clock or the store: the
//! quarantined set is handed in.
//!
//! One idea a reader needs: a quarantine is the server's fact, never the
//! report's. [`apply_quarantine`] throws away whatever a report says of it
//! (cases marked quarantined, the count, the warning, a pass it explained)
//! and recounts from the failing cases and the set handed in. Failures the
//! report counted but did not keep (past
//! [`MAX_CASES_KEPT`](super::MAX_CASES_KEPT)) cannot be
//! named, so they count as failing. Applied twice with the same set, it
//! changes nothing.

use std::collections::BTreeSet;

use super::{case_verdict, CaseVerdict, CommandResult, GateResult, GateTests, Unmet};
use crate::classify::FailureKind;
use crate::results::TestId;

/// The summary of a gate stopped by a newer run.
const CANCELLED_SUMMARY: &str = "cancelled: superseded by a newer run";

/// Decides `gate.passed`, `gate.kind` and `gate.summary` from its commands,
/// its tests (quarantine as already counted in them) and its checks, and
/// adds the quarantine warning when quarantined tests failed. `problem` is
/// a failure known before anything ran (a task with nothing to run).
///
/// The first failing command not [`excused_by_quarantine`] gives the kind
/// ([`refined_kind`] when the reports name failing tests) and the summary
/// (the failing tests, else its classifier's); failing tests alone are a
/// `test_failure`; failed checks alone a `spec_mismatch`.
pub fn decide_verdict(gate: &mut GateResult, problem: Option<&str>) {
    let tests = gate.tests.as_ref();
    if let Some(n) = tests.map(|t| t.quarantined).filter(|&n| n > 0) {
        gate.warnings.push(quarantine_warning(n));
    }
    let failing = gate
        .commands
        .iter()
        .find(|c| !c.passed() && !excused_by_quarantine(c, tests));
    let checks: Vec<String> = problem
        .map(str::to_string)
        .into_iter()
        .chain(
            gate.missing_artifacts
                .iter()
                .map(|a| format!("missing artifact: {a}")),
        )
        .chain(gate.metric_failures.iter().map(|m| format!("metric {m}")))
        .chain(
            tests
                .iter()
                .flat_map(|t| &t.required)
                .map(ToString::to_string),
        )
        .collect();
    let failed_tests = tests.and_then(GateTests::failure_summary);
    let (kind, summary) = match (failing, checks.is_empty()) {
        _ if gate.cancelled => (None, Some(CANCELLED_SUMMARY.to_string())),
        (Some(c), _) => {
            let class = c.classification.as_ref();
            let kind = class.map_or(FailureKind::Unknown, |k| k.kind);
            match &failed_tests {
                Some(names) => (Some(refined_kind(kind)), Some(names.clone())),
                None => (Some(kind), class.map(|k| k.summary.clone())),
            }
        }
        (None, _) if failed_tests.is_some() => {
            (Some(FailureKind::TestFailure), failed_tests.clone())
        }
        (None, false) => (
            Some(FailureKind::SpecMismatch),
            Some(checks[..checks.len().min(3)].join("\n")),
        ),
        (None, true) => (None, None),
    };
    gate.passed =
        !gate.cancelled && failing.is_none() && failed_tests.is_none() && checks.is_empty();
    gate.kind = kind;
    gate.summary = summary;
}

/// Re-makes the quarantine part of a gate's verdict with `quarantined`, the
/// repository's tests quarantined now, for a gate read from outside: every
/// failing case is re-marked and recounted, the report's quarantine
/// warning is dropped, and the verdict is decided again by
/// [`decide_verdict`]. A gate that failed before running any command (a
/// plan problem, a refused sandbox) keeps its verdict: nothing in it could
/// be excused.
pub fn apply_quarantine(gate: &mut GateResult, quarantined: &BTreeSet<TestId>) {
    gate.warnings.retain(|w| !is_quarantine_warning(w));
    if let Some(tests) = gate.tests.as_mut() {
        recount(tests, quarantined);
    }
    let failed_before_running = !gate.passed && !gate.cancelled && gate.commands.is_empty();
    if failed_before_running {
        if let Some(n) = gate
            .tests
            .as_ref()
            .map(|t| t.quarantined)
            .filter(|&n| n > 0)
        {
            gate.warnings.push(quarantine_warning(n));
        }
        return;
    }
    decide_verdict(gate, None);
}

/// A failing command whose only failing tests are quarantined, and whose
/// log says nothing more specific than a test failure (not a timeout, a
/// build failure, a missing dependency…): the quarantine explains it.
pub fn excused_by_quarantine(command: &CommandResult, tests: Option<&GateTests>) -> bool {
    let Some(tests) = tests else { return false };
    let kind = command
        .classification
        .as_ref()
        .map_or(FailureKind::Unknown, |k| k.kind);
    tests.failed == 0
        && tests.quarantined > 0
        && !command.timed_out
        && command.exit_code.is_some()
        && refined_kind(kind) == FailureKind::TestFailure
}

/// The kind of a failing command whose reports name failing tests: a
/// vague verdict of the log classifier becomes `test_failure`; a specific
/// one (a build failure, a timeout, a missing dependency) stands.
fn refined_kind(kind: FailureKind) -> FailureKind {
    match kind {
        FailureKind::Unknown | FailureKind::RuntimeError => FailureKind::TestFailure,
        other => other,
    }
}

/// The gate's warning when `n` quarantined tests failed.
fn quarantine_warning(n: usize) -> String {
    format!(
        "{n} quarantined test{} failed (flaky, see the \"Flaky tests\" issue); {} not fail this gate",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it does" } else { "they do" }
    )
}

/// Exactly a warning [`quarantine_warning`] would write.
fn is_quarantine_warning(warning: &str) -> bool {
    let digits = warning.len()
        - warning
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    warning[..digits]
        .parse::<usize>()
        .is_ok_and(|n| warning == quarantine_warning(n))
}

/// `tests` counted again with `quarantined`: failing cases first, then the
/// quarantined failures, then the rest (the order [`GateTests::new`] keeps);
/// failures counted but not kept stay failing; a required test that
/// failed is `quarantined` exactly when it is in the set.
fn recount(tests: &mut GateTests, quarantined: &BTreeSet<TestId>) {
    let counted = tests.failed + tests.quarantined;
    let (mut failing, mut flaky, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for case in std::mem::take(&mut tests.cases) {
        match case_verdict(&case.outcome, quarantined.contains(&case.id)) {
            CaseVerdict::Fail => failing.push(case),
            CaseVerdict::Quarantined => flaky.push(case),
            CaseVerdict::Pass | CaseVerdict::Skip => rest.push(case),
        }
    }
    let unseen = counted.saturating_sub(failing.len() + flaky.len());
    tests.failed = failing.len() + unseen;
    tests.quarantined = flaky.len();
    tests.quarantined_ids = flaky.iter().map(|c| c.id.clone()).collect();
    for r in &mut tests.required {
        if matches!(r.why, Unmet::Failed | Unmet::Quarantined) {
            r.why = if quarantined.contains(&r.id) {
                Unmet::Quarantined
            } else {
                Unmet::Failed
            };
        }
    }
    failing.extend(flaky);
    failing.extend(rest);
    tests.cases = failing;
}

#[cfg(test)]
mod tests;
