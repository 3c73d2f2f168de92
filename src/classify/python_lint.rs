//! Python static checkers: mypy, ruff (full and concise formats), and the
//! formatters black and `ruff format --check`. Test runners and tracebacks
//! live in `python.rs`.

use super::text::{classification, clip, finding, parse_location, show_location, Log};
use super::{Classification, FailureKind, Finding};

/// Tried after the Python test runners, before tracebacks.
pub(super) fn detect(log: &Log) -> Option<Classification> {
    mypy(log).or_else(|| ruff(log)).or_else(|| formatter(log))
}

fn mypy(log: &Log) -> Option<Classification> {
    let mut findings = Vec::new();
    for line in &log.lines {
        let Some((loc, msg)) = line.split_once(": error: ") else {
            continue;
        };
        let Some(loc) =
            parse_location(loc).filter(|l| l.0.ends_with(".py") || l.0.ends_with(".pyi"))
        else {
            continue;
        };
        findings.push(finding(loc, msg.replace("  [", " [")));
    }
    let first = findings.first()?;
    let total = log
        .lines
        .iter()
        .find_map(|l| l.strip_prefix("Found ").filter(|r| r.contains(" error")))
        .map(|r| r.split(" (").next().unwrap_or(r).to_string())
        .unwrap_or_else(|| format!("{} errors", findings.len()));
    let lines = [
        format!("mypy: {total}"),
        format!("first {}:{}: {}", first.path, first.line, first.message),
    ];
    Some(classification(FailureKind::LintFailure, &lines, findings))
}

/// A ruff rule code: capital letters then digits (`F401`, `UP035`).
fn rule_code(s: &str) -> Option<&str> {
    let code = s.split_whitespace().next()?;
    let letters = code.trim_end_matches(|c: char| c.is_ascii_digit());
    let ok = !letters.is_empty()
        && letters.len() < code.len()
        && letters.chars().all(|c| c.is_ascii_uppercase());
    ok.then_some(code)
}

fn ruff(log: &Log) -> Option<Classification> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut codes: Vec<(String, usize)> = Vec::new();
    let mut code_index: std::collections::HashMap<String, usize> = Default::default();
    for (i, line) in log.lines.iter().enumerate() {
        // Full format: `F401 [*] msg` then ` --> path:l:c`; concise: `path:l:c: F401 msg`.
        let full = rule_code(line).and_then(|code| Some((code, line.strip_prefix(code)?)));
        let hit = if let Some((code, msg)) = full {
            let msg = msg.trim_start().trim_start_matches("[*]").trim();
            log.at(i + 1)
                .trim_start()
                .strip_prefix("--> ")
                .and_then(parse_location)
                .map(|loc| (loc, code, msg))
        } else {
            let mut parts = line.splitn(4, ':');
            let (p, l, c, rest) = (parts.next(), parts.next(), parts.next(), parts.next());
            match (
                p,
                l.and_then(|l| l.parse().ok()),
                c.and_then(|c| c.parse().ok()),
                rest,
            ) {
                (Some(p), Some(l), Some(c), Some(rest))
                    if p.ends_with(".py") || p.ends_with(".pyi") =>
                {
                    let rest = rest.trim_start();
                    let code = rule_code(rest)?;
                    let msg = rest
                        .strip_prefix(code)?
                        .trim_start()
                        .trim_start_matches("[*]")
                        .trim();
                    Some(((p.to_string(), l, Some(c)), code, msg))
                }
                _ => None,
            }
        };
        let Some((loc, code, msg)) = hit else {
            continue;
        };
        match code_index.get(code) {
            Some(&at) => codes[at].1 += 1,
            None => {
                code_index.insert(code.to_string(), codes.len());
                codes.push((code.to_string(), 1));
            }
        }
        findings.push(finding(loc, format!("{code} {msg}")));
    }
    let first = findings.first()?;
    let rules: Vec<String> = codes
        .iter()
        .map(|(c, n)| {
            if *n > 1 {
                format!("{c} ×{n}")
            } else {
                c.clone()
            }
        })
        .collect();
    let n = findings.len();
    let lines = [
        format!(
            "ruff: {n} error{} ({})",
            if n == 1 { "" } else { "s" },
            rules.join(", ")
        ),
        format!("first {}: {}", show_location(first), first.message),
    ];
    Some(classification(FailureKind::LintFailure, &lines, findings))
}

/// black and `ruff format --check`: files that would be reformatted.
fn formatter(log: &Log) -> Option<Classification> {
    let mut files = Vec::new();
    let mut tool = "black";
    for line in &log.lines {
        if let Some(p) = line.strip_prefix("would reformat ") {
            files.push(p.trim().to_string());
        } else if let Some(p) = line.strip_prefix("Would reformat: ") {
            files.push(p.trim().to_string());
            tool = "ruff format";
        }
    }
    if files.is_empty() {
        return None;
    }
    let n = files.len();
    let lines = [
        format!(
            "{tool}: {n} file{} would be reformatted",
            if n == 1 { "" } else { "s" }
        ),
        clip(&files.join(", "), 200),
    ];
    Some(classification(FailureKind::LintFailure, &lines, Vec::new()))
}
