//! Injected failures and GitHub's secondary rate limits.
//!
//! Faults queue per route key (`"POST /repos/{owner}/{repo}/issues"`, the
//! OpenAPI template); each matching request consumes one (a `Status` fault
//! with `times: n` answers n requests). The secondary limits count
//! content-creating requests per installation over a sliding minute and a
//! sliding hour, on GitHub's clock (`FakeGitHub::advance` moves them on):
//! GitHub documents "no more than 80 content-generating requests per minute
//! and no more than 500 content-generating requests per hour". Over either,
//! a write is answered as [`SecondaryAnswer`] says: a 403 with or without
//! `retry-after`, or, for a new issue or comment, the temporary 422 "was
//! submitted too quickly".

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

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
    /// The same 403 without `retry-after` (and with requests remaining):
    /// GitHub then asks to wait at least a minute.
    SecondaryRateLimitWithoutRetryAfter,
    /// GitHub's temporary 422 for content created too fast: "Validation
    /// Failed" whose one error says "was submitted too quickly"; nothing
    /// is created.
    SubmittedTooQuickly,
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
    /// GitHub's 405 when the base branch moved while a pull request was
    /// being merged: "Base branch was modified. Review and try the merge
    /// again." Nothing is merged.
    BaseBranchModified,
    /// Wait this long, then handle the request normally.
    Latency(Duration),
    /// Apply the change, then wait this long before answering.
    LatencyAfterApply(Duration),
    /// Apply the change, then hold the answer until the test releases
    /// [`Hold`]: a caller whose answer is still on its way while the rest
    /// of the world moves on (its webhooks are sent, other calls answered).
    HoldAfterApply(Hold),
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

/// A gate a test holds a request's answer at ([`Fault::HoldAfterApply`]):
/// the test waits until a request is held ([`Hold::reached`]), does what
/// must happen meanwhile, then lets the answer go ([`Hold::release`]).
/// Clones share the gate.
#[derive(Clone, Debug)]
pub struct Hold {
    held: Arc<watch::Sender<u32>>,
    released: Arc<watch::Sender<bool>>,
}

impl Default for Hold {
    fn default() -> Self {
        Hold {
            held: Arc::new(watch::channel(0).0),
            released: Arc::new(watch::channel(false).0),
        }
    }
}

impl PartialEq for Hold {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.released, &other.released)
    }
}

impl Hold {
    pub fn new() -> Hold {
        Hold::default()
    }

    /// Resolves once a request's answer is held here (at once if one was).
    pub async fn reached(&self) {
        let mut held = self.held.subscribe();
        // The sender lives as long as `self`: the wait cannot fail.
        let _ = held.wait_for(|n| *n > 0).await;
    }

    /// Lets every answer held here go, and any held later pass at once.
    pub fn release(&self) {
        self.released.send_replace(true);
    }

    /// Holds the caller until [`Hold::release`].
    pub(crate) async fn wait(&self) {
        let mut released = self.released.subscribe();
        self.held.send_modify(|n| *n += 1);
        let _ = released.wait_for(|r| *r).await;
    }
}

/// What the pipeline should do with a consumed fault.
pub(crate) enum FaultAction {
    Answer(Reply),
    Delay(Duration),
    DelayAfter(Duration),
    HoldAfter(Hold),
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
            FaultAction::Answer(secondary_reply(Some(retry_after_secs)))
        }
        Fault::SecondaryRateLimitWithoutRetryAfter => FaultAction::Answer(secondary_reply(None)),
        Fault::SubmittedTooQuickly => FaultAction::Answer(too_quickly_reply("Issue")),
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
        Fault::BaseBranchModified => FaultAction::Answer(Reply::error(
            405,
            "Base branch was modified. Review and try the merge again.",
        )),
        Fault::Latency(d) => FaultAction::Delay(d),
        Fault::LatencyAfterApply(d) => FaultAction::DelayAfter(d),
        Fault::HoldAfterApply(hold) => FaultAction::HoldAfter(hold),
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

/// GitHub's 403 for a secondary rate limit, with `retry-after` when given.
pub(crate) fn secondary_reply(retry_after_secs: Option<u64>) -> Reply {
    let mut r = Reply::error(
        403,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
    );
    if let Some(secs) = retry_after_secs {
        r.headers.push(("retry-after".into(), secs.to_string()));
    }
    r
}

/// GitHub's temporary 422 for content created too fast.
pub(crate) fn too_quickly_reply(resource: &str) -> Reply {
    Reply::invalid(json!({
        "resource": resource, "code": "custom", "field": "body",
        "message": "was submitted too quickly",
    }))
}

/// How a write over a secondary limit is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SecondaryAnswer {
    /// 403 with `retry-after`: the seconds until the window has room.
    #[default]
    RetryAfter,
    /// 403 without `retry-after`.
    WithoutRetryAfter,
    /// A new issue or comment gets the 422 "was submitted too quickly";
    /// other writes a 403 without `retry-after`.
    SubmittedTooQuickly,
}

/// GitHub's secondary limits on content-creating requests.
pub struct SecondaryLimits {
    /// Writes per installation in any `minute`; 0 turns both limits off.
    pub per_minute: u32,
    /// Writes per installation in any `hour`; 0 turns this one off.
    pub per_hour: u32,
    pub minute: Duration,
    pub hour: Duration,
    pub answer: SecondaryAnswer,
    /// Each installation's accepted writes within the last hour, on
    /// GitHub's clock.
    pub writes: HashMap<u64, VecDeque<Instant>>,
}

impl Default for SecondaryLimits {
    fn default() -> Self {
        SecondaryLimits {
            per_minute: 80,
            per_hour: 500,
            minute: Duration::from_secs(60),
            hour: Duration::from_secs(3600),
            answer: SecondaryAnswer::default(),
            writes: HashMap::new(),
        }
    }
}

impl SecondaryLimits {
    /// How long until a write fits both windows at `now`; `None` when it
    /// fits now.
    fn wait(&self, times: &VecDeque<Instant>, now: Instant) -> Option<Duration> {
        let full = |limit: u32, window: Duration| -> Option<Duration> {
            if limit == 0 {
                return None;
            }
            let inside: Vec<&Instant> = times
                .iter()
                .filter(|t| now.duration_since(**t) < window)
                .collect();
            let over = inside.len().checked_sub(limit as usize)?;
            // The write that must leave the window before another fits.
            Some(window - now.duration_since(*inside[over]))
        };
        let minute = full(self.per_minute, self.minute);
        let hour = full(self.per_hour, self.hour);
        minute.into_iter().chain(hour).max()
    }
}

/// Counts one content-creating request to `template`; `Some(reply)` when
/// it is over a secondary limit (and then it is not counted).
pub(crate) fn secondary_limit(st: &mut State, installation: u64, template: &str) -> Option<Reply> {
    let limits = &mut st.secondary;
    if limits.per_minute == 0 {
        return None;
    }
    let now = st.clock.instant();
    let keep = limits.hour.max(limits.minute);
    let times = limits.writes.entry(installation).or_default();
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= keep)
    {
        times.pop_front();
    }
    let times = times.clone();
    if let Some(wait) = limits.wait(&times, now) {
        let creates_content = template.ends_with("/issues") || template.ends_with("/comments");
        return Some(match limits.answer {
            SecondaryAnswer::RetryAfter => {
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                secondary_reply(Some(secs.max(1)))
            }
            SecondaryAnswer::SubmittedTooQuickly if creates_content => {
                too_quickly_reply(if template.ends_with("/comments") {
                    "IssueComment"
                } else {
                    "Issue"
                })
            }
            SecondaryAnswer::WithoutRetryAfter | SecondaryAnswer::SubmittedTooQuickly => {
                secondary_reply(None)
            }
        });
    }
    limits
        .writes
        .entry(installation)
        .or_default()
        .push_back(now);
    None
}
