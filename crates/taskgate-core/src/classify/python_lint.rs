//! Python static checkers: mypy, ruff (full and concise formats), pylint,
//! bandit, and the formatters black, `ruff format --check` and
//! `isort --check-only`. Test runners and tracebacks live in `python.rs`.

use super::text::{classification, clip, finding, parse_location, show_location, Log};
use super::{Classification, FailureKind, Finding};

/// Tried after the Python test runners, before tracebacks.
pub(super) fn detect(log: &Log) -> Option<Classification> {
    mypy(log)
        .or_else(|| ruff(log))
        .or_else(|| pylint(log))
        .or_else(|| bandit(log))
        .or_else(|| formatter(log))
}

/// pylint's text format: `path:line:col: E0602: message (symbol)` under
/// `************* Module x`. The first error (E, F) leads, else the first
/// message.
fn pylint(log: &Log) -> Option<Classification> {
    if !log
        .lines
        .iter()
        .any(|l| l.starts_with("************* Module "))
    {
        return None;
    }
    let mut findings = Vec::new();
    for line in &log.lines {
        let mut parts = line.splitn(4, ':');
        let (Some(p), Some(l), Some(c), Some(rest)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Some((code, msg)) = rest.trim_start().split_once(": ") else {
            continue;
        };
        let is_code = code.len() == 5
            && code.starts_with(['C', 'R', 'W', 'E', 'F', 'I'])
            && code[1..].bytes().all(|b| b.is_ascii_digit());
        let Some(loc) = parse_location(&format!("{p}:{l}:{c}")).filter(|_| is_code) else {
            continue;
        };
        findings.push(finding(loc, format!("{code} {msg}")));
    }
    let n = findings.len();
    let first = findings
        .iter()
        .find(|f| f.message.starts_with(['E', 'F']))
        .or(findings.first())?;
    let errors = findings
        .iter()
        .filter(|f| f.message.starts_with(['E', 'F']))
        .count();
    let lines = [
        format!(
            "pylint: {n} message{} ({errors} error{})",
            if n == 1 { "" } else { "s" },
            if errors == 1 { "" } else { "s" }
        ),
        format!("first at {}: {}", show_location(first), first.message),
    ];
    Some(classification(FailureKind::LintFailure, &lines, findings))
}

/// bandit's text report: `>> Issue: [B602:name] message`, its `Severity:`
/// and `Location: ./path:line:col`. The most severe issue leads.
fn bandit(log: &Log) -> Option<Classification> {
    let mut issues = Vec::new();
    for (i, line) in log.lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix(">> Issue: [") else {
            continue;
        };
        let Some((id, msg)) = rest.split_once("] ") else {
            continue;
        };
        let code = id.split(':').next().unwrap_or(id);
        let mut severity = "";
        let mut loc = None;
        for j in i + 1..(i + 6).min(log.lines.len()) {
            let l = log.at(j).trim();
            if let Some(s) = l.strip_prefix("Severity: ") {
                severity = s.split_whitespace().next().unwrap_or("");
            } else if let Some(at) = l.strip_prefix("Location: ") {
                loc = parse_location(at);
            }
        }
        let rank = ["High", "Medium", "Low"]
            .iter()
            .position(|s| *s == severity)
            .unwrap_or(3);
        if let Some(loc) = loc {
            issues.push((rank, finding(loc, format!("{code} ({severity}) {msg}"))));
        }
    }
    let n = issues.len();
    let (_, first) = issues.iter().min_by_key(|(rank, _)| *rank)?;
    let lines = [
        format!(
            "bandit: {n} security issue{}",
            if n == 1 { "" } else { "s" }
        ),
        format!("most severe at {}: {}", show_location(first), first.message),
    ];
    let findings = issues.into_iter().map(|(_, f)| f).collect();
    Some(classification(FailureKind::LintFailure, &lines, findings))
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
        // A syntax error has no code: `invalid-syntax: msg` then ` --> path:l:c`.
        let full = rule_code(line)
            .or_else(|| {
                line.starts_with("invalid-syntax:")
                    .then_some("invalid-syntax")
            })
            .and_then(|code| Some((code, line.strip_prefix(code)?)));
        let hit = if let Some((code, msg)) = full {
            let msg = msg
                .trim_start_matches(':')
                .trim_start()
                .trim_start_matches("[*]")
                .trim();
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

/// black, `ruff format --check` and `isort --check-only`: files that would
/// be reformatted.
fn formatter(log: &Log) -> Option<Classification> {
    let mut files = Vec::new();
    let mut tool = "black";
    for (i, line) in log.lines.iter().enumerate() {
        if let Some(p) = line.strip_prefix("would reformat ") {
            files.push(p.trim().to_string());
        } else if let Some(p) = line.strip_prefix("Would reformat: ") {
            files.push(p.trim().to_string());
            tool = "ruff format";
        } else if line == "unformatted: File would be reformatted" {
            // ruff 0.15+: the file is on the next line, ` --> path:1:1`.
            let at = log.at(i + 1).trim_start().strip_prefix("--> ");
            if let Some((path, _)) = at.and_then(|a| a.split_once(':')) {
                files.push(path.to_string());
                tool = "ruff format";
            }
        } else if let Some(p) = line
            .strip_prefix("ERROR: ")
            .and_then(|l| l.strip_suffix(" Imports are incorrectly sorted and/or formatted."))
        {
            files.push(p.trim().to_string());
            tool = "isort";
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

#[cfg(test)]
mod tests {
    use super::super::corpus_tests::classification_of;
    use super::super::FailureKind;

    #[test]
    fn isort_check_names_the_unsorted_file_and_is_a_lint_failure() {
        let c = classification_of("isort-check");
        assert_eq!(c.kind, FailureKind::LintFailure);
        insta::assert_snapshot!(c.summary, @r"
        isort: 1 file would be reformatted
        /tmp/taskgate-failures/cases/isort-check/imports.py
        ");
    }

    #[test]
    fn pylint_leads_with_its_first_error_and_bandit_with_its_most_severe_issue() {
        let c = classification_of("pylint-errors");
        assert_eq!(c.kind, FailureKind::LintFailure);
        insta::assert_snapshot!(c.summary, @r"
        pylint: 10 messages (1 error)
        first at greet.py:7:24: E0602 Undefined variable 'nme' (undefined-variable)
        ");
        let c = classification_of("bandit-findings");
        assert_eq!(c.kind, FailureKind::LintFailure);
        insta::assert_snapshot!(c.summary, @r"
        bandit: 3 security issues
        most severe at deploy.py:5:11: B602 (High) subprocess call with shell=True identified, security issue.
        ");
    }

    #[test]
    fn ruff_format_and_syntax_errors_in_ruffs_full_format_name_the_file() {
        insta::assert_snapshot!(classification_of("ruff-format-check").summary, @r"
        ruff format: 1 file would be reformatted
        fmt_me.py
        ");
        insta::assert_snapshot!(classification_of("ruff-syntax-error").summary, @r"
        ruff: 2 errors (invalid-syntax ×2)
        first broken.py:1:7: invalid-syntax Expected a parameter or the end of the parameter list
        ");
    }
}
