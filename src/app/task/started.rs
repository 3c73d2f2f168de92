//! A ready task's branch was started (SPEC §3: made from the story branch,
//! or brought up to date with it), as the executor reports it through the
//! inbox: work pushed while the task was pending is tested then, once for
//! that one update (`core::task::on_branch_started` says when).
//!
//! Owns: locating the task the report names and turning the core's answer
//! into a processor decision. Must not: record the start itself (the plan
//! sync does, `app::sync`), or decide whether anything runs.

use super::{into_decision, Runs};
use crate::app::Handled;
use crate::store::StoreError;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::internal::BranchStarted;
use taskgate_core::task;

impl Runs {
    /// The run a task's branch start calls for; not its own when there is
    /// none (the task unknown, waiting, or nothing to test). Its record carries
    /// the start, so the decision stored after the sync's keeps it.
    pub async fn on_branch_started(
        &self,
        repo: &RepoName,
        story: &StoryId,
        started: &BranchStarted,
    ) -> Result<Handled, StoreError> {
        let Some(loc) = self.task_location(repo, story, &started.task).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(located) = self.locate(repo, loc).await? else {
            return Ok(Handled::NotMine);
        };
        if !located.waiting_for.is_empty() {
            return Ok(Handled::NotMine);
        }
        let ctx = located.context(repo, self.now());
        Ok(
            match task::on_branch_started(&located.record, &started.start, &ctx) {
                Some(d) => Handled::Decided(into_decision(repo, &located, d)),
                None => Handled::NotMine,
            },
        )
    }
}
