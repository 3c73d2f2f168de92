//! Python: unittest failures, uncaught tracebacks and syntax errors, and the
//! helpers pytest's parser shares. pytest is in `pytest.rs`, the static
//! checkers in `python_lint.rs`.

use super::text::{classification, finding, Loc, Log};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &[
    "python", "python3", "pytest", "py.test", "mypy", "ruff", "black", "tox", "nox", "uv",
    "poetry", "pipenv", "hatch",
];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    super::pytest::detect(ctx)
        .or_else(|| unittest(log))
        .or_else(|| super::python_lint::detect(log))
        .or_else(|| traceback(log))
}

/// `No module named 'x'` (ModuleNotFoundError, ImportError) → `x`.
pub(super) fn missing_module(line: &str) -> Option<&str> {
    let (_, rest) = line.split_once("No module named ")?;
    Some(rest.trim_matches(|c| c == '\'' || c == '"'))
}

pub(super) fn missing(module: &str, at: Option<String>, findings: Vec<Finding>) -> Classification {
    let lines = [
        format!(
            "missing Python module `{module}` (ModuleNotFoundError){}",
            at.map(|a| format!(" at {a}")).unwrap_or_default()
        ),
        "install it or add it to the project's dependencies".to_string(),
    ];
    classification(FailureKind::MissingDependency, &lines, findings)
}

/// Where a traceback's frames point: `  File "x.py", line 3, in f`.
pub(super) fn frame(line: &str) -> Option<(Loc, &str)> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let (num, func) = rest.split_once(", in ").unwrap_or((rest, ""));
    Some(((path.to_string(), num.trim().parse().ok()?, None), func))
}

pub(super) fn is_library(path: &str) -> bool {
    path.contains("/site-packages/") || path.contains("/lib/python") || path.starts_with('<')
}

/// `ExcName: message` (or a bare `ExcName`) at the start of a line.
pub(super) fn exception_line(line: &str) -> Option<&str> {
    let name = line.split(':').next()?;
    let ok = !line.starts_with(char::is_whitespace)
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && [
            "Error",
            "Exception",
            "Exit",
            "Interrupt",
            "Iteration",
            "Failure",
            "Warning",
        ]
        .iter()
        .any(|s| name.ends_with(s));
    ok.then_some(line)
}

fn unittest(log: &Log) -> Option<Classification> {
    let start = log.lines.iter().position(|l| is_unittest_header(l))?;
    let header = log.at(start);
    let name = header.split_once(": ").map(|(_, n)| n).unwrap_or(header);
    let mut findings = Vec::new();
    let mut exc = None;
    for j in start + 1..(start + 200).min(log.lines.len()) {
        let l = log.at(j);
        if l.starts_with("-----") && exc.is_some() || l.starts_with("=====") {
            break;
        }
        if let Some((loc, _)) = frame(l) {
            findings.push(finding(loc, ""));
        } else if let Some(e) = exception_line(l).filter(|e| !e.starts_with("Traceback")) {
            exc = Some(e.to_string());
        }
    }
    let exc = exc.unwrap_or_default();
    if let Some(m) = log.lines.iter().find_map(|l| missing_module(l)) {
        return Some(missing(
            m,
            findings.last().map(|f| format!("{}:{}", f.path, f.line)),
            findings,
        ));
    }
    let totals = log
        .lines
        .iter()
        .rev()
        .find(|l| l.starts_with("FAILED ("))
        .cloned()
        .unwrap_or_default();
    let test_frame = findings
        .iter()
        .rev()
        .find(|f| !is_library(&f.path))
        .cloned();
    if let Some(f) = findings.last_mut() {
        f.message = exc.clone();
    }
    let lines = [
        format!(
            "test {name} failed{}",
            test_frame
                .map(|f| format!(" at {}:{}", f.path, f.line))
                .unwrap_or_default()
        ),
        exc,
        format!("{totals} (unittest)"),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// `FAIL: test_x (module.Class.test_x)` or `ERROR: …`: a test's name, then
/// its dotted id in parentheses. (isort's `ERROR: path Imports are
/// incorrectly sorted` is not one.)
fn is_unittest_header(line: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("FAIL: ")
        .or_else(|| line.strip_prefix("ERROR: "))
    else {
        return false;
    };
    rest.split_once(" (")
        .is_some_and(|(name, id)| !name.contains(' ') && id.ends_with(')') && !id.contains(' '))
}

/// An uncaught exception (the last traceback in the log), or a syntax error.
fn traceback(log: &Log) -> Option<Classification> {
    let start = log.lines.iter().rposition(|l| {
        l.trim_start()
            .starts_with("Traceback (most recent call last)")
    });
    let syntax = log.lines.iter().rposition(|l| {
        ["SyntaxError", "IndentationError", "TabError"]
            .iter()
            .any(|e| l.starts_with(&format!("{e}: ")))
    });
    let begin = match (start, syntax) {
        (_, Some(s)) => s.saturating_sub(6).min(start.unwrap_or(usize::MAX)),
        (Some(t), None) => t,
        (None, None) => return None,
    };
    let mut frames = Vec::new();
    let mut exc = None;
    for l in &log.lines[begin..] {
        if let Some((loc, func)) = frame(l) {
            frames.push((loc, func.to_string()));
        } else if !frames.is_empty() || start.is_none() {
            if let Some(e) = exception_line(l) {
                exc = Some(e.to_string());
                break;
            }
        }
    }
    let exc = exc?;
    let own = frames
        .iter()
        .rev()
        .find(|(loc, _)| !is_library(&loc.0))
        .or(frames.last());
    let at = own.map(|(loc, func)| {
        let func = if func.is_empty() {
            String::new()
        } else {
            format!(" in {func}")
        };
        format!("{}:{}{func}", loc.0, loc.1)
    });
    let findings: Vec<Finding> = own
        .map(|(loc, _)| finding(loc.clone(), exc.clone()))
        .into_iter()
        .collect();
    if let Some(m) = missing_module(&exc) {
        return Some(missing(m, at, findings));
    }
    let is_syntax = ["SyntaxError", "IndentationError", "TabError"]
        .iter()
        .any(|e| exc.starts_with(e));
    let (kind, what) = if is_syntax {
        (FailureKind::BuildFailure, "Python syntax error")
    } else {
        (FailureKind::RuntimeError, "uncaught exception")
    };
    let lines = [
        format!("{what}: {exc}"),
        at.map(|a| format!("raised at {a}")).unwrap_or_default(),
    ];
    Some(classification(kind, &lines, findings))
}
