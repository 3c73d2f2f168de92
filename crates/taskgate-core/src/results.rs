//! Structured test results: turns the report files test tools write (JUnit
//! XML, TAP, libtest's JSON, `go test -json`) into typed per-test results.
//!
//! Owns: the result types ([`TestResults`], [`TestCase`], [`TestId`],
//! [`Outcome`]), one streaming parser per format, the format sniffer
//! ([`detect_format`]), the discovery of report files in a workspace's file
//! list ([`report_candidates`], [`ReportGlobs`]) and the caps that keep
//! hostile reports small.
//! Must not: do IO beyond reading from the `std::io::Read` it is handed (the
//! shell opens the files and lists the workspace), read the clock or the
//! environment, await, or panic on any bytes. XML entities other than the
//! five predefined ones and character references are never expanded:
//! a DOCTYPE that declares entities or names an external DTD is refused.
//!
//! Two ideas a reader needs:
//! - Every parser reads through [`Limits`]: at most `max_bytes` of input
//!   (then the results say [`Truncated::ByteCap`]), `max_cases` cases, and
//!   `max_text` bytes of each message or details (head kept, marked). A
//!   report is outside input (test output is written by the code under
//!   test), so nothing is loaded whole and nothing grows without bound.
//! - A [`TestId`] is built by a documented rule per format (see
//!   `docs/decisions/test-reports.md`), so the same test gets the same id on
//!   every run: history, quarantine and `required_tests:` key on it.

mod detect;
mod gojson;
mod junit;
mod libtest;
mod tap;
mod text;

#[cfg(test)]
mod robustness_tests;
#[cfg(test)]
mod testing;

use std::fmt;
use std::io::Read;

use serde::{Deserialize, Serialize};

pub use detect::{detect_format, report_candidates, Candidate, ReportGlobs};

/// The report formats taskgate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportFormat {
    /// JUnit XML, in the dialects of pytest, jest-junit, node, nextest,
    /// Maven Surefire, Gradle, go-junit-report and TAP::Formatter::JUnit.
    Junit,
    /// The Test Anything Protocol, versions 12 to 14.
    Tap,
    /// libtest's JSON lines (`cargo test -- -Z unstable-options --format json`).
    LibtestJson,
    /// `go test -json` (test2json events, one per line).
    GoTestJson,
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Junit => "JUnit XML",
            Self::Tap => "TAP",
            Self::LibtestJson => "libtest JSON",
            Self::GoTestJson => "go test -json",
        })
    }
}

/// A test's identity, stable across runs (the rule per format is in
/// `docs/decisions/test-reports.md`): `tests/test_x.py::TestY::test_z`,
/// `crate::tests::name`, `example.com/pkg.TestName/sub`, `pkg.Class.method`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TestId(String);

impl TestId {
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How one test ended. Messages and details are capped ([`Limits::max_text`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// An assertion failed: the test ran and said no.
    Failed {
        message: String,
        details: String,
    },
    /// The test could not run to its end (an exception outside an assertion,
    /// a setup error, a package that did not build, a bail-out).
    Errored {
        message: String,
        details: String,
    },
    /// Skipped, ignored, or an expected failure (TAP's and node's `todo`).
    Skipped {
        reason: String,
    },
}

impl Outcome {
    pub fn is_failure(&self) -> bool {
        matches!(self, Self::Failed { .. } | Self::Errored { .. })
    }
}

/// One test as a report tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    pub id: TestId,
    /// The name the tool printed (the last part of the id, usually).
    pub name: String,
    /// The suite, class or package the tool grouped it under, if any.
    pub suite: Option<String>,
    /// The test's source file, as the tool wrote it (often relative to the
    /// workspace; go and perl write a base name, node an absolute path).
    pub file: Option<String>,
    pub line: Option<u32>,
    pub outcome: Outcome,
    pub duration_ms: Option<u64>,
}

/// Why a report was read only in part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Truncated {
    /// The file is larger than [`Limits::max_bytes`]; the rest was not read.
    ByteCap { max_bytes: u64 },
    /// More cases than [`Limits::max_cases`]; the rest were not kept.
    CaseCap { max_cases: usize },
    /// The file ends inside an element, a line or a test (a run that was
    /// killed, a disk that filled up): what came before is kept.
    EndedEarly { offset: u64 },
}

/// What one report file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResults {
    pub format: ReportFormat,
    pub cases: Vec<TestCase>,
    /// `Some` when the report was read only in part.
    pub truncated: Option<Truncated>,
    /// Bytes read from the report.
    pub bytes_read: u64,
}

impl TestResults {
    fn new(format: ReportFormat) -> Self {
        Self {
            format,
            cases: Vec::new(),
            truncated: None,
            bytes_read: 0,
        }
    }

    /// Counts of passed, failed (failed or errored) and skipped cases.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for case in &self.cases {
            match case.outcome {
                Outcome::Passed => c.passed += 1,
                Outcome::Failed { .. } | Outcome::Errored { .. } => c.failed += 1,
                Outcome::Skipped { .. } => c.skipped += 1,
            }
        }
        c
    }

    /// Keeps a case unless the case cap is reached (then marks the results).
    fn push(&mut self, case: TestCase, limits: &Limits) {
        if self.cases.len() >= limits.max_cases {
            self.truncated.get_or_insert(Truncated::CaseCap {
                max_cases: limits.max_cases,
            });
            return;
        }
        self.cases.push(case);
    }
}

/// Passed, failed and skipped counts of one report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// The caps every parser reads under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes read from one report; the rest is left unread.
    pub max_bytes: u64,
    /// Cases kept from one report.
    pub max_cases: usize,
    /// Bytes kept of each message, details or skip reason (the head).
    pub max_text: usize,
    /// Bytes kept of one line (TAP, JSON lines); a longer line is cut.
    pub max_line: usize,
    /// XML element nesting.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 16 * 1024 * 1024,
            max_cases: 100_000,
            max_text: 4 * 1024,
            max_line: 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// Why a report could not be read. Each names the file and, where it can,
/// the byte offset or line.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{file}: could not read the report: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error(
        "{file}: byte {offset}: entity declarations are refused: the DOCTYPE declares \
         entities (`<!ENTITY`), which could expand without bound or read local files; \
         test reports never need one"
    )]
    EntityDeclarations { file: String, offset: u64 },
    #[error(
        "{file}: byte {offset}: a DOCTYPE with an internal subset or an external DTD is \
         refused (entity declarations are refused); test reports never need one"
    )]
    DocType { file: String, offset: u64 },
    #[error(
        "{file}: byte {offset}: unknown entity `&{name};` is not expanded: only \
         &lt; &gt; &amp; &apos; &quot; and character references like &#38; are read"
    )]
    UnknownEntity {
        file: String,
        offset: u64,
        name: String,
    },
    #[error("{file}: byte {offset}: elements nested deeper than {max_depth} levels")]
    TooDeep {
        file: String,
        offset: u64,
        max_depth: usize,
    },
    #[error("{file}: byte {offset}: not well-formed XML: {reason}")]
    Xml {
        file: String,
        offset: u64,
        reason: String,
    },
    #[error(
        "{file}: not a JUnit report: the root element is <{root}>, \
         expected <testsuites> or <testsuite>"
    )]
    NotJunit { file: String, root: String },
    #[error(
        "{file}: not a JUnit report: no <testsuites> or <testsuite> element \
         (only a declaration, comments or text)"
    )]
    NoJunitRoot { file: String },
    #[error(
        "{file}: the report is empty (the test tool may have stopped before \
         writing it; its log says why)"
    )]
    Empty { file: String },
    #[error("{file}:{line}: not a {format} event: {reason}")]
    BadLine {
        file: String,
        line: u64,
        format: ReportFormat,
        reason: String,
    },
    #[error("`{glob}` is not a valid report glob: {reason}")]
    BadGlob { glob: String, reason: String },
}

/// Reads one report of a known format. `file` names it in errors.
pub fn parse_report(
    format: ReportFormat,
    input: impl Read,
    file: &str,
    limits: &Limits,
) -> Result<TestResults, ReportError> {
    let results = match format {
        ReportFormat::Junit => junit::parse(input, file, limits),
        ReportFormat::Tap => tap::parse(input, file, limits),
        ReportFormat::LibtestJson => libtest::parse(input, file, limits),
        ReportFormat::GoTestJson => gojson::parse(input, file, limits),
    }?;
    if results.bytes_read == 0 {
        return Err(ReportError::Empty {
            file: file.to_owned(),
        });
    }
    Ok(results)
}

/// Converts a duration in seconds, as reports write it (`"0.003"`,
/// `"1,234.5"` from a locale-minded Surefire), to whole milliseconds.
fn seconds_to_ms(seconds: &str) -> Option<u64> {
    let cleaned: String = seconds.trim().chars().filter(|c| *c != ',').collect();
    let s: f64 = cleaned.parse().ok()?;
    millis(s * 1000.0)
}

/// Rounds milliseconds to a whole number; `None` for nonsense values.
fn millis(ms: f64) -> Option<u64> {
    if !ms.is_finite() || !(0.0..=1e15).contains(&ms) {
        return None;
    }
    // In range and non-negative: the cast cannot wrap.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some(ms.round() as u64)
}
