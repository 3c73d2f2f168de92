//! Effect → GitHub calls, and recording what was written.
//!
//! `perform` maps each effect to one or a few calls on the repository's
//! typed client (`repo::RepoClient`, which owns every path and body). The
//! functions here resolve markers to issue numbers and ids through the
//! store, make the calls, and record the result so the reconciler sees
//! what GitHub now holds. Creating effects on a retry look for their
//! marker first (see `executor`), so an object GitHub accepted just before
//! a crash is found, not made twice.

pub(super) mod branches;
pub(super) mod land;
mod links;
mod runner;
mod runs;
mod ship;
mod store;

pub use store::PerformStore;

use std::collections::{BTreeSet, HashMap};

use octocrab::Octocrab;
use serde_json::json;

use super::client::GitHubError;
use super::repo::{Created, IssueMade, IssuePatch, RepoClient};
use crate::store::{EffectRow, NewDelivery};
use taskgate_core::ids::{DeliveryId, IssueNumber, RepoName, StoryId};
use taskgate_core::internal::{InternalEvent, Reconcile};
use taskgate_core::sync::IssueRecord;
use taskgate_core::{hidden_marker, Effect, IssueState};

pub(super) struct Ctx<'a> {
    pub client: &'a Octocrab,
    /// taskgate's own App: check runs, issues and comments of another App
    /// are never its.
    pub own: super::OwnApp,
    pub store: &'a PerformStore,
    pub row: &'a EffectRow,
    pub attempt: u32,
}

impl<'a> Ctx<'a> {
    /// The typed client for `repo`.
    pub(super) fn repo(&self, repo: &'a RepoName) -> RepoClient<'a> {
        RepoClient::new(self.client, repo)
    }
}

pub(super) async fn record(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
) -> Result<IssueRecord, GitHubError> {
    ctx.store
        .issue_record(repo, marker)
        .await?
        .ok_or_else(|| GitHubError::Config(format!("no issue is recorded for marker `{marker}`")))
}

/// Performs the row's effect: issues, comments, labels and links here;
/// branches, check runs, pull requests and workflows in `perform::runs`.
pub(super) async fn perform(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    let effect = &ctx.row.effect;
    let gh = ctx.repo(effect.repo());
    match effect {
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
            comment, reaction, ..
        } => done(gh.react_to_comment(*comment, *reaction).await),
        Effect::EnsureLabel {
            repo,
            name,
            color,
            description,
        } => ensure_label(ctx, repo, name, color, description).await,
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
        } => label_marked(ctx, repo, marker, add, remove).await,
        Effect::UnassignMarked { .. } => unassign_marked(ctx).await,
        Effect::UpdateIssue {
            repo,
            marker,
            title,
            body,
            labels,
            state,
        } => update_issue(ctx, repo, marker, title, body, labels, *state).await,
        Effect::LinkSubIssue { .. }
        | Effect::AddBlockedBy { .. }
        | Effect::RemoveBlockedBy { .. } => link(ctx).await,
        Effect::PrepareShipCommit { .. }
        | Effect::BuildShipCar { .. }
        | Effect::LandShipCommit { .. }
        | Effect::PrepareRevert { .. }
        | Effect::AdvanceShipQueue { .. }
        | Effect::WakeShipQueue { .. } => ship::perform(ctx).await,
        Effect::StartTaskBranch { .. } => branches::perform(ctx).await,
        Effect::CreateBranch { .. }
        | Effect::CreateCheckRun { .. }
        | Effect::OpenCheckRun { .. }
        | Effect::UpdateCheckRun { .. }
        | Effect::AwaitCheckRun { .. }
        | Effect::CreatePullRequest { .. }
        | Effect::MergePullRequest { .. }
        | Effect::UpdatePullRequest { .. }
        | Effect::MarkPullRequestReady { .. }
        | Effect::DispatchWorkflow { .. }
        | Effect::CancelWorkflowRun { .. } => runs::perform(ctx).await,
        Effect::DispatchRun { job, workflow } => runner::dispatch_run(ctx, job, workflow).await,
        Effect::LabelIssue {
            issue, add, remove, ..
        } => done(label_issue(gh, *issue, add, remove).await),
        Effect::Reconcile { repo, story, round } => {
            enqueue_reconcile(ctx, repo, story, *round).await
        }
    }
}

/// An effect done with nothing to keep as its result.
pub(super) fn done<E: Into<GitHubError>>(
    result: Result<(), E>,
) -> Result<Option<String>, GitHubError> {
    result.map(|()| None).map_err(Into::into)
}

pub(super) async fn post_comment(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    issue: IssueNumber,
    body: &str,
    marker: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    let marker = hidden_marker(marker);
    if ctx.attempt > 1 {
        let since = Some(ctx.row.created_at_ms);
        if let Some(found) = gh.find_comment(&ctx.own, issue, &marker, since).await? {
            let found = Created {
                id: found.id,
                html_url: Some(found.html_url),
            };
            return Ok(Some(found.to_result()));
        }
    }
    let created = gh
        .create_comment(issue, &format!("{body}\n\n{marker}"))
        .await?;
    Ok(Some(created.to_result()))
}

/// The comment carrying `marker` on `issue`, edited to `body`; created
/// when there is none yet.
pub(super) async fn upsert_comment(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    issue: IssueNumber,
    marker: &str,
    body: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    let hidden = hidden_marker(marker);
    let text = format!("{body}\n\n{hidden}");
    let written = match gh.find_comment(&ctx.own, issue, &hidden, None).await? {
        Some(found) => gh.update_comment(found.id, &text).await?,
        None => gh.create_comment(issue, &text).await?,
    };
    Ok(Some(written.to_result()))
}

async fn create_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    title: &str,
    body: &str,
    labels: &[String],
    assignees: &[String],
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(repo);
    let hidden = hidden_marker(marker);
    let body = resolve_issue_refs(ctx, repo, body).await?;
    let body = if body.contains(&hidden) {
        body
    } else {
        format!("{body}\n\n{hidden}")
    };
    // Another effect made it already (a pass that ran while this one was
    // waiting for a retry): the issue is that one, never a second.
    if let Some(made) = ctx.store.issue_record(repo, marker).await? {
        return Ok(Some(
            json!({ "number": made.number.get(), "id": made.id.get() }).to_string(),
        ));
    }
    let mut found = None;
    if ctx.attempt > 1 {
        let label = labels.first().map(String::as_str).unwrap_or_default();
        found = gh.find_issue(&ctx.own, label, &hidden).await?;
    }
    let (created, refused) = match found {
        Some(issue) => (IssueMade::from(&issue), Vec::new()),
        // The record keeps the whole body, so the sync, comparing it with
        // what it would write, does not rewrite a cut one forever.
        None => {
            gh.create_issue_assigning(title, &body, labels, assignees)
                .await?
        }
    };
    let IssueMade { number, id } = created;
    if !refused.is_empty() {
        // Opened without them: said once, in the issue.
        let note = taskgate_core::render::render_unassignable(&refused, labels);
        let marker = format!("unassignable effect={}", ctx.row.id);
        post_comment(ctx, repo, number, &note, &marker).await?;
    }
    let record = IssueRecord {
        number,
        id,
        title: title.to_owned(),
        body,
        labels: labels.iter().cloned().collect(),
        open: true,
        parent: None,
        blocked_by: BTreeSet::new(),
    };
    ctx.store.put_issue_record(repo, marker, record).await?;
    Ok(Some(json!({ "number": number, "id": id }).to_string()))
}

/// `body` with its references to other issues' markers replaced by their
/// numbers, for the issues made earlier in the pass.
async fn resolve_issue_refs(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    body: &str,
) -> Result<String, GitHubError> {
    let mut numbers = HashMap::new();
    for key in taskgate_core::story::referenced_markers(body) {
        if let Some(r) = ctx.store.issue_record(repo, &key).await? {
            numbers.insert(key, r.number.get());
        }
    }
    Ok(taskgate_core::story::resolve_issue_refs(body, |key| {
        numbers.get(key).copied()
    }))
}

async fn update_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    title: &Option<String>,
    body: &Option<String>,
    labels: &Option<Vec<String>>,
    state: Option<IssueState>,
) -> Result<Option<String>, GitHubError> {
    let patch = IssuePatch::of(title, body, labels, state);
    let mut record = record(ctx, repo, marker).await?;
    if let Some(title) = patch.title {
        record.title = title.to_owned();
    }
    if let Some(body) = patch.body {
        record.body = body.to_owned();
    }
    if let Some(labels) = patch.labels {
        record.labels = labels.iter().cloned().collect();
    }
    if let Some(state) = patch.state {
        record.open = state == IssueState::Open;
    }
    ctx.repo(repo).update_issue(record.number, &patch).await?;
    ctx.store.put_issue_record(repo, marker, record).await?;
    Ok(None)
}

/// Adds and removes labels by issue number; a label already gone is fine.
pub(super) async fn label_issue(
    gh: RepoClient<'_>,
    issue: IssueNumber,
    add: &[String],
    remove: &[String],
) -> Result<(), GitHubError> {
    if !add.is_empty() {
        gh.add_labels(issue, add).await?;
    }
    for name in remove {
        gh.remove_label(issue, name).await?;
    }
    Ok(())
}

async fn label_marked(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    add: &[String],
    remove: &[String],
) -> Result<Option<String>, GitHubError> {
    let mut issue = record(ctx, repo, marker).await?;
    label_issue(ctx.repo(repo), issue.number, add, remove).await?;
    issue.labels.extend(add.iter().cloned());
    for name in remove {
        issue.labels.remove(name);
    }
    ctx.store.put_issue_record(repo, marker, issue).await?;
    Ok(None)
}

/// [`Effect::UnassignMarked`]: the assignees off the marked issue.
async fn unassign_marked(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    let Effect::UnassignMarked {
        repo,
        marker,
        assignees,
    } = &ctx.row.effect
    else {
        unreachable!("called for UnassignMarked only")
    };
    let issue = record(ctx, repo, marker).await?;
    ctx.repo(repo)
        .remove_assignees(issue.number, assignees)
        .await?;
    Ok(None)
}

/// Performs a sub-issue or blocked-by effect, the linked issue read in its
/// own repository (`child_repo`, `blocker_repo`; the effect's `repo` when
/// `None`).
async fn link(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    match &ctx.row.effect {
        Effect::LinkSubIssue {
            repo,
            parent,
            child,
            replace_parent,
            child_repo,
        } => {
            let child = (child_repo.as_ref().unwrap_or(repo), child.as_str());
            link_sub_issue(ctx, repo, parent, child, *replace_parent).await
        }
        Effect::AddBlockedBy {
            repo,
            marker,
            blocker,
            blocker_repo,
        }
        | Effect::RemoveBlockedBy {
            repo,
            marker,
            blocker,
            blocker_repo,
        } => {
            let add = matches!(ctx.row.effect, Effect::AddBlockedBy { .. });
            let blocker = (blocker_repo.as_ref().unwrap_or(repo), blocker.as_str());
            set_blocked_by(ctx, repo, marker, blocker, add).await
        }
        other => unreachable!("`{}` is not a link", other.name()),
    }
}

/// Links the child (its repository and marker: another repository of the
/// owner for a task of a story spanning repositories) under `parent` in
/// `repo`: GitHub takes the child by its id, whatever its repository.
async fn link_sub_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    parent: &str,
    (child_repo, child): (&RepoName, &str),
    replace_parent: bool,
) -> Result<Option<String>, GitHubError> {
    let (p, mut c) = (
        record(ctx, repo, parent).await?,
        record(ctx, child_repo, child).await?,
    );
    // Both issues are taskgate's and exist; a child just created may not
    // be visible to the link yet.
    match ctx
        .repo(repo)
        .add_sub_issue(p.number, c.id, replace_parent)
        .await
    {
        Ok(()) => {}
        // Linked already (an earlier attempt whose answer was lost, or a
        // second pass that read a list GitHub had not updated yet): done.
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.contains("duplicate sub-issues") => {}
        // Past GitHub's limits: said on the child once, not retried.
        Err(e) if links::is_refused_link(&e) => {
            links::say_link_refused(ctx, (child_repo, repo), &p, &c, &e).await?;
        }
        Err(e) => return Err(e.lagging()),
    }
    c.parent = Some(parent.to_owned());
    ctx.store.put_issue_record(child_repo, child, c).await?;
    Ok(None)
}

/// Adds or removes one blocked-by link (issue dependencies API) and records
/// it. Removing a link GitHub no longer has (404) counts as done. The
/// blocker may live in another repository (its repository and marker):
/// GitHub takes it by its id.
async fn set_blocked_by(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    marker: &str,
    (blocker_repo, blocker): (&RepoName, &str),
    add: bool,
) -> Result<Option<String>, GitHubError> {
    let (mut r, b) = (
        record(ctx, repo, marker).await?,
        record(ctx, blocker_repo, blocker).await?,
    );
    let gh = ctx.repo(repo);
    if add {
        // A later attempt looks first: the one before may have made the
        // link (its answer lost, or its claim run out), and GitHub refuses
        // a second one (a refusal its secondary limits count).
        if ctx.attempt == 1 || !gh.is_blocked_by(r.number, b.id).await? {
            match gh.add_blocked_by(r.number, b.id).await {
                Ok(()) => {}
                // Made by an earlier effect whose answer was lost (the
                // sync asked again, not knowing): GitHub refuses the
                // second with 422, and the link is there.
                Err(e) if e.status() == Some(422) && gh.is_blocked_by(r.number, b.id).await? => {}
                Err(e) => return Err(e),
            }
        }
        r.blocked_by.insert(blocker.to_owned());
    } else {
        gh.remove_blocked_by(r.number, b.id).await?;
        r.blocked_by.remove(blocker);
    }
    ctx.store.put_issue_record(repo, marker, r).await?;
    Ok(None)
}

/// The next pass goes through the inbox like any delivery, so it survives
/// a crash; its id makes a repeated enqueue a no-op.
async fn enqueue_reconcile(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    story: &StoryId,
    round: u32,
) -> Result<Option<String>, GitHubError> {
    let pass = InternalEvent::Reconcile(Reconcile {
        repo: repo.clone(),
        story: story.to_owned(),
        round,
        started: None,
    });
    ctx.store
        .record_delivery(NewDelivery::internal(
            DeliveryId::new(format!("taskgate-reconcile-{}", ctx.row.id)),
            ctx.row.installation,
            &pass,
        ))
        .await?;
    Ok(None)
}

/// Makes a label taskgate uses, unless it made it already: decisions made
/// before the first of them ran may each have queued it, and once it is
/// made the others cost no write.
async fn ensure_label(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    name: &str,
    color: &str,
    description: &str,
) -> Result<Option<String>, GitHubError> {
    if ctx.store.labels(repo).await?.contains(name) {
        return Ok(None);
    }
    ctx.repo(repo)
        .ensure_label(name, color, description)
        .await?;
    done(ctx.store.add_label(repo, name).await)
}
