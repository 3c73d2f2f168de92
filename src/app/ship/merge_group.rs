//! `merge_group` webhooks of GitHub's merge queue, for a story shipping
//! through it: `checks_requested` proves the group (the story's gates on
//! its commit, the `@ship` pseudo task), `destroyed` ends the ship when
//! the group left the queue without merging.
//!
//! Owns: finding the story a group is for (its pull request, named in the
//! group's ref), reading the group commit's parents and, for a group
//! dequeued, the story branch's head. Must not: decide
//! (`core::ship::on_merge_group_*`) or run the proof (the processor does,
//! on the outcome's proof run).

use super::queue::ShipOutcome;
use super::*;
use crate::intake::payload::{MergeGroupAction, MergeGroupPayload};

impl Ship {
    /// A `merge_group` webhook: the decision for the story whose PR the
    /// group merges, and the proof run it asks for.
    pub async fn on_merge_group(&self, p: &MergeGroupPayload) -> Result<ShipOutcome, ShipError> {
        let repo = RepoName::parse(&p.repository.full_name)
            .map_err(|e| ShipError::Payload(e.to_string()))?;
        let Some(number) = p.merge_group.pull_number() else {
            return Ok(Decision::nothing("a merge group of no pull request").into());
        };
        let Some(story) = self.story_of(&repo, number).await? else {
            return Ok(Decision::nothing("a merge group of no story's PR").into());
        };
        let default = p.repository.default_branch.as_deref();
        let Some(l) = self.locate(&repo, &story, default).await? else {
            return Ok(Decision::nothing("a merge group of an unknown story").into());
        };
        let group = &p.merge_group.head_sha;
        match &p.action {
            MergeGroupAction::ChecksRequested => {
                let client = self.client(&l).await?;
                let parents = RepoClient::new(&client, &repo)
                    .commit_parents(group)
                    .await?;
                let (d, step) = ship::on_merge_group_checks(&l.record, group, &parents, &l.ctx());
                Ok(l.outcome(d, step, taskgate_core::task::RunSubject::ShipProof))
            }
            MergeGroupAction::Destroyed => {
                let reason = p.reason.as_deref().unwrap_or("dequeued");
                // GitHub drops a PR whose head moved, maybe before the push
                // reaches taskgate: the branch says which reason it was.
                let head = match reason {
                    "merged" | "invalidated" => None,
                    _ => {
                        let client = self.client(&l).await?;
                        RepoClient::new(&client, &repo)
                            .branch_head(&l.branch)
                            .await?
                    }
                };
                let d = ship::on_merge_group_destroyed(
                    &l.record,
                    group,
                    reason,
                    head.as_ref(),
                    &l.ctx(),
                );
                Ok(l.finish(d).into())
            }
            MergeGroupAction::Other(action) => {
                Ok(Decision::nothing(format!("merge_group {action}: nothing to do")).into())
            }
        }
    }
}
