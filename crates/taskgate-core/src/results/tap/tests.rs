//! The TAP reader on real streams (node's reporter, Test::More, prove) and
//! on cut ones.

use super::*;
use crate::results::testing::{fixture, summary};

fn tap_str(text: &str) -> TestResults {
    parse(text.as_bytes(), "out.tap", &Limits::default()).unwrap()
}

#[test]
fn node_tap_reads_yaml_diagnostics_subtests_skip_and_todo() {
    insta::assert_snapshot!(summary(&fixture(ReportFormat::Tap, "node/math.tap")), @r"
    TAP: 2 passed, 2 failed, 2 skipped
    passed  adds 2ms
    FAILED  divides 2ms at /tmp/reports/node/math.test.mjs:8
      half is not a quarter
      
      0.5 !== 0.25
    skipped rounds: not written yet
    skipped parses later: todo: needs a parser
    passed  strings > joins 0ms
    FAILED  strings > splits 4ms at /tmp/reports/node/math.test.mjs:22
      Expected values to be strictly deep-equal:
      + actual - expected
      
        [
          'a',
      +   'b'
      -   'c'
        ]
    ");
}

#[test]
fn test_more_tap_names_unnamed_points_by_number_and_subtests_by_parent() {
    insta::assert_snapshot!(summary(&fixture(ReportFormat::Tap, "prove/basic.tap")), @r"
    TAP: 2 passed, 2 failed, 2 skipped
    passed  adds
    FAILED  lowercases
      not ok 2
    skipped #3: no network here
    skipped sorts unicode: todo: not done
    passed  strings > length
    FAILED  strings > uppercase
      not ok 2
    ");
}

#[test]
fn test_more_diagnostics_give_the_message_and_the_line() {
    let results = fixture(ReportFormat::Tap, "prove/basic-with-diagnostics.tap");
    let failed: Vec<String> = results
        .cases
        .iter()
        .filter_map(|c| match &c.outcome {
            Outcome::Failed { message, .. } => {
                Some(format!("{} at {:?}:{:?}: {message}", c.id, c.file, c.line))
            }
            _ => None,
        })
        .collect();
    insta::assert_debug_snapshot!(failed, @r#"
    [
        "lowercases at Some(\"t/basic.t\"):Some(6): got: 'abc'\nexpected: 'abd'",
        "strings > uppercase at Some(\"t/basic.t\"):Some(18): got: 'A'\nexpected: 'B'",
    ]
    "#);
}

#[test]
fn prove_verbose_output_is_read_past_its_own_lines() {
    let results = fixture(ReportFormat::Tap, "prove/prove-v.txt");
    let c = results.counts();
    assert_eq!((c.passed, c.failed, c.skipped), (2, 2, 2));
}

#[test]
fn a_stream_cut_inside_a_yaml_block_keeps_the_points_before() {
    let whole = std::fs::read_to_string(crate::results::testing::path("node/math.tap")).unwrap();
    let cut = &whole[..whole.find("failureType").unwrap() + 4];
    let results = tap_str(cut);
    assert_eq!(results.cases.len(), 2);
    assert!(matches!(
        results.truncated,
        Some(Truncated::EndedEarly { .. })
    ));
}

#[test]
fn subtests_whose_parent_never_came_keep_their_own_ids_and_say_truncated() {
    let results = tap_str("# Subtest: a\n    ok 1 - inner\n    not ok 2 - other\n");
    let ids: Vec<&str> = results.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["inner", "other"]);
    assert!(matches!(
        results.truncated,
        Some(Truncated::EndedEarly { .. })
    ));
}

#[test]
fn a_parent_that_failed_with_passing_subtests_is_a_case() {
    let results = tap_str("    1..3\n    ok 1 - a\nnot ok 1 - parent # planned 3\n1..1\n");
    insta::assert_snapshot!(summary(&results), @r"
    TAP: 1 passed, 1 failed, 0 skipped
    passed  parent # planned 3 > a
    FAILED  parent # planned 3
      not ok 1
    ");
}

#[test]
fn bail_out_is_an_errored_case() {
    let results = tap_str("TAP version 14\n1..3\nok 1\nBail out! database is down\n");
    insta::assert_snapshot!(summary(&results), @r"
    TAP: 1 passed, 1 failed, 0 skipped
    passed  #1
    ERRORED Bail out!
      database is down
    ");
}

#[test]
fn directives_are_read_case_insensitively_and_escaped_hashes_kept() {
    let results =
        tap_str("ok 1 - issue \\# 12 fixed\nnot ok 2 # skipped: no db\nok 3 - a # todo later\n");
    insta::assert_snapshot!(summary(&results), @r"
    TAP: 2 passed, 0 failed, 1 skipped
    passed  issue # 12 fixed
    skipped #2: no db
    passed  a
    ");
}
