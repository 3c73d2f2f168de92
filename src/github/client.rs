//! One request to GitHub through octocrab's raw interface, answered as
//! status + headers + body so the executor can read rate-limit headers and
//! GitHub's error messages itself.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::BodyExt;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// GitHub answered with an error status.
    #[error("GitHub answered {status}: {message}")]
    Http {
        status: u16,
        message: String,
        headers: Box<HeaderMap>,
    },
    /// No answer: connection refused or dropped, timeout.
    #[error("no answer from GitHub: {0}")]
    Transport(String),
    /// GitHub answered 2xx with a body taskgate could not read.
    #[error("unexpected answer from GitHub: {0}")]
    Unexpected(String),
    #[error("{0}")]
    Config(String),
    /// taskgate's own store failed while performing an effect: not
    /// GitHub's doing, and not worth another try of the same attempt.
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// GitHub does not show yet an object taskgate just made (its reads
    /// lag its writes for a moment): worth another try.
    #[error("GitHub does not show it yet: {0}")]
    NotYetVisible(String),
    /// GitHub refused for a passing reason and asks for the same request
    /// again (a pull request's merge meeting "Base branch was modified"):
    /// worth another try.
    #[error("GitHub asks to try again: {0}")]
    TryAgain(String),
}

impl GitHubError {
    /// A 404 (or a 422 naming something not found) where taskgate knows
    /// the object exists, because it made it: GitHub's replicas lag.
    pub fn lagging(self) -> GitHubError {
        match self {
            GitHubError::Http {
                status: 404 | 422,
                message,
                ..
            } => GitHubError::NotYetVisible(message),
            other => other,
        }
    }
}

impl crate::transient::Transient for GitHubError {
    fn is_transient(&self) -> bool {
        GitHubError::is_transient(self)
    }
}

impl GitHubError {
    /// Worth another try: GitHub answered 5xx or a rate limit, or did not
    /// answer. A bad configuration, an unreadable 2xx and a 403 that is not
    /// a rate limit (a missing permission: "Resource not accessible by
    /// integration") are not: trying again for a day changes nothing and
    /// holds up everything queued behind it.
    pub fn is_transient(&self) -> bool {
        match self {
            GitHubError::Http { status, .. } => *status >= 500 || self.is_rate_limit(),
            GitHubError::Transport(_)
            | GitHubError::NotYetVisible(_)
            | GitHubError::TryAgain(_) => true,
            GitHubError::Config(_) | GitHubError::Store(_) | GitHubError::Unexpected(_) => false,
        }
    }

    /// GitHub's rate limits (429, or a 403 that says so).
    pub fn is_rate_limit(&self) -> bool {
        match self {
            GitHubError::Http {
                status,
                headers,
                message,
            } => is_rate_limit(*status, headers, message),
            _ => false,
        }
    }

    /// GitHub's validation `errors` of a 422, as [`error_message`] wrote
    /// them after its message; empty for any other answer.
    pub fn validation_errors(&self) -> Vec<ValidationError> {
        let GitHubError::Http {
            status: 422,
            message,
            ..
        } = self
        else {
            return Vec::new();
        };
        message
            .split_once(" (")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .and_then(|errors| serde_json::from_str(errors).ok())
            .unwrap_or_default()
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            GitHubError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Whether an answer is one of GitHub's rate limits: a 429, a 403 that
/// carries `retry-after`, says no requests remain (`x-ratelimit-remaining:
/// 0`), or names a secondary limit or abuse detection in its message, or
/// the 422 GitHub answers content created too fast ("was submitted too
/// quickly": nothing was created, and the same request goes through after
/// a wait). Any other 403 is a refusal (a missing permission, a locked
/// issue): GitHub sends `x-ratelimit-*` headers on every answer, so only
/// their value counts.
pub fn is_rate_limit(status: u16, headers: &HeaderMap, message: &str) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let message = message.to_ascii_lowercase();
    status == 429
        || (status == 422 && message.contains("was submitted too quickly"))
        || (status == 403
            && (headers.contains_key("retry-after")
                || header("x-ratelimit-remaining").map(str::trim) == Some("0")
                || message.contains("rate limit")
                || message.contains("abuse detection")))
}

/// One of GitHub's validation `errors` in a 422 ("Validation Failed").
/// GitHub documents `resource`, `field` and `code`, and `value` on some
/// (an `invalid` one names the value refused); each may be left out, and
/// a `custom` error carries only a `message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ValidationError {
    #[serde(default)]
    pub field: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    /// A string for the refused login of `assignees`; any JSON elsewhere.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

#[derive(Debug)]
pub struct ApiResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl ApiResponse {
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, GitHubError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            GitHubError::Unexpected(format!(
                "{e} in {}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            ))
        })
    }

    /// The answer to `call` read into the fields taskgate uses: one
    /// missing or of the wrong type is an error naming the call.
    pub fn answer<T: DeserializeOwned>(&self, call: &str) -> Result<T, GitHubError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| GitHubError::Unexpected(format!("{call}: {e}")))
    }

    /// The `rel="next"` URL of a paginated answer.
    pub fn next_page(&self) -> Option<String> {
        let link = self.headers.get("link")?.to_str().ok()?;
        link.split(',').find_map(|part| {
            let (url, rel) = part.split_once(';')?;
            rel.contains("rel=\"next\"").then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
        })
    }
}

/// Sends one request. 2xx → `Ok`; any other status → `GitHubError::Http`
/// carrying GitHub's `message` (and validation `errors`) and the headers.
pub async fn send(
    client: &Octocrab,
    method: Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<ApiResponse, GitHubError> {
    let result = match method {
        Method::GET => client._get(path).await,
        Method::POST => client._post(path, body).await,
        Method::PATCH => client._patch(path, body).await,
        Method::PUT => client._put(path, body).await,
        Method::DELETE => client._delete(path, body).await,
        other => return Err(GitHubError::Config(format!("method {other} is not used"))),
    };
    let response = result.map_err(|e| GitHubError::Transport(transport_message(&e)))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| GitHubError::Transport(format!("reading the answer: {e}")))?
        .to_bytes();
    if parts.status.is_success() {
        return Ok(ApiResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        });
    }
    Err(GitHubError::Http {
        status: parts.status.as_u16(),
        message: error_message(&body),
        headers: Box::new(parts.headers),
    })
}

/// A body read no further than a cap.
#[derive(Debug)]
pub enum Capped {
    Complete(Bytes),
    /// The answer is longer than the cap: at least `bytes` long (the
    /// announced `Content-Length`, or what was read before stopping).
    TooLong {
        bytes: u64,
    },
}

/// GETs `path` and reads at most `max_bytes` of the answer, for downloads
/// whose size is not GitHub's to promise (artifacts). Redirects are
/// followed by octocrab's client, whose redirect policy drops the
/// `Authorization` header when the redirect leaves GitHub's origin, as the
/// storage URLs GitHub signs require.
pub async fn get_capped(
    client: &Octocrab,
    path: &str,
    max_bytes: u64,
) -> Result<Capped, GitHubError> {
    let response = client
        ._get(path)
        .await
        .map_err(|e| GitHubError::Transport(transport_message(&e)))?;
    let (parts, mut body) = response.into_parts();
    if !parts.status.is_success() {
        let body = body
            .collect()
            .await
            .map_err(|e| GitHubError::Transport(format!("reading the answer: {e}")))?
            .to_bytes();
        return Err(GitHubError::Http {
            status: parts.status.as_u16(),
            message: error_message(&body),
            headers: Box::new(parts.headers),
        });
    }
    let announced = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let Some(bytes) = announced.filter(|n| *n > max_bytes) {
        return Ok(Capped::TooLong { bytes });
    }
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| GitHubError::Transport(format!("reading the answer: {e}")))?;
        if let Ok(chunk) = frame.into_data() {
            out.extend_from_slice(&chunk);
            if out.len() as u64 > max_bytes {
                return Ok(Capped::TooLong {
                    bytes: out.len() as u64,
                });
            }
        }
    }
    Ok(Capped::Complete(out.into()))
}

fn transport_message(e: &octocrab::Error) -> String {
    // octocrab's Display for hyper errors is terse; the source chain says why.
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

/// GitHub's `{"message": ..., "errors": [...]}` as one line.
fn error_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        message: Option<String>,
        #[serde(default)]
        errors: Vec<serde_json::Value>,
    }
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(ErrorBody {
            message: Some(message),
            errors,
        }) if errors.is_empty() => message,
        Ok(ErrorBody {
            message: Some(message),
            errors,
        }) => format!("{message} ({})", serde_json::Value::Array(errors)),
        _ => String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_403_without_rate_limit_signs_is_a_refusal_not_worth_retrying() {
        let mut plenty = HeaderMap::new();
        plenty.insert("x-ratelimit-remaining", "4999".parse().unwrap());
        let refused = GitHubError::Http {
            status: 403,
            message: "Resource not accessible by integration".into(),
            headers: Box::new(plenty.clone()),
        };
        assert!(!refused.is_rate_limit());
        assert!(!refused.is_transient());
        let secondary = GitHubError::Http {
            status: 403,
            message: "You have exceeded a secondary rate limit".into(),
            headers: Box::new(plenty),
        };
        assert!(secondary.is_rate_limit() && secondary.is_transient());
        let mut empty = HeaderMap::new();
        empty.insert("x-ratelimit-remaining", "0".parse().unwrap());
        let primary = GitHubError::Http {
            status: 403,
            message: "API rate limit exceeded".into(),
            headers: Box::new(empty),
        };
        assert!(primary.is_rate_limit() && primary.is_transient());
        assert!(GitHubError::Transport("reset".into()).is_transient());
        let too_quickly = GitHubError::Http {
            status: 422,
            message: r#"Validation Failed ([{"code":"custom","field":"body","message":"was submitted too quickly","resource":"Issue"}])"#.into(),
            headers: Box::default(),
        };
        assert!(too_quickly.is_rate_limit() && too_quickly.is_transient());
        let invalid = GitHubError::Http {
            status: 422,
            message: "Validation Failed".into(),
            headers: Box::default(),
        };
        assert!(!invalid.is_rate_limit());
    }

    #[test]
    fn error_messages_keep_validation_details() {
        assert_eq!(error_message(br#"{"message":"Not Found"}"#), "Not Found");
        assert_eq!(
            error_message(br#"{"message":"Validation Failed","errors":[{"code":"missing_field","field":"title"}]}"#),
            r#"Validation Failed ([{"code":"missing_field","field":"title"}])"#
        );
        assert_eq!(error_message(b"<html>oops"), "<html>oops");
        let refused = GitHubError::Http {
            status: 422,
            message: error_message(br#"{"message":"Validation Failed","errors":[{"value":"ghost","resource":"Issue","field":"assignees","code":"invalid"}]}"#),
            headers: Box::default(),
        };
        assert_eq!(
            refused.validation_errors()[0].value,
            Some(serde_json::json!("ghost"))
        );
        assert!(GitHubError::Transport("x".into())
            .validation_errors()
            .is_empty());
    }
}
