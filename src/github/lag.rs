//! Reads that lag writes: how long a retry waits before it looks for what
//! an earlier attempt may have made.
//!
//! Owns: which effects find their earlier attempt's object through a list
//! (an issue by its marker in `GET .../issues`, a comment in an issue's
//! comments, a dispatched run in its workflow's runs, a check run on its
//! commit), and the rule that such an effect, when an earlier attempt may
//! have written, looks only once GitHub's lists can show that write.
//! Must not: call GitHub or decide anything about the effect itself.
//!
//! GitHub offers no idempotency key, and its lists lag its writes: an
//! object created a moment ago may be missing from the list a retry reads,
//! and the retry would then create it again. An attempt "may have written"
//! when GitHub answered 5xx or nothing at all (the write may have been
//! applied before the answer was lost), or when it was interrupted with no
//! outcome recorded (a crash, a replica lost mid-call). The retry of such
//! an attempt is due no sooner than [`Backoff::read_lag`] after it, so the
//! lookup reads a list that has caught up. A reconcile pass likewise waits
//! for the writes queued before it. See
//! `docs/decisions/reads-that-lag.md`.

use std::time::Duration;

use tracing::{info, warn};

use super::client::GitHubError;
use super::executor::Backoff;
use crate::clock::Clock;
use crate::store::EffectRow;
use taskgate_core::Effect;

/// Whether a retry of `effect` looks, through a list GitHub may update
/// late, for the object an earlier attempt may have created.
pub(super) fn looks_up_through_a_list(effect: &Effect) -> bool {
    matches!(
        effect,
        Effect::CreateIssue { .. }
            | Effect::PostComment { .. }
            | Effect::CommentOnMarker { .. }
            | Effect::UpsertComment { .. }
            | Effect::OpenCheckRun { .. }
            | Effect::DispatchWorkflow { .. }
            | Effect::DispatchRun { .. }
    )
}

/// Whether GitHub may have applied the write that failed with `err`: it
/// answered 5xx, or its answer never came.
fn may_have_written(err: &GitHubError) -> bool {
    match err {
        GitHubError::Http { status, .. } => *status >= 500,
        GitHubError::Transport(_) => true,
        _ => false,
    }
}

/// The wait before the next attempt of `effect` after `err`: the backoff's
/// `delay`, or the read lag when that is longer and the failed attempt may
/// have created what the retry will look for.
pub(super) fn retry_delay(
    effect: &Effect,
    err: &GitHubError,
    delay: Duration,
    backoff: &Backoff,
) -> Duration {
    if looks_up_through_a_list(effect) && may_have_written(err) {
        delay.max(backoff.read_lag)
    } else {
        delay
    }
}

/// When an effect whose earlier attempt ended with no outcome recorded (a
/// crash or a lost replica mid-call) may look for its object: `None` when
/// it may now (nothing was interrupted, or it does not look through a
/// list, or there is no lag to wait out).
pub(super) fn interrupted_retry_at(row: &EffectRow, now_ms: i64, backoff: &Backoff) -> Option<i64> {
    let interrupted = row.attempts > 0 && row.last_error.is_none();
    if !interrupted || !looks_up_through_a_list(&row.effect) || backoff.read_lag.is_zero() {
        return None;
    }
    Some(now_ms + i64::try_from(backoff.read_lag.as_millis()).unwrap_or(i64::MAX))
}

/// What the outbox says of an effect waiting out the read lag.
const WAITING_OUT_THE_LAG: &str =
    "interrupted before GitHub answered; waiting out GitHub's read lag before looking for what it made";

/// Puts `row` off, before it is claimed, when it must not run yet: its
/// last attempt was interrupted and GitHub's lists may not show what it
/// made, or it is a reconcile pass behind writes of the same installation
/// still pending (a retry, a write put off for the budget: the pass reads
/// what they record, and would create an issue again). True when put off; the wait does not count as a failure.
pub(super) async fn put_off(
    store: &super::executor::ExecutorStore,
    clock: &Clock,
    backoff: &Backoff,
    row: &EffectRow,
) -> bool {
    let now = clock.now_ms();
    let (due_ms, why) = if let Some(due_ms) = interrupted_retry_at(row, now, backoff) {
        (due_ms, WAITING_OUT_THE_LAG)
    } else if matches!(row.effect, Effect::Reconcile { .. }) {
        match store.earlier_pending_due_ms(row.installation, row.id).await {
            Ok(Some(due_ms)) => (
                due_ms.max(now + 50),
                "waits for the writes queued before it",
            ),
            Ok(None) => return false,
            Err(e) => {
                warn!(error = %e, "could not read the pass's writes; running the pass now");
                return false;
            }
        }
    } else {
        return false;
    };
    info!(retry_in_ms = due_ms - now, reason = why, "effect put off");
    if let Err(e) = store
        .effect_retry_at(row.id, due_ms, why.to_owned(), false)
        .await
    {
        warn!(error = %e, "could not put the effect off; trying it now");
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff() -> Backoff {
        Backoff {
            read_lag: Duration::from_secs(10),
            ..Backoff::default()
        }
    }

    fn create_issue() -> Effect {
        Effect::CreateIssue {
            repo: taskgate_core::ids::RepoName::parse("o/r").unwrap(),
            marker: "story=s".into(),
            title: "t".into(),
            body: "b".into(),
            labels: vec![],
            assignees: vec![],
        }
    }

    fn http(status: u16) -> GitHubError {
        GitHubError::Http {
            status,
            headers: Box::default(),
            message: "m".into(),
        }
    }

    #[test]
    fn a_create_whose_answer_was_lost_looks_again_only_after_the_read_lag() {
        let short = Duration::from_millis(20);
        let wait = |err: GitHubError| retry_delay(&create_issue(), &err, short, &backoff());
        assert_eq!(wait(http(502)), Duration::from_secs(10));
        assert_eq!(
            wait(GitHubError::Transport("reset".into())),
            Duration::from_secs(10)
        );
        // Nothing was written: the backoff alone.
        assert_eq!(wait(GitHubError::NotYetVisible("404".into())), short);
        let label = Effect::LabelIssue {
            repo: taskgate_core::ids::RepoName::parse("o/r").unwrap(),
            issue: taskgate_core::ids::IssueNumber::new(1),
            add: vec![],
            remove: vec![],
        };
        assert_eq!(retry_delay(&label, &http(502), short, &backoff()), short);
    }
}
