//! How old a delivery's event is, and whether it is too old to act on.
//!
//! Owns: the event time read off a typed payload ([`event_time`]), the
//! refusal of an event older than the delivery log's retention
//! ([`too_old`]), and the lenient reading of GitHub's two forms of a time.
//! Must not: read the clock (the handler passes "now") or the store.
//!
//! Why: a delivery's id is what makes taskgate act on it once, and the id
//! is forgotten after `TASKGATE_RETENTION_DAYS`. A captured delivery sent
//! again after that (an old `/taskgate unfreeze`, `ship` label or
//! `rollback --now`) would be new to taskgate and acted on with its sender's
//! permission of today. GitHub stamps each event with times of its own; a
//! delivery whose event is older than the retention is refused. Since an
//! event is received after it happens, every event still inside the window
//! was received inside it too, so its id is still known: the two guards
//! meet with no gap.
//!
//! The time judged is the one GitHub sets when the event happens: a
//! comment's `created_at` (`updated_at` for an edit or a deletion), an
//! issue's or pull request's `updated_at` (a label, an edit, a close all
//! move it), a push's `repository.pushed_at`, a check suite's or workflow
//! run's `updated_at`. Events without such a time (installation events,
//! `check_run` re-requests, whose run keeps its old times, merge groups)
//! are not judged; their effects are bounded by their own checks.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Deserializer};

use super::event::Webhook;
use super::payload::{IssueCommentAction, PullRequestReviewAction};

/// The time GitHub gave the event, where the payload carries one.
pub fn event_time(webhook: &Webhook) -> Option<DateTime<Utc>> {
    match webhook {
        Webhook::IssueComment(p) => match p.action {
            IssueCommentAction::Created => p.comment.created_at,
            _ => p.comment.updated_at.or(p.comment.created_at),
        },
        Webhook::Issues(p) => p.issue.updated_at,
        Webhook::PullRequest(p) => p.pull_request.updated_at,
        Webhook::Push(p) => p.repository.pushed_at,
        Webhook::CheckSuite(p) => p.check_suite.updated_at,
        Webhook::WorkflowRun(p) => p.workflow_run.updated_at,
        // A dismissal carries only the review's own time.
        Webhook::PullRequestReview(p) => match p.action {
            PullRequestReviewAction::Submitted => p.review.submitted_at,
            _ => None,
        },
        Webhook::Ping(_)
        | Webhook::Installation(_)
        | Webhook::InstallationRepositories(_)
        | Webhook::CheckRun(_)
        | Webhook::MergeGroup(_) => None,
    }
}

/// An event too old to act on: when it happened, and the window it fell
/// out of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused: this event happened at {at}, more than {days} days ago; taskgate keeps delivery ids \
     that long (TASKGATE_RETENTION_DAYS), so an older event may be a replay and is not acted on"
)]
pub struct TooOld {
    pub at: DateTime<Utc>,
    pub days: u64,
}

/// `Err` when the event happened more than `retention` before
/// `now_s`. An event time in the future (a skewed clock) is accepted.
pub fn too_old(at: Option<DateTime<Utc>>, now_s: i64, retention: Duration) -> Result<(), TooOld> {
    let Some(at) = at else { return Ok(()) };
    let window = i64::try_from(retention.as_secs()).unwrap_or(i64::MAX);
    if now_s.saturating_sub(at.timestamp()) > window {
        return Err(TooOld {
            at,
            days: retention.as_secs() / 86_400,
        });
    }
    Ok(())
}

/// GitHub writes times as RFC 3339 text, except a `push` payload's
/// repository, whose `created_at` and `pushed_at` are Unix seconds. Any
/// other form (or `null`) reads as no time: a time taskgate cannot read is
/// not a reason to refuse the delivery.
pub fn lenient_stamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stamp {
        Unix(i64),
        Text(String),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Stamp::deserialize(d)? {
        Stamp::Unix(s) => Utc.timestamp_opt(s, 0).single(),
        Stamp::Text(t) => DateTime::parse_from_rfc3339(&t)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
        Stamp::Other(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::event::parse;
    use serde_json::{json, Value};

    const DAY: i64 = 86_400;
    const THREE_DAYS: Duration = Duration::from_secs(3 * 86_400);

    fn fixture(path: &str) -> Value {
        let full = format!("{}/fixtures/webhooks/{path}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(full).unwrap()).unwrap()
    }

    fn time_of(event: &str, payload: &Value) -> Option<DateTime<Utc>> {
        let parsed = parse(event, payload.to_string().as_bytes()).unwrap();
        event_time(&parsed.webhook)
    }

    fn at(text: &str) -> Option<DateTime<Utc>> {
        Some(
            DateTime::parse_from_rfc3339(text)
                .unwrap()
                .with_timezone(&Utc),
        )
    }

    #[test]
    fn each_event_is_judged_by_the_time_github_gave_it() {
        let mut comment = fixture("issue_comment/created.1.json");
        comment["comment"]["created_at"] = json!("2026-01-02T03:04:05Z");
        comment["comment"]["updated_at"] = json!("2026-02-02T03:04:05Z");
        assert_eq!(
            time_of("issue_comment", &comment),
            at("2026-01-02T03:04:05Z")
        );
        comment["action"] = json!("edited");
        comment["changes"] = json!({"body": {"from": "before"}});
        assert_eq!(
            time_of("issue_comment", &comment),
            at("2026-02-02T03:04:05Z"),
            "an edit is as old as the edit"
        );
        let push = fixture("push/default.1.json");
        assert_eq!(
            time_of("push", &push),
            Utc.timestamp_opt(1_557_933_657, 0).single(),
            "a push's repository carries Unix seconds"
        );
        let labeled = fixture("pull_request/labeled.1.json");
        assert_eq!(
            time_of("pull_request", &labeled),
            at(labeled["pull_request"]["updated_at"].as_str().unwrap())
        );
    }

    #[test]
    fn an_event_older_than_the_retention_is_refused_and_one_inside_it_is_not() {
        let now = 1_800_000_000;
        let then = |s| Utc.timestamp_opt(s, 0).single();
        assert_eq!(too_old(then(now - 3 * DAY), now, THREE_DAYS), Ok(()));
        let refused = too_old(then(now - 3 * DAY - 1), now, THREE_DAYS).unwrap_err();
        assert_eq!(refused.days, 3);
        assert_eq!(
            too_old(then(now + DAY), now, THREE_DAYS),
            Ok(()),
            "a clock ahead"
        );
        assert_eq!(
            too_old(None, now, THREE_DAYS),
            Ok(()),
            "no time: not judged"
        );
        insta::assert_snapshot!(refused, @"refused: this event happened at 2027-01-12 07:59:59 UTC, more than 3 days ago; taskgate keeps delivery ids that long (TASKGATE_RETENTION_DAYS), so an older event may be a replay and is not acted on");
    }

    #[test]
    fn a_time_in_a_form_taskgate_cannot_read_is_no_time() {
        let mut comment = fixture("issue_comment/created.1.json");
        comment["comment"]["created_at"] = json!({"not": "a time"});
        assert_eq!(time_of("issue_comment", &comment), None);
        comment["comment"]["created_at"] = json!("yesterday");
        assert_eq!(time_of("issue_comment", &comment), None);
    }
}
