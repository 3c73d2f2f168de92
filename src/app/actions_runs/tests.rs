use super::*;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_run_is_counted_once_however_often_its_report_is_fetched() {
    let row = AttemptRow {
        repo: RepoName::parse("o/r").unwrap(),
        story: "s".into(),
        task: taskgate_core::task::RunSubject::Task("t1".into()),
        attempt: 1,
        installation: taskgate_core::ids::InstallationId::new(1),
        sha: crate::testing::sha("1111111111111111111111111111111111111111"),
        gates: vec!["unit".into()],
        status: AttemptStatus::Running,
        queued_ms: 1_764_000_000_000,
        started_ms: None,
        finished_ms: None,
        report: None,
        runner: RunnerKind::Actions,
        base: None,
    };
    let run: WorkflowRun = serde_json::from_value(serde_json::json!({
        "id": 7, "head_sha": "1111111111111111111111111111111111111111",
        "status": "completed", "conclusion": "success",
        "updated_at": "2025-11-24T16:00:03Z",
    }))
    .unwrap();
    let report = report_for_missing_artifact(&row.task, &row.sha, &row.gates, "x", None);
    let metrics = Metrics::new();
    let counted = CountedRuns::default();
    counted.count(&metrics, &row, &run, &report);
    counted.count(&metrics, &row, &run, &report);
    let text = metrics.render(&Default::default());
    let runs = "taskgate_runner_overhead_seconds_count{runner=\"actions\"} ";
    assert!(text.contains(&format!("{runs}1\n")), "{text}");
    // The key underneath: by attempt, and bounded.
    let counted = CountedRuns::default();
    assert!(counted.first("o/r/s/t1/1".into()));
    assert!(!counted.first("o/r/s/t1/1".into()), "fetched again");
    assert!(counted.first("o/r/s/t1/2".into()), "the next attempt");
    // Bounded: the oldest is forgotten once KEPT newer ones came.
    for i in 0..CountedRuns::KEPT {
        assert!(counted.first(format!("o/r/s/t2/{i}")));
    }
    assert!(counted.first("o/r/s/t1/1".into()));
}

fn completed() -> RunSeen {
    let run = serde_json::from_value(serde_json::json!({
        "id": 7, "head_sha": "1111111111111111111111111111111111111111",
        "status": "completed", "conclusion": "success",
    }))
    .unwrap();
    RunSeen::Completed(Box::new(run))
}

fn said(step: WatchStep) -> String {
    match step {
        WatchStep::Nothing(why) => format!("nothing: {why}"),
        WatchStep::Start => "start".into(),
        WatchStep::FinishFromRun(run) => format!("finish from run {}", run.id),
        WatchStep::GiveUp(why) => format!("give up: {why}"),
    }
}

#[test]
fn a_completed_run_finishes_its_attempt_whether_or_not_it_was_heard_starting() {
    assert_eq!(
        said(watch_step(true, completed(), HOUR)),
        "finish from run 7"
    );
    assert_eq!(
        said(watch_step(false, completed(), HOUR)),
        "finish from run 7"
    );
}

#[test]
fn a_run_in_progress_starts_a_queued_attempt_and_leaves_a_running_one() {
    assert_eq!(said(watch_step(true, RunSeen::InProgress, HOUR)), "start");
    assert_eq!(
        said(watch_step(false, RunSeen::InProgress, HOUR)),
        "nothing: its workflow run is still in progress"
    );
}

#[test]
fn a_run_not_started_on_github_is_waited_for_however_long() {
    let seen = RunSeen::Waiting("queued".into());
    assert_eq!(
        said(watch_step(true, seen, 100 * HOUR)),
        "nothing: its workflow run is still queued on GitHub"
    );
}

#[test]
fn a_deleted_run_gives_its_attempt_up_at_once() {
    assert_eq!(
        said(watch_step(false, RunSeen::Gone(42), Duration::ZERO)),
        "give up: workflow run 42 no longer exists on GitHub (deleted before it reported)"
    );
}

#[test]
fn an_attempt_github_never_named_a_run_for_is_given_up_after_a_day() {
    assert_eq!(
        said(watch_step(true, RunSeen::Unknown, 23 * HOUR)),
        "nothing: no workflow run is known for it yet"
    );
    let step = said(watch_step(true, RunSeen::Unknown, UNSEEN_RUN_LIMIT));
    assert!(
        step.starts_with(
            "give up: GitHub never named a workflow run for this attempt in the 24 hours"
        ),
        "{step}"
    );
}
