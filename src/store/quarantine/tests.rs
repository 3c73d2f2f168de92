use super::*;
use crate::store::testing::on_both_backends;
use taskgate_core::flaky::EventKind;
use taskgate_core::report::{GateResult, GateTests, RunReport, REPORT_VERSION};
use taskgate_core::results::TestCase;
use taskgate_core::task::AttemptStatus;

fn repo(name: &str) -> RepoName {
    RepoName::parse(name).unwrap()
}

fn event(attempt: u32) -> FlakyEvent {
    FlakyEvent {
        task: "s/check".into(),
        sha: "a".repeat(40),
        attempt,
        kind: EventKind::Retry,
    }
}

fn quarantine(test: &str, since_s: i64, until_s: i64) -> Quarantine {
    Quarantine {
        test_id: TestId::new(test),
        since_s,
        until_s,
        events: vec![event(2), event(4)],
        lifted_by: None,
    }
}

async fn apply(store: &Store, changes: Vec<Change>) {
    crate::store::audit::tests::apply(store, changes).await;
}

fn tcase(id: &str, failed: bool) -> TestCase {
    crate::store::tests_history::tests::test_case(id, failed, None)
}

fn attempt(attempt: u32, cases: Vec<TestCase>) -> Change {
    let tests = GateTests::new(cases, &|_| false, vec![], vec![]);
    Change::AttemptUpdated {
        repo: repo("acme/a"),
        story: "s".into(),
        task: taskgate_core::task::RunSubject::Task("check".into()),
        attempt,
        status: AttemptStatus::Failed,
        report: Some(RunReport {
            version: REPORT_VERSION,
            task: taskgate_core::task::RunSubject::Task("check".into()),
            sha: Some("b".repeat(40)),
            gates: vec![GateResult {
                gate: "test".into(),
                passed: false,
                kind: None,
                summary: None,
                commands: vec![],
                missing_artifacts: vec![],
                metric_failures: vec![],
                warnings: vec![],
                cancelled: false,
                tests: Some(tests),
            }],
            duration_ms: 1,
            cancelled: false,
            runner_fault: None,
            tested: None,
        }),
    }
}

on_both_backends! {
    async fn a_quarantine_is_kept_per_repository_lifted_once_and_never_deleted(store: Store) {
        let (a, b) = (repo("acme/a"), repo("acme/b"));
        assert!(store.quarantines(&a).await.unwrap().is_empty());
        let q = quarantine("tests/x.py::test_y", 100, 1_000);
        apply(&store, vec![Change::QuarantineStarted { repo: a.clone(), quarantine: q.clone() }]).await;
        // The same start again (a redelivery) adds nothing.
        apply(&store, vec![Change::QuarantineStarted { repo: a.clone(), quarantine: q.clone() }]).await;
        assert_eq!(store.quarantines(&a).await.unwrap(), vec![q.clone()]);
        assert!(store.quarantines(&b).await.unwrap().is_empty(), "per repository");
        assert_eq!(store.quarantined_tests(&a, 500).await.unwrap(), vec![q.test_id.clone()]);
        assert!(store.quarantined_tests(&a, 1_000).await.unwrap().is_empty(), "expired");
        assert_eq!(store.quarantines_ended_between(900, 1_000).await.unwrap(), vec![(a.clone(), q.clone())]);
        assert!(store.quarantines_ended_between(1_000, 2_000).await.unwrap().is_empty());
        assert!(store.quarantines_ended_between(0, 999).await.unwrap().is_empty());
        assert_eq!(store.quarantines_in_force(500).await.unwrap(), vec![(a.clone(), q.clone())]);

        let lift = |by: &str| Change::QuarantineLifted {
            repo: a.clone(),
            test_id: q.test_id.clone(),
            since_s: 100,
            by: by.into(),
        };
        apply(&store, vec![lift("alice")]).await;
        apply(&store, vec![lift("bob")]).await;
        let kept = store.quarantines(&a).await.unwrap();
        assert_eq!(kept.len(), 1, "a lifted quarantine stays, with its events");
        assert_eq!(kept[0].lifted_by.as_deref(), Some("alice"), "lifted once");
        assert_eq!(kept[0].events, q.events);
        assert!(store.quarantined_tests(&a, 500).await.unwrap().is_empty());
        assert!(store.quarantines_in_force(500).await.unwrap().is_empty());
    }

    async fn flaky_history_holds_the_asked_tests_that_failed_before_or_fail_now_oldest_first(store: Store) {
        let a = repo("acme/a");
        let mut first = vec![tcase("flaky", true), tcase("green", false), tcase("other", true)];
        first[0].file = Some("tests/test_x.py".into());
        apply(&store, vec![attempt(1, first)]).await;
        apply(&store, vec![attempt(2, vec![tcase("flaky", false), tcase("green", false)])]).await;
        let ids = |names: &[&str]| names.iter().map(|n| TestId::new(*n)).collect::<Vec<_>>();
        let none = BTreeSet::new();
        let runs = store.flaky_history(&a, &ids(&["flaky", "green"]), &none).await.unwrap();
        let seen: Vec<(&str, u32, &str, RunResult)> = runs
            .iter()
            .map(|r| (r.task.as_str(), r.attempt, r.test_id.as_str(), r.result))
            .collect();
        assert_eq!(
            seen,
            [
                ("s/check", 1, "flaky", RunResult::Fail),
                ("s/check", 2, "flaky", RunResult::Pass)
            ],
            "`green` never failed; `other` was not asked for"
        );
        assert_eq!(runs[0].sha, "b".repeat(40));
        assert_eq!(runs[0].file.as_deref(), Some("tests/test_x.py"), "the test's file is kept");
        // A test failing in the run being decided brings its passes.
        let failing: BTreeSet<TestId> = ids(&["green"]).into_iter().collect();
        let runs = store.flaky_history(&a, &ids(&["green"]), &failing).await.unwrap();
        assert_eq!(runs.len(), 2);
        // More ids than one statement takes.
        let many: Vec<TestId> = (0..450).map(|i| TestId::new(format!("t{i}"))).chain(ids(&["flaky"])).collect();
        assert_eq!(store.flaky_history(&a, &many, &none).await.unwrap().len(), 2);
        assert!(store.flaky_history(&repo("acme/b"), &ids(&["flaky"]), &none).await.unwrap().is_empty());
    }
}

on_both_backends! {
    async fn flaky_events_seen_are_kept_once_per_test_and_repository(store: Store) {
        let (a, b) = (repo("acme/a"), repo("acme/b"));
        let fetch = TestId::new("tests/test_net.py::test_fetch");
        let seen = |repo: &RepoName, attempts: &[u32]| Change::FlakyEventsSeen {
            repo: repo.clone(),
            events: attempts.iter().map(|n| (fetch.clone(), event(*n))).collect(),
        };
        apply(&store, vec![seen(&a, &[1]), seen(&a, &[1, 3]), seen(&b, &[5])]).await;
        let kept = store.flaky_events_seen(&a, &fetch).await.unwrap();
        assert_eq!(kept, vec![event(1), event(3)], "a repeated event is kept once");
        let other = TestId::new("tests/test_db.py::test_schema");
        assert!(store.flaky_events_seen(&a, &other).await.unwrap().is_empty());
        assert_eq!(store.flaky_events_seen(&b, &fetch).await.unwrap(), vec![event(5)]);
    }
}
