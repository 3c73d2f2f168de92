//! `GET /api/audit`: the audit log (`core::audit`), newest first.
//!
//! Filters: `?repo=owner/name`, `?since=` (an RFC 3339 timestamp or unix
//! seconds; entries at or after it), `?limit=` (1 to 1000, default 100).
//! A filter that does not parse is a 400 naming it, and nothing is read.
//!
//! Owns: reading the query and writing each entry as JSON: who
//! (`user_id`, `login`), when (`at`, RFC 3339), what (`action`), on which
//! `object`, the `reason`, and `via`. Must not: decide or write.

use axum::extract::{Query, State};
use axum::Json;
use serde_json::{json, Value};

use super::{ApiError, ApiState};
use crate::store::{AuditQuery, MAX_AUDIT_LIMIT};
use taskgate_core::audit::AuditEntry;
use taskgate_core::ids::RepoName;

/// Entries returned when `?limit=` is not given.
pub const DEFAULT_LIMIT: u32 = 100;

/// The query as given: every filter a string, read by [`read_query`].
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct AuditParams {
    repo: Option<String>,
    since: Option<String>,
    limit: Option<String>,
}

/// A filter of `GET /api/audit` that does not parse; its Display is the
/// 400's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditQueryError {
    /// `?repo=` is not `owner/name`: why, in [`RepoName::parse`]'s words.
    #[error("`repo`: {0}")]
    Repo(String),
    #[error(
        "`since` must be an RFC 3339 timestamp (2026-11-27T09:00:00Z) or unix seconds; got `{0}`"
    )]
    Since(String),
    #[error("`limit` must be a whole number from 1 to {MAX_AUDIT_LIMIT}; got `{0}`")]
    Limit(String),
}

/// The filters of `p`, or what is wrong with them (the 400's message).
fn read_query(p: &AuditParams) -> Result<AuditQuery, AuditQueryError> {
    let repo = p
        .repo
        .as_deref()
        .map(|r| RepoName::parse(r.trim()).map_err(|e| AuditQueryError::Repo(e.to_string())))
        .transpose()?;
    let since_s = p.since.as_deref().map(read_since).transpose()?;
    let limit = match p.limit.as_deref().map(str::trim) {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_AUDIT_LIMIT).contains(n))
            .ok_or_else(|| AuditQueryError::Limit(text.to_owned()))?,
    };
    Ok(AuditQuery {
        repo,
        since_s,
        limit,
    })
}

/// `2026-11-27T09:00:00Z` (any offset) or unix seconds (`1795770000`).
fn read_since(text: &str) -> Result<i64, AuditQueryError> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<i64>() {
        if seconds >= 0 {
            return Ok(seconds);
        }
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp())
        .map_err(|_| AuditQueryError::Since(text.to_owned()))
}

/// One entry as the API shows it.
pub fn entry_json(e: &AuditEntry) -> Value {
    json!({
        "repo": e.repo.as_str(),
        "at": rfc3339(e.at_s),
        "user_id": e.actor_id.map(|u| u.get()),
        "login": e.actor_login,
        "action": e.action.name(),
        "object": e.object,
        "reason": e.reason,
        "via": e.via.name(),
    })
}

fn rfc3339(at_s: i64) -> String {
    chrono::DateTime::from_timestamp(at_s, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| at_s.to_string())
}

pub(super) async fn audit_log(
    State(state): State<ApiState>,
    Query(params): Query<AuditParams>,
) -> Result<Json<Value>, ApiError> {
    let query = read_query(&params).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let entries = state.store.audit_entries(&query).await?;
    let entries: Vec<Value> = entries.iter().map(entry_json).collect();
    Ok(Json(json!({ "entries": entries })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::audit::{task_object, AuditAction, AuditActor, AuditVia};
    use taskgate_core::ids::{IssueNumber, UserId};

    fn params(repo: Option<&str>, since: Option<&str>, limit: Option<&str>) -> AuditParams {
        AuditParams {
            repo: repo.map(str::to_owned),
            since: since.map(str::to_owned),
            limit: limit.map(str::to_owned),
        }
    }

    #[test]
    fn no_filter_reads_the_newest_hundred() {
        assert_eq!(
            read_query(&AuditParams::default()),
            Ok(AuditQuery {
                repo: None,
                since_s: None,
                limit: 100
            })
        );
    }

    #[test]
    fn since_is_rfc_3339_with_any_offset_or_unix_seconds() {
        let q = |s: &str| read_query(&params(None, Some(s), None)).map(|q| q.since_s);
        assert_eq!(q("2026-11-27T09:00:00Z"), Ok(Some(1_795_770_000)));
        assert_eq!(q("2026-11-27T10:00:00+01:00"), Ok(Some(1_795_770_000)));
        assert_eq!(q("1795770000"), Ok(Some(1_795_770_000)));
        assert_eq!(q("0"), Ok(Some(0)));
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        let why = |p: AuditParams| read_query(&p).unwrap_err().to_string();
        insta::assert_snapshot!(why(params(None, Some("yesterday"), None)), @"`since` must be an RFC 3339 timestamp (2026-11-27T09:00:00Z) or unix seconds; got `yesterday`");
        insta::assert_snapshot!(why(params(None, Some("-5"), None)), @"`since` must be an RFC 3339 timestamp (2026-11-27T09:00:00Z) or unix seconds; got `-5`");
        insta::assert_snapshot!(why(params(None, Some("2026-11-27"), None)), @"`since` must be an RFC 3339 timestamp (2026-11-27T09:00:00Z) or unix seconds; got `2026-11-27`");
        insta::assert_snapshot!(why(params(None, None, Some("0"))), @"`limit` must be a whole number from 1 to 1000; got `0`");
        insta::assert_snapshot!(why(params(None, None, Some("1001"))), @"`limit` must be a whole number from 1 to 1000; got `1001`");
        insta::assert_snapshot!(why(params(None, None, Some("ten"))), @"`limit` must be a whole number from 1 to 1000; got `ten`");
        assert!(why(params(Some("not a repo"), None, None)).starts_with("`repo`: "));
        assert!(why(params(Some(""), None, None)).starts_with("`repo`: "));
        assert_eq!(
            read_query(&params(Some("Acme/Strategies"), None, Some("1000"))).map(|q| q.limit),
            Ok(1000)
        );
    }

    #[test]
    fn an_entry_shows_who_when_what_where_why_and_how() {
        let e = AuditEntry::new(
            &RepoName::parse("acme/strategies").unwrap(),
            1_795_770_000,
            AuditActor::user(UserId::new(7), "alice"),
            AuditAction::Override,
            task_object(IssueNumber::new(12), "check"),
            AuditVia::Command,
        )
        .because(Some("the flake is the CI's"));
        insta::assert_snapshot!(serde_json::to_string_pretty(&entry_json(&e)).unwrap(), @r#"
        {
          "action": "override",
          "at": "2026-11-27T09:00:00Z",
          "login": "alice",
          "object": "task #12 (check)",
          "reason": "the flake is the CI's",
          "repo": "acme/strategies",
          "user_id": 7,
          "via": "command"
        }
        "#);
    }
}
