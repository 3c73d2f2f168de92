//! JavaScript test runners beside jest and `node --test`: vitest and mocha,
//! and the "no test files" refusals of jest, vitest and mocha.
//!
//! Owns: reading those runners' default reporters (not on a terminal).
//! Must not: claim jest's output (`node.rs` reads it first) or any log
//! without the runner's own markers: a vitest header or totals, mocha's
//! `N failing` line.

use super::node::{missing, missing_module, stack_frame};
use super::text::{classification, finding, parse_location, show_location, Log};
use super::{Classification, FailureKind};

pub(super) fn detect(log: &Log) -> Option<Classification> {
    no_tests(log).or_else(|| vitest(log)).or_else(|| mocha(log))
}

/// jest `No tests found, exiting with code 1`, vitest `No test files found,
/// exiting with code 1`, mocha `Error: No test files found: "test"`: the
/// runner worked and found nothing to run, as pytest's exit 5 (see
/// docs/decisions/classifier-conventions.md): a `spec_mismatch`.
fn no_tests(log: &Log) -> Option<Classification> {
    let (tool, said) = log.lines.iter().find_map(|l| {
        let t = l.trim();
        if t.starts_with("No tests found, exiting with code") {
            Some(("jest", t))
        } else if t.starts_with("No test files found, exiting with code") {
            Some(("vitest", t))
        } else {
            t.strip_prefix("Error: ")
                .filter(|r| r.starts_with("No test files found"))
                .map(|r| ("mocha", r))
        }
    })?;
    let lines = [
        format!("{tool} ran no tests: {said}"),
        "the tests the gate expects are missing, or its pattern matches none".to_string(),
    ];
    Some(classification(
        FailureKind::SpecMismatch,
        &lines,
        Vec::new(),
    ))
}

/// vitest's default reporter: ` FAIL  file > suite > test`, the error on the
/// next line, ` ❯ file:line:col` where it was thrown, and the totals
/// `Tests  1 failed | 1 passed (2)`.
fn vitest(log: &Log) -> Option<Classification> {
    let is_vitest = log.lines.iter().any(|l| {
        let t = l.trim_start();
        t.starts_with("RUN  v") || t.starts_with("Test Files  ")
    });
    if !is_vitest {
        return None;
    }
    let i = log
        .lines
        .iter()
        .position(|l| l.trim_start().starts_with("FAIL  "))?;
    let title = log.at(i).trim_start().trim_start_matches("FAIL  ").trim();
    let error = (i + 1..(i + 5).min(log.lines.len()))
        .map(|j| log.at(j).trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if let Some(m) = missing_module(error) {
        return Some(missing(m, Vec::new()));
    }
    let loc = (i + 1..(i + 30).min(log.lines.len())).find_map(|j| {
        let at = log.at(j).trim_start().strip_prefix("❯ ")?;
        parse_location(at.rsplit(' ').next()?)
    });
    let findings: Vec<_> = loc.map(|l| finding(l, error)).into_iter().collect();
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    // `file > suite > test`: the test is what a person looks for.
    let name = title.split_once(" > ").map_or(title, |(_, t)| t);
    let totals = log
        .lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("Tests  "))
        .map(|t| format!("Tests: {} (vitest)", t.trim()))
        .unwrap_or_default();
    let lines = [
        format!("test `{name}` failed{at}"),
        error.to_string(),
        totals,
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// mocha's spec reporter: `N failing`, then `1) suite` / `   test:` (the
/// title over one or more lines, the last ending in `:`), the error and its
/// stack. A file that could not be loaded is `Exception during run: …`.
fn mocha(log: &Log) -> Option<Classification> {
    if let Some(m) = log.lines.iter().find_map(|l| {
        let rest = l.trim().strip_prefix("Exception during run: ")?;
        missing_module(rest)
    }) {
        return Some(missing(m, Vec::new()));
    }
    let count = |word: &str| {
        log.lines.iter().find_map(|l| {
            let (n, rest) = l.trim().split_once(' ')?;
            (n.parse::<u32>().is_ok() && rest.starts_with(word)).then(|| l.trim())
        })
    };
    let failing = count("failing")?;
    let start = log.lines.iter().position(|l| l.trim() == failing)?;
    let first =
        (start + 1..log.lines.len()).find(|&j| log.at(j).trim_start().starts_with("1) "))?;
    let mut title = vec![log.at(first).trim_start()[3..].trim()];
    let mut j = first;
    while !title.last().is_some_and(|t| t.ends_with(':')) && j < first + 5 {
        j += 1;
        title.push(log.at(j).trim());
    }
    let name = title.join(" ");
    let name = name.trim_end_matches(':');
    let mut said = (j + 1..(j + 8).min(log.lines.len()))
        .map(|k| log.at(k).trim())
        .filter(|l| !l.is_empty());
    let mut error = said.next().unwrap_or_default().to_string();
    // `Expected values to be strictly equal:` is followed by the values.
    if error.ends_with(':') {
        if let Some(values) = said.next() {
            error = format!("{error} {values}");
        }
    }
    let error = error.as_str();
    let loc = (j + 1..(j + 40).min(log.lines.len())).find_map(|k| stack_frame(log.at(k)));
    let findings: Vec<_> = loc.map(|l| finding(l, error)).into_iter().collect();
    let at = findings
        .first()
        .map(|f| format!(" at {}", show_location(f)))
        .unwrap_or_default();
    let passing = count("passing")
        .map(|p| format!(", {}", p.split(" (").next().unwrap_or(p)))
        .unwrap_or_default();
    let lines = [
        format!("test `{name}` failed{at}"),
        error.to_string(),
        format!("{failing}{passing} (mocha)"),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

#[cfg(test)]
mod tests {
    use super::super::corpus_tests::classification_of;
    use super::super::FailureKind;

    #[test]
    fn mocha_names_the_failing_test_its_assertion_and_the_totals() {
        let c = classification_of("mocha-assert");
        assert_eq!(c.kind, FailureKind::TestFailure);
        insta::assert_snapshot!(c.summary, @r"
        test `withTax rounds to whole cents` failed at test/price.test.js:12:12
        AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: 400 !== 399
        1 failing, 1 passing (mocha)
        ");
    }

    #[test]
    fn vitest_names_the_failing_test_where_it_threw_and_the_totals() {
        let c = classification_of("vitest-thrown");
        assert_eq!(c.kind, FailureKind::TestFailure);
        insta::assert_snapshot!(c.summary, @r"
        test `parse > reads an empty document` failed at parse.test.js:4:32
        TypeError: Cannot read properties of undefined (reading 'map')
        Tests: 1 failed | 1 passed (2) (vitest)
        ");
    }

    #[test]
    fn a_runner_that_found_no_test_files_is_a_spec_mismatch() {
        for case in ["jest-no-tests", "vitest-no-tests", "mocha-no-files"] {
            assert_eq!(
                classification_of(case).kind,
                FailureKind::SpecMismatch,
                "{case}"
            );
        }
        insta::assert_snapshot!(classification_of("mocha-no-files").summary, @r#"
        mocha ran no tests: No test files found: "test"
        the tests the gate expects are missing, or its pattern matches none
        "#);
    }
}
