//! pytest: failing tests, collection errors (a module that does not
//! import is a `missing_dependency`, one that does not parse a
//! `build_failure`), and pytest's documented exit codes for what the output
//! alone does not say: 2 interrupted, 3 internal error, 4 usage error,
//! 5 no tests collected.
//!
//! Owns: reading pytest's report. Must not: read unittest or bare
//! tracebacks (`python.rs` does, after this declines).

use super::python::{exception_line, frame, is_library, missing, missing_module};
use super::text::{between, classification, finding, parse_location, Loc};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let is_pytest = ctx.command_has(&["pytest", "py.test"])
        || log
            .lines
            .iter()
            .any(|l| l.contains("test session starts") || l.contains("short test summary info"));
    if !is_pytest {
        return None;
    }
    let scan = Scan::of(ctx);
    if scan.failed.is_empty() {
        collection(ctx, scan)
    } else {
        Some(failures(scan))
    }
}

/// What one pass over pytest's output found.
#[derive(Default)]
struct Scan {
    /// `FAILED id - message` lines of the short summary.
    failed: Vec<(String, String)>,
    /// `ERROR id` lines of the short summary.
    errors: Vec<String>,
    findings: Vec<Finding>,
    first_e: Option<String>,
    /// `No module named 'x'`.
    module: Option<String>,
    /// `cannot import name 'x' from 'm'`.
    import: Option<(String, String)>,
    /// A syntax error and the file and line pytest quoted before it.
    syntax: Option<(String, Option<Loc>)>,
    /// The closing `== 2 failed, 1 passed in 0.1s ==` line, without timing.
    totals: Option<String>,
    /// `rootdir: /path`, to show quoted paths relative to it.
    rootdir: Option<String>,
}

impl Scan {
    fn of(ctx: &Ctx) -> Scan {
        let mut s = Scan::default();
        let mut last_e: Option<String> = None;
        let mut quoted_file: Option<Loc> = None;
        for line in &ctx.log.lines {
            let t = line.trim_end();
            if let Some(rest) = t.strip_prefix("FAILED ") {
                let (id, msg) = rest.split_once(" - ").unwrap_or((rest, ""));
                s.failed.push((id.to_string(), msg.to_string()));
            } else if let Some(rest) = t.strip_prefix("ERROR ") {
                s.errors.push(rest.to_string());
            } else if let Some(e) = t.strip_prefix("E ").map(str::trim) {
                // A syntax error during collection quotes `File "x.py",
                // line N` before the error itself.
                if let Some((loc, _)) = frame(e) {
                    quoted_file = Some(loc);
                } else if ["SyntaxError", "IndentationError", "TabError"]
                    .iter()
                    .any(|x| e.starts_with(x))
                {
                    s.syntax
                        .get_or_insert_with(|| (e.to_string(), quoted_file.take()));
                }
                s.import = s.import.or_else(|| cannot_import(e));
                s.module = s.module.or_else(|| missing_module(e).map(str::to_string));
                s.first_e.get_or_insert_with(|| e.to_string());
                last_e = Some(e.to_string());
            } else if let Some(root) = t.strip_prefix("rootdir: ") {
                s.rootdir.get_or_insert_with(|| root.trim().to_string());
            } else if t.starts_with('=')
                && t.ends_with('=')
                && (t.contains(" failed") || t.contains(" error"))
            {
                let inner = t.trim_matches(|c| c == '=' || c == ' ');
                s.totals = Some(inner.split(" in ").next().unwrap_or(inner).to_string());
            } else if let Some((loc, exc)) = t.rsplit_once(": ").filter(|(l, _)| l.contains(".py:"))
            {
                // `test_fetch.py:5: AssertionError` closes a failure block.
                if let Some(loc) = parse_location(loc).filter(|l| !is_library(&l.0)) {
                    let message = last_e.take().unwrap_or_else(|| exc.to_string());
                    s.findings.push(finding(loc, message));
                }
            } else if let Some(loc) = t
                .strip_suffix(':')
                .filter(|l| l.contains(".py:") && !l.contains(' '))
            {
                if let Some(loc) = parse_location(loc).filter(|l| !is_library(&l.0)) {
                    s.findings
                        .push(finding(loc, last_e.take().unwrap_or_default()));
                }
            }
        }
        s
    }

    /// `path` relative to pytest's rootdir when it is under it.
    fn relative(&self, path: String) -> String {
        self.rootdir
            .as_deref()
            .and_then(|r| path.strip_prefix(r))
            .and_then(|p| p.strip_prefix('/'))
            .map_or(path.clone(), str::to_string)
    }
}

/// `cannot import name 'x' from 'm' (…)` → (`x`, `m`): the module is there
/// but lacks the name the test imports.
fn cannot_import(line: &str) -> Option<(String, String)> {
    let (_, rest) = line.split_once("cannot import name ")?;
    let name = between(rest, '\'', '\'')?;
    let from = rest
        .split_once(" from ")
        .and_then(|(_, m)| between(m, '\'', '\''))
        .unwrap_or("?");
    Some((name.to_string(), from.to_string()))
}

/// Tests ran and some failed: the first one, where, and the totals.
fn failures(scan: Scan) -> Classification {
    let Scan {
        failed,
        findings,
        first_e,
        totals,
        ..
    } = scan;
    let (id, msg) = &failed[0];
    let test_file = id.split("::").next().unwrap_or(id);
    let at = findings
        .iter()
        .find(|f| f.path.ends_with(test_file))
        .or(findings.first());
    let detail = first_e.unwrap_or_else(|| msg.clone());
    let lines = [
        format!(
            "test `{id}` failed{}",
            at.map(|f| format!(" at {}:{}", f.path, f.line))
                .unwrap_or_default()
        ),
        detail,
        format!(
            "{} (pytest)",
            totals.unwrap_or_else(|| format!("{} failed", failed.len()))
        ),
    ];
    classification(FailureKind::TestFailure, &lines, findings)
}

/// No test failed: collection went wrong, or pytest's exit code says what.
fn collection(ctx: &Ctx, scan: Scan) -> Option<Classification> {
    let at = scan
        .findings
        .first()
        .map(|f| format!("{}:{}", f.path, f.line));
    if let Some(m) = &scan.module {
        return Some(missing(m, at, scan.findings));
    }
    if let Some((name, from)) = &scan.import {
        let lines = [
            format!(
                "cannot import `{name}` from `{from}` (ImportError while collecting{})",
                at.map(|a| format!(", at {a}")).unwrap_or_default()
            ),
            format!("add `{name}` to `{from}`, or install the package that provides it"),
        ];
        return Some(classification(
            FailureKind::MissingDependency,
            &lines,
            scan.findings,
        ));
    }
    if let Some((error, loc)) = scan.syntax.clone() {
        let loc = loc.map(|(path, line, col)| (scan.relative(path), line, col));
        return Some(collection_syntax_error(error, loc, scan.findings));
    }
    if let Some(c) = by_exit_status(ctx, scan.errors.is_empty()) {
        return Some(c);
    }
    if scan.errors.is_empty() && scan.totals.is_none() {
        return None;
    }
    let lines = [
        format!(
            "pytest error in {}",
            scan.errors
                .first()
                .map(String::as_str)
                .unwrap_or("collection")
        ),
        scan.first_e.unwrap_or_default(),
        scan.totals.unwrap_or_default(),
    ];
    Some(classification(
        FailureKind::TestFailure,
        &lines,
        scan.findings,
    ))
}

/// A test module or conftest that does not parse: pytest quotes the file
/// and line before the error.
fn collection_syntax_error(
    error: String,
    loc: Option<Loc>,
    mut findings: Vec<Finding>,
) -> Classification {
    let at = loc
        .as_ref()
        .map(|(p, l, _)| format!(" in {p}:{l}"))
        .unwrap_or_default();
    if let Some(loc) = loc {
        findings.insert(0, finding(loc, error.clone()));
    }
    let lines = [
        format!("Python syntax error{at} (pytest could not collect it)"),
        error,
    ];
    classification(FailureKind::BuildFailure, &lines, findings)
}

/// pytest's documented exit codes, when the output held nothing more
/// specific: 2 interrupted, 3 internal error, 4 usage error, 5 no tests
/// collected. (1, tests failed, is read from the failures themselves.)
fn by_exit_status(ctx: &Ctx, no_errors: bool) -> Option<Classification> {
    let log = ctx.log;
    let cmd = ctx.command.trim();
    let after = |marker: &str| {
        log.lines
            .iter()
            .find_map(|l| l.split_once(marker).map(|(_, r)| r.trim().to_string()))
    };
    let (kind, lines) = match ctx.exit_code? {
        5 => {
            let deselected = log
                .lines
                .iter()
                .find(|l| l.starts_with("collected ") && l.contains("deselected"))
                .map(|l| format!(": {l}"))
                .unwrap_or_default();
            let lines = [
                format!("pytest ran no tests (exit 5){deselected}"),
                format!("write the tests the acceptance expects, or fix the selection in `{cmd}`"),
            ];
            (FailureKind::SpecMismatch, lines)
        }
        4 => {
            if let Some(path) = after("file or directory not found: ") {
                let lines = [
                    format!("missing test file or directory: {path} (pytest exit 4)"),
                    format!("`{cmd}` names tests that do not exist"),
                ];
                (FailureKind::SpecMismatch, lines)
            } else if let Some(args) = after("error: unrecognized arguments: ") {
                let lines = [
                    format!("pytest usage error (exit 4): unrecognized arguments: {args}"),
                    "install the plugin that adds the option (pytest-cov adds --cov) or fix the gate command".to_string(),
                ];
                (FailureKind::ToolingError, lines)
            } else {
                let said = log
                    .lines
                    .iter()
                    .map(|l| l.trim())
                    .find(|l| l.starts_with("ERROR: ") || l.contains("error: "))
                    .unwrap_or("");
                let lines = [
                    format!("pytest usage error (exit 4): {said}"),
                    format!("fix the gate command `{cmd}`"),
                ];
                (FailureKind::ToolingError, lines)
            }
        }
        3 => {
            let exc = log
                .lines
                .iter()
                .rev()
                .filter_map(|l| l.strip_prefix("INTERNALERROR> "))
                .find_map(exception_line)
                .unwrap_or("");
            let lines = [
                format!("pytest internal error (exit 3): {exc}"),
                "raised by pytest, a plugin or a conftest hook (see INTERNALERROR in the log)"
                    .to_string(),
            ];
            (FailureKind::ToolingError, lines)
        }
        2 if no_errors => {
            let lines = [
                "pytest was interrupted (exit 2)".to_string(),
                log.last_meaningful()
                    .map(|l| format!("last output: {l}"))
                    .unwrap_or_default(),
            ];
            (FailureKind::ToolingError, lines)
        }
        _ => return None,
    };
    Some(classification(kind, &lines, Vec::new()))
}
