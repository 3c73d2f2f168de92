//! The conventions of `docs/decisions/classifier-conventions.md`, each
//! proved on a real log from `fixtures/failures/` (made by
//! `scripts/failures.sh`): the kind, and the summary a person reads.

use super::corpus_tests::classification_of;
use super::FailureKind;

fn kind_and_summary(case: &str) -> (FailureKind, String) {
    let c = classification_of(case);
    (c.kind, c.summary)
}

#[test]
fn a_plain_command_saying_no_is_a_test_failure() {
    let (kind, summary) = kind_and_summary("shell-grep-no-match");
    assert_eq!(kind, FailureKind::TestFailure);
    insta::assert_snapshot!(summary, @"`grep -q hello greeting.txt` exited with status 1 (no line matched) and printed nothing");
    let (kind, summary) = kind_and_summary("shell-diff-differs");
    assert_eq!(kind, FailureKind::TestFailure);
    insta::assert_snapshot!(summary, @r"
    `diff expected.txt actual.txt` exited with status 1 (the files differ)
    last output: > gamma
    ");
    let (kind, summary) = kind_and_summary("make-recipe-grep");
    assert_eq!(kind, FailureKind::TestFailure);
    insta::assert_snapshot!(summary, @r"
    make target `test` failed (Makefile:2): its recipe exited with status 1
    last output: grep -q hello greeting.txt
    ");
}

#[test]
fn a_file_the_command_reads_that_is_absent_is_a_missing_artifact() {
    let (kind, summary) = kind_and_summary("shell-grep-missing-file");
    assert_eq!(kind, FailureKind::SpecMismatch);
    insta::assert_snapshot!(summary, @r"
    missing artifact: greeting.txt
    `grep -q hello greeting.txt` expected it to exist
    ");
}

#[test]
fn crashes_name_their_signal_whoever_reports_them() {
    let (kind, summary) = kind_and_summary("c-abort-assert");
    assert_eq!(kind, FailureKind::RuntimeError);
    insta::assert_snapshot!(summary, @r"
    `./abort` crashed with SIGABRT (aborted) (exit status 134 = 128+6)
    last output: abort: abort.c:3: main: Assertion `x == 2' failed.
    ");
    let (kind, summary) = kind_and_summary("shell-kill-segv");
    assert_eq!(kind, FailureKind::RuntimeError);
    insta::assert_snapshot!(summary, @r"
    `echo starting; kill -SEGV $$` crashed with SIGSEGV (segmentation fault) (no exit status: the signal ended it)
    last output: starting
    ");
    let (kind, summary) = kind_and_summary("make-segfault");
    assert_eq!(kind, FailureKind::RuntimeError);
    insta::assert_snapshot!(summary, @r"
    `make run` crashed with SIGSEGV (segmentation fault)
    reported as: make: *** [Makefile:2: run] Segmentation fault
    last output: starting
    ");
    let (kind, summary) = kind_and_summary("cargo-test-segfault");
    assert_eq!(kind, FailureKind::RuntimeError);
    assert!(summary.contains("(signal: 11, SIGSEGV"), "{summary}");
}

#[test]
fn a_timeout_is_told_apart_from_a_crash_and_from_timeout_failing() {
    let (kind, summary) = kind_and_summary("timeout-term");
    assert_eq!(kind, FailureKind::Timeout);
    insta::assert_snapshot!(summary, @"timed out after 1 s: `timeout 1 sleep 5` (coreutils `timeout` exits 124)");
    let (kind, summary) = kind_and_summary("timeout-kill-after");
    assert_eq!(kind, FailureKind::Timeout);
    insta::assert_snapshot!(summary, @r#"
    timed out after 1 s: `timeout -k 1 1 sh -c 'trap "" TERM; echo waiting; sleep 5'` (`timeout` ended it with SIGKILL, exit 137)
    last output: waiting
    "#);
    assert_eq!(
        kind_and_summary("timeout-invalid-duration").0,
        FailureKind::ToolingError
    );
    let (kind, summary) = kind_and_summary("timeout-command-not-found");
    assert_eq!(kind, FailureKind::ToolingError);
    assert!(
        summary.starts_with("command not found: golangci-lint"),
        "{summary}"
    );
}

#[test]
fn pytest_exit_codes_are_read_as_documented() {
    let (kind, summary) = kind_and_summary("pytest-no-tests");
    assert_eq!(kind, FailureKind::SpecMismatch);
    insta::assert_snapshot!(summary, @r"
    pytest ran no tests (exit 5)
    write the tests the acceptance expects, or fix the selection in `pytest`
    ");
    let (kind, summary) = kind_and_summary("pytest-usage-unknown-option");
    assert_eq!(kind, FailureKind::ToolingError);
    insta::assert_snapshot!(summary, @r"
    pytest usage error (exit 4): unrecognized arguments: --cov=app
    install the plugin that adds the option (pytest-cov adds --cov) or fix the gate command
    ");
    let (kind, summary) = kind_and_summary("pytest-file-not-found");
    assert_eq!(kind, FailureKind::SpecMismatch);
    insta::assert_snapshot!(summary, @r"
    missing test file or directory: tests/test_api.py (pytest exit 4)
    `python -m pytest tests/test_api.py` names tests that do not exist
    ");
    let (kind, summary) = kind_and_summary("pytest-internal-error");
    assert_eq!(kind, FailureKind::ToolingError);
    insta::assert_snapshot!(summary, @r"
    pytest internal error (exit 3): RuntimeError: plugin state is corrupt
    raised by pytest, a plugin or a conftest hook (see INTERNALERROR in the log)
    ");
}

#[test]
fn collection_errors_are_a_missing_dependency_or_a_build_failure() {
    let (kind, summary) = kind_and_summary("pytest-cannot-import-name");
    assert_eq!(kind, FailureKind::MissingDependency);
    insta::assert_snapshot!(summary, @r"
    cannot import `parse` from `app` (ImportError while collecting, at test_app.py:1)
    add `parse` to `app`, or install the package that provides it
    ");
    assert_eq!(
        kind_and_summary("pytest-conftest-import").0,
        FailureKind::MissingDependency
    );
    let (kind, summary) = kind_and_summary("pytest-collection-syntax-error");
    assert_eq!(kind, FailureKind::BuildFailure);
    insta::assert_snapshot!(summary, @r"
    Python syntax error in test_total.py:1 (pytest could not collect it)
    SyntaxError: invalid syntax
    ");
}

#[test]
fn package_managers_missing_a_script_are_tooling_errors_naming_it() {
    for (case, tool) in [
        ("npm-missing-script", "npm"),
        ("npm-run-missing-script", "npm"),
        ("yarn-missing-script", "yarn"),
        ("pnpm-missing-script", "pnpm"),
    ] {
        let (kind, summary) = kind_and_summary(case);
        assert_eq!(kind, FailureKind::ToolingError, "{case}");
        assert!(
            summary.contains(&format!("in package.json ({tool})")),
            "{case}: {summary}"
        );
    }
    insta::assert_snapshot!(kind_and_summary("yarn-missing-script").1, @r#"
    missing script `lint` in package.json (yarn)
    add it to package.json's "scripts" or fix the gate command `yarn run lint`
    "#);
    let (kind, summary) = kind_and_summary("npx-no-executable");
    assert_eq!(kind, FailureKind::ToolingError);
    insta::assert_snapshot!(summary, @r"
    npx would have to download vitest: it is not a dependency of the project
    add it to the project's devDependencies or fix the gate command `npx --no-install vitest run`
    ");
}
