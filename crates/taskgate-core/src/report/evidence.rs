//! Per-test evidence of one gate: the cases its report files listed, their
//! counts, what could not be read, and the verdict they give.
//!
//! Owns: [`GateTests`] (stored in the [`GateResult`](super::GateResult)),
//! the outcome → verdict rule ([`case_verdict`]: a quarantined test's
//! failure counts and shows as a warning, never fails the gate), the `required_tests:` check ([`check_required_tests`]), the
//! one-to-three-line gate summary naming failing tests, and the caps on
//! all of it. Must not: do IO, read the clock, or parse reports (the runner
//! reads them with `crate::results`); it only judges and shows cases.
//!
//! One idea a reader needs: the counts are taken over every case read, but
//! only [`MAX_CASES_KEPT`] cases are kept, failing ones first, so a report
//! of 100,000 tests cannot bloat the stored report or the check run.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{
    clip_middle, code_span, one_line, plural, relative_path, render_duration, Annotation,
    AnnotationLevel,
};
use crate::classify::neutralize_mentions;
use crate::results::{Outcome, TestCase, TestId};

/// Cases kept per gate (failing first); the counts cover them all.
pub const MAX_CASES_KEPT: usize = 1_000;
/// Report files named, and problems kept, per gate.
pub const MAX_REPORT_ITEMS: usize = 50;
/// Bytes kept of each case's id, name, suite, file and reason.
pub const MAX_CASE_FIELD_BYTES: usize = 512;
/// Bytes kept of a failing case's message, and of its details.
pub const MAX_CASE_TEXT_BYTES: usize = 2_000;
/// Failing tests named in a gate's (1–3 line) summary.
const SUMMARY_TESTS: usize = 3;
/// Failing tests listed in a check run's summary; the rest are counted.
pub const MAX_FAILING_LISTED: usize = 50;
/// Bytes of a failing test's message shown in the summary's list.
const LISTED_MESSAGE_BYTES: usize = 300;

/// The per-test results of one gate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateTests {
    /// At most [`MAX_CASES_KEPT`]: failing cases first, then the rest, each
    /// in report order.
    pub cases: Vec<TestCase>,
    pub passed: usize,
    /// Failed or errored, and not quarantined.
    pub failed: usize,
    pub skipped: usize,
    /// Failed, but quarantined as flaky: not a verdict on the code.
    pub quarantined: usize,
    /// The report files read, relative to the workspace.
    pub report_files: Vec<String>,
    /// Reports refused, unreadable or read only in part, said as warnings.
    pub problems: Vec<String>,
    /// `required_tests:` that did not run or did not pass.
    #[serde(default)]
    pub required: Vec<UnmetRequired>,
    /// The ids of the quarantined failures among `cases` (flaky tests,
    /// `core::flaky`): shown as warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quarantined_ids: Vec<TestId>,
}

/// What one case means for its gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaseVerdict {
    Pass,
    Fail,
    Skip,
    /// A failure of a quarantined test: counted and shown, not failing.
    Quarantined,
}

/// One case's verdict. `quarantined` says whether the test is quarantined
/// as flaky in its repository now (`core::flaky`).
pub fn case_verdict(outcome: &Outcome, quarantined: bool) -> CaseVerdict {
    match outcome {
        Outcome::Passed => CaseVerdict::Pass,
        Outcome::Skipped { .. } => CaseVerdict::Skip,
        Outcome::Failed { .. } | Outcome::Errored { .. } if quarantined => CaseVerdict::Quarantined,
        Outcome::Failed { .. } | Outcome::Errored { .. } => CaseVerdict::Fail,
    }
}

impl GateTests {
    /// Counts `cases` (every one), keeps at most [`MAX_CASES_KEPT`] of them
    /// with failing cases first, each field capped.
    pub fn new(
        cases: Vec<TestCase>,
        quarantined: &dyn Fn(&TestId) -> bool,
        report_files: Vec<String>,
        problems: Vec<String>,
    ) -> GateTests {
        let mut tests = GateTests {
            report_files,
            problems,
            ..GateTests::default()
        };
        // Failing, then quarantined, then the rest: `failing()` relies on it.
        let (mut failing, mut flaky, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for case in cases {
            let bucket = match case_verdict(&case.outcome, quarantined(&case.id)) {
                CaseVerdict::Pass => {
                    tests.passed += 1;
                    &mut rest
                }
                CaseVerdict::Skip => {
                    tests.skipped += 1;
                    &mut rest
                }
                CaseVerdict::Quarantined => {
                    tests.quarantined += 1;
                    if flaky.len() < MAX_CASES_KEPT {
                        tests.quarantined_ids.push(case.id.clone());
                    }
                    &mut flaky
                }
                CaseVerdict::Fail => {
                    tests.failed += 1;
                    &mut failing
                }
            };
            if bucket.len() < MAX_CASES_KEPT {
                bucket.push(case);
            }
        }
        failing.extend(flaky);
        failing.extend(rest);
        tests.cases = failing;
        capped(tests)
    }

    /// True when a report listed at least one case.
    pub fn has_cases(&self) -> bool {
        self.passed + self.failed + self.skipped + self.quarantined > 0
    }

    /// The failing (not quarantined) cases kept, in order: the first
    /// `failed` cases, as [`GateTests::new`] puts them first.
    pub fn failing(&self) -> impl Iterator<Item = &TestCase> {
        self.cases
            .iter()
            .take(self.failed)
            .filter(|c| c.outcome.is_failure() && !self.quarantined_ids.contains(&c.id))
    }

    /// The quarantined failures kept: failed, but flaky, so not failing.
    pub fn quarantined_failures(&self) -> impl Iterator<Item = &TestCase> {
        self.cases
            .iter()
            .filter(|c| c.outcome.is_failure() && self.quarantined_ids.contains(&c.id))
    }

    /// `2 failed, 40 passed, 3 skipped, 1 quarantined` (zero counts left
    /// out, except `passed`).
    pub fn counts_line(&self) -> String {
        let mut parts = Vec::new();
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        parts.push(format!("{} passed", self.passed));
        if self.skipped > 0 {
            parts.push(format!("{} skipped", self.skipped));
        }
        if self.quarantined > 0 {
            parts.push(format!("{} quarantined", self.quarantined));
        }
        parts.join(", ")
    }

    /// The gate's summary when tests failed: one line per failing test
    /// (first failing test first), at most three, then how many more.
    pub fn failure_summary(&self) -> Option<String> {
        let mut lines: Vec<String> = self.failing().take(SUMMARY_TESTS).map(case_line).collect();
        if lines.is_empty() {
            return None;
        }
        let more = self.failed.saturating_sub(lines.len());
        if more > 0 {
            if let Some(last) = lines.last_mut() {
                last.push_str(&format!(" (and {more} more failing)"));
            }
        }
        Some(lines.join("\n"))
    }
}

/// `test_fetch (tests/test_adapter.py:12): assert 3 == 4`.
pub fn case_line(case: &TestCase) -> String {
    let place = match (&case.file, case.line) {
        (Some(file), Some(line)) => format!(" ({file}:{line})"),
        (Some(file), None) => format!(" ({file})"),
        _ => String::new(),
    };
    format!(
        "{}{place}: {}",
        case.name,
        first_line(message(&case.outcome))
    )
}

/// The message of a failing case, its reason when skipped, else "".
pub fn message(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Failed { message, details } | Outcome::Errored { message, details } => {
            if message.trim().is_empty() {
                details
            } else {
                message
            }
        }
        Outcome::Skipped { reason } => reason,
        Outcome::Passed => "",
    }
}

fn first_line(s: &str) -> &str {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.is_empty() {
        "failed"
    } else {
        line
    }
}

/// Why a required test does not count as passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Unmet {
    /// In no report of the run.
    Missing,
    Skipped {
        reason: String,
    },
    Failed,
    Quarantined,
}

/// A `required_tests:` id and why it is not met.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmetRequired {
    pub id: TestId,
    #[serde(flatten)]
    pub why: Unmet,
}

impl UnmetRequired {
    /// Missing or skipped: the run does not prove what the plan asks, a
    /// `spec_mismatch`. A failure is the failing test's own verdict.
    pub fn is_spec_mismatch(&self) -> bool {
        matches!(self.why, Unmet::Missing | Unmet::Skipped { .. })
    }
}

impl fmt::Display for UnmetRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "required test `{}` ", self.id)?;
        match &self.why {
            Unmet::Missing => f.write_str("did not run"),
            Unmet::Skipped { reason } if reason.trim().is_empty() => f.write_str("was skipped"),
            Unmet::Skipped { reason } => write!(f, "was skipped: {}", first_line(reason)),
            Unmet::Failed => f.write_str("failed"),
            Unmet::Quarantined => f.write_str("is quarantined as flaky, so it proves nothing"),
        }
    }
}

/// Each required id that is not present and passed in `cases`, in the
/// order required. A test reported more than once (two reports, a re-run)
/// counts as failed if any run of it failed, else passed if any passed.
pub fn check_required_tests<'c>(
    required: &[TestId],
    cases: impl IntoIterator<Item = &'c TestCase>,
    quarantined: &dyn Fn(&TestId) -> bool,
) -> Vec<UnmetRequired> {
    let mut seen: HashMap<&TestId, CaseVerdict> = HashMap::new();
    let mut skip_reason: HashMap<&TestId, &str> = HashMap::new();
    for case in cases {
        let verdict = case_verdict(&case.outcome, quarantined(&case.id));
        if let Outcome::Skipped { reason } = &case.outcome {
            skip_reason.entry(&case.id).or_insert(reason);
        }
        let rank = |v: CaseVerdict| match v {
            CaseVerdict::Fail => 3,
            CaseVerdict::Quarantined => 2,
            CaseVerdict::Pass => 1,
            CaseVerdict::Skip => 0,
        };
        seen.entry(&case.id)
            .and_modify(|v| {
                if rank(verdict) > rank(*v) {
                    *v = verdict;
                }
            })
            .or_insert(verdict);
    }
    required
        .iter()
        .filter_map(|id| {
            let why = match seen.get(id) {
                None => Unmet::Missing,
                Some(CaseVerdict::Pass) => return None,
                Some(CaseVerdict::Skip) => Unmet::Skipped {
                    reason: skip_reason.get(id).copied().unwrap_or("").to_string(),
                },
                Some(CaseVerdict::Fail) => Unmet::Failed,
                Some(CaseVerdict::Quarantined) => Unmet::Quarantined,
            };
            Some(UnmetRequired {
                id: id.clone(),
                why,
            })
        })
        .collect()
}

/// `tests` within the caps above; applied when the runner builds it and
/// when a report enters taskgate (an artifact is outside input).
pub fn capped(mut tests: GateTests) -> GateTests {
    tests.cases.truncate(MAX_CASES_KEPT);
    for case in &mut tests.cases {
        cap_case(case);
    }
    for list in [&mut tests.report_files, &mut tests.problems] {
        list.truncate(MAX_REPORT_ITEMS);
        for item in list.iter_mut() {
            *item = clip_middle(item, MAX_CASE_TEXT_BYTES);
        }
    }
    tests.quarantined_ids.truncate(MAX_CASES_KEPT);
    for id in &mut tests.quarantined_ids {
        *id = TestId::new(clip_middle(id.as_str(), MAX_CASE_FIELD_BYTES));
    }
    tests.required.truncate(MAX_REPORT_ITEMS);
    for r in &mut tests.required {
        r.id = TestId::new(clip_middle(r.id.as_str(), MAX_CASE_FIELD_BYTES));
        if let Unmet::Skipped { reason } = &mut r.why {
            *reason = clip_middle(reason, MAX_CASE_FIELD_BYTES);
        }
    }
    tests
}

fn cap_case(case: &mut TestCase) {
    let field = |s: &mut String| *s = clip_middle(s, MAX_CASE_FIELD_BYTES);
    case.id = TestId::new(clip_middle(case.id.as_str(), MAX_CASE_FIELD_BYTES));
    field(&mut case.name);
    case.suite.iter_mut().for_each(field);
    case.file.iter_mut().for_each(field);
    match &mut case.outcome {
        Outcome::Failed { message, details } | Outcome::Errored { message, details } => {
            *message = clip_middle(message, MAX_CASE_TEXT_BYTES);
            *details = clip_middle(details, MAX_CASE_TEXT_BYTES);
        }
        Outcome::Skipped { reason } => field(reason),
        Outcome::Passed => {}
    }
}

/// The check-run summary's part about tests: counts, the failing tests by
/// name with duration, place and message (at most [`MAX_FAILING_LISTED`]),
/// unmet required tests, and reports that could not be read.
pub fn render_tests_section(tests: &GateTests) -> String {
    let mut out = format!("\n**Tests:** {}", tests.counts_line());
    if !tests.report_files.is_empty() {
        let files: Vec<String> = tests.report_files.iter().map(|f| code_span(f)).collect();
        out.push_str(&format!(" (from {})", files.join(", ")));
    }
    out.push('\n');
    if tests.failed > 0 {
        out.push_str("\n**Failing tests**\n\n");
        for case in tests.failing().take(MAX_FAILING_LISTED) {
            out.push_str(&failing_item(case));
        }
        let more = tests
            .failed
            .saturating_sub(MAX_FAILING_LISTED.min(tests.failing().count()));
        if more > 0 {
            out.push_str(&format!(
                "- … and {more} more failing test{}\n",
                plural(more)
            ));
        }
    }
    let quarantined: Vec<String> = tests
        .quarantined_failures()
        .take(MAX_FAILING_LISTED)
        .map(|c| {
            format!(
                "{} failed, but it is quarantined as flaky: this failure does not fail the gate",
                code_span(c.id.as_str())
            )
        })
        .collect();
    let lists = [
        ("Quarantined tests", quarantined),
        (
            "Required tests",
            tests
                .required
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        ),
        ("Test reports", tests.problems.clone()),
    ];
    for (heading, items) in lists.into_iter().filter(|(_, items)| !items.is_empty()) {
        out.push_str(&format!("\n**{heading}**\n\n"));
        for item in items {
            out.push_str(&format!("- {}\n", neutralize_mentions(&one_line(&item))));
        }
    }
    out
}

/// ``- `id` (1.2 s, `tests/x.py:7`): message``
fn failing_item(case: &TestCase) -> String {
    let mut facts = Vec::new();
    if let Some(ms) = case.duration_ms {
        facts.push(render_duration(ms));
    }
    match (&case.file, case.line) {
        (Some(file), Some(line)) => facts.push(code_span(&format!("{file}:{line}"))),
        (Some(file), None) => facts.push(code_span(file)),
        _ => {}
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" ({})", facts.join(", "))
    };
    let text = clip_middle(first_line(message(&case.outcome)), LISTED_MESSAGE_BYTES);
    format!(
        "- {}{facts}: {}\n",
        code_span(case.id.as_str()),
        neutralize_mentions(&one_line(&text))
    )
}

/// One failure annotation per failing test whose report names its file
/// (inside the repository), and one warning per quarantined failure; the
/// line is 1 when the report gives none.
pub fn test_annotations<'t>(
    tests: &'t GateTests,
    workspace: &'t str,
) -> impl Iterator<Item = Annotation> + 't {
    let failing = tests.failing().map(|c| (c, AnnotationLevel::Failure));
    let flaky = tests
        .quarantined_failures()
        .map(|c| (c, AnnotationLevel::Warning));
    failing.chain(flaky).filter_map(move |(case, level)| {
        let path = relative_path(case.file.as_deref()?, workspace)?;
        let line = case.line.unwrap_or(1).max(1);
        let body = match &case.outcome {
            Outcome::Failed { message, details } | Outcome::Errored { message, details } => {
                [message.trim(), details.trim()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n")
            }
            _ => String::new(),
        };
        let body = if body.is_empty() {
            "failed".to_string()
        } else {
            body
        };
        let title = match level {
            AnnotationLevel::Failure => format!("test failed: {}", case.id),
            _ => format!("quarantined test failed (flaky, not failing): {}", case.id),
        };
        Some(Annotation {
            path,
            start_line: line,
            end_line: line,
            annotation_level: level,
            message: neutralize_mentions(&clip_middle(&body, MAX_CASE_TEXT_BYTES)),
            title: Some(clip_middle(&title, 255)),
        })
    })
}

#[cfg(test)]
mod tests;
