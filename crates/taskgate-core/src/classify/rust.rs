//! Rust: rustc/cargo diagnostics (build errors, clippy and deny-lints,
//! unresolved external crates), libtest and nextest failures, panics outside
//! tests, `cargo fmt --check` diffs and missing cargo subcommands.

use super::text::{between, classification, clip, finding, parse_location, show_location, Loc};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &[
    "cargo",
    "rustc",
    "cargo-clippy",
    "clippy-driver",
    "cargo-nextest",
    "rustfmt",
    "cross",
];

/// How far past a diagnostic's first line its notes are searched.
const BLOCK_LINES: usize = 40;

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    if let Some(c) = tooling(ctx) {
        return Some(c);
    }
    let diags = diagnostics(ctx);
    if !diags.is_empty() {
        return Some(from_diagnostics(ctx, &diags));
    }
    test_failures(ctx)
        .or_else(|| panic(ctx))
        .or_else(|| fmt_diff(log))
}

fn tooling(ctx: &Ctx) -> Option<Classification> {
    for line in &ctx.log.lines {
        let t = line.trim();
        let what = if let Some(rest) = t.strip_prefix("error: no such command: ") {
            format!("cargo has no command {rest}: is the plugin installed on the runner?")
        } else if t.starts_with("error: linker `") && t.ends_with("not found") {
            format!("{t}: install a C toolchain on the runner")
        } else if t.starts_with("error[E0463]: can't find crate for `")
            && ["`std`", "`core`", "`alloc`", "`test`"]
                .iter()
                .any(|c| t.ends_with(c))
        {
            format!("{t}: the Rust target's standard library is not installed (rustup target add)")
        } else {
            continue;
        };
        return Some(classification(
            FailureKind::ToolingError,
            &[what],
            Vec::new(),
        ));
    }
    None
}

struct Diagnostic {
    code: Option<String>,
    message: String,
    location: Option<Loc>,
    lint: Option<String>,
    missing_crate: Option<String>,
}

/// Every `error[..]`/`error:` diagnostic that carries a code or a ` --> `
/// location (cargo's own closing `error: could not compile` lines do not).
fn diagnostics(ctx: &Ctx) -> Vec<Diagnostic> {
    let log = ctx.log;
    let mut out = Vec::new();
    for (i, line) in log.lines.iter().enumerate() {
        let t = line.trim_start();
        let (code, message) = if let Some(rest) = t.strip_prefix("error[") {
            match rest.split_once("]: ") {
                Some((code, msg)) => (Some(code.to_string()), msg.to_string()),
                None => continue,
            }
        } else if let Some(msg) = t.strip_prefix("error: ") {
            (None, msg.to_string())
        } else {
            continue;
        };
        let mut d = Diagnostic {
            code,
            message,
            location: None,
            lint: None,
            missing_crate: None,
        };
        for j in i + 1..(i + BLOCK_LINES).min(log.lines.len()) {
            let n = log.at(j).trim_start();
            if n.starts_with("error") || n.starts_with("warning") {
                break;
            }
            if let Some(loc) = n.strip_prefix("--> ") {
                d.location = d.location.or_else(|| parse_location(loc));
            }
            if d.lint.is_none() {
                d.lint = lint_name(n);
            }
            if d.missing_crate.is_none() {
                d.missing_crate = ["unlinked crate `", "undeclared crate or module `"]
                    .iter()
                    .find_map(|p| n.split_once(p).and_then(|(_, r)| r.split('`').next()))
                    .map(str::to_string);
            }
        }
        if d.code.as_deref() == Some("E0463") {
            d.missing_crate = d.message.split('`').nth(1).map(str::to_string);
        }
        if d.code.is_some() || d.location.is_some() {
            out.push(d);
        }
    }
    out
}

/// `= note: `-D clippy::x` implied by `-D warnings`` or `#[deny(x)]` on by default.
fn lint_name(line: &str) -> Option<String> {
    let raw = if let Some((_, r)) = line.split_once("`-D ") {
        r.split('`').next()?
    } else if let Some((_, r)) = line.split_once("#[deny(") {
        r.split(')').next()?
    } else {
        return None;
    };
    Some(raw.trim_start_matches("clippy::").replace('-', "_"))
}

fn from_diagnostics(ctx: &Ctx, diags: &[Diagnostic]) -> Classification {
    let findings: Vec<Finding> = diags
        .iter()
        .filter_map(|d| {
            let msg = match (&d.code, &d.lint) {
                (Some(code), _) => format!("error[{code}]: {}", d.message),
                (None, Some(lint)) => format!("{} ({lint})", d.message),
                (None, None) => d.message.clone(),
            };
            d.location.clone().map(|loc| finding(loc, msg))
        })
        .collect();
    let at = |d: &Diagnostic| {
        d.location
            .as_ref()
            .map(|l| format!(" at {}", show_location(&finding(l.clone(), ""))))
            .unwrap_or_default()
    };

    if let Some(d) = diags.iter().find(|d| d.missing_crate.is_some()) {
        let krate = d.missing_crate.as_deref().unwrap_or_default();
        let code = d.code.as_deref().unwrap_or("error");
        let lines = [
            format!("missing crate `{krate}`: {code} {}{}", d.message, at(d)),
            format!("add it to Cargo.toml (`cargo add {krate}`) or fix the path"),
        ];
        return classification(FailureKind::MissingDependency, &lines, findings);
    }
    if diags.iter().all(|d| d.lint.is_some()) {
        let tool = if ctx.command_has(&["clippy", "cargo-clippy"])
            || diags.iter().any(|d| d.message.contains("clippy"))
        {
            "clippy"
        } else {
            "rustc"
        };
        let mut names: Vec<&str> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for d in diags {
            let n = d.lint.as_deref().unwrap_or_default();
            if seen.insert(n) {
                names.push(n);
            }
        }
        let first = &diags[0];
        let plural = if diags.len() == 1 { "" } else { "s" };
        let lines = [
            format!(
                "{tool}: {} lint error{plural} ({})",
                diags.len(),
                names.join(", ")
            ),
            format!("first{}: {}", at(first), first.message),
        ];
        return classification(FailureKind::LintFailure, &lines, findings);
    }
    let first = diags.iter().find(|d| d.lint.is_none()).unwrap_or(&diags[0]);
    let head = match &first.code {
        Some(code) => format!("error[{code}]{}: {}", at(first), first.message),
        None => format!("error{}: {}", at(first), first.message),
    };
    let total = ctx
        .log
        .lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("error: could not compile "))
        .map(|rest| format!("could not compile {rest}"))
        .unwrap_or_else(|| format!("{} compile error(s)", diags.len()));
    classification(FailureKind::BuildFailure, &[head, total], findings)
}

struct Panic {
    thread: String,
    location: Option<Loc>,
    message: String,
}

/// `thread 'name' (id) panicked at src/a.rs:1:2:` + message on the next
/// lines (Rust ≥ 1.73), or the older `panicked at 'msg', src/a.rs:1:2`.
fn panics(ctx: &Ctx) -> Vec<Panic> {
    let log = ctx.log;
    let mut out = Vec::new();
    for (i, line) in log.lines.iter().enumerate() {
        let t = line.trim();
        let Some((before, rest)) = t.split_once("panicked at ") else {
            continue;
        };
        let Some(thread) = between(before, '\'', '\'') else {
            continue;
        };
        let (location, message) = if let Some(old) = rest.strip_prefix('\'') {
            match old.rsplit_once("', ") {
                Some((msg, loc)) => (parse_location(loc), msg.to_string()),
                None => (None, old.to_string()),
            }
        } else {
            let mut msg: Vec<&str> = Vec::new();
            for j in i + 1..(i + 6).min(log.lines.len()) {
                let n = log.at(j).trim();
                if n.is_empty() || n.starts_with("note:") || n.starts_with("stack backtrace:") {
                    break;
                }
                msg.push(n);
            }
            (parse_location(rest), join_assertion(&msg))
        };
        out.push(Panic {
            thread: thread.to_string(),
            location,
            message,
        });
    }
    out
}

/// `assertion failed` + `left: 4` + `right: 3` on one line.
fn join_assertion(lines: &[&str]) -> String {
    match lines {
        [] => String::new(),
        [first] => first.to_string(),
        [first, rest @ ..] => format!("{first} ({})", rest.join(", ")),
    }
}

fn test_failures(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let mut failed: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut totals = None;
    let mut crash = None;
    for line in &log.lines {
        let t = line.trim();
        let name = if let Some(rest) = t
            .strip_prefix("test ")
            .and_then(|r| r.strip_suffix(" ... FAILED"))
        {
            Some(rest.to_string())
        } else if t.starts_with("FAIL [") {
            // nextest: `FAIL [   0.553s] (1/3) crate tests::name`
            t.rsplit(' ').next().map(str::to_string)
        } else {
            None
        };
        if let Some(name) = name {
            if seen.insert(name.clone()) {
                failed.push(name);
            }
        } else if let Some(rest) = t.strip_prefix("test result: FAILED. ") {
            totals = totals.or(Some(rest.split(';').take(2).collect::<Vec<_>>().join(",")));
        } else if let Some((_, rest)) = t.split_once(" tests run: ") {
            totals = Some(format!(
                "{} run: {rest}",
                t.split_whitespace().rev().nth(3).unwrap_or("tests")
            ));
        } else if t.contains("process didn't exit successfully") && t.contains("(signal: ") {
            crash = t
                .split_once("(signal: ")
                .map(|(_, s)| s.trim_end_matches(')').to_string());
        }
    }
    if failed.is_empty() && totals.is_none() {
        return crash.map(|sig| {
            let line = format!("a test binary crashed (signal {sig})");
            classification(FailureKind::TestFailure, &[line], Vec::new())
        });
    }
    let panics = panics(ctx);
    let findings = panics
        .iter()
        .filter_map(|p| {
            p.location
                .clone()
                .map(|l| finding(l, format!("test `{}` panicked: {}", p.thread, p.message)))
        })
        .collect();
    let first_name = failed.first().cloned().unwrap_or_default();
    let first = panics
        .iter()
        .find(|p| p.thread == first_name || first_name.ends_with(&p.thread))
        .or(panics.first());
    let mut lines = Vec::new();
    match first {
        Some(p) => {
            let at = p
                .location
                .clone()
                .map(|l| format!(" at {}", show_location(&finding(l, ""))))
                .unwrap_or_default();
            let name = if first_name.is_empty() {
                &p.thread
            } else {
                &first_name
            };
            lines.push(format!("test `{name}` failed{at}"));
            lines.push(p.message.clone());
        }
        None => lines.push(format!("test `{first_name}` failed")),
    }
    let count = totals
        .map(|t| format!(" ({})", t.trim()))
        .unwrap_or_default();
    lines.push(clip(
        &format!("failed tests: {}{count}", failed.join(", ")),
        200,
    ));
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

fn panic(ctx: &Ctx) -> Option<Classification> {
    let p = panics(ctx).into_iter().next()?;
    let at = p
        .location
        .clone()
        .map(|l| format!(" at {}", show_location(&finding(l, ""))))
        .unwrap_or_default();
    let lines = [
        format!("panic in thread `{}`{at}", p.thread),
        p.message.clone(),
    ];
    let findings = p
        .location
        .map(|l| finding(l, format!("panic: {}", p.message)))
        .into_iter()
        .collect();
    Some(classification(FailureKind::RuntimeError, &lines, findings))
}

fn fmt_diff(log: &super::text::Log) -> Option<Classification> {
    let mut findings = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in &log.lines {
        let Some(loc) = line.strip_prefix("Diff in ") else {
            continue;
        };
        if let Some(loc) = parse_location(loc) {
            if seen.insert(loc.0.clone()) {
                files.push(loc.0.clone());
            }
            findings.push(finding(loc, "not formatted: run `cargo fmt`"));
        }
    }
    if files.is_empty() {
        return None;
    }
    let lines = [
        format!(
            "rustfmt: {} file(s) need formatting (run `cargo fmt`)",
            files.len()
        ),
        clip(&files.join(", "), 200),
    ];
    Some(classification(FailureKind::LintFailure, &lines, findings))
}

#[cfg(test)]
mod tests {
    use super::super::text::Log;
    use super::*;

    fn ctx_run(command: &str, out: &str) -> Option<Classification> {
        let log = Log::from_bytes(out.as_bytes());
        detect(&Ctx {
            command,
            exit_code: Some(101),
            signal: None,
            log: &log,
        })
    }

    #[test]
    fn old_style_panic_message_and_location_are_read() {
        let c = ctx_run(
            "cargo run",
            "thread 'main' panicked at 'boom', src/main.rs:3:5\n",
        )
        .unwrap();
        assert_eq!(c.kind, FailureKind::RuntimeError);
        insta::assert_snapshot!(c.summary, @r"
        panic in thread `main` at src/main.rs:3:5
        boom
        ");
    }

    #[test]
    fn internal_unresolved_import_is_a_build_failure_not_a_missing_crate() {
        let out = "error[E0432]: unresolved import `crate::db`\n --> src/lib.rs:1:5\n  |\n1 | use crate::db;\n  |     ^^^^^^^^^ no `db` in the root\n";
        let c = ctx_run("cargo build", out).unwrap();
        assert_eq!(c.kind, FailureKind::BuildFailure);
        assert_eq!(c.findings[0].path, "src/lib.rs");
    }

    #[test]
    fn missing_std_is_a_tooling_error() {
        let c = ctx_run(
            "cargo build --target x",
            "error[E0463]: can't find crate for `std`\n",
        )
        .unwrap();
        assert_eq!(c.kind, FailureKind::ToolingError);
    }
}
