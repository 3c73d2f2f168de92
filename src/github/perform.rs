//! Effect → GitHub calls, and recording what was written.
//!
//! Every function here is one effect: it resolves markers to issue numbers
//! and ids through the store, makes the call, and records the result so the
//! reconciler sees what GitHub now holds. Creating effects on a retry look
//! for their marker first (see `executor`). Every issue, pull request and
//! comment body goes out through `fit_github_body`: one over GitHub's
//! 65,536-character limit is cut with a note, keeping its marker last,
//! instead of being refused and lost.

use std::collections::BTreeSet;

use http::Method;
use octocrab::Octocrab;
use serde_json::{json, Value};

use super::client::{send, ApiResponse, GitHubError};
use super::perform_runs as runs;
use crate::core::render::fit_github_body;
use crate::core::sync::IssueRecord;
use crate::core::{hidden_marker, AttemptRef, CheckRunSpec, Effect, IssueState};
use crate::ids::{DeliveryId, IssueId, IssueNumber, RepoName};
use crate::store::{Disposition, EffectRow, NewDelivery, Store};

/// GitHub allows at most 50 annotations per check-run request.
const MAX_ANNOTATIONS: usize = 50;

pub(super) struct Ctx<'a> {
    pub client: &'a Octocrab,
    pub store: &'a Store,
    pub row: &'a EffectRow,
    pub attempt: u32,
}

pub(super) fn store_err(e: crate::store::StoreError) -> GitHubError {
    GitHubError::Config(format!("store: {e}"))
}

pub(super) async fn record(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
) -> Result<IssueRecord, GitHubError> {
    ctx.store
        .issue_record(repo, marker)
        .await
        .map_err(store_err)?
        .ok_or_else(|| GitHubError::Config(format!("no issue is recorded for marker `{marker}`")))
}

/// `{"id":…,"html_url":…}` of a created object, kept as the effect's result.
pub(super) fn created_ref(response: &ApiResponse) -> Result<String, GitHubError> {
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Created {
        id: u64,
        #[serde(default)]
        html_url: Option<String>,
    }
    let created: Created = response.json()?;
    Ok(serde_json::to_string(&created).expect("serialises"))
}

pub(super) async fn perform(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    match &ctx.row.effect {
        Effect::PostComment {
            repo,
            issue,
            body,
            marker,
        } => post_comment(ctx, repo, *issue, body, marker).await,
        Effect::UpsertComment {
            repo,
            issue,
            marker,
            body,
        } => upsert_comment(ctx, repo, *issue, marker, body).await,
        Effect::ReactToComment {
            repo,
            comment,
            reaction,
        } => {
            let path = format!("/repos/{repo}/issues/comments/{comment}/reactions");
            send(
                ctx.client,
                Method::POST,
                &path,
                Some(&json!({ "content": reaction })),
            )
            .await?;
            Ok(None)
        }
        Effect::EnsureLabel {
            repo,
            name,
            color,
            description,
        } => {
            let body = json!({ "name": name, "color": color, "description": description });
            // "already_exists": someone (or a lost run) made it; keep theirs.
            post_unless_exists(
                ctx,
                &format!("/repos/{repo}/labels"),
                &body,
                "already_exists",
            )
            .await?;
            ctx.store.add_label(repo, name).await.map_err(store_err)?;
            Ok(None)
        }
        Effect::CreateIssue {
            repo,
            marker,
            title,
            body,
            labels,
            assignees,
        } => create_issue(ctx, repo, marker, title, body, labels, assignees).await,
        Effect::CommentOnMarker {
            repo,
            marker,
            body,
            comment_marker,
        } => {
            let issue = record(ctx, repo, marker).await?;
            post_comment(ctx, repo, issue.number, body, comment_marker).await
        }
        Effect::LabelMarked {
            repo,
            marker,
            add,
            remove,
        } => {
            let mut issue = record(ctx, repo, marker).await?;
            runs::label_issue(ctx, repo, issue.number, add, remove).await?;
            issue.labels.extend(add.iter().cloned());
            for name in remove {
                issue.labels.remove(name);
            }
            ctx.store
                .put_issue_record(repo, marker, issue)
                .await
                .map_err(store_err)?;
            Ok(None)
        }
        Effect::UpdateIssue {
            repo,
            marker,
            title,
            body,
            labels,
            state,
        } => {
            update_issue(
                ctx,
                repo,
                marker,
                title.as_deref(),
                body.as_deref(),
                labels.as_deref(),
                *state,
            )
            .await
        }
        Effect::LinkSubIssue {
            repo,
            parent,
            child,
            replace_parent,
        } => {
            let (p, mut c) = (
                record(ctx, repo, parent).await?,
                record(ctx, repo, child).await?,
            );
            let path = format!("/repos/{repo}/issues/{}/sub_issues", p.number);
            let body = json!({ "sub_issue_id": c.id.0, "replace_parent": replace_parent });
            // Both issues are taskgate's and exist; a child just created
            // may not be visible to the link yet.
            send(ctx.client, Method::POST, &path, Some(&body))
                .await
                .map_err(GitHubError::lagging)?;
            c.parent = Some(parent.clone());
            ctx.store
                .put_issue_record(repo, child, c)
                .await
                .map_err(store_err)?;
            Ok(None)
        }
        Effect::AddBlockedBy {
            repo,
            marker,
            blocker,
        } => set_blocked_by(ctx, repo, marker, blocker, true).await,
        Effect::RemoveBlockedBy {
            repo,
            marker,
            blocker,
        } => set_blocked_by(ctx, repo, marker, blocker, false).await,
        Effect::CreateBranch { repo, name, sha } => {
            let body = json!({ "ref": format!("refs/heads/{name}"), "sha": sha });
            post_unless_exists(
                ctx,
                &format!("/repos/{repo}/git/refs"),
                &body,
                "already exists",
            )
            .await?;
            ctx.store.add_branch(repo, name).await.map_err(store_err)?;
            Ok(None)
        }
        Effect::CreateCheckRun { repo, check } => create_check_run(ctx, repo, check).await,
        Effect::OpenCheckRun {
            repo,
            key,
            name,
            head_sha,
            title,
            summary,
        } => runs::open_check_run(ctx, repo, key, name, head_sha, title, summary).await,
        Effect::UpdateCheckRun { repo, key, update } => {
            runs::update_check_run(ctx, repo, key, update).await
        }
        Effect::CreatePullRequest {
            repo,
            head,
            base,
            title,
            body,
            draft,
        } => runs::create_pull_request(ctx, repo, head, base, title, body, *draft).await,
        Effect::MergePullRequest {
            repo,
            number,
            sha,
            method,
            title,
            report_to,
        } => runs::merge_pull_request(ctx, repo, *number, sha, *method, title, report_to).await,
        Effect::DispatchWorkflow {
            repo,
            workflow,
            git_ref,
            inputs,
            report_to,
            attempt,
            story_run,
        } => {
            // A retry may follow a dispatch GitHub accepted but whose answer
            // was lost: a second deploy or agent run must not start.
            let earlier = if ctx.attempt > 1 {
                find_dispatched_run(ctx, repo, workflow, git_ref).await?
            } else {
                None
            };
            let dispatched = match earlier {
                Some(run_id) => Ok(Dispatched {
                    run_id: Some(run_id),
                    result: Some(json!({ "workflow_run_id": run_id }).to_string()),
                }),
                None => {
                    dispatch_workflow(ctx, repo, workflow, git_ref, inputs, report_to.as_deref())
                        .await
                }
            };
            let dispatched = match dispatched {
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
                        let what = crate::core::ship::ShipWhat::WorkflowRefused {
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
            if let (Some(run), Some(run_id)) = (story_run, dispatched.run_id) {
                if let Err(e) = ctx.store.put_story_run(repo, run_id, run).await {
                    tracing::warn!(error = %e, run_id, "recording the story's run failed");
                }
            }
            if let (Some(attempt), Some(run_id)) = (attempt, dispatched.run_id) {
                // A lost record is not worth a second run: the run's
                // `display_title` still names the attempt.
                if let Err(e) = ctx.store.put_workflow_run(repo, run_id, attempt).await {
                    tracing::warn!(error = %e, run_id, "recording the dispatched run failed");
                }
            }
            Ok(dispatched.result)
        }
        Effect::LabelIssue {
            repo,
            issue,
            add,
            remove,
        } => runs::label_issue(ctx, repo, *issue, add, remove).await,
        Effect::UpdatePullRequest {
            repo,
            number,
            title,
            body,
        } => runs::update_pull_request(ctx, repo, *number, title.as_deref(), body.as_deref()).await,
        Effect::MarkPullRequestReady { repo, number } => {
            runs::mark_pull_request_ready(ctx, repo, *number).await
        }
        Effect::CancelWorkflowRun { repo, attempt } => {
            cancel_workflow_runs(ctx, repo, attempt).await
        }
        Effect::Reconcile { repo, story, round } => {
            // The next pass goes through the inbox like any delivery, so it
            // survives a crash; its id makes a repeated enqueue a no-op.
            let payload = json!({ "repo": repo, "story": story, "round": round, "installation": ctx.row.installation });
            ctx.store
                .record_delivery(NewDelivery {
                    delivery_id: DeliveryId(format!("taskgate-reconcile-{}", ctx.row.id)),
                    event: crate::intake::event::RECONCILE_EVENT.to_owned(),
                    action: None,
                    installation: Some(ctx.row.installation),
                    payload: serde_json::to_vec(&payload).expect("serialises").into(),
                    disposition: Disposition::Pending,
                })
                .await
                .map_err(store_err)?;
            Ok(None)
        }
    }
}

/// A started workflow: the run's id when GitHub said it, and the effect's
/// result to keep.
struct Dispatched {
    run_id: Option<u64>,
    result: Option<String>,
}

/// A `workflow_dispatch` run of `workflow` on `git_ref` created since this
/// effect was first tried (a minute's margin for clock skew) and not yet
/// claimed by any attempt or story: the run an earlier try started.
async fn find_dispatched_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
) -> Result<Option<u64>, GitHubError> {
    let branch = git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref);
    let path = format!(
        "/repos/{repo}/actions/workflows/{workflow}/runs?event=workflow_dispatch&branch={branch}&per_page=30"
    );
    let list: Value = match send(ctx.client, Method::GET, &path, None).await {
        Ok(response) => response.json()?,
        // No such workflow: the dispatch itself will say so.
        Err(GitHubError::Http { status: 404, .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let since = ctx.row.created_at_ms - 60_000;
    for run in list["workflow_runs"].as_array().into_iter().flatten() {
        let (Some(id), Some(created)) = (run["id"].as_u64(), run["created_at"].as_str()) else {
            continue;
        };
        let created_ms = chrono::DateTime::parse_from_rfc3339(created)
            .map(|t| t.timestamp_millis())
            .unwrap_or(i64::MIN);
        if created_ms < since {
            continue;
        }
        let claimed = ctx
            .store
            .workflow_run_attempt(repo, id)
            .await
            .map_err(store_err)?
            .is_some()
            || ctx
                .store
                .story_run(repo, id)
                .await
                .map_err(store_err)?
                .is_some();
        if !claimed {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// `POST …/dispatches`, asking for the run's id (`return_run_details`, which
/// GitHub answers with 200 and the run; older hosts answer 204 without it).
async fn dispatch_workflow(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
    inputs: &std::collections::BTreeMap<String, String>,
    report_to: Option<&str>,
) -> Result<Dispatched, GitHubError> {
    let path = format!("/repos/{repo}/actions/workflows/{workflow}/dispatches");
    let body = json!({ "ref": git_ref, "inputs": inputs, "return_run_details": true });
    match send(ctx.client, Method::POST, &path, Some(&body)).await {
        Ok(response) => {
            let run_id = response
                .json::<Value>()
                .ok()
                .and_then(|v| v.get("workflow_run_id").and_then(Value::as_u64));
            Ok(Dispatched {
                run_id,
                result: run_id.map(|id| json!({ "workflow_run_id": id }).to_string()),
            })
        }
        Err(GitHubError::Http {
            status: status @ (404 | 422),
            message,
            headers,
        }) => {
            if let Some(marker) = report_to {
                let issue = record(ctx, repo, marker).await?;
                let note = format!(
                    "Could not start workflow `{}` on `{}`: GitHub answered {status} ({}). \
                     Check that the file exists on that ref and has a `workflow_dispatch` trigger \
                     with these inputs: {}.",
                    crate::core::report::plain_text(workflow),
                    crate::core::report::plain_text(git_ref),
                    crate::core::report::plain_text(&message),
                    inputs
                        .keys()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                post_comment(
                    ctx,
                    repo,
                    issue.number,
                    &note,
                    &format!("dispatch-failed effect={}", ctx.row.id),
                )
                .await?;
            }
            Err(GitHubError::Http {
                status,
                message,
                headers,
            })
        }
        Err(e) => Err(e),
    }
}

/// A refused dispatch ends its attempt as not run (the check runs say why
/// and offer Retry), recorded through the inbox like any runner progress.
async fn dispatch_refused(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    attempt: &AttemptRef,
    why: String,
) -> Result<(), GitHubError> {
    let event = crate::core::task::RunEvent {
        repo: repo.clone(),
        story: attempt.story.clone(),
        task: attempt.task.clone(),
        progress: crate::core::task::Progress::Skipped {
            attempt: attempt.attempt,
            why,
        },
    };
    ctx.store
        .record_delivery(NewDelivery {
            delivery_id: DeliveryId(format!("taskgate-dispatch-refused-{}", ctx.row.id)),
            event: crate::core::task::RUN_EVENT.to_owned(),
            action: Some("skipped".into()),
            installation: Some(ctx.row.installation),
            payload: serde_json::to_vec(&event).expect("serialises").into(),
            disposition: Disposition::Pending,
        })
        .await
        .map_err(store_err)?;
    Ok(())
}

/// Something for a story's ship gate that GitHub decided (a refused merge
/// or dispatch), recorded through the inbox like runner progress.
pub(super) async fn ship_event(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    story: &str,
    what: crate::core::ship::ShipWhat,
    name: &str,
) -> Result<(), GitHubError> {
    let event = crate::core::ship::ShipEvent {
        repo: repo.clone(),
        story: story.to_owned(),
        what,
    };
    ctx.store
        .record_delivery(NewDelivery {
            delivery_id: DeliveryId(format!("taskgate-{name}-{}", ctx.row.id)),
            event: crate::core::ship::SHIP_EVENT.to_owned(),
            action: Some(name.to_owned()),
            installation: Some(ctx.row.installation),
            payload: serde_json::to_vec(&event).expect("serialises").into(),
            disposition: Disposition::Pending,
        })
        .await
        .map_err(store_err)?;
    Ok(())
}

/// `POST …/cancel` for each run recorded for `attempt`. GitHub's 409 (the
/// run is completed already) counts as done, as does a run never recorded.
async fn cancel_workflow_runs(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    attempt: &AttemptRef,
) -> Result<Option<String>, GitHubError> {
    let runs = ctx
        .store
        .workflow_runs_of_attempt(repo, attempt)
        .await
        .map_err(store_err)?;
    for run in &runs {
        let path = format!("/repos/{repo}/actions/runs/{run}/cancel");
        match send(ctx.client, Method::POST, &path, None).await {
            Ok(_) | Err(GitHubError::Http { status: 409, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(json!({ "workflow_run_ids": runs }).to_string()))
}

/// Adds or removes one blocked-by link (issue dependencies API) and records
/// it. Removing a link GitHub no longer has (404) counts as done.
async fn set_blocked_by(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    blocker: &str,
    add: bool,
) -> Result<Option<String>, GitHubError> {
    let (mut r, b) = (
        record(ctx, repo, marker).await?,
        record(ctx, repo, blocker).await?,
    );
    let links = format!("/repos/{repo}/issues/{}/dependencies/blocked_by", r.number);
    if add {
        send(
            ctx.client,
            Method::POST,
            &links,
            Some(&json!({ "issue_id": b.id.0 })),
        )
        .await?;
        r.blocked_by.insert(blocker.to_owned());
    } else {
        match send(
            ctx.client,
            Method::DELETE,
            &format!("{links}/{}", b.id),
            None,
        )
        .await
        {
            Ok(_) | Err(GitHubError::Http { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
        r.blocked_by.remove(blocker);
    }
    ctx.store
        .put_issue_record(repo, marker, r)
        .await
        .map_err(store_err)?;
    Ok(None)
}

/// POSTs a create; GitHub's 422 saying the object already exists counts as
/// done (the object is what we wanted, whoever made it).
async fn post_unless_exists(
    ctx: &Ctx<'_>,
    path: &str,
    body: &Value,
    exists: &str,
) -> Result<(), GitHubError> {
    match send(ctx.client, Method::POST, path, Some(body)).await {
        Ok(_) => Ok(()),
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.contains(exists) => Ok(()),
        Err(e) => Err(e),
    }
}

pub(super) async fn post_comment(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    issue: IssueNumber,
    body: &str,
    marker: &str,
) -> Result<Option<String>, GitHubError> {
    let marker = hidden_marker(marker);
    let comments = format!("/repos/{repo}/issues/{issue}/comments");
    if ctx.attempt > 1 {
        if let Some(found) =
            find_by_marker(ctx.client, &comments, &marker, Some(ctx.row.created_at_ms)).await?
        {
            return Ok(Some(found.to_string()));
        }
    }
    let body = json!({ "body": fit_github_body(&format!("{body}\n\n{marker}")) });
    let response = send(ctx.client, Method::POST, &comments, Some(&body)).await?;
    Ok(Some(created_ref(&response)?))
}

/// The comment carrying `marker` on `issue`, edited to `body`; created
/// when there is none yet.
async fn upsert_comment(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    issue: IssueNumber,
    marker: &str,
    body: &str,
) -> Result<Option<String>, GitHubError> {
    let hidden = hidden_marker(marker);
    let comments = format!("/repos/{repo}/issues/{issue}/comments");
    let text = json!({ "body": fit_github_body(&format!("{body}\n\n{hidden}")) });
    match find_by_marker(ctx.client, &comments, &hidden, None).await? {
        Some(found) => {
            let id = found["id"]
                .as_u64()
                .ok_or_else(|| GitHubError::Unexpected("a listed comment without an id".into()))?;
            let path = format!("/repos/{repo}/issues/comments/{id}");
            let response = send(ctx.client, Method::PATCH, &path, Some(&text)).await?;
            Ok(Some(created_ref(&response)?))
        }
        None => {
            let response = send(ctx.client, Method::POST, &comments, Some(&text)).await?;
            Ok(Some(created_ref(&response)?))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn create_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    title: &str,
    body: &str,
    labels: &[String],
    assignees: &[String],
) -> Result<Option<String>, GitHubError> {
    let hidden = hidden_marker(marker);
    // Issues made earlier in the pass have their numbers now.
    let mut numbers = std::collections::HashMap::new();
    for key in crate::core::story::referenced_markers(body) {
        if let Some(r) = ctx
            .store
            .issue_record(repo, &key)
            .await
            .map_err(store_err)?
        {
            numbers.insert(key, r.number.0);
        }
    }
    let body = crate::core::story::resolve_issue_refs(body, |key| numbers.get(key).copied());
    let body = if body.contains(&hidden) {
        body
    } else {
        format!("{body}\n\n{hidden}")
    };
    let mut found = None;
    if ctx.attempt > 1 {
        let label = labels.first().map(String::as_str).unwrap_or_default();
        let list = format!("/repos/{repo}/issues?state=all&labels={label}");
        found = find_by_marker(ctx.client, &list, &hidden, None).await?;
    }
    let created = match found {
        Some(issue) => issue,
        None => {
            // The record keeps the whole body, so the sync, comparing it
            // with what it would write, does not rewrite a cut one forever.
            let mut payload =
                json!({ "title": title, "body": fit_github_body(&body), "labels": labels });
            if !assignees.is_empty() {
                payload["assignees"] = json!(assignees);
            }
            send(
                ctx.client,
                Method::POST,
                &format!("/repos/{repo}/issues"),
                Some(&payload),
            )
            .await?
            .json::<Value>()?
        }
    };
    let number = created["number"]
        .as_u64()
        .ok_or_else(|| GitHubError::Unexpected("issue without a number".into()))?;
    let id = created["id"]
        .as_u64()
        .ok_or_else(|| GitHubError::Unexpected("issue without an id".into()))?;
    let record = IssueRecord {
        number: IssueNumber(number),
        id: IssueId(id),
        title: title.to_owned(),
        body,
        labels: labels.iter().cloned().collect(),
        open: true,
        parent: None,
        blocked_by: BTreeSet::new(),
    };
    ctx.store
        .put_issue_record(repo, marker, record)
        .await
        .map_err(store_err)?;
    Ok(Some(json!({ "number": number, "id": id }).to_string()))
}

#[allow(clippy::too_many_arguments)]
async fn update_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    title: Option<&str>,
    body: Option<&str>,
    labels: Option<&[String]>,
    state: Option<IssueState>,
) -> Result<Option<String>, GitHubError> {
    let mut record = record(ctx, repo, marker).await?;
    let mut patch = serde_json::Map::new();
    if let Some(title) = title {
        patch.insert("title".into(), json!(title));
        record.title = title.to_owned();
    }
    if let Some(body) = body {
        patch.insert("body".into(), json!(fit_github_body(body)));
        record.body = body.to_owned();
    }
    if let Some(labels) = labels {
        patch.insert("labels".into(), json!(labels));
        record.labels = labels.iter().cloned().collect();
    }
    match state {
        Some(IssueState::Open) => {
            patch.insert("state".into(), json!("open"));
            record.open = true;
        }
        Some(IssueState::ClosedCompleted) => {
            patch.insert("state".into(), json!("closed"));
            patch.insert("state_reason".into(), json!("completed"));
            record.open = false;
        }
        Some(IssueState::ClosedNotPlanned) => {
            patch.insert("state".into(), json!("closed"));
            patch.insert("state_reason".into(), json!("not_planned"));
            record.open = false;
        }
        None => {}
    }
    let path = format!("/repos/{repo}/issues/{}", record.number);
    send(
        ctx.client,
        Method::PATCH,
        &path,
        Some(&Value::Object(patch)),
    )
    .await?;
    ctx.store
        .put_issue_record(repo, marker, record)
        .await
        .map_err(store_err)?;
    Ok(None)
}

async fn create_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    check: &CheckRunSpec,
) -> Result<Option<String>, GitHubError> {
    let annotations: Vec<Value> = check
        .annotations
        .iter()
        .take(MAX_ANNOTATIONS)
        .map(|a| {
            json!({
                "path": a.path, "start_line": a.line, "end_line": a.line,
                "annotation_level": "failure", "message": a.message,
            })
        })
        .collect();
    let body = json!({
        "name": check.name,
        "head_sha": check.head_sha,
        "status": "completed",
        "conclusion": check.conclusion,
        "output": { "title": check.title, "summary": check.summary, "annotations": annotations },
    });
    let response = send(
        ctx.client,
        Method::POST,
        &format!("/repos/{repo}/check-runs"),
        Some(&body),
    )
    .await?;
    Ok(Some(created_ref(&response)?))
}

/// Pages through a list endpoint for an item whose body holds `marker`.
pub(super) async fn find_by_marker(
    client: &Octocrab,
    list_path: &str,
    marker: &str,
    since_ms: Option<i64>,
) -> Result<Option<Value>, GitHubError> {
    let sep = if list_path.contains('?') { '&' } else { '?' };
    let mut url = format!("{list_path}{sep}per_page=100");
    if let Some(ms) = since_ms {
        // A minute's margin for clock skew between taskgate and GitHub.
        let since = chrono::DateTime::from_timestamp_millis(ms - 60_000).unwrap_or_default();
        url.push_str(&format!("&since={}", since.format("%Y-%m-%dT%H:%M:%SZ")));
    }
    for _ in 0..50 {
        let response = send(client, Method::GET, &url, None).await?;
        let page: Vec<Value> = response.json()?;
        // Only the bot's own items: anyone may paste a marker into a
        // comment, and taskgate must not adopt (or edit) theirs.
        if let Some(item) = page.into_iter().find(|i| {
            i["user"]["type"].as_str() == Some("Bot")
                && i["body"].as_str().is_some_and(|b| b.contains(marker))
        }) {
            return Ok(Some(item));
        }
        match response.next_page() {
            Some(next) => url = next,
            None => break,
        }
    }
    Ok(None)
}
