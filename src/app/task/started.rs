//! A ready task's branch was started (SPEC §3: made from the story branch,
//! or brought up to date with it), as the executor reports it through the
//! inbox: work pushed while the task was pending is tested then, once for
//! that one update (`core::task::on_branch_started` says when).
//!
//! Owns: locating the task the report names and turning the core's answer
//! into a processor decision. Must not: record the start itself (the plan
//! sync does, `app::sync`), or decide whether anything runs.

use super::{into_decision, Runs};
use crate::store::StoreError;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::internal::BranchStarted;
use taskgate_core::task;
use taskgate_core::Decision;

impl Runs {
    /// The run a task's branch start calls for, if any. Its record carries
    /// the start, so the decision stored after the sync's keeps it.
    pub async fn on_branch_started(
        &self,
        repo: &RepoName,
        story: &StoryId,
        started: &BranchStarted,
    ) -> Result<Option<Decision>, StoreError> {
        let Some(loc) = self.task_location(repo, story, &started.task).await? else {
            return Ok(None);
        };
        let Some(located) = self.locate(repo, loc).await? else {
            return Ok(None);
        };
        if !located.waiting_for.is_empty() {
            return Ok(None);
        }
        let ctx = located.context(repo, self.now());
        Ok(
            task::on_branch_started(&located.record, &started.start, &ctx)
                .map(|d| into_decision(repo, &located, d)),
        )
    }
}
