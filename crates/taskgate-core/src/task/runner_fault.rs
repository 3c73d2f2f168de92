//! A run the runner itself could not carry out: its sandbox did not start,
//! a workspace could not be made, the host cannot sandbox.
//!
//! Owns: what such a run does to the task: every gate's check run fails as
//! `tooling_error` saying it is not a verdict on the code, the task goes
//! back to `in-progress` with no verdict (so the failure loop opens no
//! branch todo and counts no attempt), and one comment on the task issue,
//! kept current rather than repeated, tells people what happened and who
//! can fix it. Must not: decide anything about the code under test.

use super::decide::{reconcile, short, update_check};
use super::render::{render_runner_fault, runner_fault_output};
use super::{Attempt, AttemptStatus, TaskContext, TaskDecision, TaskRecord};
use crate::effect::{CheckStatus, Effect};
use crate::plan::TaskState;
use crate::task::check_key;
use crate::CheckConclusion;

pub(super) fn on_runner_fault(
    record: &TaskRecord,
    current: &Attempt,
    why: &str,
    ctx: &TaskContext,
) -> TaskDecision {
    let mut next = record.clone();
    let attempt = next.current.as_mut().expect("the current attempt exists");
    attempt.status = AttemptStatus::Skipped;
    attempt.finished_at = Some(ctx.now);
    next.state = Some(TaskState::InProgress);
    let mut effects: Vec<Effect> = current
        .gates
        .iter()
        .map(|gate| {
            update_check(
                ctx,
                check_key(ctx.story, ctx.task, current.number, gate),
                CheckStatus::Completed,
                Some(CheckConclusion::Failure),
                Some(runner_fault_output(why)),
                true,
            )
        })
        .collect();
    effects.push(Effect::UpsertComment {
        repo: ctx.repo.clone(),
        issue: ctx.task_issue,
        marker: format!("runner-fault story={} task={}", ctx.story, ctx.task),
        body: render_runner_fault(current.number, &current.sha, why),
    });
    effects.push(reconcile(ctx));
    TaskDecision {
        record: next,
        effects,
        run: None,
        cancelled: None,
        verdict: None,
        outcome: format!(
            "attempt {} at {} not run: the runner failed ({why})",
            current.number,
            short(&current.sha)
        ),
    }
}
