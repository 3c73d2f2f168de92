//! The JUnit reader on real reports (fixtures/reports/, made by
//! scripts/reports.sh) and on cut and malformed ones.

use super::*;
use crate::results::testing::{fixture, summary};

fn junit(relative: &str) -> TestResults {
    fixture(ReportFormat::Junit, relative)
}

fn parse_str(xml: &str) -> Result<TestResults, ReportError> {
    parse(xml.as_bytes(), "report.xml", &Limits::default())
}

#[test]
fn pytest_xunit1_ids_are_node_ids_with_one_based_lines() {
    insta::assert_snapshot!(summary(&junit("pytest/junit-xunit1.xml")), @r"
    JUnit XML: 2 passed, 2 failed, 1 skipped
    passed  tests/test_fetch.py::test_adds 0ms at tests/test_fetch.py:8
    FAILED  tests/test_fetch.py::test_fetch_returns_body 0ms at tests/test_fetch.py:12
      AssertionError: server said 500
      assert 500 == 200
    skipped tests/test_fetch.py::test_download: needs the network
    passed  tests/test_fetch.py::TestParser::test_parses_empty 0ms at tests/test_fetch.py:23
    FAILED  tests/test_fetch.py::TestParser::test_raises_on_garbage 0ms at tests/test_fetch.py:26
      ValueError: unexpected <token> & more
    ");
}

#[test]
fn pytest_xunit2_ids_come_from_the_classname() {
    let results = junit("pytest/junit-xunit2.xml");
    let ids: Vec<&str> = results.cases.iter().map(|c| c.id.as_str()).collect();
    insta::assert_debug_snapshot!(ids, @r#"
    [
        "tests/test_fetch.py::test_adds",
        "tests/test_fetch.py::test_fetch_returns_body",
        "tests/test_fetch.py::test_download",
        "tests/test_fetch.py::TestParser::test_parses_empty",
        "tests/test_fetch.py::TestParser::test_raises_on_garbage",
    ]
    "#);
    let Outcome::Failed { details, .. } = &results.cases[4].outcome else {
        panic!("a failure")
    };
    assert!(
        details.contains(r#"raise ValueError("unexpected <token> & more")"#),
        "{details}"
    );
}

#[test]
fn jest_junit_names_tests_by_their_describe_path() {
    insta::assert_snapshot!(summary(&junit("jest/junit.xml")), @r"
    JUnit XML: 1 passed, 1 failed, 1 skipped
    passed  sum adds two numbers 2ms in sum.test.js
    FAILED  sum adds negatives 2ms in sum.test.js
      Error: expect(received).toBe(expected) // Object.is equality
    skipped sum adds strings: 
    ");
}

#[test]
fn node_junit_reads_top_level_cases_suites_and_todo_as_skipped() {
    insta::assert_snapshot!(summary(&junit("node/junit.xml")), @r"
    JUnit XML: 2 passed, 2 failed, 2 skipped
    passed  adds 1ms
    FAILED  divides 1ms
      half is not a quarter0.5 !== 0.25
    skipped rounds: not written yet
    skipped parses later: needs a parser
    passed  strings > joins 0ms
    FAILED  strings > splits 4ms
      Expected values to be strictly deep-equal:+ actual - expected  [    'a',+   'b'-   'c'  ]
    ");
}

#[test]
fn nextest_ids_are_binary_and_test_path_with_the_panic_location() {
    insta::assert_snapshot!(summary(&junit("nextest/junit.xml")), @r"
    JUnit XML: 2 passed, 1 failed, 0 skipped
    passed  reports::tests::parses_a_number 6ms
    passed  reports::tests::parses_everything 7ms
    FAILED  reports::tests::parses_hex 391ms at src/lib.rs:16
      thread 'tests::parses_hex' (9429) panicked at src/lib.rs:16:9
    ");
}

#[test]
fn surefire_ids_are_class_and_method() {
    insta::assert_snapshot!(summary(&junit("maven/TEST-demo.CalcTest.xml")), @r"
    JUnit XML: 1 passed, 1 failed, 1 skipped
    passed  demo.CalcTest.adds 54ms
    FAILED  demo.CalcTest.subtracts 52ms
      2 - 1 expected:<3> but was:<1>
    skipped demo.CalcTest.multiplies: flaky on CI
    ");
}

#[test]
fn prove_junit_suite_level_error_is_a_case_of_its_own() {
    insta::assert_snapshot!(summary(&junit("prove/junit.xml")), @r"
    JUnit XML: 3 passed, 3 failed, 0 skipped
    passed  basic_t > 1 - adds
    FAILED  basic_t > 2 - lowercases
      not ok 2 - lowercases
    passed  basic_t > 3
    passed  basic_t > 4 - sorts unicode
    FAILED  basic_t > 5 - strings
      not ok 5 - strings
    ERRORED basic_t
      Dubious, test returned 2 (wstat 512, 0x200)
    ");
}

#[test]
fn a_file_cut_mid_element_keeps_the_cases_before_the_cut() {
    let whole = std::fs::read_to_string(crate::results::testing::path(
        "maven/TEST-demo.CalcTest.xml",
    ))
    .unwrap();
    let cut_at = whole.find("<testcase name=\"subtracts\"").unwrap() + 40;
    let results = parse_str(&whole[..cut_at]).unwrap();
    assert_eq!(results.cases.len(), 1);
    assert_eq!(results.cases[0].id.as_str(), "demo.CalcTest.adds");
    assert!(
        matches!(results.truncated, Some(Truncated::EndedEarly { .. })),
        "{:?}",
        results.truncated
    );
    // Cut between elements: the open suites say it ended early.
    let cut_at = whole.find("<testcase name=\"subtracts\"").unwrap();
    let results = parse_str(&whole[..cut_at]).unwrap();
    assert_eq!(results.cases.len(), 1);
    assert!(matches!(
        results.truncated,
        Some(Truncated::EndedEarly { .. })
    ));
}

#[test]
fn the_byte_cap_stops_reading_and_says_so() {
    let whole = std::fs::read(crate::results::testing::path("pytest/junit-xunit1.xml")).unwrap();
    let limits = Limits {
        max_bytes: 600,
        ..Limits::default()
    };
    let results = parse(&whole[..], "big.xml", &limits).unwrap();
    assert_eq!(
        results.truncated,
        Some(Truncated::ByteCap { max_bytes: 600 })
    );
    assert_eq!(results.bytes_read, 600);
    assert_eq!(results.cases.len(), 1);
}

#[test]
fn long_messages_keep_their_head_and_say_how_long_they_were() {
    let long = "x".repeat(10_000);
    let xml = format!(
        r#"<testsuite name="s"><testcase classname="C" name="t"><failure message="{long}">{long}</failure></testcase></testsuite>"#
    );
    let results = parse_str(&xml).unwrap();
    let Outcome::Failed { message, details } = &results.cases[0].outcome else {
        panic!("a failure")
    };
    assert!(message.len() < 4200 && message.ends_with("… [cut: 10000 bytes in all]"));
    assert!(details.len() < 4200 && details.ends_with("… [cut: 10000 bytes in all]"));
}

#[test]
fn the_case_cap_keeps_the_first_cases() {
    let cases = "<testcase classname=\"C\" name=\"t\"/>".repeat(10);
    let xml = format!("<testsuite name=\"s\">{cases}</testsuite>");
    let limits = Limits {
        max_cases: 3,
        ..Limits::default()
    };
    let results = parse(xml.as_bytes(), "r.xml", &limits).unwrap();
    assert_eq!(results.cases.len(), 3);
    assert_eq!(results.truncated, Some(Truncated::CaseCap { max_cases: 3 }));
}

#[test]
fn a_file_that_is_not_junit_is_refused_by_its_root() {
    let err = parse_str("<html><body>502 Bad Gateway</body></html>").unwrap_err();
    insta::assert_snapshot!(err, @"report.xml: not a JUnit report: the root element is <html>, expected <testsuites> or <testsuite>");
}

#[test]
fn mismatched_tags_are_an_error_with_the_offset() {
    let err = parse_str("<testsuite><testcase name=\"a\"></testsuite>").unwrap_err();
    insta::assert_snapshot!(err, @"report.xml: byte 30: not well-formed XML: ill-formed document: expected `</testcase>`, but `</testsuite>` was found");
}

#[test]
fn durations_in_seconds_become_milliseconds() {
    assert_eq!(seconds_to_ms("0.0015"), Some(2));
    assert_eq!(seconds_to_ms("1,234.5"), Some(1_234_500));
    assert_eq!(seconds_to_ms("-1"), None);
    assert_eq!(seconds_to_ms("NaN"), None);
    assert_eq!(seconds_to_ms("soon"), None);
}
