//! Injected failures and GitHub's secondary rate limit.
//!
//! Faults queue per route key (`"POST /repos/{owner}/{repo}/issues"`, the
//! OpenAPI template); each matching request consumes one (a `Status` fault
//! with `times: n` answers n requests). The secondary limit counts
//! content-creating requests per installation over a sliding minute.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::routes::Reply;
use crate::state::State;

/// A failure to inject on the next request(s) to one route.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Answer `status` (GitHub-shaped error body) to the next `times` requests.
    Status { status: u16, times: u32 },
    /// 403 "You have exceeded a secondary rate limit" with `retry-after`.
    SecondaryRateLimit { retry_after_secs: u64 },
    /// 403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset: now + n`.
    PrimaryRateLimit { reset_in_secs: u64 },
    /// 401 "Bad credentials" once.
    Unauthorized,
    /// GitHub's 403 for a call the installation has no permission for,
    /// to the next `times` requests: `{"message": "Resource not accessible
    /// by integration", ...}` with the ordinary rate-limit headers (plenty
    /// remaining), no `retry-after`. Not a rate limit.
    NotAccessible { times: u32 },
    /// 422 "Validation Failed" without applying the change.
    ValidationFailed,
    /// 422 "Validation Failed" whose one `errors` entry carries GitHub's
    /// `message` (a business rule such as "No commits between main and
    /// feature", which GitHub may also answer while a just-pushed commit
    /// is not visible to it yet), without applying the change.
    Unprocessable { message: String },
    /// Wait this long, then handle the request normally.
    Latency(Duration),
    /// Apply the change, then wait this long before answering.
    LatencyAfterApply(Duration),
    /// Close the connection without answering (the change is not applied).
    DropConnection,
    /// Apply the change, then answer `status` instead of the real answer:
    /// a proxy losing GitHub's reply after the work was done.
    StatusAfterApply { status: u16 },
    /// Before the request is handled, `pusher` pushes a commit changing
    /// `files` (path, content) onto `branch` of the request's repository:
    /// someone else's work landing in the window between a client's last
    /// look and its write (a base that moves under a pull request's merge).
    PushFirst {
        branch: String,
        files: Vec<(String, String)>,
        pusher: String,
    },
}

/// What the pipeline should do with a consumed fault.
pub(crate) enum FaultAction {
    Answer(Reply),
    Delay(Duration),
    DelayAfter(Duration),
    ReplaceAfter(Reply),
    Drop,
    /// Push first (`Fault::PushFirst`), then handle the request.
    PushFirst {
        branch: String,
        files: Vec<(String, String)>,
        pusher: String,
    },
}

pub(crate) fn take(st: &mut State, route_key: &str) -> Option<FaultAction> {
    let queue = st.faults.get_mut(route_key)?;
    let fault = match queue.front_mut()? {
        Fault::Status { status, times } if *times > 1 => {
            *times -= 1;
            Fault::Status {
                status: *status,
                times: 1,
            }
        }
        Fault::NotAccessible { times } if *times > 1 => {
            *times -= 1;
            Fault::NotAccessible { times: 1 }
        }
        _ => queue.pop_front()?,
    };
    Some(match fault {
        Fault::Status { status, .. } => {
            FaultAction::Answer(Reply::error(status, status_message(status)))
        }
        Fault::SecondaryRateLimit { retry_after_secs } => {
            FaultAction::Answer(secondary_reply(retry_after_secs))
        }
        Fault::PrimaryRateLimit { reset_in_secs } => {
            let reset = chrono::Utc::now().timestamp() + reset_in_secs as i64;
            let mut r = Reply::error(
                403,
                "API rate limit exceeded for installation. If you reach out to GitHub Support for help, please include the request ID.",
            );
            r.headers.push(("x-ratelimit-remaining".into(), "0".into()));
            r.headers
                .push(("x-ratelimit-reset".into(), reset.to_string()));
            FaultAction::Answer(r)
        }
        Fault::Unauthorized => FaultAction::Answer(Reply::error(401, "Bad credentials")),
        Fault::NotAccessible { .. } => FaultAction::Answer(Reply::json(
            403,
            json!({"message": NOT_ACCESSIBLE, "documentation_url": crate::routes::DOCS_URL, "status": "403"}),
        )),
        Fault::ValidationFailed => FaultAction::Answer(Reply::json(
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "Issue", "code": "custom", "message": "injected by fakehub"}],
                   "documentation_url": crate::routes::DOCS_URL, "status": "422"}),
        )),
        Fault::Unprocessable { message } => FaultAction::Answer(Reply::invalid(
            json!({"resource": "PullRequest", "code": "custom", "message": message}),
        )),
        Fault::Latency(d) => FaultAction::Delay(d),
        Fault::LatencyAfterApply(d) => FaultAction::DelayAfter(d),
        Fault::DropConnection => FaultAction::Drop,
        Fault::StatusAfterApply { status } => {
            FaultAction::ReplaceAfter(Reply::error(status, status_message(status)))
        }
        Fault::PushFirst {
            branch,
            files,
            pusher,
        } => FaultAction::PushFirst {
            branch,
            files,
            pusher,
        },
    })
}

/// `pusher` pushes a commit changing `files` onto `branch` of the
/// repository at `at`, with its echoes, as a person's push would.
pub(crate) fn push_first(
    st: &mut State,
    at: crate::emit::At,
    (branch, files, pusher): (&str, &[(String, String)], &str),
) {
    st.user(pusher);
    let Some(repo) = st.repos.get_mut(at.key) else {
        return;
    };
    let before = repo.branches.get(branch).cloned();
    let changes: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    repo.commit_changes(branch, &changes, "Other work");
    crate::emit::branch_moved(st, at, branch, before, pusher);
}

/// GitHub's message when an installation lacks the permission a call needs.
pub const NOT_ACCESSIBLE: &str = "Resource not accessible by integration";

fn status_message(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Bad credentials",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Validation Failed",
        500 => "Internal Server Error",
        502 => "Server Error",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

pub(crate) fn secondary_reply(retry_after_secs: u64) -> Reply {
    let mut r = Reply::error(
        403,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
    );
    r.headers
        .push(("retry-after".into(), retry_after_secs.to_string()));
    r
}

/// Counts one content-creating request; `Some(reply)` when over the limit.
pub(crate) fn secondary_limit(st: &mut State, installation: u64) -> Option<Reply> {
    if st.secondary_limit == 0 {
        return None;
    }
    let now = Instant::now();
    let limit = st.secondary_limit as usize;
    let window = st.secondary_window;
    let times = st.write_times.entry(installation).or_default();
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= window)
    {
        times.pop_front();
    }
    if times.len() >= limit {
        return Some(secondary_reply(window.as_secs().max(1)));
    }
    times.push_back(now);
    None
}
