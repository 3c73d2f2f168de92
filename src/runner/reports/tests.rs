//! Real files in temporary directories: links, FIFOs, stale and fresh
//! reports.

use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use taskgate_core::results::Outcome;

const JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2" failures="1">
<testcase classname="tests.test_adapter" name="test_fetch" file="tests/test_adapter.py" line="11" time="0.012"><failure message="assert 3 == 4">tests/test_adapter.py:12: AssertionError</failure></testcase>
<testcase classname="tests.test_adapter" name="test_parse" file="tests/test_adapter.py" line="20" time="0.001"/>
</testsuite></testsuites>
"#;

fn read(dir: &Path, globs: &[&str], before: &Listing) -> Option<GateReports> {
    let after = Listing::of(dir);
    read_gate_reports(dir, globs, before, &after, &[dir.display().to_string()])
}

fn ids(found: &GateReports) -> Vec<String> {
    found.cases.iter().map(|c| c.id.to_string()).collect()
}

#[test]
fn a_report_written_in_a_usual_place_is_found_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    fs::create_dir_all(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("out/junit.xml"), JUNIT).unwrap();
    let found = read(dir.path(), &[], &before).unwrap();
    assert_eq!(found.report_files, ["out/junit.xml"]);
    assert_eq!(
        ids(&found),
        [
            "tests/test_adapter.py::test_fetch",
            "tests/test_adapter.py::test_parse"
        ]
    );
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert!(matches!(found.cases[0].outcome, Outcome::Failed { .. }));
}

#[test]
fn one_run_written_to_two_usual_places_counts_each_test_once() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    fs::write(dir.path().join("junit.xml"), JUNIT).unwrap();
    let surefire = dir.path().join("target/surefire-reports");
    fs::create_dir_all(&surefire).unwrap();
    fs::write(surefire.join("TEST-tests.test_adapter.xml"), JUNIT).unwrap();
    let found = read(dir.path(), &[], &before).unwrap();
    assert_eq!(found.report_files.len(), 2, "{:?}", found.report_files);
    assert_eq!(
        ids(&found),
        [
            "tests/test_adapter.py::test_fetch",
            "tests/test_adapter.py::test_parse"
        ],
        "each test once, not \"2 passed, 2 failed\""
    );
}

#[test]
fn no_report_means_none_so_the_log_classifier_judges_alone() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    fs::write(dir.path().join("log.txt"), "hello").unwrap();
    assert_eq!(read(dir.path(), &[], &before), None);
}

#[test]
fn a_report_that_was_there_before_the_gate_ran_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("junit.xml"), JUNIT).unwrap();
    let before = Listing::of(dir.path());
    assert_eq!(read(dir.path(), &[], &before), None, "a stale usual report");
    let named = read(dir.path(), &["junit.xml"], &before).unwrap();
    assert!(named.cases.is_empty());
    insta::assert_snapshot!(named.problems.join("\n"), @"no report file matching `junit.xml` was written by this gate's commands");
    // Rewritten by the gate: read.
    fs::remove_file(dir.path().join("junit.xml")).unwrap();
    fs::write(dir.path().join("junit.xml"), JUNIT).unwrap();
    assert_eq!(read(dir.path(), &[], &before).unwrap().cases.len(), 2);
}

#[test]
fn configured_globs_choose_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    fs::create_dir_all(dir.path().join("build/results")).unwrap();
    fs::write(dir.path().join("build/results/unit.xml"), JUNIT).unwrap();
    fs::write(dir.path().join("junit.xml"), JUNIT).unwrap();
    let found = read(dir.path(), &["build/**/*.xml"], &before).unwrap();
    assert_eq!(found.report_files, ["build/results/unit.xml"]);
}

#[test]
fn a_symlink_to_a_file_outside_the_workspace_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    symlink("/etc/passwd", dir.path().join("junit.xml")).unwrap();
    let found = read(dir.path(), &[], &before).unwrap();
    assert!(found.cases.is_empty() && found.report_files.is_empty());
    insta::assert_snapshot!(found.problems.join("\n"), @"`junit.xml` is a symbolic link; taskgate does not follow it (write the report itself)");
    let named = read(dir.path(), &["*.xml"], &before).unwrap();
    assert_eq!(named.problems, found.problems);
}

#[test]
fn a_directory_link_out_of_the_workspace_is_not_walked_nor_opened() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("junit.xml"), JUNIT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    symlink(outside.path(), dir.path().join("reports")).unwrap();
    let found = read(dir.path(), &["reports/*.xml"], &before).unwrap();
    assert!(found.cases.is_empty());
    // Opened directly, the link in the middle is caught too.
    let err = open_inside(dir.path(), "reports/junit.xml").unwrap_err();
    insta::assert_snapshot!(err, @"`reports/junit.xml` lies outside the workspace (a directory on its way is a link); not read");
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    let fifo = dir.path().join("junit.xml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let found = read(dir.path(), &[], &before).unwrap();
    insta::assert_snapshot!(found.problems.join("\n"), @"`junit.xml` is not a regular file; taskgate reads only plain report files");
    // Even if the listing missed it, opening refuses it.
    let err = open_inside(dir.path(), "junit.xml").unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn hostile_and_unreadable_reports_are_said_and_the_rest_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    fs::write(
        dir.path().join("junit-bomb.xml"),
        "<?xml version=\"1.0\"?><!DOCTYPE t [<!ENTITY a \"aaaa\">]><testsuites>&a;</testsuites>",
    )
    .unwrap();
    fs::write(dir.path().join("junit.xml"), JUNIT).unwrap();
    fs::write(dir.path().join("report.xml"), "").unwrap();
    let found = read(dir.path(), &[], &before).unwrap();
    assert_eq!(found.report_files, ["junit.xml"]);
    insta::assert_snapshot!(found.problems.join("\n"), @r"
    junit-bomb.xml: byte 54: entity declarations are refused: the DOCTYPE declares entities (`<!ENTITY`), which could expand without bound or read local files; test reports never need one (report ignored)
    report.xml: the report is empty (the test tool may have stopped before writing it; its log says why) (report ignored)
    ");
}

#[test]
fn the_walk_skips_git_and_node_modules() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    for d in [".git", "node_modules/x"] {
        fs::create_dir_all(dir.path().join(d)).unwrap();
        fs::write(dir.path().join(d).join("junit.xml"), JUNIT).unwrap();
    }
    assert_eq!(read(dir.path(), &[], &before), None);
}

#[test]
fn absolute_case_files_under_the_workspace_become_relative() {
    let dir = tempfile::tempdir().unwrap();
    let before = Listing::of(dir.path());
    let abs = dir.path().join("test/a.test.js").display().to_string();
    fs::write(
        dir.path().join("junit.xml"),
        format!(
            "<testsuites><testsuite name=\"s\"><testcase name=\"t\" classname=\"s\" file=\"{abs}\"><failure message=\"no\"/></testcase></testsuite></testsuites>"
        ),
    )
    .unwrap();
    let found = read(dir.path(), &[], &before).unwrap();
    assert_eq!(found.cases[0].file.as_deref(), Some("test/a.test.js"));
}

#[test]
fn required_tests_without_any_report_say_so() {
    let tests = gate_tests(&[TestId::new("a::b")], None, &[], &|_| false).unwrap();
    insta::assert_snapshot!(tests.problems.join("\n"), @"no test report was found, so the required tests cannot be checked: write one (e.g. `pytest --junitxml=junit.xml`) or name it with `reports:`");
    assert_eq!(
        tests.required[0].to_string(),
        "required test `a::b` did not run"
    );
    assert_eq!(gate_tests(&[], None, &[], &|_| false), None);
}

/// Gates run for real in a temporary directory, with reports.
mod gates {
    use std::time::Duration;

    use crate::runner::local::{run_gates, RunOptions};
    use crate::runner::sandbox::Isolation;
    use taskgate_core::classify::FailureKind;
    use taskgate_core::plan::{parse_plan, NoFiles, Task, TaskId};

    use super::JUNIT;

    fn task(tests: &str, extra: &str) -> Task {
        let src =
            format!("story: s\ntasks:\n  - id: t\n    acceptance:\n      tests: {tests}\n{extra}");
        let (plan, problems) = parse_plan(&src);
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        plan.task(&TaskId::new("t")).unwrap().clone()
    }

    async fn run(dir: &std::path::Path, t: &Task) -> taskgate_core::report::GateResult {
        let options = RunOptions {
            default_timeout: Duration::from_secs(10),
            rerun_failures: false,
            isolation: Isolation::Host,
            ..RunOptions::default()
        };
        let report = run_gates(dir, t, &NoFiles, options).await;
        report.gates.into_iter().last().unwrap()
    }

    fn write_junit(dir: &std::path::Path) {
        std::fs::write(dir.join("fixture.xml"), JUNIT).unwrap();
    }

    #[tokio::test]
    async fn a_failing_test_in_the_report_names_the_gate_summary_and_is_a_test_failure() {
        let dir = tempfile::tempdir().unwrap();
        write_junit(dir.path());
        // The log alone says nothing a classifier knows.
        let t = task(r#"["cp fixture.xml junit.xml; exit 3"]"#, "");
        let gate = run(dir.path(), &t).await;
        assert!(!gate.passed);
        assert_eq!(gate.kind, Some(FailureKind::TestFailure));
        insta::assert_snapshot!(gate.summary.unwrap(), @"test_fetch (tests/test_adapter.py:12): assert 3 == 4");
        let tests = gate.tests.unwrap();
        assert_eq!((tests.failed, tests.passed), (1, 1));
        assert_eq!(tests.report_files, ["junit.xml"]);
    }

    #[tokio::test]
    async fn a_command_that_exits_zero_still_fails_when_its_report_has_a_failing_test() {
        let dir = tempfile::tempdir().unwrap();
        write_junit(dir.path());
        let t = task(r#"["cp fixture.xml junit.xml"]"#, "");
        let gate = run(dir.path(), &t).await;
        assert!(!gate.passed);
        assert_eq!(gate.kind, Some(FailureKind::TestFailure));
    }

    #[tokio::test]
    async fn without_a_report_the_log_classifier_judges_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let t = task(r#"["echo 'error: no such table'; exit 2"]"#, "");
        let gate = run(dir.path(), &t).await;
        assert!(!gate.passed && gate.tests.is_none());
        let class = gate.commands[0].classification.as_ref().unwrap();
        assert_eq!(gate.kind, Some(class.kind));
        assert_eq!(gate.summary.as_deref(), Some(class.summary.as_str()));
    }

    #[tokio::test]
    async fn missing_and_skipped_required_tests_fail_a_passing_gate_as_spec_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("fixture.xml"),
            r#"<testsuites><testsuite name="pytest"><testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py"/><testcase classname="tests.test_a" name="test_later" file="tests/test_a.py"><skipped message="not yet"/></testcase></testsuite></testsuites>"#,
        )
        .unwrap();
        let t = task(
            r#"["cp fixture.xml junit.xml"]"#,
            "      required_tests: ['tests/test_a.py::test_ok', 'tests/test_a.py::test_later', 'tests/test_a.py::test_gone']\n",
        );
        let gate = run(dir.path(), &t).await;
        assert!(!gate.passed);
        assert_eq!(gate.kind, Some(FailureKind::SpecMismatch));
        insta::assert_snapshot!(gate.summary.unwrap(), @r"
        required test `tests/test_a.py::test_later` was skipped: not yet
        required test `tests/test_a.py::test_gone` did not run
        ");
    }

    #[tokio::test]
    async fn required_tests_that_all_passed_let_the_gate_pass() {
        let dir = tempfile::tempdir().unwrap();
        write_junit(dir.path());
        let t = task(
            r#"[{ cmd: "cp fixture.xml out.xml", reports: [out.xml] }]"#,
            "      required_tests: ['tests/test_adapter.py::test_parse']\n",
        );
        let mut gate = run(dir.path(), &t).await;
        // The failing test still fails it; the required one is met.
        assert_eq!(gate.tests.as_ref().unwrap().required, vec![]);
        assert_eq!(gate.kind, Some(FailureKind::TestFailure));
        std::fs::write(
            dir.path().join("fixture.xml"),
            JUNIT.replace(r#"<failure message="assert 3 == 4">tests/test_adapter.py:12: AssertionError</failure>"#, ""),
        )
        .unwrap();
        gate = run(dir.path(), &t).await;
        assert!(gate.passed, "{gate:?}");
    }
}

#[test]
fn why_a_report_file_was_not_read_is_said_in_one_sentence_each() {
    let path = || "out/junit.xml".to_owned();
    let gone = || std::io::Error::from(std::io::ErrorKind::NotFound);
    let said: Vec<String> = [
        ReportFileError::WorkspaceUnresolved(gone()),
        ReportFileError::DirectoryGone { path: path() },
        ReportFileError::OutsideWorkspace { path: path() },
        ReportFileError::Symlink { path: path() },
        ReportFileError::NotAFile { path: path() },
        ReportFileError::unreadable("out/junit.xml", gone()),
        ReportFileError::UnknownFormat { path: path() },
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    insta::assert_snapshot!(said.join("\n"), @r"
    the workspace could not be resolved: entity not found
    `out/junit.xml` could not be read: its directory is gone
    `out/junit.xml` lies outside the workspace (a directory on its way is a link); not read
    `out/junit.xml` is a symbolic link; taskgate does not follow it (write the report itself)
    `out/junit.xml` is not a regular file; taskgate reads only plain report files
    `out/junit.xml` could not be read: entity not found
    `out/junit.xml` is not a report format taskgate reads (JUnit XML, TAP, libtest JSON, go test -json)
    ");
}
