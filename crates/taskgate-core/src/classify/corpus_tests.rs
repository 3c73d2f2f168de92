//! The corpus: real tool output captured from small failing projects, in
//! `fixtures/failures/<tool>-<case>.log`, each with a `<tool>-<case>.json`
//! saying what the classifier must conclude. Every case must pass, except
//! those flagged `known_miss`: the classifier gets them wrong today, they
//! keep their true expectation, and `cargo bench --bench classify` counts
//! and lists them. A known miss that starts passing fails this test until
//! its flag is dropped.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{classify, Classification, FailureKind, Outcome};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    command: String,
    exit_code: Option<i32>,
    /// The signal that killed the command, when it did not exit.
    #[serde(default)]
    signal: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    kind: FailureKind,
    summary_contains: Vec<String>,
    /// `path:line` that must be among the findings.
    #[serde(default)]
    finding: Option<String>,
    /// Wrong today, on purpose in the corpus (see the header).
    #[serde(default)]
    known_miss: bool,
}

/// `<crate>/fixtures/failures`, falling back to the main tree so the module
/// can also be tested from a scratch crate that mounts these files.
fn fixtures_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/failures");
    if here.is_dir() {
        here
    } else {
        PathBuf::from("/work/main/fixtures/failures")
    }
}

#[test]
fn corpus_of_real_tool_output_is_classified_correctly() {
    let dir = fixtures_dir();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 25,
        "expected the whole corpus in {}, found {} cases",
        dir.display(),
        cases.len()
    );

    let mut wrong = Vec::new();
    let mut known = 0;
    for json in &cases {
        let name = json.file_stem().unwrap().to_string_lossy().to_string();
        let expected: Expected = serde_json::from_slice(&std::fs::read(json).unwrap())
            .unwrap_or_else(|e| panic!("{name}.json: {e}"));
        let output =
            std::fs::read(json.with_extension("log")).unwrap_or_else(|e| panic!("{name}.log: {e}"));
        let got = classify(&Outcome {
            command: &expected.command,
            exit_code: expected.exit_code,
            signal: expected.signal,
            timed_out: expected.timed_out,
            timeout_seconds: expected.timeout_seconds,
            output: &output,
        });
        let mut problems = Vec::new();
        if got.kind != expected.kind {
            problems.push(format!("kind {} (expected {})", got.kind, expected.kind));
        }
        for fact in &expected.summary_contains {
            if !got.summary.contains(fact.as_str()) {
                problems.push(format!("summary lacks {fact:?}"));
            }
        }
        if let Some(want) = &expected.finding {
            if !got
                .findings
                .iter()
                .any(|f| &format!("{}:{}", f.path, f.line) == want)
            {
                problems.push(format!("no finding at {want}"));
            }
        }
        let lines = got.summary.lines().count();
        if !(1..=3).contains(&lines) {
            problems.push(format!("{lines} summary lines"));
        }
        println!(
            "{name}: {} | {}",
            got.kind,
            got.summary.replace('\n', " ⏎ ")
        );
        if expected.known_miss {
            known += 1;
            if problems.is_empty() {
                wrong.push(format!(
                    "{name}: flagged known_miss but classified right: drop the flag"
                ));
            }
        } else if !problems.is_empty() {
            wrong.push(format!(
                "{name}: {}\n    summary: {:?}",
                problems.join("; "),
                got.summary
            ));
        }
    }
    let right = cases.len() - wrong.len();
    println!(
        "classified {right}/{} as expected, {known} of them known misses",
        cases.len()
    );
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

/// The classification of one corpus case, as the corpus test computes it.
pub(super) fn classification_of(case: &str) -> Classification {
    let dir = fixtures_dir();
    let expected: Expected =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{case}.json"))).unwrap()).unwrap();
    let output = std::fs::read(dir.join(format!("{case}.log"))).unwrap();
    classify(&Outcome {
        command: &expected.command,
        exit_code: expected.exit_code,
        signal: expected.signal,
        timed_out: expected.timed_out,
        timeout_seconds: expected.timeout_seconds,
        output: &output,
    })
}

fn summary_of(case: &str) -> String {
    classification_of(case).summary
}

#[test]
fn summaries_of_real_failures_read_like_a_person_wrote_them() {
    insta::assert_snapshot!(summary_of("cargo-test-assert"), @r"
    test `tests::adds_small_numbers` failed at src/lib.rs:11:9
    assertion `left == right` failed (left: 4, right: 3)
    failed tests: tests::adds_small_numbers, tests::parses_config (1 passed, 2 failed)
    ");
    insta::assert_snapshot!(summary_of("clippy-deny-warnings"), @r"
    clippy: 3 lint errors (needless_range_loop, approx_constant, useless_vec)
    first at src/main.rs:4:14: the loop variable `i` is only used to index `v`
    ");
    insta::assert_snapshot!(summary_of("cargo-build-unresolved-crate"), @r"
    missing crate `serde_json`: E0432 unresolved import `serde_json` at src/main.rs:1:5
    add it to Cargo.toml (`cargo add serde_json`) or fix the path
    ");
    insta::assert_snapshot!(summary_of("pytest-assert"), @r"
    test `test_fetch.py::test_fetch_counts_items` failed at test_fetch.py:5
    assert 3 == 4
    2 failed, 1 passed (pytest)
    ");
    insta::assert_snapshot!(summary_of("jest-assert"), @r"
    test `adds 1 + 2 to equal 3` failed at sum.test.js:4:21
    expect(received).toBe(expected) // Object.is equality — Expected: 3, Received: -1
    Tests: 1 failed, 1 passed, 2 total (jest)
    ");
    insta::assert_snapshot!(summary_of("tsc-errors"), @r"
    error TS2339 at src/user.ts:7:20: Property 'nmae' does not exist on type 'User'.
    tsc: 2 errors in total
    ");
    insta::assert_snapshot!(summary_of("go-test-fail"), @r"
    test TestAverage failed
    calc_test.go:8: Average([2 4 6]) = 3, want 4
    2 failed in example.com/go-test: TestAverage, TestAverageSingle
    ");
    insta::assert_snapshot!(summary_of("make-c-compile-error"), @r"
    error at hello.c:4:20: ‘undefined_count’ undeclared (first use in this function)
    2 compile errors
    make target `hello` failed (Makefile:6)
    ");
    insta::assert_snapshot!(summary_of("shell-command-not-found"), @r"
    command not found: golangci-lint
    install it on the runner or fix the gate command
    ");
    insta::assert_snapshot!(summary_of("pytest-timeout"), @r"
    timed out after 5 s: python -m pytest -s
    last output: test_slow.py .waiting for server on :8080
    ");
}
