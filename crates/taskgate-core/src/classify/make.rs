//! make and the C/C++ toolchain it usually drives: gcc/clang diagnostics,
//! missing headers, linker errors, missing targets and failed recipes.
//! Runs after the language families, so `make test` running pytest is
//! classified by the pytest parser, not here. A recipe that failed with
//! nothing recognised is a `test_failure`, like any plain command.

use super::text::{between, classification, finding, is_meaningful, parse_location, show_location};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let mut findings: Vec<Finding> = Vec::new();
    let mut missing_header = None;
    let mut link_error = None;
    let mut recipe: Option<(usize, String)> = None;
    let mut no_rule = None;
    for (i, line) in log.lines.iter().enumerate() {
        if let Some((loc, msg)) = line
            .split_once(": fatal error: ")
            .or_else(|| line.split_once(": error: "))
        {
            if let Some(loc) = parse_location(loc) {
                if msg.ends_with(": No such file or directory") && line.contains("fatal error") {
                    missing_header.get_or_insert_with(|| {
                        msg.trim_end_matches(": No such file or directory")
                            .to_string()
                    });
                }
                findings.push(finding(loc, msg));
            }
        } else if line.contains("undefined reference to ") {
            link_error.get_or_insert_with(|| line.trim().to_string());
        } else if line.starts_with("make") && line.contains(": *** ") {
            let what = line
                .split_once(": *** ")
                .map(|(_, w)| w)
                .unwrap_or_default();
            if what.starts_with("No rule to make target") {
                no_rule.get_or_insert_with(|| what.trim_end_matches("Stop.").trim().to_string());
            } else if recipe.is_none() {
                recipe = Some((i, what.to_string()));
            }
        }
    }
    let target = recipe
        .as_ref()
        .map(|(_, what)| match between(what, '[', ']') {
            Some(inner) => match inner.rsplit_once(": ") {
                Some((at, t)) => format!("make target `{t}` failed ({at})"),
                None => format!("make target `{inner}` failed"),
            },
            None => format!("make: {what}"),
        });
    if let Some(header) = missing_header {
        let lines = [
            format!("missing header {header}: install its development package"),
            target.unwrap_or_default(),
        ];
        return Some(classification(
            FailureKind::MissingDependency,
            &lines,
            findings,
        ));
    }
    if let Some(first) = findings.first() {
        let n = findings.len();
        let lines = [
            format!("error at {}: {}", show_location(first), first.message),
            format!("{n} compile error{}", if n == 1 { "" } else { "s" }),
            target.unwrap_or_default(),
        ];
        return Some(classification(FailureKind::BuildFailure, &lines, findings));
    }
    if let Some(link) = link_error {
        let lines = [format!("link error: {link}"), target.unwrap_or_default()];
        return Some(classification(FailureKind::BuildFailure, &lines, findings));
    }
    if let Some(rule) = no_rule {
        let kind = if rule.contains(", needed by") {
            FailureKind::BuildFailure
        } else {
            FailureKind::ToolingError
        };
        return Some(classification(kind, &[format!("make: {rule}")], findings));
    }
    // A recipe that exited non-zero with nothing recognised said "no", as
    // a plain command does (see `shell::fallback`).
    let (i, what) = recipe?;
    let status = what
        .rsplit_once("] Error ")
        .map(|(_, n)| format!(": its recipe exited with status {}", n.trim()))
        .unwrap_or_default();
    let before = log.lines[..i]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| is_meaningful(l) && !l.starts_with("make"));
    let lines = [
        format!("{}{status}", target.unwrap_or_default()),
        before
            .map(|b| format!("last output: {b}"))
            .unwrap_or_default(),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}
