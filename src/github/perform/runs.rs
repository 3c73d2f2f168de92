//! Effects of acceptance runs and ships → GitHub calls: check runs opened
//! and moved on by their `external_id` key, pull requests merged and
//! marked ready, workflows dispatched and cancelled. GitHub's refusals of
//! a merge or a dispatch are told on the issue the effect reports to and
//! recorded through the inbox, where the core decides what follows.

use std::collections::BTreeMap;

use serde_json::json;
use tracing::info;

use super::{done, post_comment, record, Ctx};
use crate::github::client::GitHubError;
use crate::store::NewDelivery;
use taskgate_core::ids::{CommitSha, DeliveryId, IssueNumber, RepoName, StoryId};
use taskgate_core::internal::{CheckRunKnown, InternalEvent};
use taskgate_core::ship::{ShipWhat, StoryRunRef};
use taskgate_core::{AttemptRef, CheckUpdate, Effect};

/// Performs a branch, check-run, pull-request or workflow effect.
pub(super) async fn perform(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    let effect = &ctx.row.effect;
    let gh = ctx.repo(effect.repo());
    match effect {
        Effect::CreateBranch { repo, name, sha } => {
            gh.create_branch(name, sha).await?;
            done(ctx.store.add_branch(repo, name).await)
        }
        Effect::CreateCheckRun { check, .. } => {
            Ok(Some(gh.create_check_run(check).await?.to_result()))
        }
        Effect::OpenCheckRun {
            repo,
            key,
            name,
            head_sha,
            title,
            summary,
        } => open_check_run(ctx, repo, key, name, head_sha, title, summary).await,
        Effect::UpdateCheckRun { repo, key, update } => {
            update_check_run(ctx, repo, key, update).await
        }
        Effect::AwaitCheckRun { repo, key, attempt } => {
            await_check_run(ctx, repo, key, attempt).await
        }
        Effect::CreatePullRequest {
            repo,
            head,
            base,
            title,
            body,
            draft,
            ..
        } => create_pull_request(ctx, repo, head, base, title, body, *draft).await,
        Effect::MergePullRequest {
            repo,
            number,
            sha,
            method,
            title,
            report_to,
            ready_first,
            fix_into,
        } => {
            if *ready_first {
                // taskgate's own draft: ready first, so a retry does both.
                mark_pull_request_ready(ctx, repo, *number).await?;
            }
            let ask = MergeAsk {
                number: *number,
                sha,
                method: *method,
                title,
                report_to,
                fix_into: fix_into.as_deref(),
            };
            merge_pull_request(ctx, repo, &ask).await
        }
        Effect::DispatchWorkflow {
            repo,
            workflow,
            git_ref,
            inputs,
            report_to,
            attempt,
            story_run,
        } => {
            // Failing to look for an earlier run is not a refused dispatch.
            let started = match find_dispatched_run(ctx, repo, workflow, git_ref).await? {
                Some(run_id) => Ok(Some(run_id)),
                None => start_workflow(ctx, repo, workflow, git_ref, inputs, report_to).await,
            };
            record_dispatch(ctx, repo, workflow, attempt, story_run, started).await
        }
        Effect::UpdatePullRequest {
            number,
            title,
            body,
            ..
        } => done(
            gh.update_pull(*number, title.as_deref(), body.as_deref())
                .await,
        ),
        Effect::MarkPullRequestReady { repo, number } => {
            mark_pull_request_ready(ctx, repo, *number).await
        }
        Effect::CancelWorkflowRun { repo, attempt } => {
            cancel_workflow_runs(ctx, repo, attempt).await
        }
        other => unreachable!("`{}` is not a run effect", other.name()),
    }
}

/// Opens a pull request, a draft where the repository has drafts. Where
/// GitHub refused one, it is opened as a normal pull request and the
/// repository is remembered, so later ones are not asked as drafts again.
async fn create_pull_request(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    head: &str,
    base: &str,
    title: &str,
    body: &str,
    draft: bool,
) -> Result<Option<String>, GitHubError> {
    let draft = draft && !ctx.store.drafts_unavailable(repo).await?;
    let opened = ctx
        .repo(repo)
        .create_pull_or_normal(head, base, title, body, draft)
        .await?;
    if opened.drafts_refused {
        let now = ctx.store.clock().now_ms();
        ctx.store.remember_no_drafts(repo, now).await?;
    }
    Ok(opened.created.map(|created| created.to_result()))
}

/// Creates a queued check run, or on a retry finds the one GitHub already
/// has with this `external_id`, and records its id under the key.
pub(super) async fn open_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    key: &str,
    name: &str,
    head_sha: &CommitSha,
    title: &str,
    summary: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    if ctx.attempt > 1 {
        if let Some(id) = gh
            .find_check_run(ctx.own.app_id, head_sha, name, key)
            .await?
        {
            ctx.store.put_check_run(repo, key, id).await?;
            return Ok(Some(json!({ "id": id }).to_string()));
        }
    }
    let created = gh
        .create_queued_check_run(key, name, head_sha, title, summary)
        .await?;
    ctx.store.put_check_run(repo, key, created.id).await?;
    Ok(Some(created.to_result()))
}

/// Once the check run under `key` has its id, tells its task through the
/// inbox; until then a transient wait, retried like an update whose
/// create is still backing off. Calls nothing on GitHub.
async fn await_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    key: &str,
    attempt: &AttemptRef,
) -> Result<Option<String>, GitHubError> {
    let id = ctx.store.check_run_id(repo, key).await?.ok_or_else(|| {
        GitHubError::NotYetVisible(format!("check run `{key}` is not created yet"))
    })?;
    let known = InternalEvent::CheckRunKnown(CheckRunKnown {
        repo: repo.clone(),
        attempt: attempt.clone(),
    });
    ctx.store
        .record_delivery(NewDelivery::internal(
            DeliveryId::new(format!("taskgate-check-run-known-{}", ctx.row.id)),
            ctx.row.installation,
            &known,
        ))
        .await?;
    Ok(Some(json!({ "id": id }).to_string()))
}

pub(super) async fn update_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    key: &str,
    update: &CheckUpdate,
) -> Result<Option<String>, GitHubError> {
    let id = ctx
        .store
        .check_run_id(repo, key)
        .await?
        // Its create may still be backing off: a transient wait, not a
        // failure, so the update runs once the create has.
        .ok_or_else(|| GitHubError::Transport(format!("check run `{key}` is not created yet")))?;
    if !ctx
        .store
        .claim_check_run_update(repo, key, ctx.row.id)
        .await?
    {
        // A later update was sent: this one would set it back.
        info!(key, "a stale check-run update is not sent");
        return Ok(Some(json!({ "superseded": true }).to_string()));
    }
    let now = ctx.store.clock().now_s();
    ctx.repo(repo).update_check_run(id, update, now).await?;
    Ok(None)
}

/// What [`merge_pull_request`] merges, from `Effect::MergePullRequest`.
pub(super) struct MergeAsk<'a> {
    pub number: IssueNumber,
    pub sha: &'a CommitSha,
    pub method: taskgate_core::config::MergeMethod,
    pub title: &'a str,
    pub report_to: &'a str,
    pub fix_into: Option<&'a str>,
}

/// Merges a pull request at `sha`. GitHub refusing the merge (405 not
/// mergeable, 409 the head moved) is told on the `report_to` issue (an
/// agent's fix: on its own pull request) and the effect fails without
/// retrying: a conflict needs a person or a new push.
pub(super) async fn merge_pull_request(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    ask: &MergeAsk<'_>,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    let number = ask.number;
    match gh.merge_pull(number, ask.sha, ask.method, ask.title).await {
        Ok(merged) => Ok(Some(
            json!({ "sha": merged.sha, "merged": true }).to_string(),
        )),
        Err(GitHubError::Http {
            status: status @ (405 | 409),
            message,
            headers,
        }) => {
            // A retry after a lost answer meets the merge it already made
            // (GitHub then says "not mergeable"): that is success.
            if ctx.attempt > 1 {
                if let Some(sha) = gh.get_pull(number).await?.merged_as(number)? {
                    return Ok(Some(json!({ "sha": sha, "merged": true }).to_string()));
                }
            }
            merge_refused(ctx, repo, ask, status, &message).await?;
            Err(GitHubError::Http {
                status,
                message,
                headers,
            })
        }
        Err(e) => Err(e),
    }
}

/// Tells the `report_to` issue that GitHub refused the merge; a story
/// PR's refusal also reaches its ship gate.
async fn merge_refused(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    ask: &MergeAsk<'_>,
    status: u16,
    message: &str,
) -> Result<(), GitHubError> {
    let (number, report_to) = (ask.number, ask.report_to);
    let comment_marker = format!("merge-refused effect={}", ctx.row.id);
    if let Some(branch) = ask.fix_into {
        let note = taskgate_core::task::render_fix_merge_refused(branch, status, message);
        post_comment(ctx, repo, number, &note, &comment_marker).await?;
        return Ok(());
    }
    let issue = record(ctx, repo, report_to).await?;
    let hidden = taskgate_core::hidden_marker(report_to);
    let story = match taskgate_core::story::Marker::find_in(&hidden) {
        Some(taskgate_core::story::Marker::Story { story }) => Some(story),
        _ => None,
    };
    let note = match story {
        Some(_) => taskgate_core::ship::render_merge_refused(number, status, message),
        None => taskgate_core::task::render_merge_refused(number, status, message),
    };
    // A task PR's own change GitHub refused (a workflow file): said there.
    let on = match story.is_none() && taskgate_core::task::workflow_refused(message).is_some() {
        true => number,
        false => issue.number,
    };
    post_comment(ctx, repo, on, &note, &comment_marker).await?;
    if let Some(story) = story {
        let what = ShipWhat::MergeRefused {
            why: format!("GitHub answered {status}: {message}"),
        };
        ship_event(ctx, repo, &story, what, "merge-refused").await?;
    }
    Ok(())
}

/// Marks pull request `number` ready for review if it is still a draft:
/// reads its node id over REST, then asks GraphQL.
pub(super) async fn mark_pull_request_ready(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    number: IssueNumber,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    // The pull request exists (taskgate knows its number from GitHub); a
    // 404 right after it was opened is GitHub's lag.
    let pr = gh.get_pull(number).await.map_err(GitHubError::lagging)?;
    if !pr.draft {
        // Ready already: a person was quicker, or a retry after success.
        return Ok(None);
    }
    gh.mark_ready(&pr.node_id).await?;
    Ok(None)
}

/// Starts `workflow` on `git_ref`: the id of the run, when GitHub says it.
/// A refused dispatch (404, 422) is told on `report_to`.
pub(super) async fn start_workflow(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
    inputs: &BTreeMap<String, String>,
    report_to: &Option<String>,
) -> Result<Option<u64>, GitHubError> {
    match dispatch_or_without_base(ctx, repo, workflow, git_ref, inputs).await {
        Err(GitHubError::Http {
            status: status @ (404 | 422),
            message,
            headers,
        }) => {
            if let Some(marker) = report_to {
                let issue = record(ctx, repo, marker).await?;
                let note = render_dispatch_refused(workflow, git_ref, inputs, status, &message);
                let comment_marker = format!("dispatch-failed effect={}", ctx.row.id);
                post_comment(ctx, repo, issue.number, &note, &comment_marker).await?;
            }
            Err(GitHubError::Http {
                status,
                message,
                headers,
            })
        }
        other => other,
    }
}

/// Inputs a workflow may not declare, dropped when GitHub refuses them:
/// `base` (a runner workflow written by an older `taskgate init`) and
/// `evidence` (an agent workflow written before taskgate sent it).
const OPTIONAL_INPUTS: [&str; 2] = ["base", "evidence"];

/// Dispatches the workflow; where GitHub refuses an optional input
/// ([`OPTIONAL_INPUTS`]), dispatches again without it. Without `base` the
/// job tests the head alone, and the gates say so with the fix (`taskgate
/// init --force`); without `evidence` the agent reads the todo. Either is
/// better than nothing starting until someone updates the workflow.
async fn dispatch_or_without_base(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
    inputs: &BTreeMap<String, String>,
) -> Result<Option<u64>, GitHubError> {
    let gh = ctx.repo(repo);
    let refused = |message: &str| -> Vec<&str> {
        OPTIONAL_INPUTS
            .into_iter()
            .filter(|i| inputs.contains_key(*i) && message.contains(&format!("\"{i}\"")))
            .collect()
    };
    match gh.dispatch_workflow(workflow, git_ref, inputs).await {
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.starts_with("Unexpected inputs provided")
            && !refused(&message).is_empty() =>
        {
            let mut older = inputs.clone();
            for input in refused(&message) {
                older.remove(input);
            }
            gh.dispatch_workflow(workflow, git_ref, &older).await
        }
        other => other,
    }
}

fn render_dispatch_refused(
    workflow: &str,
    git_ref: &str,
    inputs: &BTreeMap<String, String>,
    status: u16,
    message: &str,
) -> String {
    format!(
        "Could not start workflow `{}` on `{}`: GitHub answered {status} ({}). \
         Check that the file exists on that ref and has a `workflow_dispatch` trigger \
         with these inputs: {}.",
        taskgate_core::report::plain_text(workflow),
        taskgate_core::report::plain_text(git_ref),
        taskgate_core::report::plain_text(message),
        inputs
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Records what became of a dispatch: a refusal (404, 422) ends the
/// attempt and reaches the story's ship gate; a started run is recorded
/// under its attempt and story. The effect's result names the run.
pub(super) async fn record_dispatch(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    attempt: &Option<AttemptRef>,
    story_run: &Option<StoryRunRef>,
    started: Result<Option<u64>, GitHubError>,
) -> Result<Option<String>, GitHubError> {
    let run_id = match started {
        Err(GitHubError::Http {
            status: status @ (404 | 422),
            message,
            headers,
        }) => {
            if let Some(attempt) = attempt {
                let why = format!(
                    "workflow `{workflow}` could not be started (GitHub answered {status}: {message})"
                );
                dispatch_refused(ctx, repo, attempt, why).await?;
            }
            if let Some(run) = story_run {
                let why = format!("GitHub answered {status}: {message}");
                let what = ShipWhat::WorkflowRefused {
                    workflow: run.workflow,
                    why,
                };
                ship_event(ctx, repo, &run.story, what, "workflow-refused").await?;
            }
            return Err(GitHubError::Http {
                status,
                message,
                headers,
            });
        }
        other => other?,
    };
    if let (Some(run), Some(run_id)) = (story_run, run_id) {
        if let Err(e) = ctx.store.put_story_run(repo, run_id, run).await {
            tracing::warn!(error = %e, run_id, "recording the story's run failed");
        }
    }
    if let (Some(attempt), Some(run_id)) = (attempt, run_id) {
        // A lost record is not worth a second run: the run's
        // `display_title` still names the attempt.
        if let Err(e) = ctx.store.put_workflow_run(repo, run_id, attempt).await {
            tracing::warn!(error = %e, run_id, "recording the dispatched run failed");
        }
    }
    Ok(run_id.map(|id| json!({ "workflow_run_id": id }).to_string()))
}

/// On a retry, a `workflow_dispatch` run of `workflow` on `git_ref`
/// created since this effect was first tried (a minute's margin for clock
/// skew) and not yet claimed by any attempt or story: the run an earlier
/// try started, whose answer was lost. A second deploy or agent run must
/// not start.
pub(super) async fn find_dispatched_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
) -> Result<Option<u64>, GitHubError> {
    if ctx.attempt <= 1 {
        return Ok(None);
    }
    let branch = git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref);
    let since = ctx.row.created_at_ms - 60_000;
    for run in ctx.repo(repo).dispatched_runs(workflow, branch).await? {
        if run.created_ms < since {
            continue;
        }
        let claimed = ctx
            .store
            .workflow_run_attempt(repo, run.id)
            .await?
            .is_some()
            || ctx.store.story_run(repo, run.id).await?.is_some();
        if !claimed {
            return Ok(Some(run.id));
        }
    }
    Ok(None)
}

/// A refused dispatch ends its attempt as not run (the check runs say why
/// and offer Retry), recorded through the inbox like any runner progress.
async fn dispatch_refused(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    attempt: &AttemptRef,
    why: String,
) -> Result<(), GitHubError> {
    let event = taskgate_core::task::RunEvent {
        repo: repo.clone(),
        story: attempt.story.clone(),
        task: attempt.task.clone(),
        progress: taskgate_core::task::Progress::Skipped {
            attempt: attempt.attempt,
            why,
        },
    };
    ctx.store
        .record_delivery(
            NewDelivery::internal(
                DeliveryId::new(format!("taskgate-dispatch-refused-{}", ctx.row.id)),
                ctx.row.installation,
                &InternalEvent::Run(event),
            )
            .with_action("skipped"),
        )
        .await?;
    Ok(())
}

/// Something for a story's ship gate that GitHub decided (a refused merge
/// or dispatch), recorded through the inbox like runner progress.
pub(super) async fn ship_event(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    story: &StoryId,
    what: ShipWhat,
    name: &str,
) -> Result<(), GitHubError> {
    let event = taskgate_core::ship::ShipEvent {
        repo: repo.clone(),
        story: story.to_owned(),
        what,
    };
    ctx.store
        .record_delivery(
            NewDelivery::internal(
                DeliveryId::new(format!("taskgate-{name}-{}", ctx.row.id)),
                ctx.row.installation,
                &InternalEvent::Ship(event),
            )
            .with_action(name),
        )
        .await?;
    Ok(())
}

/// `POST …/cancel` for each run recorded for `attempt`. GitHub's 409 (the
/// run is completed already) counts as done, as does a run never recorded.
pub(super) async fn cancel_workflow_runs(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    attempt: &AttemptRef,
) -> Result<Option<String>, GitHubError> {
    let runs = ctx.store.workflow_runs_of_attempt(repo, attempt).await?;
    let gh = ctx.repo(repo);
    for run in &runs {
        gh.cancel_run(*run).await?;
    }
    Ok(Some(json!({ "workflow_run_ids": runs }).to_string()))
}
