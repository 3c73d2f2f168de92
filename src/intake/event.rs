//! From `X-GitHub-Event` + raw JSON to a typed [`Webhook`].
//!
//! Parsing is strict about the fields taskgate reads and lenient about the
//! rest; the error names the event and the JSON path that did not fit, so a
//! sender sees at once what is wrong.

use serde::de::DeserializeOwned;

use super::payload::*;
use crate::ids::InstallationId;

/// taskgate's own event: the next reconciliation pass of a story, queued
/// through the inbox by the executor (never accepted from outside).
pub const RECONCILE_EVENT: &str = "taskgate.reconcile";

/// The events taskgate subscribes to (see `app-manifest.yml`).
pub const HANDLED_EVENTS: &[&str] = &[
    "ping",
    "installation",
    "installation_repositories",
    "issues",
    "issue_comment",
    "pull_request",
    "push",
    "check_run",
    "check_suite",
    "workflow_run",
];

#[derive(Debug, Clone)]
pub enum Webhook {
    Ping(PingPayload),
    Installation(InstallationPayload),
    InstallationRepositories(InstallationRepositoriesPayload),
    Issues(IssuesPayload),
    IssueComment(IssueCommentPayload),
    PullRequest(PullRequestPayload),
    Push(PushPayload),
    CheckRun(CheckRunPayload),
    CheckSuite(CheckSuitePayload),
    WorkflowRun(WorkflowRunPayload),
}

/// A parsed delivery: the typed event, its action and installation.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub webhook: Webhook,
    pub installation: Option<InstallationId>,
    pub action: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("body is not valid JSON: {0}")]
    Json(String),
    #[error("`{event}` payload does not have the expected shape: {detail}")]
    Shape { event: String, detail: String },
    #[error("event `{0}` is not one taskgate handles")]
    Unhandled(String),
}

pub fn is_handled(event: &str) -> bool {
    HANDLED_EVENTS.contains(&event)
}

/// Checks only that `body` is JSON (an object), for events taskgate records
/// but does not use.
pub fn check_json(body: &[u8]) -> Result<(), PayloadError> {
    serde_json::from_slice::<serde::de::IgnoredAny>(body)
        .map(|_| ())
        .map_err(|e| PayloadError::Json(e.to_string()))
}

pub fn parse(event: &str, body: &[u8]) -> Result<Parsed, PayloadError> {
    let webhook = match event {
        "ping" => Webhook::Ping(typed(event, body)?),
        "installation" => Webhook::Installation(typed(event, body)?),
        "installation_repositories" => Webhook::InstallationRepositories(typed(event, body)?),
        "issues" => Webhook::Issues(typed(event, body)?),
        "issue_comment" => Webhook::IssueComment(typed(event, body)?),
        "pull_request" => Webhook::PullRequest(typed(event, body)?),
        "push" => Webhook::Push(typed(event, body)?),
        "check_run" => Webhook::CheckRun(typed(event, body)?),
        "check_suite" => Webhook::CheckSuite(typed(event, body)?),
        "workflow_run" => Webhook::WorkflowRun(typed(event, body)?),
        other => return Err(PayloadError::Unhandled(other.to_owned())),
    };
    // One scan of the body: action and installation come from the typed
    // payload itself, not from a second pass over it.
    let (action, installation) = match &webhook {
        Webhook::Ping(p) => (None, p.installation.as_ref()),
        Webhook::Installation(p) => (Some(&p.action), None),
        Webhook::InstallationRepositories(p) => (Some(&p.action), None),
        Webhook::Issues(p) => (Some(&p.action), p.installation.as_ref()),
        Webhook::IssueComment(p) => (Some(&p.action), p.installation.as_ref()),
        Webhook::PullRequest(p) => (Some(&p.action), p.installation.as_ref()),
        Webhook::Push(p) => (None, p.installation.as_ref()),
        Webhook::CheckRun(p) => (Some(&p.action), p.installation.as_ref()),
        Webhook::CheckSuite(p) => (Some(&p.action), p.installation.as_ref()),
        Webhook::WorkflowRun(p) => (Some(&p.action), p.installation.as_ref()),
    };
    let installation = match &webhook {
        Webhook::Installation(p) => Some(p.installation.id),
        Webhook::InstallationRepositories(p) => Some(p.installation.id),
        _ => installation.map(|i| i.id),
    };
    Ok(Parsed {
        action: action.cloned(),
        installation,
        webhook,
    })
}

/// Deserialises straight from the bytes, keeping the JSON path of a shape
/// error ("issue.user: missing field `id`") and telling syntax errors apart.
fn typed<T: DeserializeOwned>(event: &str, body: &[u8]) -> Result<T, PayloadError> {
    // The fast path; the path-tracking parse runs only to explain an error.
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let detail = if path == "." || path.is_empty() {
                    inner.to_string()
                } else {
                    format!("{path}: {inner}")
                };
                shape(event, &detail)
            }
            _ => PayloadError::Json(inner.to_string()),
        }
    })?;
    de.end().map_err(|e| PayloadError::Json(e.to_string()))?;
    Ok(value)
}

fn shape(event: &str, detail: &str) -> PayloadError {
    PayloadError::Shape {
        event: event.to_owned(),
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_and_shape_errors_are_told_apart() {
        assert!(matches!(parse("issues", b"{"), Err(PayloadError::Json(_))));
        let err = parse("issue_comment", br#"{"action":"created"}"#).unwrap_err();
        assert!(err.to_string().contains("missing field `issue`"), "{err}");
        assert!(matches!(
            parse("issues", b"[1,2]"),
            Err(PayloadError::Shape { .. })
        ));
    }

    #[test]
    fn unhandled_events_are_named() {
        assert_eq!(
            parse("star", b"{}").unwrap_err(),
            PayloadError::Unhandled("star".into())
        );
    }
}
