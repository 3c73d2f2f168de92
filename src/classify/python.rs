//! Python: pytest and unittest failures, collection/import errors, uncaught
//! tracebacks and syntax errors. The static checkers are in `python_lint.rs`.

use super::text::{classification, finding, parse_location, Loc, Log};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &[
    "python", "python3", "pytest", "py.test", "mypy", "ruff", "black", "tox", "nox", "uv",
    "poetry", "pipenv", "hatch",
];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    pytest(ctx)
        .or_else(|| unittest(log))
        .or_else(|| super::python_lint::detect(log))
        .or_else(|| traceback(log))
}

/// `No module named 'x'` (ModuleNotFoundError, ImportError) → `x`.
fn missing_module(line: &str) -> Option<&str> {
    let (_, rest) = line.split_once("No module named ")?;
    Some(rest.trim_matches(|c| c == '\'' || c == '"'))
}

fn missing(module: &str, at: Option<String>, findings: Vec<Finding>) -> Classification {
    let lines = [
        format!(
            "missing Python module `{module}` (ModuleNotFoundError){}",
            at.map(|a| format!(" at {a}")).unwrap_or_default()
        ),
        "install it or add it to the project's dependencies".to_string(),
    ];
    classification(FailureKind::MissingDependency, &lines, findings)
}

fn pytest(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let is_pytest = ctx.command_has(&["pytest", "py.test"])
        || log
            .lines
            .iter()
            .any(|l| l.contains("test session starts") || l.contains("short test summary info"));
    if !is_pytest {
        return None;
    }
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut findings = Vec::new();
    let mut first_e: Option<String> = None;
    let mut last_e: Option<String> = None;
    let mut module = None;
    let mut totals = None;
    for line in &log.lines {
        let t = line.trim_end();
        if let Some(rest) = t.strip_prefix("FAILED ") {
            let (id, msg) = rest.split_once(" - ").unwrap_or((rest, ""));
            failed.push((id.to_string(), msg.to_string()));
        } else if let Some(rest) = t.strip_prefix("ERROR ") {
            errors.push(rest.to_string());
        } else if let Some(e) = t.strip_prefix("E ") {
            let e = e.trim();
            module = module.or_else(|| missing_module(e).map(str::to_string));
            first_e.get_or_insert_with(|| e.to_string());
            last_e = Some(e.to_string());
        } else if t.starts_with('=')
            && t.ends_with('=')
            && (t.contains(" failed") || t.contains(" error"))
        {
            let inner = t.trim_matches(|c| c == '=' || c == ' ');
            totals = Some(inner.split(" in ").next().unwrap_or(inner).to_string());
        } else if let Some((loc, exc)) = t.rsplit_once(": ").filter(|(l, _)| l.contains(".py:")) {
            // `test_fetch.py:5: AssertionError` closes a failure block.
            if let Some(loc) = parse_location(loc).filter(|l| !is_library(&l.0)) {
                findings.push(finding(
                    loc,
                    last_e.take().unwrap_or_else(|| exc.to_string()),
                ));
            }
        } else if let Some(loc) = t
            .strip_suffix(':')
            .filter(|l| l.contains(".py:") && !l.contains(' '))
        {
            if let Some(loc) = parse_location(loc).filter(|l| !is_library(&l.0)) {
                findings.push(finding(loc, last_e.take().unwrap_or_default()));
            }
        }
    }
    let at = findings.first().map(|f| format!("{}:{}", f.path, f.line));
    if failed.is_empty() {
        if let Some(m) = module {
            return Some(missing(&m, at, findings));
        }
        if errors.is_empty() && totals.is_none() {
            return None;
        }
        let kind = match &first_e {
            Some(e) if e.starts_with("SyntaxError") || e.starts_with("IndentationError") => {
                FailureKind::BuildFailure
            }
            _ => FailureKind::TestFailure,
        };
        let lines = [
            format!(
                "pytest error in {}",
                errors.first().map(String::as_str).unwrap_or("collection")
            ),
            first_e.unwrap_or_default(),
            totals.unwrap_or_default(),
        ];
        return Some(classification(kind, &lines, findings));
    }
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
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// Where a traceback's frames point: `  File "x.py", line 3, in f`.
fn frame(line: &str) -> Option<(Loc, &str)> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let (num, func) = rest.split_once(", in ").unwrap_or((rest, ""));
    Some(((path.to_string(), num.trim().parse().ok()?, None), func))
}

fn is_library(path: &str) -> bool {
    path.contains("/site-packages/") || path.contains("/lib/python") || path.starts_with('<')
}

/// `ExcName: message` (or a bare `ExcName`) at the start of a line.
fn exception_line(line: &str) -> Option<&str> {
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
    let start = log
        .lines
        .iter()
        .position(|l| l.starts_with("FAIL: ") || l.starts_with("ERROR: "))?;
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
