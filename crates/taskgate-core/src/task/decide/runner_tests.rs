//! The core chooses the runner: an attempt is queued for the repository's
//! `runner` and says so, and a cancelled attempt is stopped on the runner
//! it was handed to.

use super::*;
use crate::task::on_moot;
use crate::task::test_fixture::{sha, Fixture};

fn fixture(runner: RunnerKind) -> Fixture {
    Fixture {
        runner,
        ..Fixture::new(&["unit"], ReviewMode::Auto)
    }
}

fn push(record: &TaskRecord, c: char, f: &Fixture) -> TaskDecision {
    let head = Trigger::Head {
        sha: sha(c),
        pr: None,
        pusher: None,
        source: HeadSource::Taskgate,
    };
    on_trigger(record, &head, &f.ctx())
}

fn names(effects: &[Effect]) -> Vec<&'static str> {
    effects.iter().map(Effect::name).collect()
}

fn cancels(effects: &[Effect]) -> Vec<u32> {
    (effects.iter())
        .filter_map(|e| match e {
            Effect::CancelWorkflowRun { attempt, .. } => Some(attempt.attempt),
            _ => None,
        })
        .collect()
}

#[test]
fn a_local_repository_queues_its_attempt_for_the_local_runner_and_dispatches_nothing() {
    let f = fixture(RunnerKind::Local);
    let d = push(&TaskRecord::default(), 'a', &f);
    let job = d.run.as_ref().expect("a run is queued");
    assert_eq!(job.runner, RunnerKind::Local);
    let current = d.record.current.as_ref().unwrap();
    assert_eq!(current.runner, Some(RunnerKind::Local));
    assert!(!names(&d.effects).contains(&"dispatch_run"), "{d:?}");
    assert_eq!(d.outcome, "attempt 1 queued at aaaaaaa");
}

#[test]
fn an_actions_repository_hands_its_attempt_to_the_runner_workflow() {
    let f = fixture(RunnerKind::Actions);
    let d = push(&TaskRecord::default(), 'a', &f);
    let job = d.run.as_ref().expect("a run is queued");
    assert_eq!(job.runner, RunnerKind::Actions);
    assert_eq!(
        d.record.current.as_ref().unwrap().runner,
        Some(RunnerKind::Actions)
    );
    let dispatches: Vec<_> = (d.effects.iter())
        .filter_map(|e| match e {
            Effect::DispatchRun { job, workflow } => Some((job.as_ref(), workflow.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(dispatches, [(job, "taskgate-run.yml")]);
    assert_eq!(
        d.outcome,
        "attempt 1 queued at aaaaaaa; dispatched to workflow taskgate-run.yml"
    );
}

#[test]
fn a_superseded_actions_attempt_has_its_workflow_run_cancelled() {
    let f = fixture(RunnerKind::Actions);
    let first = push(&TaskRecord::default(), 'a', &f);
    let second = push(&first.record, 'b', &f);
    assert_eq!(second.cancelled, Some(1));
    assert_eq!(cancels(&second.effects), [1]);
    // The attempt that supersedes it is dispatched in the same decision.
    assert!(names(&second.effects).contains(&"dispatch_run"));
}

#[test]
fn a_superseded_local_attempt_cancels_no_workflow_run() {
    let f = fixture(RunnerKind::Local);
    let first = push(&TaskRecord::default(), 'a', &f);
    let second = push(&first.record, 'b', &f);
    assert_eq!(second.cancelled, Some(1));
    assert_eq!(cancels(&second.effects), Vec::<u32>::new());
}

#[test]
fn an_attempt_is_stopped_on_the_runner_it_ran_on_not_the_one_configured_now() {
    // Queued on Actions, then the repository moved to the local runner.
    let first = push(&TaskRecord::default(), 'a', &fixture(RunnerKind::Actions));
    let second = push(&first.record, 'b', &fixture(RunnerKind::Local));
    assert_eq!(cancels(&second.effects), [1]);
    // And the other way round.
    let first = push(&TaskRecord::default(), 'a', &fixture(RunnerKind::Local));
    let second = push(&first.record, 'b', &fixture(RunnerKind::Actions));
    assert_eq!(cancels(&second.effects), Vec::<u32>::new());
}

#[test]
fn an_attempt_recorded_without_its_runner_is_asked_to_cancel_on_github() {
    let f = fixture(RunnerKind::Local);
    let mut record = push(&TaskRecord::default(), 'a', &f).record;
    record.current.as_mut().unwrap().runner = None;
    let second = push(&record, 'b', &f);
    assert_eq!(cancels(&second.effects), [1]);
}

#[test]
fn a_moot_actions_run_has_its_workflow_run_cancelled_and_a_local_one_not() {
    for (runner, cancelled) in [(RunnerKind::Actions, vec![1]), (RunnerKind::Local, vec![])] {
        let f = fixture(runner);
        let record = push(&TaskRecord::default(), 'a', &f).record;
        let d = on_moot(&record, &sha('a'), "its ship batch was dissolved", &f.ctx());
        assert_eq!(d.cancelled, Some(1));
        assert_eq!(cancels(&d.effects), cancelled, "{runner:?}");
    }
}
