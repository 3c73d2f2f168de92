//! Failure classification: turns one failed gate command (command line, exit
//! status, captured output) into a [`FailureKind`], a 1–3 line summary a
//! person understands, and `file:line` [`Finding`]s for check-run annotations.
//!
//! Owns: the kinds, the per-tool parsers (one module per tool family) and the
//! text hygiene of what they produce (ANSI stripped, mentions neutralised).
//! Must not: do IO, await, read the clock or the environment, or panic on any
//! bytes. It is a pure function of [`Outcome`]; the shell captures the output,
//! the core decides routing. `flaky_test` is never produced here: it needs a
//! re-run, so the caller upgrades a `test_failure` whose re-run passed.
//!
//! Two ideas a reader needs:
//! - Output is read as lines, once, from a bounded head and tail of the log
//!   (see [`text::Log`]); every parser is a linear scan with bounded look-ahead,
//!   so the cost is linear in the output size and capped for huge logs.
//! - Conventions come first, then parsers, tried in order: a command that
//!   never started (126/127), how it ended (a signal, `timeout`'s statuses:
//!   [`status`]), a crash a wrapper reported, then the tool family named in
//!   the command, the other families, the generic make/shell rules, and last
//!   the plain-command rule: a non-zero exit status nobody explained is a
//!   `test_failure` (the command said "no"). `unknown` is left for an
//!   outcome with neither an exit status nor a signal. The table of
//!   conventions and the reasons are in `docs/decisions/classifier-conventions.md`.

mod go;
mod js_runners;
mod make;
mod node;
mod perl;
mod pytest;
mod python;
mod python_lint;
mod rust;
mod sanitizers;
mod shell;
mod status;
mod text;

#[cfg(test)]
mod conventions_tests;
#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod robustness_tests;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use text::{neutralize_mentions, strip_ansi};

/// A command of each family the classifier reads its own way (the parsers
/// are chosen by command), and commands no family claims: what robustness
/// tests and the `classify` fuzz target feed it, so both reach every parser.
#[doc(hidden)]
pub const SAMPLE_COMMANDS: &[&str] = &[
    "cargo test",
    "pytest",
    "npx jest",
    "go test ./...",
    "make",
    "perl t.pl",
    "./run.sh",
    "sh -c x",
    "",
];

/// Why a gate failed. Serialised and displayed in `snake_case`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    TestFailure,
    BuildFailure,
    LintFailure,
    RuntimeError,
    MissingDependency,
    Timeout,
    SpecMismatch,
    ToolingError,
    FlakyTest,
    Unknown,
}

impl FailureKind {
    pub const ALL: [FailureKind; 10] = [
        FailureKind::TestFailure,
        FailureKind::BuildFailure,
        FailureKind::LintFailure,
        FailureKind::RuntimeError,
        FailureKind::MissingDependency,
        FailureKind::Timeout,
        FailureKind::SpecMismatch,
        FailureKind::ToolingError,
        FailureKind::FlakyTest,
        FailureKind::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::TestFailure => "test_failure",
            FailureKind::BuildFailure => "build_failure",
            FailureKind::LintFailure => "lint_failure",
            FailureKind::RuntimeError => "runtime_error",
            FailureKind::MissingDependency => "missing_dependency",
            FailureKind::Timeout => "timeout",
            FailureKind::SpecMismatch => "spec_mismatch",
            FailureKind::ToolingError => "tooling_error",
            FailureKind::FlakyTest => "flaky_test",
            FailureKind::Unknown => "unknown",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`FailureKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure kind `{0}` (expected one of: test_failure, build_failure, lint_failure, runtime_error, missing_dependency, timeout, spec_mismatch, tooling_error, flaky_test, unknown)")]
pub struct UnknownFailureKind(pub String);

impl FromStr for FailureKind {
    type Err = UnknownFailureKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailureKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownFailureKind(s.to_string()))
    }
}

/// One `file:line` location worth an annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub column: Option<u32>,
    pub message: String,
}

/// The verdict on one failed command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub kind: FailureKind,
    /// 1–3 lines of plain text, mentions neutralised.
    pub summary: String,
    pub findings: Vec<Finding>,
}

/// What the runner observed. A command that exited has an `exit_code`; one
/// killed by a signal has none and, when the runner knows it, a `signal`.
/// (`sh -c` reports a child killed by signal N as exit status 128+N; that is
/// read as the signal too.)
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    pub command: &'a str,
    pub exit_code: Option<i32>,
    /// The signal that ended the command, when it did not exit.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub timeout_seconds: Option<u64>,
    pub output: &'a [u8],
}

/// Most findings kept; the check-run API takes 50 annotations per request.
const MAX_FINDINGS: usize = 50;
/// Longest summary line kept, in characters.
const MAX_SUMMARY_LINE: usize = 200;

/// Classifies one failed command. Pure, linear in the output, never panics.
/// The text `taskgate classify` prints: the kind, the summary, then the
/// findings as `path:line[:column]: message`.
/// What `taskgate classify` says of a log: the failure's kind, or `pass`
/// when the command succeeded (exit 0, not timed out): a passing run has
/// no failure kind, so it is not called `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Verdict<'a> {
    pub kind: &'static str,
    pub summary: &'a str,
    pub findings: &'a [Finding],
}

/// The verdict on `outcome`, from its classification.
pub fn verdict<'a>(outcome: &Outcome, c: &'a Classification) -> Verdict<'a> {
    let passed = outcome.exit_code == Some(0) && !outcome.timed_out && outcome.signal.is_none();
    Verdict {
        kind: if passed { "pass" } else { c.kind.as_str() },
        summary: &c.summary,
        findings: &c.findings,
    }
}

pub fn render_report(v: &Verdict) -> String {
    let mut out = format!("kind: {}\n", v.kind);
    for line in v.summary.lines() {
        out.push_str(&format!("summary: {line}\n"));
    }
    for f in v.findings {
        match f.column {
            Some(col) => out.push_str(&format!("{}:{}:{}: {}\n", f.path, f.line, col, f.message)),
            None => out.push_str(&format!("{}:{}: {}\n", f.path, f.line, f.message)),
        }
    }
    out
}

pub fn classify(outcome: &Outcome) -> Classification {
    let log = text::Log::from_bytes(outcome.output);
    let raw = if outcome.timed_out {
        timeout(outcome, &log)
    } else {
        detect(outcome, &log)
    };
    finish(raw)
}

fn timeout(outcome: &Outcome, log: &text::Log) -> Classification {
    let head = match outcome.timeout_seconds {
        Some(n) => format!("timed out after {n} s"),
        None => "timed out".to_string(),
    };
    let mut lines = vec![format!("{head}: {}", outcome.command.trim())];
    if let Some(last) = log.last_meaningful() {
        lines.push(format!("last output: {last}"));
    }
    Classification {
        kind: FailureKind::Timeout,
        summary: lines.join("\n"),
        findings: Vec::new(),
    }
}

/// A tool-family parser: recognises its tools' output or declines.
type Parser = fn(&Ctx) -> Option<Classification>;

/// What every parser sees.
pub(crate) struct Ctx<'a> {
    pub command: &'a str,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub log: &'a text::Log,
}

impl Ctx<'_> {
    /// True if any whitespace-separated word of the command, or its file name,
    /// is one of `names` (`/usr/bin/cargo` and `cargo` both count).
    pub fn command_has(&self, names: &[&str]) -> bool {
        self.command
            .split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
            .any(|w| {
                let base = w.rsplit('/').next().unwrap_or(w);
                names.contains(&w) || names.contains(&base)
            })
    }
}

fn detect(outcome: &Outcome, log: &text::Log) -> Classification {
    let ctx = Ctx {
        command: outcome.command,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        log,
    };
    if ctx.exit_code == Some(0) {
        return shell::passed(&ctx);
    }
    if let Some(c) = shell::launch_failure(&ctx)
        .or_else(|| status::detect(&ctx))
        .or_else(|| status::crash_in_output(&ctx))
        .or_else(|| sanitizers::detect(&ctx))
    {
        return c;
    }
    let families: [(&[&str], Parser); 5] = [
        (rust::COMMANDS, rust::detect),
        (python::COMMANDS, python::detect),
        (node::COMMANDS, node::detect),
        (go::COMMANDS, go::detect),
        (perl::COMMANDS, perl::detect),
    ];
    // The family named in the command goes first; the others still get a
    // turn because `make test` or a shell script can run any of them.
    let named = families.iter().filter(|(cmds, _)| ctx.command_has(cmds));
    let rest = families.iter().filter(|(cmds, _)| !ctx.command_has(cmds));
    for (_, parser) in named.chain(rest) {
        if let Some(c) = parser(&ctx) {
            return c;
        }
    }
    make::detect(&ctx)
        .or_else(|| shell::detect(&ctx))
        .unwrap_or_else(|| shell::fallback(&ctx))
}

/// Enforces the output contract whatever a parser produced: 1–3 short lines,
/// mentions neutralised, bounded findings.
fn finish(mut c: Classification) -> Classification {
    let lines: Vec<String> = c
        .summary
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .map(|l| neutralize_mentions(&text::clip(l, MAX_SUMMARY_LINE)))
        .collect();
    c.summary = if lines.is_empty() {
        format!("{} (no details)", c.kind)
    } else {
        lines.join("\n")
    };
    c.findings.truncate(MAX_FINDINGS);
    for f in &mut c.findings {
        f.message = neutralize_mentions(&text::clip(f.message.trim(), 300));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, exit_code: Option<i32>, output: &[u8]) -> Classification {
        classify(&Outcome {
            command,
            exit_code,
            signal: None,
            timed_out: false,
            timeout_seconds: None,
            output,
        })
    }

    #[test]
    fn kinds_round_trip_through_display_from_str_and_serde() {
        for kind in FailureKind::ALL {
            assert_eq!(kind.to_string().parse::<FailureKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<FailureKind>(&json).unwrap(), kind);
        }
        let err = "flaky".parse::<FailureKind>().unwrap_err();
        assert!(err.to_string().contains("unknown failure kind `flaky`"));
    }

    #[test]
    fn timeout_reports_seconds_and_last_meaningful_line() {
        let c = classify(&Outcome {
            command: "cargo test",
            exit_code: None,
            signal: Some(15),
            timed_out: true,
            timeout_seconds: Some(30),
            output: b"running 2 tests\ntest a ... ok\nwaiting for lock\n\n=====\n",
        });
        assert_eq!(c.kind, FailureKind::Timeout);
        insta::assert_snapshot!(c.summary, @r"
        timed out after 30 s: cargo test
        last output: waiting for lock
        ");
    }

    #[test]
    fn a_plain_command_exiting_non_zero_is_a_test_failure_naming_it_and_its_status() {
        let c = run("grep -q hello greeting.txt", Some(1), b"");
        assert_eq!(c.kind, FailureKind::TestFailure);
        insta::assert_snapshot!(c.summary, @"`grep -q hello greeting.txt` exited with status 1 (no line matched) and printed nothing");
        let c = run(
            "./check.sh",
            Some(3),
            b"checking config\nport 8080 != 9090\n",
        );
        assert_eq!(c.kind, FailureKind::TestFailure);
        insta::assert_snapshot!(c.summary, @r"
        `./check.sh` exited with status 3
        last output: port 8080 != 9090
        ");
        let c = run(
            "diff expected.txt out.txt",
            Some(1),
            b"1c1\n< a\n---\n> b\n",
        );
        assert_eq!(c.kind, FailureKind::TestFailure);
        assert!(c.summary.contains("(the files differ)"), "{}", c.summary);
        let c = run("cd app && test \"$(cat VERSION)\" = 1.2.0", Some(1), b"");
        assert_eq!(c.kind, FailureKind::TestFailure);
        assert!(
            c.summary.contains("(the condition is false)"),
            "{}",
            c.summary
        );
    }

    #[test]
    fn an_unexplained_linter_or_compiler_failure_keeps_its_kind() {
        assert_eq!(
            run("npx eslint .", Some(1), b"").kind,
            FailureKind::LintFailure
        );
        assert_eq!(
            run("cargo clippy", Some(101), b"").kind,
            FailureKind::LintFailure
        );
        assert_eq!(
            run("cargo build --release", Some(101), b"").kind,
            FailureKind::BuildFailure
        );
        assert_eq!(
            run("gcc -o x x.c", Some(1), b"").kind,
            FailureKind::BuildFailure
        );
        assert_eq!(
            run("cargo test", Some(101), b"").kind,
            FailureKind::TestFailure
        );
    }

    #[test]
    fn command_not_found_anywhere_in_a_failed_script_is_a_tooling_error() {
        let c = run("./ci.sh", Some(1), b"./ci.sh: 2: jq: not found\n");
        assert_eq!(c.kind, FailureKind::ToolingError);
        insta::assert_snapshot!(c.summary, @r"
        command not found: jq
        install it on the runner or fix the gate command
        ");
    }

    #[test]
    fn unknown_only_without_an_exit_status_or_a_signal() {
        let c = run("cargo test", None, b"");
        assert_eq!(c.kind, FailureKind::Unknown);
        insta::assert_snapshot!(c.summary, @"`cargo test` ended without an exit status or a signal and printed nothing");
        for code in [1, 2, 3, 4, 5, 100, 101, 124, 125, 255, -1] {
            assert_ne!(
                run("./x", Some(code), b"").kind,
                FailureKind::Unknown,
                "{code}"
            );
        }
    }

    #[test]
    fn exit_status_zero_is_a_pass_never_a_failure() {
        let c = run(
            "pytest",
            Some(0),
            b"FAILED test_x.py::test_a - assert 1 == 2\n",
        );
        assert_eq!(c.kind, FailureKind::Unknown);
        insta::assert_snapshot!(c.summary, @"`pytest` exited with status 0, which is a pass: nothing to classify");
    }

    #[test]
    fn summary_never_pings_or_links() {
        let c = run("./x.sh", Some(3), b"ping @octocat about #123\n");
        assert!(!c.summary.contains("@octocat"));
        assert!(!c.summary.contains("#123"));
        assert!(c.summary.contains("octocat"));
    }

    #[test]
    fn summary_is_clipped_to_three_short_lines() {
        let c = finish(Classification {
            kind: FailureKind::Unknown,
            summary: format!("a\n\nb\nc\nd\n{}", "x".repeat(1000)),
            findings: Vec::new(),
        });
        assert_eq!(c.summary, "a\nb\nc");
        let long = finish(Classification {
            kind: FailureKind::Unknown,
            summary: "é".repeat(1000),
            findings: Vec::new(),
        });
        assert!(long.summary.chars().count() <= MAX_SUMMARY_LINE);
    }

    #[test]
    fn command_has_matches_words_and_paths() {
        let log = text::Log::from_bytes(b"");
        let ctx = Ctx {
            command: "cd app && /usr/bin/cargo test",
            exit_code: Some(1),
            signal: None,
            log: &log,
        };
        assert!(ctx.command_has(&["cargo"]));
        assert!(!ctx.command_has(&["go"]));
    }
}
