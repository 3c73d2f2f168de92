//! From a delivery's names and raw JSON to one typed event.
//!
//! Owns: [`WebhookKind`] (event and action from the names alone, and
//! whether it [`matters`](WebhookKind::matters)), [`Webhook`] (the typed
//! payload), and [`Delivered`], the one type the processor matches on: a
//! GitHub webhook or one of taskgate's own events (`core::internal`).
//! Must not: decide anything; the processor routes, the core decides.
//!
//! Parsing is strict about the fields taskgate reads and lenient about the
//! rest; the error names the event and the JSON path that did not fit, so a
//! sender sees at once what is wrong.

use serde::de::DeserializeOwned;

use super::payload::*;
use taskgate_core::ids::InstallationId;
use taskgate_core::internal::{InternalEvent, InternalKind};

/// The GitHub events taskgate subscribes to (see `app-manifest.yml`).
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
    "merge_group",
    "pull_request_review",
];

/// A GitHub delivery's event and action, typed from the names alone
/// (`X-GitHub-Event` and the recorded action), before the payload is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookKind {
    Ping,
    Installation(InstallationAction),
    InstallationRepositories(InstallationRepositoriesAction),
    Issues(IssuesAction),
    IssueComment(IssueCommentAction),
    PullRequest(PullRequestAction),
    Push,
    CheckRun(CheckRunAction),
    CheckSuite(CheckSuiteAction),
    WorkflowRun(WorkflowRunAction),
    MergeGroup(MergeGroupAction),
    PullRequestReview(PullRequestReviewAction),
}

impl WebhookKind {
    /// The kind of a subscribed event; `None` for any other event.
    pub fn of(event: &str, action: Option<&str>) -> Option<WebhookKind> {
        let action = action.unwrap_or_default();
        Some(match event {
            "ping" => WebhookKind::Ping,
            "installation" => WebhookKind::Installation(InstallationAction::parse(action)),
            "installation_repositories" => {
                WebhookKind::InstallationRepositories(InstallationRepositoriesAction::parse(action))
            }
            "issues" => WebhookKind::Issues(IssuesAction::parse(action)),
            "issue_comment" => WebhookKind::IssueComment(IssueCommentAction::parse(action)),
            "pull_request" => WebhookKind::PullRequest(PullRequestAction::parse(action)),
            "push" => WebhookKind::Push,
            "check_run" => WebhookKind::CheckRun(CheckRunAction::parse(action)),
            "check_suite" => WebhookKind::CheckSuite(CheckSuiteAction::parse(action)),
            "workflow_run" => WebhookKind::WorkflowRun(WorkflowRunAction::parse(action)),
            "merge_group" => WebhookKind::MergeGroup(MergeGroupAction::parse(action)),
            "pull_request_review" => {
                WebhookKind::PullRequestReview(PullRequestReviewAction::parse(action))
            }
            _ => return None,
        })
    }

    /// Whether a delivery of this kind can lead to anything: the others
    /// are decided from their names, payload unread (most of a busy
    /// repository's traffic). Read off the action enums, whose variants are
    /// exactly the actions taskgate acts on.
    pub fn matters(&self) -> bool {
        match self {
            WebhookKind::Ping | WebhookKind::Push => true,
            WebhookKind::Installation(a) => a.is_acted_on(),
            WebhookKind::InstallationRepositories(a) => a.is_acted_on(),
            WebhookKind::Issues(a) => a.is_acted_on(),
            WebhookKind::IssueComment(a) => a.is_acted_on(),
            WebhookKind::PullRequest(a) => a.is_acted_on(),
            WebhookKind::CheckRun(a) => a.is_acted_on(),
            WebhookKind::CheckSuite(a) => a.is_acted_on(),
            WebhookKind::WorkflowRun(a) => a.is_acted_on(),
            WebhookKind::MergeGroup(a) => a.is_acted_on(),
            WebhookKind::PullRequestReview(a) => a.is_acted_on(),
        }
    }

    /// The actions of `event` taskgate acts on, as GitHub spells them
    /// (empty for an event without actions).
    pub fn acted_on(event: &str) -> &'static [&'static str] {
        match WebhookKind::of(event, None) {
            None | Some(WebhookKind::Ping | WebhookKind::Push) => &[],
            Some(WebhookKind::Installation(_)) => InstallationAction::ACTED_ON,
            Some(WebhookKind::InstallationRepositories(_)) => {
                InstallationRepositoriesAction::ACTED_ON
            }
            Some(WebhookKind::Issues(_)) => IssuesAction::ACTED_ON,
            Some(WebhookKind::IssueComment(_)) => IssueCommentAction::ACTED_ON,
            Some(WebhookKind::PullRequest(_)) => PullRequestAction::ACTED_ON,
            Some(WebhookKind::CheckRun(_)) => CheckRunAction::ACTED_ON,
            Some(WebhookKind::CheckSuite(_)) => CheckSuiteAction::ACTED_ON,
            Some(WebhookKind::WorkflowRun(_)) => WorkflowRunAction::ACTED_ON,
            Some(WebhookKind::MergeGroup(_)) => MergeGroupAction::ACTED_ON,
            Some(WebhookKind::PullRequestReview(_)) => PullRequestReviewAction::ACTED_ON,
        }
    }

    /// GitHub's name of the event.
    pub fn event_name(&self) -> &'static str {
        match self {
            WebhookKind::Ping => "ping",
            WebhookKind::Installation(_) => "installation",
            WebhookKind::InstallationRepositories(_) => "installation_repositories",
            WebhookKind::Issues(_) => "issues",
            WebhookKind::IssueComment(_) => "issue_comment",
            WebhookKind::PullRequest(_) => "pull_request",
            WebhookKind::Push => "push",
            WebhookKind::CheckRun(_) => "check_run",
            WebhookKind::CheckSuite(_) => "check_suite",
            WebhookKind::WorkflowRun(_) => "workflow_run",
            WebhookKind::MergeGroup(_) => "merge_group",
            WebhookKind::PullRequestReview(_) => "pull_request_review",
        }
    }

    /// GitHub's name of the action; `ping` and `push` have none.
    pub fn action(&self) -> Option<&str> {
        match self {
            WebhookKind::Ping | WebhookKind::Push => None,
            WebhookKind::Installation(a) => Some(a.as_str()),
            WebhookKind::InstallationRepositories(a) => Some(a.as_str()),
            WebhookKind::Issues(a) => Some(a.as_str()),
            WebhookKind::IssueComment(a) => Some(a.as_str()),
            WebhookKind::PullRequest(a) => Some(a.as_str()),
            WebhookKind::CheckRun(a) => Some(a.as_str()),
            WebhookKind::CheckSuite(a) => Some(a.as_str()),
            WebhookKind::WorkflowRun(a) => Some(a.as_str()),
            WebhookKind::MergeGroup(a) => Some(a.as_str()),
            WebhookKind::PullRequestReview(a) => Some(a.as_str()),
        }
    }
}

/// A GitHub webhook with its typed payload.
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
    MergeGroup(MergeGroupPayload),
    PullRequestReview(PullRequestReviewPayload),
}

impl Webhook {
    /// Its event and action, from the payload's own `action`.
    pub fn kind(&self) -> WebhookKind {
        match self {
            Webhook::Ping(_) => WebhookKind::Ping,
            Webhook::Installation(p) => WebhookKind::Installation(p.action.clone()),
            Webhook::InstallationRepositories(p) => {
                WebhookKind::InstallationRepositories(p.action.clone())
            }
            Webhook::Issues(p) => WebhookKind::Issues(p.action.clone()),
            Webhook::IssueComment(p) => WebhookKind::IssueComment(p.action.clone()),
            Webhook::PullRequest(p) => WebhookKind::PullRequest(p.action.clone()),
            Webhook::Push(_) => WebhookKind::Push,
            Webhook::CheckRun(p) => WebhookKind::CheckRun(p.action.clone()),
            Webhook::CheckSuite(p) => WebhookKind::CheckSuite(p.action.clone()),
            Webhook::WorkflowRun(p) => WebhookKind::WorkflowRun(p.action.clone()),
            Webhook::MergeGroup(p) => WebhookKind::MergeGroup(p.action.clone()),
            Webhook::PullRequestReview(p) => WebhookKind::PullRequestReview(p.action.clone()),
        }
    }

    /// Who sent it, when its payload's type keeps the sender (`None`:
    /// it does not; `Some(None)`: the payload named nobody).
    pub fn sender(&self) -> Option<Option<&User>> {
        match self {
            Webhook::IssueComment(p) => Some(p.sender.as_ref()),
            Webhook::PullRequest(p) => Some(p.sender.as_ref()),
            Webhook::Push(p) => Some(p.sender.as_ref()),
            Webhook::CheckRun(p) => Some(p.sender.as_ref()),
            Webhook::CheckSuite(p) => Some(p.sender.as_ref()),
            Webhook::PullRequestReview(p) => Some(p.sender.as_ref()),
            Webhook::Ping(_)
            | Webhook::Issues(_)
            | Webhook::Installation(_)
            | Webhook::InstallationRepositories(_)
            | Webhook::WorkflowRun(_)
            | Webhook::MergeGroup(_) => None,
        }
    }

    /// The installation it was sent for, if any.
    pub fn installation(&self) -> Option<InstallationId> {
        let of = |i: &Option<InstallationRef>| i.as_ref().map(|i| i.id);
        match self {
            Webhook::Installation(p) => Some(p.installation.id),
            Webhook::InstallationRepositories(p) => Some(p.installation.id),
            Webhook::Ping(p) => of(&p.installation),
            Webhook::Issues(p) => of(&p.installation),
            Webhook::IssueComment(p) => of(&p.installation),
            Webhook::PullRequest(p) => of(&p.installation),
            Webhook::Push(p) => of(&p.installation),
            Webhook::CheckRun(p) => of(&p.installation),
            Webhook::CheckSuite(p) => of(&p.installation),
            Webhook::WorkflowRun(p) => of(&p.installation),
            Webhook::MergeGroup(p) => of(&p.installation),
            Webhook::PullRequestReview(p) => of(&p.installation),
        }
    }
}

/// A recorded delivery's kind, from its names alone: a GitHub webhook or
/// one of taskgate's own events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryKind {
    GitHub(WebhookKind),
    Internal(InternalKind),
}

impl DeliveryKind {
    /// `None`: a name neither GitHub's subscribed events nor taskgate's own.
    pub fn of(event: &str, action: Option<&str>) -> Option<DeliveryKind> {
        match InternalKind::of(event) {
            Some(kind) => Some(DeliveryKind::Internal(kind)),
            None => WebhookKind::of(event, action).map(DeliveryKind::GitHub),
        }
    }

    /// Whether deciding it needs its payload: taskgate's own events always
    /// do; a webhook when [`WebhookKind::matters`].
    pub fn matters(&self) -> bool {
        match self {
            DeliveryKind::GitHub(kind) => kind.matters(),
            DeliveryKind::Internal(_) => true,
        }
    }

    /// Reads the payload: the one typed event the processor decides on.
    pub fn parse(&self, body: &[u8]) -> Result<Delivered, PayloadError> {
        Ok(match self {
            DeliveryKind::GitHub(kind) => {
                Delivered::GitHub(Box::new(parse(kind.event_name(), body)?.webhook))
            }
            DeliveryKind::Internal(kind) => Delivered::Internal(Box::new(
                InternalEvent::parse(*kind, body)
                    .map_err(|e| PayloadError::Internal(e.to_string()))?,
            )),
        })
    }
}

/// A recorded delivery, parsed once.
#[derive(Debug, Clone)]
pub enum Delivered {
    GitHub(Box<Webhook>),
    Internal(Box<InternalEvent>),
}

/// A parsed GitHub delivery.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub webhook: Webhook,
}

impl Parsed {
    pub fn kind(&self) -> WebhookKind {
        self.webhook.kind()
    }

    pub fn installation(&self) -> Option<InstallationId> {
        self.webhook.installation()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("body is not valid JSON: {0}")]
    Json(String),
    #[error("`{event}` payload does not have the expected shape: {detail}")]
    Shape { event: String, detail: String },
    #[error("event `{0}` is not one taskgate handles")]
    Unhandled(String),
    #[error("{0}")]
    Internal(String),
}

pub fn is_handled(event: &str) -> bool {
    WebhookKind::of(event, None).is_some()
}

/// Checks only that `body` is JSON (an object), for events taskgate records
/// but does not use.
pub fn check_json(body: &[u8]) -> Result<(), PayloadError> {
    serde_json::from_slice::<serde::de::IgnoredAny>(body)
        .map(|_| ())
        .map_err(|e| PayloadError::Json(e.to_string()))
}

/// Parses a GitHub webhook; taskgate's own event names are not among them.
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
        "merge_group" => Webhook::MergeGroup(typed(event, body)?),
        "pull_request_review" => Webhook::PullRequestReview(typed(event, body)?),
        other => return Err(PayloadError::Unhandled(other.to_owned())),
    };
    Ok(Parsed { webhook })
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
    fn every_subscribed_event_has_a_kind_named_as_github_names_it() {
        for name in HANDLED_EVENTS {
            let kind = WebhookKind::of(name, Some("created")).unwrap();
            assert_eq!(kind.event_name(), *name);
        }
        assert_eq!(WebhookKind::of("star", Some("created")), None);
    }

    #[test]
    fn only_actions_taskgate_acts_on_matter() {
        let matters = |e, a| WebhookKind::of(e, a).unwrap().matters();
        assert!(matters("push", None));
        assert!(matters("pull_request", Some("labeled")));
        assert!(!matters("pull_request", Some("unlabeled")));
        assert!(!matters("issues", Some("opened")));
        assert!(!matters("check_run", Some("completed")));
    }

    #[test]
    fn internal_names_are_not_webhooks_and_are_parsed_as_internal_events() {
        assert_eq!(
            parse("taskgate.run", b"{}").unwrap_err(),
            PayloadError::Unhandled("taskgate.run".into())
        );
        let kind = DeliveryKind::of("taskgate.tick", None).unwrap();
        let body = br#"{"repo":"o/r","story":"file:s","task":"t"}"#;
        assert!(matches!(kind.parse(body), Ok(Delivered::Internal(_))));
        assert!(matches!(kind.parse(b"{}"), Err(PayloadError::Internal(_))));
    }

    #[test]
    fn unhandled_events_are_named() {
        assert_eq!(
            parse("star", b"{}").unwrap_err(),
            PayloadError::Unhandled("star".into())
        );
    }
}
