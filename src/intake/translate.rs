//! Typed webhook → core [`Event`]. The only place that knows both.

use super::event::{Parsed, Webhook};
use super::payload::{RepositoryRef, User};
use crate::core::{Actor, Event};
use crate::ids::RepoName;

/// Why a parsed payload could not become an event.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TranslateError(String);

/// Whether a delivery of `event`/`action` can lead to anything today. The
/// processor skips reading the payload again for the rest, which is most of
/// a busy repository's traffic. Keep in step with [`to_event`] and the
/// push / plan-comment paths of the processor.
pub fn may_matter(event: &str, action: Option<&str>) -> bool {
    match event {
        "ping" | "installation" | "installation_repositories" | "push" => true,
        // An edit may add a command (`app::commands` runs only the new ones).
        "issue_comment" => matches!(action, Some("created" | "edited")),
        "pull_request" => matches!(
            action,
            Some("opened" | "synchronize" | "reopened" | "ready_for_review" | "closed" | "labeled")
        ),
        "check_suite" => matches!(action, Some("requested" | "rerequested")),
        "check_run" => matches!(action, Some("rerequested" | "requested_action")),
        "workflow_run" => matches!(action, Some("in_progress" | "completed")),
        _ => false,
    }
}

/// GitHub events taskgate subscribes to but nothing acts on with this
/// action: decided from their event and action alone, payload unread.
pub fn decided_from_name(event: &str, action: Option<&str>) -> bool {
    super::event::is_handled(event) && !may_matter(event, action)
}

/// The core's outcome for a delivery decided from its name alone, when
/// that decision changes nothing and asks for nothing: such a delivery is
/// done as soon as it is recorded.
pub fn settled_outcome(event: &str, action: Option<&str>) -> Option<String> {
    if !decided_from_name(event, action) {
        return None;
    }
    let decision = crate::core::on_unused(event, action);
    (decision.changes.is_empty() && decision.effects.is_empty()).then_some(decision.outcome)
}

pub fn to_event(event_name: &str, parsed: &Parsed) -> Result<Event, TranslateError> {
    let unused = || Event::Unused {
        event: event_name.to_owned(),
        action: parsed.action.clone(),
    };
    Ok(match &parsed.webhook {
        Webhook::Ping(_) => Event::Ping,
        Webhook::Installation(p) => match p.action.as_str() {
            "deleted" => Event::InstallationDeleted {
                installation: p.installation.id,
            },
            "created" | "new_permissions_accepted" | "unsuspend" => Event::InstallationChanged {
                installation: p.installation.id,
                account: p.installation.account.as_ref().map(|a| a.login.clone()),
                added: repo_names(p.repositories.as_deref().unwrap_or_default())?,
                removed: vec![],
            },
            _ => unused(),
        },
        Webhook::InstallationRepositories(p) => Event::InstallationChanged {
            installation: p.installation.id,
            account: p.installation.account.as_ref().map(|a| a.login.clone()),
            added: repo_names(&p.repositories_added)?,
            removed: repo_names(&p.repositories_removed)?,
        },
        Webhook::IssueComment(p) if p.action == "created" => Event::CommentCreated {
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
        _ => unused(),
    })
}

fn actor(user: &User, via_app: Option<u64>) -> Actor {
    Actor {
        id: user.id,
        login: user.login.clone(),
        is_bot: user.kind.as_deref() == Some("Bot"),
        via_app,
    }
}

fn repo_name(full_name: &str) -> Result<RepoName, TranslateError> {
    RepoName::parse(full_name).map_err(TranslateError)
}

fn repo_names(repos: &[RepositoryRef]) -> Result<Vec<RepoName>, TranslateError> {
    repos.iter().map(|r| repo_name(&r.full_name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
