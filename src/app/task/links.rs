//! A check run's id became known after its attempt's evidence was
//! written (`Effect::AwaitCheckRun`, performed by the executor once the
//! create's answer is recorded): the task's branch todo links it then
//! (`core::task::on_check_runs_known` decides).
//!
//! Owns: locating the task the event names and reading the attempt's
//! check runs from the store. Must not: decide whether the todo changes.

use super::{into_decision, Runs};
use crate::store::StoreError;
use taskgate_core::internal::CheckRunKnown;
use taskgate_core::task;
use taskgate_core::Decision;

impl Runs {
    /// The attempt's check runs, known now, linked from its evidence.
    pub async fn on_check_run_known(&self, event: CheckRunKnown) -> Result<Decision, StoreError> {
        let CheckRunKnown { repo, attempt } = event;
        let loc = match attempt.task.task() {
            Some(t) => self.task_location(&repo, &attempt.story, t).await?,
            None => None,
        };
        let Some(loc) = loc else {
            return Ok(Decision::nothing("check run of an unknown task"));
        };
        let Some(located) = self.locate(&repo, loc).await? else {
            return Ok(Decision::nothing(
                "check run of a task no longer in the plan",
            ));
        };
        let mut inputs = self.loop_inputs(&repo, &located).await?;
        inputs.links.check_runs = (self.check_run_links(&repo, &located, attempt.attempt)).await?;
        let ctx = located.context(&repo, self.now());
        let d = task::on_check_runs_known(&located.record, attempt.attempt, &ctx, &inputs);
        Ok(into_decision(&repo, &located, d))
    }
}
