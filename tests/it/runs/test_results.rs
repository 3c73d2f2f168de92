//! Per-test evidence end to end: a gate's command writes a real JUnit
//! report in the checked-out workspace; the local runner reads it, and the
//! check run on the fake GitHub counts and names the tests.

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;

fn plan() -> String {
    Plan::story("Checked work")
        .task(Task::check().required_tests(&["tests/test_adapter.py::test_parse"]))
        .yaml()
}

/// What pytest `--junitxml` writes (pytest 8, trimmed to two tests and a
/// skip): one failing, one passing.
fn junit(parse: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3" time="0.05">
<testcase classname="tests.test_adapter" name="test_fetch" file="tests/test_adapter.py" line="11" time="0.012"><failure message="assert 3 == 4">tests/test_adapter.py:12: in test_fetch
    assert len(rows) == 4
E   assert 3 == 4</failure></testcase>
{parse}
<testcase classname="tests.test_adapter" name="test_later" file="tests/test_adapter.py" line="30" time="0.000"><skipped type="pytest.skip" message="not yet">tests/test_adapter.py:30: not yet</skipped></testcase>
</testsuite></testsuites>
"#
    )
}

const PARSE_PASSED: &str = r#"<testcase classname="tests.test_adapter" name="test_parse" file="tests/test_adapter.py" line="20" time="0.001"/>"#;
const PARSE_SKIPPED: &str = r#"<testcase classname="tests.test_adapter" name="test_parse" file="tests/test_adapter.py" line="20" time="0.000"><skipped message="flaky network">skip</skipped></testcase>"#;

async fn story() -> Story {
    Story::of(&plan()).runners(1).start().await
}

fn test_check(s: &Story, sha: &str) -> fakehub::CheckRun {
    s.checks(sha)
        .into_iter()
        .find(|c| c.name == "taskgate/test")
        .expect("a taskgate/test check run")
}

#[tokio::test]
async fn a_junit_report_puts_test_counts_in_the_title_and_failing_tests_in_the_summary() {
    let s = story().await;
    let sha = s
        .push(
            &[
                ("report.xml.in", &junit(PARSE_PASSED)),
                (
                    "check.sh",
                    "cp report.xml.in junit.xml; echo 'tests ran'; exit 1\n",
                ),
            ],
            "a failing test",
        )
        .await;
    s.completed(&sha, 1).await;
    let run = test_check(&s, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    insta::assert_snapshot!(run.title.clone().unwrap(), @"1 failed, 1 passed, 1 skipped — test_failure");
    let summary = run.summary.clone().unwrap();
    assert!(
        summary.contains("test_fetch (tests/test_adapter.py:12): assert 3 == 4"),
        "{summary}"
    );
    assert!(
        summary.contains("- `tests/test_adapter.py::test_fetch` (12 ms, `tests/test_adapter.py:12`): assert 3 == 4"),
        "{summary}"
    );
    let paths: Vec<(&str, u64)> = run
        .annotations
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap(),
                a["start_line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(paths, [("tests/test_adapter.py", 12)]);
    // The attempt's tests are in the story's history.
    let repo = taskgate_core::ids::RepoName::parse(crate::support::REPO).unwrap();
    let failing = s
        .app
        .store()
        .most_failing_tests(&repo, &taskgate_core::ids::StoryId::new("file:checks"), 5)
        .await
        .unwrap();
    let ids: Vec<(&str, &str, u64)> = failing
        .iter()
        .map(|t| (t.task.as_str(), t.test_id.as_str(), t.failures))
        .collect();
    assert_eq!(ids, [("check", "tests/test_adapter.py::test_fetch", 1)]);
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_skipped_or_missing_required_test_fails_the_gate_as_spec_mismatch() {
    let s = story().await;
    let passing = |parse: &str| {
        junit(parse).replace(
        "<failure message=\"assert 3 == 4\">tests/test_adapter.py:12: in test_fetch\n    assert len(rows) == 4\nE   assert 3 == 4</failure>",
        "",
    )
    };
    let skipped = s
        .push(
            &[
                ("report.xml.in", &passing(PARSE_SKIPPED)),
                ("check.sh", "cp report.xml.in junit.xml\n"),
            ],
            "the required test skipped",
        )
        .await;
    s.completed(&skipped, 1).await;
    let run = test_check(&s, &skipped);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    insta::assert_snapshot!(run.title.clone().unwrap(), @"1 passed, 2 skipped, 1 acceptance check failed — spec_mismatch");
    let summary = run.summary.clone().unwrap();
    assert!(
        summary.contains(
            "required test `tests/test_adapter.py::test_parse` was skipped: flaky network"
        ),
        "{summary}"
    );

    let missing = s
        .push(&[("report.xml.in", &passing(""))], "the required test gone")
        .await;
    s.completed(&missing, 1).await;
    let summary = test_check(&s, &missing).summary.unwrap();
    assert!(
        summary.contains("required test `tests/test_adapter.py::test_parse` did not run"),
        "{summary}"
    );

    let green = s
        .push(&[("report.xml.in", &passing(PARSE_PASSED))], "all there")
        .await;
    s.completed(&green, 1).await;
    assert_eq!(
        test_check(&s, &green).conclusion.as_deref(),
        Some("success")
    );
}

#[tokio::test]
async fn a_report_that_links_outside_the_workspace_is_refused() {
    let s = story().await;
    let sha = s
        .push(
            &[("check.sh", "ln -s /etc/passwd junit.xml; exit 0\n")],
            "a hostile report",
        )
        .await;
    s.completed(&sha, 1).await;
    let run = test_check(&s, &sha);
    // The required test cannot be shown to have run.
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    let summary = run.summary.clone().unwrap();
    assert!(
        summary.contains("`junit.xml` is a symbolic link; taskgate does not follow it"),
        "{summary}"
    );
    assert!(
        !summary.contains("root:"),
        "nothing of /etc/passwd is shown"
    );
    assert!(
        summary.contains("required test `tests/test_adapter.py::test_parse` did not run"),
        "{summary}"
    );
}
