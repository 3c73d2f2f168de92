//! Flaky-test quarantine on the `actions` runner: the workflow job knows no
//! quarantine, so taskgate applies the one it holds when it reads the
//! report artifact back. A test that flipped on retries of one commit is
//! quarantined from the reports' own history; its later failure, reported
//! failing by the job, passes the gate with a warning. A report that
//! claims a quarantine taskgate does not hold is not believed.
//!
//! The test plays GitHub Actions as `actions_runs` does: each dispatch is
//! completed with a zipped `taskgate-report` artifact, built as the job's
//! `taskgate run` builds it.

use taskgate_core::classify::{Classification, FailureKind, Finding};
use taskgate_core::report::{
    decide_verdict, CommandResult, GateResult, GateTests, RunReport, REPORT_VERSION,
};
use taskgate_core::results::{Outcome, TestCase, TestId};

use crate::support::actions::{zipped, ActionsStory};
use crate::support::plan::{Plan, Task};
use crate::support::{eventually, REPO};

fn plan() -> String {
    Plan::story("Checked work")
        .task(Task::new("check", "Make the check pass").runs("pytest -q --junitxml=junit.xml"))
        .yaml()
}
/// On Actions, with room for many failed runs before escalation.
const CONFIG: &str = "runner: actions\nlimits: { max_debug_attempts: 10, max_branch_depth: 5 }\n";
const SHA: &str = "1111111111111111111111111111111111111111";
const FLAKY: &str = "tests/test_net.py::test_fetch";
const BROKEN: &str = "tests/test_db.py::test_schema";

/// The story on Actions, its task branch at [`SHA`].
async fn story_on_actions() -> ActionsStory {
    // Seven runs make many writes in a few seconds.
    let s = ActionsStory::of(&plan())
        .config(CONFIG)
        .many_writes()
        .start()
        .await;
    s.repo()
        .push_commit(&s.branch, SHA, "work", &[("check.sh", "exit 0\n")], "agent");
    s
}

impl ActionsStory {
    /// Waits for the `n`th dispatch of the commit; its run's id.
    async fn dispatched(&self, n: usize) -> u64 {
        self.dispatched_at(SHA, n).await
    }

    /// Waits for the `n`th dispatch of commit `sha`; its run's id.
    async fn dispatched_at(&self, sha: &str, n: usize) -> u64 {
        let runs = || {
            let dispatches = self.app.fake.repo(REPO).dispatches();
            let runs: Vec<u64> = dispatches
                .into_iter()
                .filter(|d| d.inputs["sha"] == sha)
                .map(|d| d.run_id)
                .collect();
            runs
        };
        eventually(&format!("dispatch {n}"), || async { runs().len() >= n }).await;
        self.app.settle().await;
        runs()[n - 1]
    }

    /// Completes run `run_id` with the job's report; the newest
    /// `taskgate/test` check run of the commit.
    async fn report(&self, run_id: u64, gate: GateResult) -> fakehub::CheckRun {
        self.report_at(SHA, run_id, gate).await
    }

    /// [`ActionsStory::report`] for a run of commit `sha`.
    async fn report_at(&self, sha: &str, run_id: u64, gate: GateResult) -> fakehub::CheckRun {
        let report = RunReport {
            version: REPORT_VERSION,
            task: taskgate_core::task::RunSubject::Task("check".into()),
            sha: Some(sha.into()),
            gates: vec![gate],
            duration_ms: 1200,
            cancelled: false,
            runner_fault: None,
            tested: None,
        };
        let conclusion = if report.passed() {
            "success"
        } else {
            "failure"
        };
        self.app.fake.repo(REPO).complete_run(
            run_id,
            conclusion,
            &[("taskgate-report", zipped(&report).as_slice())],
        );
        self.app.settle().await;
        let runs = self.app.fake.repo(REPO).check_runs();
        let run = runs
            .into_iter()
            .filter(|c| c.head_sha == sha && c.name == "taskgate/test")
            .max_by_key(|c| c.id)
            .expect("a check run");
        assert_eq!(run.status, "completed", "{run:#?}");
        run
    }

    /// `/taskgate retry` on the task issue: the `n`th dispatch of the commit.
    async fn retry(&self, n: usize) -> u64 {
        self.app
            .comment(self.task_issue, "octocat", "/taskgate retry")
            .await;
        self.dispatched(n).await
    }

    async fn quarantined(&self) -> Vec<String> {
        let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
        let now = self.app.store().clock().now_s();
        let ids = self.app.store().quarantined_tests(&repo, now).await;
        ids.unwrap().into_iter().map(|t| t.to_string()).collect()
    }
}

fn case(id: &str, file: &str, fails: bool) -> TestCase {
    TestCase {
        id: TestId::new(id),
        name: id.rsplit("::").next().unwrap().into(),
        suite: None,
        file: Some(file.into()),
        line: Some(3),
        outcome: if fails {
            Outcome::Failed {
                message: "assert 1 == 2".into(),
                details: "E   assert 1 == 2".into(),
            }
        } else {
            Outcome::Passed
        },
        duration_ms: Some(10),
    }
}

/// The `test` gate as the job's `taskgate run` writes it: pytest exits 1
/// when a test fails; `claimed` is what the job says is quarantined (an
/// honest job knows of none).
fn job_gate(flaky_fails: bool, broken_fails: bool, claimed: &[&str]) -> GateResult {
    let fails = flaky_fails || broken_fails;
    let command = CommandResult {
        cmd: "pytest -q --junitxml=junit.xml".into(),
        gate: "test".into(),
        exit_code: Some(i32::from(fails)),
        signal: None,
        timed_out: false,
        timeout_seconds: 20,
        duration_ms: 800,
        output: if fails { "F.\n" } else { "..\n" }.into(),
        output_bytes: 3,
        truncated: false,
        flaky: false,
        classification: fails.then(|| Classification {
            kind: FailureKind::TestFailure,
            summary: "pytest: a test failed".into(),
            findings: vec![Finding {
                path: "tests/test_net.py".into(),
                line: 3,
                column: None,
                message: "assert 1 == 2".into(),
            }],
        }),
    };
    let cases = vec![
        case(FLAKY, "tests/test_net.py", flaky_fails),
        case(BROKEN, "tests/test_db.py", broken_fails),
    ];
    let claimed = |id: &TestId| claimed.contains(&id.as_str());
    let tests = GateTests::new(cases, &claimed, vec!["junit.xml".into()], vec![]);
    let mut gate = GateResult {
        gate: "test".into(),
        passed: false,
        kind: None,
        summary: None,
        commands: vec![command],
        missing_artifacts: vec![],
        metric_failures: vec![],
        warnings: vec![],
        cancelled: false,
        tests: Some(tests),
    };
    decide_verdict(&mut gate, None);
    gate
}

/// Each annotation's level and title.
fn annotations(run: &fakehub::CheckRun) -> Vec<String> {
    run.annotations
        .iter()
        .map(|a| format!("{} {}", a["annotation_level"], a["title"]))
        .collect()
}

#[tokio::test]
async fn a_quarantined_test_failing_on_actions_passes_its_gate_with_a_warning() {
    let s = story_on_actions().await;
    // Three flips on retries of the commit: the flaky test fails, then
    // passes; the broken one always fails.
    let mut n = 0;
    for flip in 1..=3 {
        for flaky_fails in [true, false] {
            n += 1;
            let run_id = if n == 1 {
                s.dispatched(1).await
            } else {
                s.retry(n).await
            };
            let check = s.report(run_id, job_gate(flaky_fails, true, &[])).await;
            assert_eq!(check.conclusion.as_deref(), Some("failure"), "run {n}");
        }
        if flip < 3 {
            assert!(s.quarantined().await.is_empty(), "after {flip} flips");
        }
    }
    assert_eq!(s.quarantined().await, [FLAKY]);

    // The job still reports the flaky test failing and its gate failed;
    // taskgate holds the quarantine, so the gate passes with a warning.
    let job = job_gate(true, false, &[]);
    assert!(!job.passed, "the job failed it");
    let run_id = s.retry(n + 1).await;
    let check = s.report(run_id, job).await;
    assert_eq!(check.conclusion.as_deref(), Some("success"), "{check:#?}");
    insta::assert_snapshot!(check.title.clone().unwrap(), @"1 passed, 1 quarantined");
    let summary = check.summary.clone().unwrap();
    assert!(
        summary.contains("1 quarantined test failed (flaky, see the \"Flaky tests\" issue); it does not fail this gate"),
        "{summary}"
    );
    insta::assert_snapshot!(annotations(&check).join("\n"), @r#"
    "warning" "quarantined test failed (flaky, not failing): tests/test_net.py::test_fetch"
    "warning" "test_failure: pytest -q --junitxml=junit.xml"
    "#);
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_quarantine_claimed_by_the_artifact_alone_does_not_pass_the_gate() {
    let s = story_on_actions().await;
    let run_id = s.dispatched(1).await;
    // The job says the failing test is quarantined and passes the gate.
    let job = job_gate(true, false, &[FLAKY]);
    assert!(job.passed && job.warnings.len() == 1, "{job:#?}");
    let check = s.report(run_id, job).await;
    assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:#?}");
    insta::assert_snapshot!(check.title.clone().unwrap(), @"1 failed, 1 passed — test_failure");
    let summary = check.summary.clone().unwrap();
    assert!(!summary.contains("quarantined"), "{summary}");
    insta::assert_snapshot!(annotations(&check).join("\n"), @r#"
    "failure" "test failed: tests/test_net.py::test_fetch"
    "failure" "test_failure: pytest -q --junitxml=junit.xml"
    "#);
    s.app.assert_contract_kept();
}

/// Runs the commit on Actions, then a next one changing `files`, and
/// returns what taskgate recorded of the pair: GitHub's compare said it
/// (taskgate has no checkout of an Actions run).
async fn recorded_changes(files: &[(&str, &str)]) -> Option<Option<Vec<String>>> {
    let s = story_on_actions().await;
    let run_id = s.dispatched(1).await;
    let check = s.report(run_id, job_gate(false, false, &[])).await;
    assert_eq!(check.conclusion.as_deref(), Some("success"));
    // The flaky test fails on the next commit.
    const NEXT: &str = "2222222222222222222222222222222222222222";
    s.app
        .fake
        .repo(REPO)
        .push_commit(&s.branch, NEXT, "next", files, "agent");
    let run_id = s.dispatched_at(NEXT, 1).await;
    let check = s.report_at(NEXT, run_id, job_gate(true, false, &[])).await;
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let pair = taskgate_core::flaky::CommitPair {
        base: SHA.into(),
        head: NEXT.into(),
    };
    let mut known = s
        .app
        .store()
        .commit_changes(&repo, vec![pair.clone()])
        .await;
    s.app.assert_contract_kept();
    known.as_mut().unwrap().remove(&pair)
}

#[tokio::test]
async fn on_actions_the_files_a_commit_changed_since_the_tested_one_come_from_githubs_compare() {
    let changed = recorded_changes(&[("README.md", "more words\n")]).await;
    assert_eq!(changed, Some(Some(vec!["README.md".to_string()])));
}

#[tokio::test]
async fn on_actions_a_comparison_github_cut_at_300_files_is_kept_as_too_many() {
    let names: Vec<String> = (0..300).map(|i| format!("docs/f{i:03}.md")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x\n")).collect();
    // GitHub lists 300 files at most: there may be more, so nothing is
    // concluded from the list (not even that only docs changed).
    assert_eq!(recorded_changes(&files).await, Some(None));
}
