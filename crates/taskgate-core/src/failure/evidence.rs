//! The evidence a branch todo and its agent get (issue 30, item 2): the
//! failing tests with their messages and `file:line`, the log around the
//! first error, the command that reproduces the failure, the changes since
//! the last green run and since the previous attempt, what still fails,
//! and links to the check runs, where the full logs are.
//!
//! Owns: taking that evidence out of a gate's result ([`failing_tests`],
//! [`log_excerpt`]), what the shell adds ([`RunLinks`]), and its texts.
//! Must not: do IO (the shell reads the check runs' URLs and the repository's
//! web address; the core never fetches), or show tool output outside a
//! fence ([`clean_log`]) or a code span: it is untrusted.
//!
//! One idea a reader needs: every part is capped where it is recorded
//! (`failure::record`) and the texts are built from the parts in order of
//! use, so a huge failure loses its later gates, each said, never the
//! marker or the fences.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::render::short_sha;
use super::{FailureRecord, GateFailure};
use crate::ids::CommitSha;
use crate::report::{clean_log, clip_middle, code_span, plain_text, GateResult};
use crate::results::{Outcome, TestCase};

/// One failing test, or (when the gate wrote no test report) one of the
/// classifier's `file:line` findings. Texts are untrusted tool output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingTest {
    /// The test's id; empty for a finding.
    pub name: String,
    /// `file:line` (or the file) when the results say.
    pub location: Option<String>,
    pub message: String,
}

/// What the shell knows of a run that the core cannot: where GitHub shows
/// it, and what changed since the task's last green run. Given to
/// `task::follow_verdict` with the loop's inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunLinks {
    /// The repository's web page, `https://github.com/<o>/<r>` (or the
    /// GitHub Enterprise host's): compare links are made from it.
    pub repo_url: Option<String>,
    /// Each gate's check run for this attempt: its `html_url`.
    pub check_runs: BTreeMap<String, String>,
    /// The files the run's commit changed since the task's last green
    /// commit, as the runner listed them from git or GitHub's compare
    /// (`app::commit_changes`); `None` when unknown or too many to list.
    pub changed_since_green: Option<Vec<String>>,
}

/// Files named in "Changes since the last green run" at most; the rest
/// are counted.
const CHANGED_FILES_SHOWN: usize = 40;

/// The files changed since the last green run, as the todo lists them.
pub fn changed_files_text(files: &[String]) -> String {
    let mut out = format!(
        "{} file{} changed:\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for f in files.iter().take(CHANGED_FILES_SHOWN) {
        out.push_str(f);
        out.push('\n');
    }
    if files.len() > CHANGED_FILES_SHOWN {
        let _ = writeln!(out, "… and {} more", files.len() - CHANGED_FILES_SHOWN);
    }
    out
}

/// Lines of a test's message kept (the assertion and its operands).
const MESSAGE_LINES: usize = 8;
/// Lines of context shown before the first error line, and lines in all.
const EXCERPT_BEFORE: usize = 3;
const EXCERPT_LINES: usize = 30;
/// A link longer than this is left out rather than cut into a wrong one.
pub(super) const MAX_URL_BYTES: usize = 300;
/// Test names listed in each part of "what still fails".
const COMPARED_LISTED: usize = 10;

/// The gate's failing tests (at most `keep`, failing first as the results
/// keep them) and how many failed in all; without a test report, the
/// failing commands' `file:line` findings.
pub fn failing_tests(gate: &GateResult, keep: usize) -> (Vec<FailingTest>, usize) {
    if let Some(tests) = gate.tests.as_ref().filter(|t| t.failed > 0) {
        let listed = tests.failing().take(keep).map(test_of_case).collect();
        return (listed, tests.failed);
    }
    let findings: Vec<FailingTest> = gate
        .commands
        .iter()
        .filter(|c| !c.passed())
        .filter_map(|c| c.classification.as_ref())
        .flat_map(|c| &c.findings)
        .map(|f| FailingTest {
            name: String::new(),
            location: Some(format!("{}:{}", f.path, f.line)),
            message: f.message.clone(),
        })
        .collect();
    let total = findings.len();
    (findings.into_iter().take(keep).collect(), total)
}

fn test_of_case(case: &TestCase) -> FailingTest {
    let (message, details) = match &case.outcome {
        Outcome::Failed { message, details } | Outcome::Errored { message, details } => {
            (message.as_str(), details.as_str())
        }
        Outcome::Passed | Outcome::Skipped { .. } => ("", ""),
    };
    // The message is the assertion; the details (a traceback, the test's
    // output) stand in only when there is no message.
    let text = if message.trim().is_empty() {
        details
    } else {
        message
    };
    let message: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(MESSAGE_LINES)
        .collect();
    FailingTest {
        name: case.id.as_str().to_owned(),
        location: match (&case.file, case.line) {
            (Some(file), Some(line)) => Some(format!("{file}:{line}")),
            (Some(file), None) => Some(file.clone()),
            _ => None,
        },
        message: message.join("\n"),
    }
}

/// The log of the gate's first failing command around its first error
/// line (a few lines before it, then what follows), else its tail.
pub fn log_excerpt(gate: &GateResult) -> Option<String> {
    let command = gate.commands.iter().find(|c| !c.passed())?;
    let log = plain_text(&command.output);
    let lines: Vec<&str> = log.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let start = match lines.iter().position(|l| is_error_line(l)) {
        Some(i) => i.saturating_sub(EXCERPT_BEFORE),
        None => lines.len().saturating_sub(EXCERPT_LINES),
    };
    let end = (start + EXCERPT_LINES).min(lines.len());
    Some(lines[start..end].join("\n"))
}

fn is_error_line(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "error",
        "failed",
        "failures",
        "panicked",
        "traceback",
        "exception",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// An older failed run keeps its test names (what still fails compares
/// them), not its messages and excerpts.
pub(super) fn forget_details(f: &mut FailureRecord) {
    for g in &mut f.gates {
        g.excerpt = None;
        for t in &mut g.tests {
            t.message.clear();
        }
    }
}

/// A link the shell gave, if it is short enough to keep whole.
pub(super) fn kept_url(url: Option<&str>) -> Option<String> {
    url.filter(|u| u.len() <= MAX_URL_BYTES && !u.contains(char::is_whitespace))
        .map(str::to_owned)
}

/// The evidence of one gate after its summary: the failing tests, the log
/// excerpt, the reproducing command and where the full log is.
pub(super) fn render_gate_evidence(g: &GateFailure, sha: &CommitSha) -> String {
    let mut out = String::new();
    if !g.tests.is_empty() {
        let findings = g.tests.iter().all(|t| t.name.is_empty());
        let what = if findings {
            "Findings"
        } else {
            "Failing tests"
        };
        let more = g.tests_failed.saturating_sub(g.tests.len());
        let count = if more > 0 {
            format!("{} of {}, the rest clipped", g.tests.len(), g.tests_failed)
        } else {
            g.tests.len().to_string()
        };
        let _ = writeln!(out, "{what} ({count}):\n");
        let listed: Vec<String> = g.tests.iter().map(test_lines).collect();
        out.push_str(&fence(&listed.join("\n")));
        out.push('\n');
    }
    if let Some(excerpt) = g.excerpt.as_deref().filter(|e| !e.trim().is_empty()) {
        out.push_str("Log excerpt (around the first error):\n\n");
        out.push_str(&fence(excerpt));
        out.push('\n');
    }
    if !g.commands.is_empty() {
        let lines: Vec<String> = g
            .commands
            .iter()
            .map(|c| format!("- {}", code_span(&reproduce(sha, c))))
            .collect();
        let _ = writeln!(
            out,
            "Reproduce from the repository root:\n\n{}\n",
            lines.join("\n")
        );
    }
    match g.check_run.as_deref() {
        Some(url) => {
            let _ = writeln!(
                out,
                "Full log: [the check run of gate {}]({url}).\n",
                code_span(&g.gate)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Full log: the check run of gate {} on commit {}.\n",
                code_span(&g.gate),
                short_sha(sha)
            );
        }
    }
    out
}

/// `name (file:line)` and the message indented under it.
fn test_lines(t: &FailingTest) -> String {
    let head = match (t.name.is_empty(), &t.location) {
        (false, Some(at)) => format!("{} ({at})", t.name),
        (false, None) => t.name.clone(),
        (true, Some(at)) => at.clone(),
        (true, None) => "(no location)".to_owned(),
    };
    let mut out = head;
    for line in t.message.lines() {
        let _ = write!(out, "\n    {line}");
    }
    out
}

/// The command a person or an agent runs to see the failure again.
pub(super) fn reproduce(sha: &CommitSha, command: &str) -> String {
    format!("git checkout {} && {command}", sha.as_str())
}

/// "Changes since the last green run": a compare link (or the two commits
/// when the repository's address is unknown), and the shell's own text.
pub(super) fn render_changes_since_green(f: &FailureRecord) -> String {
    let mut out = String::from("### Changes since the last green run\n\n");
    match &f.last_green {
        Some(green) => {
            let _ = writeln!(out, "{}\n", compare(f, green, "the last green run"));
        }
        None => out.push_str("No green run is recorded for this task yet.\n\n"),
    }
    if let Some(c) = f
        .changes_since_green
        .as_deref()
        .filter(|c| !c.trim().is_empty())
    {
        out.push_str(&fence(c));
        out.push('\n');
    }
    out
}

/// `[`green`…`sha`](…/compare/green...sha)`: the commits and the diff.
fn compare(f: &FailureRecord, from: &CommitSha, from_name: &str) -> String {
    let range = format!("{}...{}", from.as_str(), f.sha.as_str());
    match &f.repo_url {
        Some(repo) => format!(
            "The commits and the diff from {from_name} ({}) to this run ({}): \
             [{}]({repo}/compare/{range}); in a checkout, {}.",
            short_sha(from),
            short_sha(&f.sha),
            code_span(&format!("{}...{}", short(from), short(&f.sha))),
            code_span(&format!("git diff {range}")),
        ),
        None => format!(
            "The commits from {from_name} ({}) to this run ({}): {}.",
            short_sha(from),
            short_sha(&f.sha),
            code_span(&format!("git diff {range}"))
        ),
    }
}

/// On a later attempt: what changed since the previous failed run of the
/// same episode, and what still fails. `None` for an episode's first run.
pub(super) fn render_since_previous(
    previous: Option<&FailureRecord>,
    f: &FailureRecord,
) -> Option<String> {
    let previous = previous.filter(|p| p.last_green == f.last_green && p.attempt < f.attempt)?;
    let mut out = String::from("### Since the previous attempt\n\n");
    if previous.sha == f.sha {
        let _ = writeln!(
            out,
            "No new commit: run {} tested {} again.\n",
            f.attempt,
            short_sha(&f.sha)
        );
    } else {
        let _ = writeln!(
            out,
            "{}\n",
            compare(f, &previous.sha, &format!("run {}", previous.attempt))
        );
    }
    let (before, now) = (failing_set(previous), failing_set(f));
    let still: Vec<&str> = now.intersection(&before).map(String::as_str).collect();
    let new: Vec<&str> = now.difference(&before).map(String::as_str).collect();
    let fixed: Vec<&str> = before.difference(&now).map(String::as_str).collect();
    for (label, names) in [
        ("Still failing", still),
        ("Newly failing", new),
        ("Fixed since then", fixed),
    ] {
        if names.is_empty() {
            continue;
        }
        let mut listed: Vec<String> = names
            .iter()
            .take(COMPARED_LISTED)
            .map(|n| code_span(n))
            .collect();
        if names.len() > COMPARED_LISTED {
            listed.push(format!("and {} more", names.len() - COMPARED_LISTED));
        }
        let _ = writeln!(out, "- {label}: {}", listed.join(", "));
    }
    out.push('\n');
    Some(out)
}

/// What failed in a run, by name: its failing tests (findings by place),
/// else its gates.
fn failing_set(f: &FailureRecord) -> BTreeSet<String> {
    let tests: BTreeSet<String> = f
        .gates
        .iter()
        .flat_map(|g| &g.tests)
        .map(|t| match (t.name.is_empty(), &t.location) {
            (false, _) | (true, None) => t.name.clone(),
            (true, Some(at)) => at.clone(),
        })
        .filter(|n| !n.is_empty())
        .collect();
    if !tests.is_empty() {
        return tests;
    }
    f.gates.iter().map(|g| format!("gate {}", g.gate)).collect()
}

fn short(sha: &CommitSha) -> &str {
    let s = sha.as_str();
    s.get(..12).unwrap_or(s)
}

fn fence(s: &str) -> String {
    format!("```text\n{}\n```\n", clean_log(s).trim_end())
}

/// The evidence for a workflow dispatch's `evidence` input, within `max`
/// bytes: for each failing gate, its kind and summary, the failing tests
/// with their places and messages, the log around the first error, the
/// command that reproduces it and the check run; gates that do not fit
/// are named. Plain text (tool output without terminal escapes), many
/// lines: the workflow reads it from an environment variable, never
/// from an expression inside a script.
pub(super) fn render_evidence_input(f: &FailureRecord, max: usize) -> String {
    let mut out = format!(
        "The acceptance run {} failed at {}.\n",
        f.attempt,
        f.sha.as_str()
    );
    let mut left_out = Vec::new();
    for (i, g) in f.gates.iter().enumerate() {
        let section = gate_input(g, &f.sha);
        // The first gate always, clipped in its middle if it must be.
        if i == 0 || (left_out.is_empty() && out.len() + section.len() <= max) {
            out.push_str(&section);
        } else {
            left_out.push(g.gate.as_str());
        }
    }
    if !left_out.is_empty() {
        let _ = write!(
            out,
            "\nLeft out to fit the input (the todo and the check runs have them): gates {}.\n",
            left_out.join(", ")
        );
    }
    clip_middle(&plain_text(&out), max)
}

/// One gate's part of [`render_evidence_input`].
fn gate_input(g: &GateFailure, sha: &CommitSha) -> String {
    let mut out = format!("\n## Gate {}: {}\n\n", g.gate, g.kind);
    if !g.summary.trim().is_empty() {
        let _ = writeln!(out, "{}\n", g.summary.trim_end());
    }
    if !g.tests.is_empty() {
        let findings = g.tests.iter().all(|t| t.name.is_empty());
        let what = if findings {
            "Findings"
        } else {
            "Failing tests"
        };
        let _ = writeln!(
            out,
            "{what} ({} of {}):",
            g.tests.len(),
            g.tests_failed.max(g.tests.len())
        );
        for t in &g.tests {
            let _ = writeln!(out, "- {}", test_lines(t));
        }
        out.push('\n');
    }
    if let Some(excerpt) = g.excerpt.as_deref().filter(|e| !e.trim().is_empty()) {
        let _ = writeln!(out, "First error (log excerpt):\n{}\n", excerpt.trim_end());
    }
    for c in &g.commands {
        let _ = writeln!(
            out,
            "Reproduce from the repository root: {}",
            reproduce(sha, c)
        );
    }
    if let Some(url) = &g.check_run {
        let _ = writeln!(out, "Full log: {url}");
    }
    out
}
