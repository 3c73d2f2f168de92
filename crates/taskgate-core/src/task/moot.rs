//! A run stopped because what it proves is gone: a ship train car's proof
//! once the car is dissolved (a car ahead failed, the default branch
//! moved, a story left the train). Its verdict would be ignored, and the
//! runner is better spent on the cars formed instead.
//!
//! Owns: [`on_moot`]. Must not: decide that a run is moot (the ship train
//! does), or start another run.

use super::decide::{stop_run, update_check, TaskContext, TaskDecision};
use super::{AttemptStatus, TaskRecord};
use crate::effect::CheckStatus;
use crate::ids::CommitSha;
use crate::report::CheckOutput;
use crate::CheckConclusion;

/// Stops the run at `sha`, if it is the current one and still going:
/// each gate's check run ends cancelled, saying `why`.
pub fn on_moot(record: &TaskRecord, sha: &CommitSha, why: &str, ctx: &TaskContext) -> TaskDecision {
    let current = (record.current.as_ref()).filter(|a| a.sha == *sha && a.status.is_active());
    let Some(current) = current else {
        return TaskDecision::unchanged(record, format!("no run at {} to stop", sha.short()));
    };
    let output = CheckOutput {
        title: "Cancelled: no longer needed".into(),
        summary: format!("Attempt {} was stopped: {why}.", current.number),
        text: String::new(),
        annotations: vec![],
    };
    let mut effects: Vec<_> = (current.gates.iter())
        .map(|gate| {
            let key = super::check_key(ctx.story, ctx.task, current.number, gate);
            let done = Some(CheckConclusion::Cancelled);
            update_check(
                ctx,
                key,
                CheckStatus::Completed,
                done,
                Some(output.clone()),
                false,
            )
        })
        .collect();
    effects.extend(stop_run(current, ctx));
    let mut next = record.clone();
    let attempt = next.current.as_mut().expect("the current attempt");
    attempt.status = AttemptStatus::Cancelled;
    attempt.finished_at = Some(ctx.now);
    TaskDecision {
        record: next,
        effects,
        cancelled: Some(current.number),
        outcome: format!("attempt {} stopped: {why}", current.number),
        ..TaskDecision::unchanged(record, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReviewMode;
    use crate::effect::Effect;
    use crate::task::test_fixture::{sha, Fixture};
    use crate::task::{on_trigger, HeadSource, Trigger};

    fn running(f: &Fixture) -> TaskRecord {
        let head = Trigger::Head {
            sha: sha('a'),
            pr: None,
            pusher: None,
            source: HeadSource::Taskgate,
        };
        on_trigger(&TaskRecord::default(), &head, &f.ctx()).record
    }

    #[test]
    fn a_moot_run_is_cancelled_and_its_checks_say_why() {
        let f = Fixture::new(&["unit", "lint"], ReviewMode::Human);
        let record = running(&f);
        let d = on_moot(&record, &sha('a'), "its ship batch was dissolved", &f.ctx());
        assert_eq!(d.cancelled, Some(1));
        let current = d.record.current.as_ref().unwrap();
        assert_eq!(current.status, AttemptStatus::Cancelled);
        assert_eq!(current.finished_at, Some(f.now));
        let summaries: Vec<String> = (d.effects.iter())
            .filter_map(|e| match e {
                Effect::UpdateCheckRun { key, update, .. } => {
                    assert_eq!(update.conclusion, Some(CheckConclusion::Cancelled));
                    let out = update.output.as_ref().unwrap();
                    Some(format!("{key}: {} — {}", out.title, out.summary))
                }
                _ => None,
            })
            .collect();
        insta::assert_snapshot!(summaries.join("\n"), @r"
        story=file:s task=data attempt=1 gate=unit: Cancelled: no longer needed — Attempt 1 was stopped: its ship batch was dissolved.
        story=file:s task=data attempt=1 gate=lint: Cancelled: no longer needed — Attempt 1 was stopped: its ship batch was dissolved.
        ");
    }

    #[test]
    fn a_run_of_another_commit_or_already_ended_is_left_alone() {
        let f = Fixture::new(&["unit"], ReviewMode::Human);
        let record = running(&f);
        let other = on_moot(&record, &sha('b'), "gone", &f.ctx());
        assert_eq!((other.cancelled, other.record), (None, record.clone()));
        let mut ended = record.clone();
        ended.current.as_mut().unwrap().status = AttemptStatus::Passed;
        let d = on_moot(&ended, &sha('a'), "gone", &f.ctx());
        assert_eq!((d.cancelled, d.effects.len()), (None, 0));
    }
}
