//! Memory checkers' reports: AddressSanitizer and its siblings
//! (`==PID==ERROR: AddressSanitizer: heap-buffer-overflow …`) and valgrind's
//! memcheck (`==PID== Invalid read of size 4`). Either is the program's own
//! memory bug, a `runtime_error`, whatever status the checker chose (ASan
//! exits 1, valgrind its `--error-exitcode`).
//!
//! Owns: recognising those two report shapes and the first frame in the
//! project. Must not: read ordinary output that merely mentions them.

use super::text::{classification, finding, parse_location, show_location, Loc};
use super::{Classification, Ctx, FailureKind};

/// valgrind memcheck's error headlines (after `==PID== `).
const MEMCHECK: &[&str] = &[
    "Invalid read of size",
    "Invalid write of size",
    "Invalid free()",
    "Mismatched free() / delete / delete []",
    "Conditional jump or move depends on uninitialised value",
    "Use of uninitialised value of size",
    "Syscall param",
    "Source and destination overlap",
];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let (i, what, tool) = log.lines.iter().enumerate().find_map(|(i, l)| {
        let body = after_pid(l)?;
        if let Some((tool, what)) = body
            .strip_prefix("ERROR: ")
            .and_then(|r| r.split_once(": "))
            .filter(|(tool, _)| tool.ends_with("Sanitizer"))
        {
            let what = what.split(" on address").next().unwrap_or(what);
            return Some((i, what.to_string(), tool.to_string()));
        }
        MEMCHECK
            .iter()
            .any(|m| body.starts_with(m))
            .then(|| (i, body.to_string(), "valgrind".to_string()))
    })?;
    let loc = (i + 1..(i + 30).min(log.lines.len())).find_map(|j| frame(log.at(j)));
    let findings: Vec<_> = loc
        .map(|l| finding(l, format!("{tool}: {what}")))
        .into_iter()
        .collect();
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    let lines = [
        format!("{tool}: {what}{at}"),
        format!("in `{}`", ctx.command.trim()),
    ];
    Some(classification(FailureKind::RuntimeError, &lines, findings))
}

/// The text after a `==1234==` prefix.
fn after_pid(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("==")?;
    let (pid, body) = rest.split_once("==")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| body.trim())
}

/// A stack frame in the project's own code: ASan's `#0 0x… in main
/// /src/a.c:5` or valgrind's `at 0x…: main (a.c:8)`. Frames in system
/// libraries have no `file:line` of the project and are skipped.
fn frame(line: &str) -> Option<Loc> {
    let t = after_pid(line).unwrap_or(line).trim();
    let loc = if let Some(inner) = t.strip_prefix("at ").or_else(|| t.strip_prefix("by ")) {
        inner.rsplit_once('(')?.1.trim_end_matches(')')
    } else if t.starts_with('#') {
        t.rsplit(' ').next()?
    } else {
        return None;
    };
    parse_location(loc).filter(|l| !l.0.starts_with("/usr/") && !l.0.starts_with("../"))
}

#[cfg(test)]
mod tests {
    use super::super::corpus_tests::classification_of;
    use super::super::FailureKind;

    #[test]
    fn address_sanitizer_and_valgrind_reports_are_runtime_errors_naming_the_line() {
        let asan = classification_of("asan-heap-overflow");
        assert_eq!(asan.kind, FailureKind::RuntimeError);
        insta::assert_snapshot!(asan.summary, @r"
        AddressSanitizer: heap-buffer-overflow at /tmp/taskgate-failures/cases/asan-heap-overflow/overflow.c:5
        in `./overflow`
        ");
        let valgrind = classification_of("valgrind-invalid-read");
        assert_eq!(valgrind.kind, FailureKind::RuntimeError);
        insta::assert_snapshot!(valgrind.summary, @r"
        valgrind: Invalid read of size 4 at uaf.c:8
        in `valgrind -q --error-exitcode=1 ./uaf`
        ");
    }
}
