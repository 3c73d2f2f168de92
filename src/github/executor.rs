//! The effect executor: takes due effects from the outbox and performs them
//! on GitHub, one at a time.
//!
//! Serial on purpose: GitHub asks integrations to make content-creating
//! requests serially, and its secondary rate limits punish bursts.
//!
//! Fair between installations: effects are taken in turns
//! (`github::turns`), one call per installation with effects due in
//! each turn, installations in rotation; within an installation, in the
//! order they were queued. Nothing sleeps inline: an installation whose
//! write budget has no slot yet is paused until it has, and the others
//! go on. So a backlog of thousands of writes in one installation delays
//! another's write by one turn at most. Failures
//! are sorted the way GitHub documents them:
//! - 403/429 rate limits wait for `retry-after`, else `x-ratelimit-reset`,
//!   else a minute, and pause the whole installation meanwhile;
//! - 5xx, no answer, a read that does not show yet what taskgate just
//!   made (GitHub's reads lag its writes: `GitHubError::NotYetVisible`),
//!   and a refusal GitHub asks to try again (a merge meeting "Base branch
//!   was modified": `GitHubError::TryAgain`) back off exponentially, up to `max_attempts` such failures
//!   (rate-limited attempts do not count);
//! - 401 forgets the installation token and tries once more at once;
//! - a 403 that is not a rate limit (a missing permission: "Resource not
//!   accessible by integration") fails the effect at once with GitHub's
//!   message and says so on the issue the effect was about (`refusal`),
//!   once per issue; nothing pauses;
//! - any other 4xx fails the effect with GitHub's message, not retried.
//!
//! Updates of one check run are not sent out of order: a retried update
//! (refused once, or its replica died during the call) that a later one
//! overtook is dropped (`Store::claim_check_run_update`), so an "in
//! progress" never reopens a check run already completed.
//!
//! Creating effects are idempotent across crashes: every attempt is recorded
//! before it is made, and an effect on its second or later attempt first
//! looks for its hidden marker on GitHub, so an object GitHub accepted just
//! before a crash is found, not created again.
//!
//! Replicas sharing one PostgreSQL database read the same outbox, so the
//! record of an attempt is a claim (`Store::claim_effect_attempt`): it
//! succeeds for one replica only and holds the effect for a lease; the
//! others skip it. A replica that dies mid-call leaves the effect due again
//! when the lease runs out, and whoever takes it over is on a later
//! attempt, so it looks for the marker as after a crash. Write pacing is
//! shared the same way: each write takes its slot from the store
//! (`Store::take_write_slot`), so an installation's writes are spaced
//! across all replicas. Claims are judged by the database's clock, and an
//! attempt's outcome is recorded only while its claim holds
//! (`Store::settle_effect`): an answer that came after the claim ran out
//! is dropped, and the effect is tried again under a new claim, which
//! looks for its marker first. On a SQLite file (one process) a claim
//! lasts no time and a restart retries at once.
//!
//! A rate-limit pause holds the cluster: GitHub counts its limits per
//! installation token, whichever replica calls, so the replica that met
//! the limit writes the pause to the store (`Store::pause_installation`,
//! on the database's clock) and every replica reads the pauses before a
//! turn with effects due: an installation paused there has its due
//! effects put off until the pause ends, and is not called meanwhile.
//!
//! Due times and pauses are read from the injected [`Clock`], and the wait
//! for the next one sleeps on it: a test that advances the clock past a
//! retry's due time sees it tried at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use octocrab::Octocrab;
use tokio::sync::Notify;
use tracing::{debug, info, info_span, warn, Instrument};

use super::auth::GitHubApp;
use super::client::GitHubError;
use super::perform;
use super::turns::{Rotation, Turn};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{Claimed, EffectRow, Settlement, WriteSlot};
use taskgate_core::ids::InstallationId;

mod store;
mod waits;

pub use store::ExecutorStore;

use waits::is_rate_limited;
pub use waits::{rate_limit_wait, Backoff, DEFAULT_READ_LAG};

/// The write budget (`core::pace`): content-creating calls per installation
/// a minute and an hour, across all replicas.
pub use taskgate_core::pace::Pacing;

pub struct Executor {
    /// What it reads and records ([`ExecutorStore`]).
    pub store: ExecutorStore,
    pub github: Arc<GitHubApp>,
    pub metrics: Arc<Metrics>,
    pub backoff: Backoff,
    pub pacing: Pacing,
    /// Due times, pauses, and the wait for the next of them.
    pub clock: Clock,
    /// Woken when new effects are stored.
    pub wake: Arc<Notify>,
    /// Wakes the processor when an effect queued a delivery of its own
    /// (the next reconciliation pass).
    pub deliveries: Arc<Notify>,
    /// The longest it sleeps without a wake-up or an effect due.
    pub idle_poll: Duration,
}

/// What the write budget says about an effect's call.
enum Paced {
    /// Its slot has come: call GitHub.
    Go,
    /// No room before this time: the installation waits until then.
    Later(i64),
}

/// How many of an installation's due effects a turn reads: enough to get
/// past a few put off without a call.
const READ_PER_TURN: usize = 4;

/// What became of one attempt.
enum Outcome {
    Done(Option<String>),
    /// A server error or no answer: try again at `due_ms`; counts toward
    /// giving up.
    RetryAt {
        due_ms: i64,
        why: String,
    },
    /// GitHub asked us to wait until `until_ms`; the whole installation
    /// pauses, and the attempt does not count toward giving up.
    RateLimited {
        until_ms: i64,
        why: String,
    },
    Failed(String),
}

impl Executor {
    /// Runs until the task is dropped.
    pub async fn run(self) {
        let mut paused: HashMap<InstallationId, i64> = HashMap::new();
        let mut rotation = Rotation::default();
        loop {
            let now = self.clock.now_ms();
            paused.retain(|_, until| *until > now);
            let due = match self.store.due_by_installation(now, READ_PER_TURN).await {
                Ok(due) => due,
                Err(e) => {
                    warn!(error = %e, "reading the outbox failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let shared = self.shared_pauses(&due.by_installation, &paused).await;
            let turn = rotation.turn(due.by_installation, &paused);
            if turn.is_empty() {
                self.idle(&paused, due.next_due_ms).await;
                continue;
            }
            for (installation, rows) in turn {
                let pause = match shared.get(&installation) {
                    Some(&until) => Some(self.hold(&rows, until).await),
                    None => self.take_turn(rows).await,
                };
                if let Some(until) = pause {
                    paused.insert(installation, until);
                }
            }
        }
    }

    /// One installation's turn: its due effects in order until one calls
    /// GitHub (put off without a call, one does not use the turn); a
    /// pause for the installation when its budget or a rate limit says so.
    async fn take_turn(&self, rows: Vec<EffectRow>) -> Option<i64> {
        for row in rows {
            let span = info_span!("effect", id = %row.id, kind = row.effect.name(), installation = %row.installation);
            match self.perform(row).instrument(span).await {
                Turn::Passed => continue,
                Turn::Used => return None,
                Turn::Pause(until) => return Some(until),
            }
        }
        None
    }

    /// The pauses another replica (or this one, before a restart) learned
    /// from GitHub (`store::pauses`) for the installations with effects due
    /// that this replica does not hold yet, as times on this replica's
    /// clock. Read only when there is something to send.
    async fn shared_pauses(
        &self,
        due: &[(InstallationId, Vec<EffectRow>)],
        paused: &HashMap<InstallationId, i64>,
    ) -> HashMap<InstallationId, i64> {
        if due.iter().all(|(i, _)| paused.contains_key(i)) {
            return HashMap::new();
        }
        match self.store.installation_pauses().await {
            Ok(left) => {
                let now = self.clock.now_ms();
                left.into_iter()
                    .filter(|(i, _)| !paused.contains_key(i))
                    .map(|(i, left_ms)| (i, now + left_ms))
                    .collect()
            }
            Err(e) => {
                warn!(error = %e, "could not read the installations' rate-limit pauses");
                HashMap::new()
            }
        }
    }

    /// Holds an installation's due effects until the pause GitHub asked of
    /// another replica ends: each is put off until then, so the outbox says
    /// why it waits; the installation is paused here too.
    async fn hold(&self, rows: &[EffectRow], until: i64) -> i64 {
        for row in rows {
            let why = "rate limit: GitHub asked another replica to wait".to_owned();
            info!(id = %row.id, installation = %row.installation, retry_in_ms = until - self.clock.now_ms(), "{why}");
            if let Err(e) = self.store.effect_retry_at(row.id, until, why, false).await {
                warn!(error = %e, "could not put the effect off");
            }
        }
        until
    }

    /// Sleeps until woken, the next effect is due, or a pause ends.
    async fn idle(&self, paused: &HashMap<InstallationId, i64>, next_due: Option<i64>) {
        let next_pause_end = paused.values().min().copied();
        // An absolute time, so a clock moved on from now wakes it.
        let now = self.clock.now_ms();
        let idle = self.idle_poll.as_millis() as i64;
        let wake_at = [next_due, next_pause_end]
            .into_iter()
            .flatten()
            .map(|t| t.max(now + 5))
            .min()
            .unwrap_or(now + idle)
            .min(now + idle);
        tokio::select! {
            _ = self.wake.notified() => {}
            _ = self.clock.sleep_until_ms(wake_at) => {}
        }
    }

    /// The attempt, given up before its claim runs out where replicas share
    /// the outbox: a call that outlived its claim could run beside another
    /// replica's attempt at the same effect. Given up, it is retried like a
    /// call that got no answer, by whichever replica claims it next, which
    /// looks for the effect's marker first. (Its outcome would be dropped
    /// anyway: `Store::settle_effect` records none after the claim.)
    async fn attempt_within_claim(&self, row: &EffectRow, claim: &Claimed) -> Outcome {
        let claim_ms = self.store.effect_claim_ms();
        if claim_ms == 0 {
            return self.attempt(row, claim.attempt).await;
        }
        // Taken just now; a margin for storing the outcome before it ends.
        let limit = Duration::from_millis((claim_ms * 3 / 4).max(1) as u64);
        match tokio::time::timeout(limit, self.attempt(row, claim.attempt)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::RetryAt {
                due_ms: claim.until_ms,
                why: format!(
                    "GitHub did not answer within the claim ({} ms); left for the next claim",
                    limit.as_millis()
                ),
            },
        }
    }

    /// Performs one effect, if its budget has room and this replica claims
    /// it first; what that took of the installation's turn.
    async fn perform(&self, row: EffectRow) -> Turn {
        if super::lag::put_off(&self.store, &self.clock, &self.backoff, &row).await {
            return Turn::Passed;
        }
        if let Paced::Later(at) = self.pace(&row).await {
            return self.wait_for_budget(&row, at).await;
        }
        let Some(claim) = self.claim(&row).await else {
            return Turn::Passed;
        };
        let attempt = claim.attempt;
        let outcome = self.attempt_within_claim(&row, &claim).await;
        let (settlement, pause) = self.settlement(&row, attempt, outcome);
        if let Some(until) = pause {
            self.share_pause(row.installation, until).await;
        }
        match self.store.settle_effect(row.id, attempt, settlement).await {
            Ok(true) => {}
            Ok(false) => warn!(
                attempt,
                "the claim ran out while GitHub was called: its outcome is dropped, and the effect is tried again under a new claim"
            ),
            Err(e) => warn!(error = %e, "could not store the effect's outcome"),
        }
        pause.map_or(Turn::Used, Turn::Pause)
    }

    /// Writes GitHub's pause of `installation` to the store, so every
    /// replica holds its calls there until `until` (this one holds them
    /// already). Not written, the others learn it themselves.
    async fn share_pause(&self, installation: InstallationId, until: i64) {
        let wait_ms = until - self.clock.now_ms();
        if let Err(e) = self.store.pause_installation(installation, wait_ms).await {
            warn!(error = %e, "could not share the rate-limit pause with the other replicas");
        }
    }

    /// What an attempt's outcome records, and the installation's pause
    /// when GitHub rate limited it.
    fn settlement(
        &self,
        row: &EffectRow,
        attempt: u32,
        outcome: Outcome,
    ) -> (Settlement, Option<i64>) {
        match outcome {
            Outcome::Done(result) => {
                info!(attempt, "effect done");
                if row.effect.may_record_delivery() {
                    self.deliveries.notify_one();
                }
                (Settlement::Done(result), None)
            }
            Outcome::Failed(why) => {
                // A refused merge or dispatch records what follows in the
                // inbox.
                if row.effect.may_record_delivery() {
                    self.deliveries.notify_one();
                }
                warn!(attempt, error = %why, "effect failed");
                (Settlement::Failed(why), None)
            }
            Outcome::RetryAt { due_ms, why } => {
                info!(attempt, retry_in_ms = due_ms - self.clock.now_ms(), reason = %why, "effect will be retried");
                (
                    Settlement::RetryAt {
                        due_ms,
                        why,
                        failed: true,
                    },
                    None,
                )
            }
            Outcome::RateLimited { until_ms, why } => {
                info!(attempt, retry_in_ms = until_ms - self.clock.now_ms(), reason = %why, "rate limited; effect will be retried");
                let retry = Settlement::RetryAt {
                    due_ms: until_ms,
                    why,
                    failed: false,
                };
                (retry, Some(until_ms))
            }
        }
    }

    /// Claims the effect's attempt before GitHub is called, recording it
    /// durably; `None` when another replica claimed it first (or the store
    /// failed: then GitHub is not called either).
    async fn claim(&self, row: &EffectRow) -> Option<Claimed> {
        let claim_ms = self.store.effect_claim_ms();
        match self.store.claim_effect_attempt(row.id, claim_ms).await {
            Ok(Some(claim)) => Some(claim),
            Ok(None) => {
                debug!("another replica claimed the effect first; skipped");
                None
            }
            Err(e) => {
                warn!(error = %e, "could not record the attempt; not calling GitHub");
                None
            }
        }
    }

    /// Takes the installation's write slot now, from the store, so that
    /// every replica's writes are spaced together; reads are not paced.
    /// When the budget has no slot now, none is taken and the installation
    /// waits until it has ([`Paced::Later`]): nothing sleeps here, so
    /// other installations' effects go on meanwhile. An effect known to
    /// call nothing (a pass; a task branch's start already recorded) takes
    /// no slot: a slot spent on no write is an hour's budget short by one,
    /// and a story's pace note counts writes, not effects.
    async fn pace(&self, row: &EffectRow) -> Paced {
        if self.pacing.is_off() || row.effect.calls_nothing() {
            return Paced::Go;
        }
        match super::perform::branches::started_already(&self.store.perform(), &row.effect).await {
            Ok(true) => return Paced::Go,
            Ok(false) => {}
            Err(e) => warn!(error = %e, "could not read the task's branch; taking a write slot"),
        }
        let now = self.clock.now_ms();
        match self
            .store
            .take_write_slot(row.installation, now, self.pacing, 0)
            .await
        {
            Ok(WriteSlot::At(_)) => Paced::Go,
            Ok(WriteSlot::Later(at)) => Paced::Later(at),
            Err(e) => {
                warn!(error = %e, "could not take a write slot; waiting one interval");
                Paced::Later(now + self.pacing.interval_ms().max(1))
            }
        }
    }

    /// Pauses the installation until the write budget has room at `at`,
    /// without counting a failure. A wait beyond a couple of intervals
    /// (the hour's budget is spent) is also written on the effect, so the
    /// outbox says why it waits and other replicas leave it until then.
    async fn wait_for_budget(&self, row: &EffectRow, at: i64) -> Turn {
        let now = self.clock.now_ms();
        if at - now > 2 * self.pacing.interval_ms() + 1_000 {
            let why = format!(
                "waiting for the write budget ({} a minute, {} an hour)",
                self.pacing.per_minute, self.pacing.per_hour
            );
            info!(retry_in_ms = at - now, "{why}");
            if let Err(e) = self.store.effect_retry_at(row.id, at, why, false).await {
                warn!(error = %e, "could not put the effect off");
            }
        }
        Turn::Pause(at)
    }

    async fn attempt(&self, row: &EffectRow, attempt: u32) -> Outcome {
        let mut refreshed = false;
        loop {
            let result = self.call(row, attempt).await;
            let err = match result {
                Ok(result) => return Outcome::Done(result),
                Err(err) => err,
            };
            match &err {
                GitHubError::Http { status: 401, .. } if !refreshed => {
                    // The token may have been revoked or expired early.
                    refreshed = true;
                    self.github.invalidate(row.installation).await;
                    continue;
                }
                GitHubError::Http {
                    status,
                    headers,
                    message,
                } if is_rate_limited(*status, headers, message) => {
                    let now = self.clock.now_ms();
                    return Outcome::RateLimited {
                        until_ms: now + rate_limit_wait(headers, now).as_millis() as i64,
                        why: format!("rate limit ({status}): {message}"),
                    };
                }
                GitHubError::Http {
                    status: 403,
                    message,
                    ..
                } => {
                    // A missing permission: no wait makes it pass, and the
                    // installation's other effects must not wait either.
                    self.tell_refusal(row, attempt, message).await;
                    return Outcome::Failed(err.to_string());
                }
                GitHubError::Http { status, .. } if *status >= 500 => {}
                GitHubError::Transport(_)
                | GitHubError::NotYetVisible(_)
                | GitHubError::TryAgain(_) => {}
                GitHubError::Http { .. }
                | GitHubError::Unexpected(_)
                | GitHubError::Config(_)
                | GitHubError::Store(_) => {
                    return Outcome::Failed(err.to_string());
                }
            }
            let failures = row.failures + 1;
            if failures >= self.backoff.max_attempts {
                let why = format!("gave up after {failures} failed attempts: {err}");
                // A ship given up must not hold its repository's queue.
                super::perform::land::given_up(&self.store.perform(), row, &why).await;
                return Outcome::Failed(why);
            }
            let delay = self.backoff.delay(failures);
            let delay = super::lag::retry_delay(&row.effect, &err, delay, &self.backoff);
            return Outcome::RetryAt {
                due_ms: self.clock.now_ms() + delay.as_millis() as i64,
                why: err.to_string(),
            };
        }
    }

    /// Says on the effect's issue that GitHub refused it; a failure to say
    /// so is logged, never retried.
    async fn tell_refusal(&self, row: &EffectRow, attempt: u32, message: &str) {
        let told = match self.github.installation_client(row.installation).await {
            Ok(client) => {
                let store = self.store.perform();
                let ctx = perform::Ctx {
                    client: &client,
                    own: self.github.own_app(),
                    store: &store,
                    row,
                    attempt,
                };
                super::refusal::report_refusal(&ctx, message).await
            }
            Err(e) => Err(e),
        };
        match told {
            Ok(Some(issue)) => info!(%issue, "refusal reported on the issue"),
            Ok(None) => {
                warn!(reason = %message, "GitHub refused the effect; no issue to report it on")
            }
            Err(e) => warn!(error = %e, "could not report GitHub's refusal"),
        }
    }

    async fn call(&self, row: &EffectRow, attempt: u32) -> Result<Option<String>, GitHubError> {
        let client = self.github.installation_client(row.installation).await?;
        let result = self.call_with(&client, row, attempt).await;
        // An effect may take a lookup and a create; a success is counted
        // as a class, a failure by GitHub's exact status.
        let status = match &result {
            Ok(_) => "2xx".to_owned(),
            Err(e) => e
                .status()
                .map_or_else(|| "none".to_owned(), |s| s.to_string()),
        };
        self.metrics.github_call(row.effect.name(), status);
        result
    }

    async fn call_with(
        &self,
        client: &Octocrab,
        row: &EffectRow,
        attempt: u32,
    ) -> Result<Option<String>, GitHubError> {
        let store = self.store.perform();
        let ctx = perform::Ctx {
            client,
            own: self.github.own_app(),
            store: &store,
            row,
            attempt,
        };
        perform::perform(&ctx).await
    }
}
