use super::*;
use crate::store::testing::on_both_backends;
use taskgate_core::report::{GateResult, GateTests, REPORT_VERSION};
use taskgate_core::results::{TestCase, TestId};
use taskgate_core::task::AttemptStatus;
use taskgate_core::Change;

fn repo() -> RepoName {
    RepoName::parse("acme/app").unwrap()
}

/// A test case of `id` that failed or passed, taking `ms` (shared with
/// the quarantine's store tests).
pub(in crate::store) fn test_case(id: &str, failed: bool, ms: Option<u64>) -> TestCase {
    TestCase {
        id: TestId::new(id),
        name: id.into(),
        suite: None,
        file: None,
        line: None,
        outcome: if failed {
            Outcome::Failed {
                message: "no".into(),
                details: String::new(),
            }
        } else {
            Outcome::Passed
        },
        duration_ms: ms,
    }
}

fn report(cases: Vec<TestCase>) -> RunReport {
    let tests = GateTests::new(cases, &|_| false, vec!["junit.xml".into()], vec![]);
    RunReport {
        version: REPORT_VERSION,
        task: taskgate_core::task::RunSubject::Task("data".into()),
        sha: Some("a".repeat(40)),
        gates: vec![GateResult {
            gate: "test".into(),
            passed: tests.failed == 0,
            kind: None,
            summary: None,
            commands: vec![],
            missing_artifacts: vec![],
            metric_failures: vec![],
            warnings: vec![],
            cancelled: false,
            tests: Some(tests),
        }],
        duration_ms: 10,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

fn attempt(task: &str, attempt: u32, report: Option<RunReport>) -> Change {
    Change::AttemptUpdated {
        repo: repo(),
        story: "s".into(),
        task: taskgate_core::task::RunSubject::Task(task.into()),
        attempt,
        status: AttemptStatus::Failed,
        report,
    }
}

async fn apply(store: &Store, changes: Vec<Change>) {
    crate::store::audit::tests::apply(store, changes).await;
}

fn ids(stats: &[TestStat]) -> Vec<(&str, &str, u64, u64, Option<u64>)> {
    stats
        .iter()
        .map(|s| {
            (
                s.task.as_str(),
                s.test_id.as_str(),
                s.runs,
                s.failures,
                s.mean_ms,
            )
        })
        .collect()
}

on_both_backends! {
    async fn a_storys_slowest_and_most_failing_tests_come_from_every_attempt(store: Store) {
        apply(&store, vec![
            attempt("data", 1, Some(report(vec![
                test_case("t_slow", false, Some(900)),
                test_case("t_flaky", true, Some(10)),
                test_case("t_broken", true, Some(20)),
                test_case("t_fast", false, Some(1)),
            ]))),
            attempt("data", 2, Some(report(vec![
                test_case("t_slow", false, Some(1_100)),
                test_case("t_flaky", false, Some(30)),
                test_case("t_broken", true, None),
            ]))),
            attempt("other", 1, Some(report(vec![test_case("t_broken", true, Some(5))]))),
        ]).await;
        let slow = store.slowest_tests(&repo(), &StoryId::new("s"), 3).await.unwrap();
        assert_eq!(ids(&slow), [
            ("data", "t_slow", 2, 0, Some(1_000)),
            ("data", "t_broken", 2, 2, Some(20)),
            ("data", "t_flaky", 2, 1, Some(20)),
        ]);
        let failing = store.most_failing_tests(&repo(), &StoryId::new("s"), 5).await.unwrap();
        assert_eq!(ids(&failing), [
            ("data", "t_broken", 2, 2, Some(20)),
            ("data", "t_flaky", 2, 1, Some(20)),
            ("other", "t_broken", 1, 1, Some(5)),
        ]);
        assert!(store.slowest_tests(&repo(), &StoryId::new("other-story"), 5).await.unwrap().is_empty());
    }

    async fn a_report_written_again_replaces_the_attempts_rows_and_a_status_change_keeps_them(store: Store) {
        apply(&store, vec![attempt("data", 1, Some(report(vec![test_case("a", true, Some(5))])))]).await;
        apply(&store, vec![attempt("data", 1, Some(report(vec![test_case("a", false, Some(7))])))]).await;
        // A later update without a report leaves the history as it is.
        apply(&store, vec![attempt("data", 1, None)]).await;
        assert!(store.most_failing_tests(&repo(), &StoryId::new("s"), 5).await.unwrap().is_empty());
        let slow = store.slowest_tests(&repo(), &StoryId::new("s"), 5).await.unwrap();
        assert_eq!(ids(&slow), [("data", "a", 1, 0, Some(7))]);
    }

    async fn a_test_listed_twice_in_one_gate_is_stored_once(store: Store) {
        apply(&store, vec![attempt("data", 1, Some(report(vec![
            test_case("dup", true, Some(5)),
            test_case("dup", false, Some(5)),
        ])))]).await;
        let failing = store.most_failing_tests(&repo(), &StoryId::new("s"), 5).await.unwrap();
        assert_eq!(ids(&failing), [("data", "dup", 1, 1, Some(5))]);
    }
}
