//! JavaScript/TypeScript: jest, `node --test` (TAP and spec reporters),
//! eslint (stylish), tsc, uncaught exceptions and missing modules, and the
//! package managers' own refusals (a missing script, nothing for npx to run).
//! vitest and mocha are in `js_runners.rs`.

use super::text::{
    between, classification, clip, finding, parse_location, show_location, Loc, Log,
};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &[
    "node", "npm", "npx", "yarn", "pnpm", "jest", "eslint", "tsc", "vitest", "mocha", "bun", "deno",
];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    missing_script(ctx)
        .or_else(|| jest(log))
        .or_else(|| super::js_runners::detect(log))
        .or_else(|| node_test_tap(log))
        .or_else(|| eslint(log))
        .or_else(|| node_test_spec(log))
        .or_else(|| tsc(log))
        .or_else(|| uncaught(log))
}

/// npm, yarn and pnpm refusing to run a script package.json does not have,
/// and npx finding nothing to run: the gate names what the project lacks.
fn missing_script(ctx: &Ctx) -> Option<Classification> {
    let cmd = ctx.command.trim();
    ctx.log.lines.iter().find_map(|line| {
        let t = line.trim();
        let lines = if let Some((tool, name)) = no_such_script(t) {
            [
                format!("missing script `{name}` in package.json ({tool})"),
                format!("add it to package.json's \"scripts\" or fix the gate command `{cmd}`"),
            ]
        } else {
            [
                nothing_for_npx(t)?,
                format!("add it to the project's devDependencies or fix the gate command `{cmd}`"),
            ]
        };
        Some(classification(
            FailureKind::ToolingError,
            &lines,
            Vec::new(),
        ))
    })
}

/// The package manager and the script it did not find. npm 7+: `npm error
/// Missing script: "test"` (`npm ERR!` before 10); pnpm:
/// `ERR_PNPM_NO_SCRIPT  Missing script: lint`; yarn 1: `error Command "lint"
/// not found.`; yarn 2+: `Usage Error: Couldn't find a script named "lint".`
fn no_such_script(t: &str) -> Option<(&'static str, String)> {
    let script = |rest: &str| {
        between(rest, '"', '"')
            .unwrap_or(rest.trim().trim_end_matches('.'))
            .to_string()
    };
    if let Some((before, rest)) = t.split_once("Missing script: ") {
        let tool = if before.contains("PNPM") {
            "pnpm"
        } else {
            "npm"
        };
        return Some((tool, script(rest)));
    }
    let yarn = t
        .strip_prefix("error Command ")
        .and_then(|r| r.strip_suffix(" not found."))
        .or_else(|| t.strip_prefix("Usage Error: Couldn't find a script named "))?;
    Some(("yarn", script(yarn)))
}

/// npx: `npx canceled due to missing packages and no YES option:
/// ["vitest@4.1.12"]`, or `could not determine executable to run`.
fn nothing_for_npx(t: &str) -> Option<String> {
    if t.ends_with("could not determine executable to run") {
        return Some("npx found no executable to run".to_string());
    }
    let (_, rest) = t.split_once("npx canceled due to missing packages")?;
    // `["vitest@4.1.12"]` → `vitest`: the version is the registry's.
    let pkgs: Vec<&str> = between(rest, '[', ']')
        .unwrap_or("")
        .split(',')
        .map(|p| p.trim().trim_matches('"'))
        .map(|p| {
            p.rsplit_once('@')
                .filter(|(n, _)| !n.is_empty())
                .map_or(p, |(n, _)| n)
        })
        .collect();
    Some(format!(
        "npx would have to download {}: it is not a dependency of the project",
        pkgs.join(", ")
    ))
}

/// `at fn (path:l:c)` or `at path:l:c`, skipping node internals.
pub(super) fn stack_frame(line: &str) -> Option<Loc> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let loc = match rest.rsplit_once('(') {
        Some((_, inner)) => inner.trim_end_matches(')'),
        None => rest,
    };
    let loc = loc.strip_prefix("file://").unwrap_or(loc);
    if loc.starts_with("node:") || loc.contains("/node_modules/") {
        return None;
    }
    parse_location(loc)
}

pub(super) fn missing(module: &str, findings: Vec<Finding>) -> Classification {
    let lines = [
        format!("missing module `{module}` (Cannot find module)"),
        "install it (npm install) or add it to package.json".to_string(),
    ];
    classification(FailureKind::MissingDependency, &lines, findings)
}

/// `Cannot find module 'x'` / `Cannot find package 'x'` → `x`.
pub(super) fn missing_module(line: &str) -> Option<&str> {
    let (_, rest) = line
        .split_once("Cannot find module ")
        .or_else(|| line.split_once("Cannot find package "))?;
    between(rest, '\'', '\'').or_else(|| between(rest, '"', '"'))
}

fn jest(log: &Log) -> Option<Classification> {
    if !log
        .lines
        .iter()
        .any(|l| l.starts_with("FAIL ") || l.starts_with("Tests:"))
    {
        return None;
    }
    let totals = log
        .lines
        .iter()
        .find_map(|l| l.strip_prefix("Tests:"))
        .map(|t| t.trim().to_string());
    let mut findings = Vec::new();
    let mut first: Option<(String, Vec<String>)> = None;
    for (i, line) in log.lines.iter().enumerate() {
        let Some(name) = line.trim_start().strip_prefix("● ") else {
            continue;
        };
        let mut msg = Vec::new();
        let mut loc = None;
        for j in i + 1..(i + 60).min(log.lines.len()) {
            let l = log.at(j).trim();
            if l.starts_with("● ") {
                break;
            }
            if let Some(f) = stack_frame(l) {
                loc = Some(f);
                break;
            }
            let code_excerpt = l.starts_with('>')
                || l.split('|')
                    .next()
                    .is_some_and(|n| n.trim().parse::<u32>().is_ok())
                || l.starts_with('|');
            if !l.is_empty() && !code_excerpt && msg.len() < 4 {
                msg.push(l.to_string());
            }
        }
        if name == "Test suite failed to run" {
            if let Some(m) = msg.iter().find_map(|l| missing_module(l)) {
                return Some(missing(m, findings));
            }
        }
        if let Some(loc) = loc {
            findings.push(finding(loc, format!("{name}: {}", msg.join(" "))));
        }
        first.get_or_insert((name.to_string(), msg));
    }
    let (name, msg) = first?;
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    let detail = match msg.split_first() {
        Some((head, rest)) if !rest.is_empty() => format!("{head} — {}", rest.join(", ")),
        Some((head, _)) => head.clone(),
        None => String::new(),
    };
    let lines = [
        format!("test `{name}` failed{at}"),
        detail,
        totals
            .map(|t| format!("Tests: {t} (jest)"))
            .unwrap_or_default(),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// `node --test` default reporter when not on a terminal (Node ≤ 22).
fn node_test_tap(log: &Log) -> Option<Classification> {
    let (i, name) = log.lines.iter().enumerate().find_map(|(i, l)| {
        let rest = l.trim_start().strip_prefix("not ok ")?;
        Some((i, rest.split_once(" - ").map(|(_, n)| n).unwrap_or(rest)))
    })?;
    let mut loc = None;
    let mut msg: Vec<&str> = Vec::new();
    let mut in_error = None;
    for j in i + 1..(i + 80).min(log.lines.len()) {
        let raw = log.at(j);
        let t = raw.trim_start();
        let indent = raw.len() - t.len();
        if t == "..." || t.starts_with("not ok ") || t.starts_with("ok ") {
            break;
        }
        if let Some(error_indent) = in_error {
            if indent > error_indent || t.is_empty() {
                if !t.is_empty() && msg.len() < 3 {
                    msg.push(t);
                }
                continue;
            }
            in_error = None;
        }
        if let Some(l) = t.strip_prefix("location: ") {
            loc = parse_location(l.trim_matches('\''));
        } else if let Some(e) = t.strip_prefix("error: ") {
            if e.starts_with('|') || e.starts_with('>') {
                in_error = Some(indent);
            } else {
                msg.push(e.trim_matches('\''));
            }
        }
    }
    let count = |key: &str| {
        log.lines
            .iter()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .unwrap_or("?")
    };
    let findings: Vec<Finding> = loc.map(|l| finding(l, msg.join(" "))).into_iter().collect();
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    let lines = [
        format!("test `{name}` failed{at}"),
        msg.join(" "),
        format!(
            "{} of {} tests failed (node --test)",
            count("# fail "),
            count("# tests ")
        ),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// `node --test` spec reporter (the default on a terminal, and from Node 23).
fn node_test_spec(log: &Log) -> Option<Classification> {
    if !log.lines.iter().any(|l| l.starts_with("ℹ tests ")) {
        return None;
    }
    let (i, name) = log.lines.iter().enumerate().find_map(|(i, l)| {
        let rest = l.trim_start().strip_prefix("✖ ")?;
        (rest != "failing tests:").then_some((i, rest))
    })?;
    let name = name.rsplit_once(" (").map(|(n, _)| n).unwrap_or(name);
    let mut msg: Vec<&str> = Vec::new();
    let mut loc = None;
    for j in i + 1..(i + 40).min(log.lines.len()) {
        let t = log.at(j).trim();
        if let Some(f) = stack_frame(t) {
            loc = Some(f);
            break;
        }
        if t.starts_with("at ") || t.starts_with('✖') || t.starts_with('✔') {
            break;
        }
        if !t.is_empty() && msg.len() < 3 {
            msg.push(t);
        }
    }
    let count = |key: &str| {
        log.lines
            .iter()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .unwrap_or("?")
    };
    let findings: Vec<Finding> = loc.map(|l| finding(l, msg.join(" "))).into_iter().collect();
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    let lines = [
        format!("test `{name}` failed{at}"),
        msg.join(" "),
        format!(
            "{} of {} tests failed (node --test)",
            count("ℹ fail "),
            count("ℹ tests ")
        ),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// eslint's default "stylish" format: a file line, then `  l:c  error  msg  rule`.
fn eslint(log: &Log) -> Option<Classification> {
    let mut file = "";
    let mut findings = Vec::new();
    let mut rules: Vec<&str> = Vec::new();
    let mut seen_rules = std::collections::HashSet::new();
    let mut errors = 0;
    for line in &log.lines {
        if !line.starts_with(' ') && !line.is_empty() && !line.contains(char::is_whitespace) {
            file = line;
            continue;
        }
        let t = line.trim_start();
        let mut words = t.split_whitespace();
        let (Some(pos), Some(severity)) = (words.next(), words.next()) else {
            continue;
        };
        let Some((l, c)) = pos.split_once(':') else {
            continue;
        };
        let (Ok(l), Ok(c)) = (l.parse::<u32>(), c.parse::<u32>()) else {
            continue;
        };
        if (severity != "error" && severity != "warning") || file.is_empty() {
            continue;
        }
        let rest = t[t.find(severity).unwrap_or(0) + severity.len()..].trim();
        let (msg, rule) = rest
            .rsplit_once("  ")
            .map(|(m, r)| (m.trim(), r.trim()))
            .unwrap_or((rest, ""));
        if severity == "error" {
            errors += 1;
        }
        if !rule.is_empty() && seen_rules.insert(rule) {
            rules.push(rule);
        }
        findings.push(finding(
            (file.to_string(), l, Some(c)),
            format!("{msg} ({rule})"),
        ));
    }
    let first = findings.first()?;
    let n = findings.len();
    let what = if errors > 0 {
        format!("{errors} error{}", if errors == 1 { "" } else { "s" })
    } else {
        format!("{n} warnings")
    };
    let lines = [
        clip(&format!("eslint: {what} ({})", rules.join(", ")), 200),
        format!("first {}: {}", show_location(first), first.message),
    ];
    Some(classification(FailureKind::LintFailure, &lines, findings))
}

/// `src/a.ts(7,20): error TS2339: msg` or, pretty, `src/a.ts:7:20 - error TS2339: msg`.
fn tsc(log: &Log) -> Option<Classification> {
    let mut findings = Vec::new();
    let mut first_code = None;
    for line in &log.lines {
        let (loc, rest) = if let Some((loc, rest)) = line.split_once("): error TS") {
            let Some((path, lc)) = loc.rsplit_once('(') else {
                continue;
            };
            let Some((l, c)) = lc.split_once(',') else {
                continue;
            };
            let (Ok(l), Ok(c)) = (l.parse(), c.parse()) else {
                continue;
            };
            ((path.to_string(), l, Some(c)), rest)
        } else if let Some((loc, rest)) = line.split_once(" - error TS") {
            let Some(loc) = parse_location(loc) else {
                continue;
            };
            (loc, rest)
        } else {
            continue;
        };
        let (code, msg) = rest.split_once(": ").unwrap_or((rest, ""));
        if code.contains("2307") || code == "2792" {
            if let Some(m) = missing_module(msg) {
                return Some(missing(m, vec![finding(loc, msg)]));
            }
        }
        first_code.get_or_insert(format!(
            "error TS{code} at {}: {msg}",
            show_location(&finding(loc.clone(), ""))
        ));
        findings.push(finding(loc, format!("TS{code}: {msg}")));
    }
    let first = first_code?;
    let n = findings.len();
    let lines = [
        first,
        format!("tsc: {n} error{} in total", if n == 1 { "" } else { "s" }),
    ];
    Some(classification(FailureKind::BuildFailure, &lines, findings))
}

/// A JS error name at the start of a line: `TypeError: x`, `Error [ERR_X]: x`.
fn js_error(line: &str) -> Option<&str> {
    let (head, _) = line.split_once(": ")?;
    let name = head.split(" [").next()?;
    let ok = name.ends_with("Error") && name.chars().all(|c| c.is_ascii_alphanumeric());
    ok.then_some(line)
}

fn uncaught(log: &Log) -> Option<Classification> {
    let (i, error) = log.lines.iter().enumerate().find_map(|(i, l)| {
        let e = js_error(l)?;
        let has_stack = (i + 1..(i + 12).min(log.lines.len()))
            .any(|j| log.at(j).trim_start().starts_with("at "));
        has_stack.then_some((i, e))
    })?;
    let frames: Vec<_> = (i + 1..(i + 40).min(log.lines.len()))
        .filter_map(|j| stack_frame(log.at(j)))
        .collect();
    if let Some(m) = missing_module(error) {
        return Some(missing(m, Vec::new()));
    }
    let findings: Vec<Finding> = frames
        .first()
        .map(|f| finding(f.clone(), error))
        .into_iter()
        .collect();
    let at = findings
        .first()
        .map(|f| format!("thrown at {}", show_location(f)))
        .unwrap_or_default();
    let lines = [format!("uncaught {error}"), at];
    Some(classification(FailureKind::RuntimeError, &lines, findings))
}
