//! The Actions runner's performer: `Effect::DispatchRun`, an attempt the
//! core handed to the runner workflow (`runner: actions`), becomes a
//! `workflow_dispatch` on the default branch with the attempt's inputs.
//!
//! Owns: reading what the dispatch needs said and the core does not know
//! (the default branch; the story branch's head the run merges the task's
//! head with, SPEC §3, recorded on the attempt once so a retried dispatch
//! names the same one). Must not: choose the runner or decide to cancel
//! (the core does, `core::task::decide`), nor word the dispatch's inputs
//! (`runner::actions::dispatch_inputs`). A refused dispatch is told and
//! recorded as any other (`perform::runs`).

use super::runs::{find_dispatched_run, record_dispatch, start_workflow};
use super::Ctx;
use crate::github::client::GitHubError;
use crate::runner::actions::{attempt_run_id, dispatch_inputs};
use taskgate_core::ids::CommitSha;
use taskgate_core::plan::TaskId;
use taskgate_core::story::{story_branch, Marker};
use taskgate_core::task::RunJob;
use taskgate_core::AttemptRef;

/// Dispatches `workflow` for `job`'s attempt, recording the run GitHub
/// started for it (so its `workflow_run` webhooks find their way back).
pub(super) async fn dispatch_run(
    ctx: &Ctx<'_>,
    job: &RunJob,
    workflow: &str,
) -> Result<Option<String>, GitHubError> {
    let repo = &job.repo;
    let attempt = AttemptRef {
        story: job.story.clone(),
        task: job.task.clone(),
        attempt: job.attempt,
    };
    let git_ref = ctx.repo(repo).default_branch().await?;
    let base = tested_base(ctx, job).await?;
    let inputs = dispatch_inputs(
        &job.story,
        &job.task,
        (&job.sha, base.as_ref()),
        &job.gates,
        &attempt_run_id(&attempt),
    );
    let report_to = Some(
        Marker::Task {
            story: job.story.clone(),
            task: TaskId::new(job.task.key()),
        }
        .key(),
    );
    // Failing to look for an earlier run is not a refused dispatch.
    let started = match find_dispatched_run(ctx, repo, workflow, &git_ref).await? {
        Some(run_id) => Ok(Some(run_id)),
        None => start_workflow(ctx, repo, workflow, &git_ref, &inputs, &report_to).await,
    };
    record_dispatch(ctx, repo, workflow, &Some(attempt), &None, started).await
}

/// The story branch head `job`'s run is to merge its head with: the one
/// recorded on the attempt by an earlier try of this dispatch, else the
/// branch's head on GitHub now, recorded. None for milestones and proofs,
/// which test their commit as it is, or a story whose issue is not
/// recorded.
async fn tested_base(ctx: &Ctx<'_>, job: &RunJob) -> Result<Option<CommitSha>, GitHubError> {
    if job.task.task().is_none() {
        return Ok(None);
    }
    let (repo, story) = (&job.repo, &job.story);
    let row = (ctx.store)
        .attempt(repo, story, &job.task, job.attempt)
        .await?;
    if let Some(base) = row.and_then(|r| r.base) {
        return Ok(Some(base));
    }
    let key = Marker::Story {
        story: story.to_owned(),
    }
    .key();
    let Some(issue) = ctx.store.issue_record(repo, &key).await? else {
        return Ok(None);
    };
    let head = (ctx.repo(repo))
        .branch_head(&story_branch(issue.number.get()))
        .await?;
    if let Some(head) = &head {
        let attempt = AttemptRef {
            story: story.to_owned(),
            task: job.task.clone(),
            attempt: job.attempt,
        };
        ctx.store.put_attempt_base(repo, &attempt, head).await?;
    }
    Ok(head)
}
