//! A task pull request closing, and what a task's completion starts.
//!
//! Owns: reading a `pull_request.closed` into `core::task::on_pull_closed`
//! (with what the merge made on the story branch), the audit entry for a
//! merge past the gates (`core::task::merged_past`: the acting user is the
//! payload's `sender`), and [`Runs::after_completion`]: the milestones and
//! dependent tasks a completed task starts, whether a merge completed it
//! or its gates passed at a head merged before they had.
//! Must not: decide whether the merge completes the task (the core does).

use super::*;
use taskgate_core::audit::{task_object, AuditAction, AuditActor, AuditEntry, AuditVia};
use taskgate_core::Actor;

impl Runs {
    pub(super) async fn on_task_pull_closed(
        &self,
        e: &PullRequestEvent,
        located: &Located,
        ctx: &TaskContext<'_>,
    ) -> Result<Decision, StoreError> {
        let repo = &e.repo;
        let closed = if e.merged {
            PullClosed::Merged {
                pr: e.number,
                head: &e.head.sha,
                by: e.merged_by.as_ref().map(|a| a.login.as_str()),
            }
        } else {
            PullClosed::Unmerged
        };
        let mut d = on_pull_closed(&located.record, closed, ctx);
        if e.merged {
            // What the merge made on the story branch: the ship gate takes
            // only such commits there.
            d.record.merged_as = e.merge_commit.clone();
            d.record.merged_commits = self.rebased_commits(e, ctx.merge_method);
        }
        let past_gates = d.record.merged_unproven.is_some()
            && d.record.merged_unproven != located.record.merged_unproven;
        let past_review = d.record.merged_unreviewed.is_some()
            && d.record.merged_unreviewed != located.record.merged_unreviewed;
        let completed = d.record.state == Some(TaskState::Completed);
        let mut decision = self.finish(repo, located, d);
        let by = e.sender.as_ref().or(e.merged_by.as_ref());
        if past_gates {
            let entry =
                merged_past_audit(repo, located, e, by, ctx.now, AuditAction::MergedPastGates);
            decision.changes.push(entry.change());
        }
        if past_review {
            let entry =
                merged_past_audit(repo, located, e, by, ctx.now, AuditAction::MergedPastReview);
            decision.changes.push(entry.change());
        }
        if completed {
            for more in self
                .after_completion(repo, located, e.merge_commit.as_ref())
                .await?
            {
                decision.merge(more);
            }
        }
        Ok(decision)
    }

    /// `done` just completed (in this delivery, not stored yet), with the
    /// story branch at `story_head`: the milestones whose tasks are now all
    /// complete run there, and the tasks that waited for it alone start.
    pub(super) async fn after_completion(
        &self,
        repo: &RepoName,
        done: &Located,
        story_head: Option<&CommitSha>,
    ) -> Result<Vec<Decision>, StoreError> {
        let mut decisions = Vec::new();
        if let Some(head) = story_head {
            let just = (done.loc.task.as_str(), TaskState::Completed);
            decisions.extend(
                self.start_ready_milestones(repo, &done.loc.story, head, Some(just))
                    .await?,
            );
        }
        decisions.extend(self.start_unblocked_tasks(repo, done).await?);
        Ok(decisions)
    }
}

/// `merged_past_gates` (or `merged_past_review`) `by <sender> on task #N
/// (id) via merge`, with the merged head as the reason.
fn merged_past_audit(
    repo: &RepoName,
    located: &Located,
    e: &PullRequestEvent,
    by: Option<&Actor>,
    now_s: i64,
    action: AuditAction,
) -> AuditEntry {
    let actor = by.map_or(
        AuditActor {
            id: None,
            login: "someone",
        },
        AuditActor::from,
    );
    let missing = match action {
        AuditAction::MergedPastReview => "without an approval of that head",
        _ => "before its gates passed there",
    };
    let reason = format!(
        "pull request #{} merged at {} {missing}",
        e.number,
        e.head.sha.short()
    );
    AuditEntry::new(
        repo,
        now_s,
        actor,
        action,
        task_object(located.loc.issue, located.loc.task.as_str()),
        AuditVia::Merge,
    )
    .because(Some(reason))
}
