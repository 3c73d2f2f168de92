//! Typed webhook → core [`Event`], and the repository webhooks (pull
//! request, push, check run, check suite, workflow run) → the core's
//! domain events (`taskgate_core::webhook`). The only place that knows
//! both a payload and an event: the handlers in `app` take the events.

use super::event::{Webhook, WebhookKind};
use super::payload::{
    CheckRunPayload, CheckSuitePayload, InstallationAction, InstallationRepositoriesAction,
    IssueCommentAction, PullRequestPayload, PullRequestReviewPayload, PushPayload, RepositoryRef,
    User, WorkflowRunPayload,
};
use taskgate_core::ids::RepoName;
use taskgate_core::webhook::{
    BranchRef, CheckRunEvent, CheckSuiteEvent, PullRequestEvent, PushEvent, PushedCommit,
    ReviewEvent, ReviewVerdict, WorkflowRunEvent,
};
use taskgate_core::{Actor, Event};

/// Why a parsed payload could not become an event.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TranslateError(String);

/// The core's outcome for a delivery of a subscribed event whose action
/// nothing acts on ([`WebhookKind::matters`]), when that decision changes
/// nothing and asks for nothing: such a delivery is done as soon as it is
/// recorded.
pub fn settled_outcome(kind: &WebhookKind) -> Option<String> {
    if kind.matters() {
        return None;
    }
    let decision = taskgate_core::on_unused(kind.event_name(), kind.action());
    (decision.changes.is_empty() && decision.effects.is_empty()).then_some(decision.outcome)
}

/// The core event for a webhook the core decides alone: taskgate's App
/// lifecycle, and a comment sent without an installation. Webhooks the
/// shell routes to its handlers first (runs, ship, sync, commands) are
/// `Unused` here.
/// A payload the core's event cannot be made of: never worth another try.
impl crate::transient::Transient for TranslateError {
    fn is_transient(&self) -> bool {
        false
    }
}

pub fn to_event(webhook: &Webhook) -> Result<Event, TranslateError> {
    let kind = webhook.kind();
    let unused = || Event::Unused {
        event: kind.event_name().to_owned(),
        action: kind.action().map(str::to_owned),
    };
    Ok(match webhook {
        Webhook::Ping(_) => Event::Ping,
        Webhook::Installation(p) => match &p.action {
            InstallationAction::Deleted => Event::InstallationDeleted {
                installation: p.installation.id,
            },
            InstallationAction::Created
            | InstallationAction::NewPermissionsAccepted
            | InstallationAction::Unsuspend => Event::InstallationChanged {
                installation: p.installation.id,
                account: p.installation.account.as_ref().map(|a| a.login.clone()),
                added: repo_names(p.repositories.as_deref().unwrap_or_default())?,
                removed: vec![],
            },
            InstallationAction::Other(_) => unused(),
        },
        Webhook::InstallationRepositories(p) => match &p.action {
            InstallationRepositoriesAction::Added | InstallationRepositoriesAction::Removed => {
                Event::InstallationChanged {
                    installation: p.installation.id,
                    account: p.installation.account.as_ref().map(|a| a.login.clone()),
                    added: repo_names(&p.repositories_added)?,
                    removed: repo_names(&p.repositories_removed)?,
                }
            }
            InstallationRepositoriesAction::Other(_) => unused(),
        },
        Webhook::IssueComment(p) => match &p.action {
            IssueCommentAction::Created => Event::CommentCreated {
                repo: repo_name(&p.repository.full_name)?,
                issue: p.issue.number,
                is_pull_request: p.issue.pull_request.is_some(),
                comment: p.comment.id,
                author: actor(
                    &p.comment.user,
                    p.comment.performed_via_github_app.as_ref().map(|a| a.id),
                ),
                body: p.comment.body.clone().unwrap_or_default(),
            },
            IssueCommentAction::Edited | IssueCommentAction::Other(_) => unused(),
        },
        Webhook::Issues(_)
        | Webhook::PullRequest(_)
        | Webhook::Push(_)
        | Webhook::CheckRun(_)
        | Webhook::CheckSuite(_)
        | Webhook::WorkflowRun(_)
        | Webhook::MergeGroup(_)
        | Webhook::PullRequestReview(_) => unused(),
    })
}

/// A `pull_request` webhook as the core's event.
pub fn pull_request(p: &PullRequestPayload) -> Result<PullRequestEvent, TranslateError> {
    let pr = &p.pull_request;
    Ok(PullRequestEvent {
        repo: repo_name(&p.repository.full_name)?,
        installation: p.installation.as_ref().map(|i| i.id),
        action: p.action.clone(),
        number: pr.number,
        head: BranchRef::new(&pr.head.name, pr.head.sha.clone()),
        base: pr.base.name.clone(),
        repo_id: p.repository.id,
        head_repo_id: pr.head.repo.as_ref().map(|r| r.id),
        default_branch: p.repository.default_branch.clone(),
        draft: pr.draft.unwrap_or(false),
        merged: pr.merged.unwrap_or(false),
        merge_commit: pr.merge_commit_sha.clone(),
        merged_by: pr.merged_by.as_ref().map(|u| actor(u, None)),
        commits: pr.commits,
        label: p.label.as_ref().map(|l| l.name.clone()),
        sender: p.sender.as_ref().map(|u| actor(u, None)),
        author: Some(actor(&pr.user, None)),
        closes: taskgate_core::task::closing_references(pr.body.as_deref().unwrap_or_default()),
        before: p.before.clone(),
        base_changed: p.changes.as_ref().is_some_and(|c| c.base.is_some()),
    })
}

/// A `pull_request_review` webhook as the core's event.
pub fn review(p: &PullRequestReviewPayload) -> Result<ReviewEvent, TranslateError> {
    Ok(ReviewEvent {
        repo: repo_name(&p.repository.full_name)?,
        action: p.action.clone(),
        pr: p.pull_request.number,
        pr_open: p.pull_request.state == "open",
        review: p.review.id,
        verdict: ReviewVerdict::parse(&p.review.state),
        commit: p.review.commit_id.clone(),
        body: p.review.body.clone().unwrap_or_default(),
        author: actor(&p.review.user, None),
        sender: p.sender.as_ref().map(|u| actor(u, None)),
    })
}

/// A `push` webhook as the core's event.
pub fn push(p: &PushPayload) -> Result<PushEvent, TranslateError> {
    Ok(PushEvent {
        repo: repo_name(&p.repository.full_name)?,
        installation: p.installation.as_ref().map(|i| i.id),
        git_ref: p.git_ref.clone(),
        before: p.before.clone(),
        after: p.after.clone(),
        default_branch: p.repository.default_branch.clone(),
        commits: (p.commits.iter())
            .map(|c| PushedCommit {
                id: c.id.clone(),
                distinct: c.distinct,
                added: c.added.clone(),
                modified: c.modified.clone(),
                removed: c.removed.clone(),
            })
            .collect(),
        deleted: p.deleted,
        created: p.created,
        sender: p.sender.as_ref().map(|u| actor(u, None)),
    })
}

/// A `check_run` webhook as the core's event.
pub fn check_run(p: &CheckRunPayload) -> Result<CheckRunEvent, TranslateError> {
    Ok(CheckRunEvent {
        repo: repo_name(&p.repository.full_name)?,
        installation: p.installation.as_ref().map(|i| i.id),
        action: p.action.clone(),
        head_sha: p.check_run.head_sha.clone(),
        app: p.check_run.app.as_ref().map(|a| a.id),
        external_id: p.check_run.external_id.clone(),
        button: p.requested_action.as_ref().map(|a| a.identifier.clone()),
        sender: p.sender.as_ref().map(|u| actor(u, None)),
    })
}

/// A `check_suite` webhook as the core's event.
pub fn check_suite(p: &CheckSuitePayload) -> Result<CheckSuiteEvent, TranslateError> {
    Ok(CheckSuiteEvent {
        repo: repo_name(&p.repository.full_name)?,
        installation: p.installation.as_ref().map(|i| i.id),
        action: p.action.clone(),
        head_sha: p.check_suite.head_sha.clone(),
        head_branch: p.check_suite.head_branch.clone(),
        sender: p.sender.as_ref().map(|u| actor(u, None)),
    })
}

/// A `workflow_run` webhook as the core's event.
pub fn workflow_run(p: &WorkflowRunPayload) -> Result<WorkflowRunEvent, TranslateError> {
    Ok(WorkflowRunEvent {
        repo: repo_name(&p.repository.full_name)?,
        installation: p.installation.as_ref().map(|i| i.id),
        action: p.action.clone(),
        default_branch: p.repository.default_branch.clone(),
        run: p.workflow_run.clone(),
    })
}

/// The core's actor for a payload's user; `via_app` when the write was
/// made through a GitHub App (a comment's `performed_via_github_app`).
pub fn actor(user: &User, via_app: Option<u64>) -> Actor {
    Actor {
        id: user.id,
        login: user.login.clone(),
        is_bot: user.kind.as_deref() == Some("Bot"),
        via_app,
    }
}

fn repo_name(full_name: &str) -> Result<RepoName, TranslateError> {
    RepoName::parse(full_name).map_err(|e| TranslateError(e.to_string()))
}

fn repo_names(repos: &[RepositoryRef]) -> Result<Vec<RepoName>, TranslateError> {
    repos.iter().map(|r| repo_name(&r.full_name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled_outcome(event: &str, action: Option<&str>) -> Option<String> {
        super::settled_outcome(&WebhookKind::of(event, action)?)
    }

    #[test]
    fn only_subscribed_events_with_an_action_nothing_acts_on_are_settled() {
        assert_eq!(
            settled_outcome("issues", Some("opened")).as_deref(),
            Some("nothing to do for issues.opened")
        );
        assert_eq!(
            settled_outcome("check_run", Some("completed")).as_deref(),
            Some("nothing to do for check_run.completed")
        );
        // Acted on: left to the processor.
        assert_eq!(settled_outcome("issue_comment", Some("created")), None);
        assert_eq!(settled_outcome("push", None), None);
        // Not subscribed to: recorded as ignored, not settled.
        assert_eq!(settled_outcome("star", Some("created")), None);
    }
}
