//! A ready task's branch (`Effect::StartTaskBranch`, SPEC §3) → GitHub
//! calls: made at the story branch's head, or an existing one brought up
//! to date with it (a fast-forward, else the story branch merged into it
//! through the merges API), then reported through the inbox, where the
//! core records it on the task and renders its issue.
//!
//! The merges API rather than a pull request's "Update branch"
//! (`PUT …/pulls/{n}/update-branch`): both make the same merge commit on
//! the task branch, the merges API whether or not a pull request is open
//! yet, and taskgate's merge is pinned to the story head it read.

use super::PerformStore;
use super::{post_comment, record, Ctx};
use crate::github::client::GitHubError;
use crate::github::repo::{FastForward, MergeOutcome, RepoClient};
use crate::store::{NewDelivery, StoreError};
use taskgate_core::ids::{CommitSha, DeliveryId};
use taskgate_core::internal::{BranchStarted, InternalEvent, Reconcile};
use taskgate_core::story::start::{
    catch_up, render_catch_up_conflict, render_catch_up_message, CatchUp,
};
use taskgate_core::story::{BranchStart, StartHow};
use taskgate_core::Effect;

/// Performs `Effect::StartTaskBranch`.
pub(super) async fn perform(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    let Effect::StartTaskBranch {
        repo,
        story,
        task,
        name,
        story_branch,
        marker,
    } = &ctx.row.effect
    else {
        unreachable!("`{}` is not a task branch's start", ctx.row.effect.name());
    };
    if started_already(ctx.store, &ctx.row.effect).await? {
        return Ok(None);
    }
    let gh = ctx.repo(repo);
    // taskgate made the story branch: not finding it is GitHub's lag.
    let story_sha = gh.branch_head(story_branch).await?.ok_or_else(|| {
        GitHubError::NotYetVisible(format!(
            "the story branch {story_branch} is not visible yet"
        ))
    })?;
    // Looked at before it is made: a pass that asks again before the
    // first start is recorded finds it with a read, not a refused write
    // (GitHub's secondary limits count refusals too).
    let exists = gh.branch_head(name).await?.is_some();
    let (how, conflict) = if !exists && gh.create_branch_if_new(name, &story_sha).await? {
        (StartHow::Created, None)
    } else {
        bring_up_to_date(gh, name, story_branch, &story_sha).await?
    };
    ctx.store.add_branch(repo, name).await?;
    if let Some(why) = conflict {
        let issue = record(ctx, repo, marker).await?.number;
        let note = render_catch_up_conflict(story_branch, name, &why);
        post_comment(ctx, repo, issue, &note, &format!("branch-conflict {name}")).await?;
    }
    let start = BranchStart {
        story_branch: story_branch.clone(),
        story_sha,
        how,
    };
    let pass = InternalEvent::Reconcile(Reconcile {
        repo: repo.clone(),
        story: story.clone(),
        round: 0,
        started: Some(BranchStarted {
            task: task.clone(),
            start: start.clone(),
        }),
    });
    ctx.store
        .record_delivery(NewDelivery::internal(
            DeliveryId::new(format!("taskgate-branch-started-{}", ctx.row.id)),
            ctx.row.installation,
            &pass,
        ))
        .await?;
    Ok(Some(
        serde_json::to_string(&start).expect("plain data serialises"),
    ))
}

/// Whether `effect` is the start of a task branch already recorded on its
/// task: performing it calls GitHub for nothing. The reconciler asks on
/// every pass until the first start is recorded, so a story of many
/// phases queues such starts by the hundred; the executor lets them go
/// without a write slot (`executor::pace`), or each would spend one
/// slot of the hour's budget on no write.
pub(in crate::github) async fn started_already(
    store: &PerformStore,
    effect: &Effect,
) -> Result<bool, StoreError> {
    let Effect::StartTaskBranch {
        repo, story, task, ..
    } = effect
    else {
        return Ok(false);
    };
    let record = store.task_record(repo, story, &task.clone().into()).await?;
    Ok(record.is_some_and(|r| r.branch.is_some()))
}

/// An existing task branch brought up to the story head: nothing when it
/// holds it, a fast-forward when it has no commits of its own, else a
/// merge of the story head into it (with GitHub's message when the merge
/// conflicts).
async fn bring_up_to_date(
    gh: RepoClient<'_>,
    name: &str,
    story_branch: &str,
    story_sha: &CommitSha,
) -> Result<(StartHow, Option<String>), GitHubError> {
    let (ahead, behind) = gh.ahead_behind(story_sha.as_str(), name).await?;
    match catch_up(ahead, behind) {
        CatchUp::UpToDate => return Ok((StartHow::UpToDate, None)),
        CatchUp::FastForward => {
            if gh.fast_forward(name, story_sha).await? == FastForward::Done {
                return Ok((StartHow::FastForwarded, None));
            }
            // A commit landed on it meanwhile: merge instead.
        }
        CatchUp::Merge => {}
    }
    let message = render_catch_up_message(story_branch, name);
    Ok(match gh.merge_into(name, story_sha, &message).await? {
        MergeOutcome::Merged(merge) => (StartHow::Merged { merge }, None),
        MergeOutcome::NothingToMerge => (StartHow::UpToDate, None),
        MergeOutcome::Conflict(why) => (StartHow::Conflict, Some(why)),
    })
}
