//! The processor: recorded deliveries → core decisions → stored effects.
//!
//! Owns: the order deliveries are decided in (one at a time, later ones of
//! an installation behind one put off, retried until a day has passed),
//! and storing each decision with its effects in one transaction. Parsing
//! each delivery once into its typed event and routing it with one
//! exhaustive match is `processor/route.rs`; where a run's progress goes,
//! `processor/run_progress.rs`.
//! Must not: decide. Each route loads state and calls the core; texts,
//! effects and refusals come from there.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{info, info_span, warn, Instrument};

use super::actions_runs::ActionsRuns;
use super::loops::supervisor::{CatchUnwind, Doubling};
use super::ship::Ship;
use super::sync::Syncer;
use super::task::Runs;
use crate::intake::event::DeliveryKind;
use crate::intake::payload::User;
use crate::intake::translate;
use crate::metrics::Metrics;
use crate::store::PendingDelivery;
use taskgate_core::ids::InstallationId;
use taskgate_core::{Context, Decision};

pub struct Processor {
    /// What it reads and stores ([`ProcessorStore`]).
    pub(crate) store: ProcessorStore,
    pub metrics: Arc<Metrics>,
    pub context: Context,
    /// Woken by the intake when a delivery is recorded.
    pub recorded: Arc<Notify>,
    /// The intake's parses of the deliveries it recorded, while kept.
    pub kept: Arc<crate::intake::kept::KeptWebhooks>,
    /// Wakes the executor when effects were stored.
    pub effects_stored: Arc<Notify>,
    pub syncer: Syncer,
    /// The task runs: webhooks and run progress.
    pub runs: Runs,
    /// The task side of comment commands and of the API's review.
    pub task_commands: super::task::TaskCommands,
    /// The ship's and rollback's proofs.
    pub proofs: super::task::ShipProofs,
    /// The flaky-test tracking (a quarantine's end).
    pub flaky: super::flaky::Flaky,
    pub actions: ActionsRuns,
    /// Who may run which command (`app::commands`).
    pub permissions: Arc<crate::github::Permissions>,
    pub ship: Ship,
    /// Spacing of the tries of a delivery GitHub failed (after the quick ones).
    pub retry: crate::github::executor::Backoff,
    /// The longest it waits for a wake-up before it looks by itself.
    pub idle_poll: Duration,
    /// The installations whose deliveries this replica decides.
    pub inboxes: Arc<super::inbox_lease::InboxLeases>,
    /// What `/taskgate doctor` reads GitHub with.
    pub doctor: super::doctor::DoctorSetup,
}

/// How deciding a delivery went.
enum Decided {
    Decision(Decision),
    /// It can never be decided (a payload this taskgate cannot read).
    Failed(String),
    /// GitHub failed it (5xx, rate limit, no answer): worth trying later.
    Retry(String),
}

/// What became of one delivery.
enum Processed {
    /// Its decision (or its failure) is stored.
    Stored,
    /// GitHub failed it: it is put off, and later deliveries of its
    /// installation wait behind it.
    PutOff,
    /// The store did not take the decision: the processor waits before it
    /// decides again.
    NotStored,
}

/// Quick tries at a decision that reads from GitHub before the delivery is
/// put off (a blip is over in a second; an outage or a rate limit is not,
/// and must not hold up other installations' deliveries meanwhile).
const QUICK_TRIES: u32 = 3;

/// How long a delivery is tried again before it is given up: GitHub's
/// longest outages and rate-limit windows are far shorter.
const RETRY_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// Decided deliveries whose decisions change nothing and ask for nothing,
/// with their outcomes, waiting to be marked processed in one commit
/// ([`Processor::complete_unchanged`]). Until then they are pending in the
/// store: a crash decides them again, which repeats nothing observable.
#[derive(Default)]
struct Unchanged(Vec<(PendingDelivery, String)>);

/// Who sent a decided delivery, when its payload's type keeps it (`Some`),
/// so that its body is not read again to tell taskgate's own echoes.
type Sender = Option<Option<User>>;

/// How many pending deliveries the processor reads at a time.
const BATCH: usize = 128;

impl Processor {
    /// Runs until the task is dropped. Picks up anything a previous run left
    /// unprocessed first, since deliveries are read from the store.
    pub async fn run(&self) {
        // Between passes after the store failed to take a decision: the
        // next pass decides again (reading GitHub again), so not at once.
        let mut store_failing = Doubling::new();
        // Where to read on when a whole batch was other replicas' to
        // decide, and their installations: skipped until the end is read,
        // so their later deliveries wait behind the earlier ones.
        let (mut after_seq, mut elsewhere) = (i64::MIN, Vec::new());
        loop {
            let pending = (self.store)
                .pending_deliveries_after(BATCH, after_seq, needs_payload)
                .await;
            match pending {
                Ok(batch) if batch.is_empty() => {
                    (after_seq, elsewhere) = (i64::MIN, Vec::new());
                    self.idle().await;
                }
                Ok(batch) => {
                    let (full, last) = (batch.len() == BATCH, batch[batch.len() - 1].seq);
                    let (stored, decided) = self.process_batch(batch, &mut elsewhere).await;
                    if stored && decided == 0 && full {
                        // Every one is another replica's: read on, so
                        // this replica's own deliveries are not starved.
                        after_seq = last;
                        continue;
                    }
                    (after_seq, elsewhere) = (i64::MIN, Vec::new());
                    if stored && decided == 0 {
                        // Every one is another replica's to decide.
                        self.idle().await;
                    } else if stored {
                        store_failing.reset();
                    } else {
                        let wait = store_failing.next_wait();
                        warn!(
                            wait_ms = wait.as_millis() as u64,
                            "the store did not take a decision; deciding again after a wait"
                        );
                        tokio::time::sleep(wait).await;
                    }
                }
                Err(e) => {
                    warn!(error = %e, "reading the inbox failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Waits for a new delivery, or until a put-off one is due.
    async fn idle(&self) {
        let until_ms = self.idle_until_ms().await;
        tokio::select! {
            () = self.store.clock().sleep_until_ms(until_ms) => {}
            () = self.recorded.notified() => {}
        }
    }

    /// Decides and stores a batch of pending deliveries; returns whether
    /// the store took every decision (it stops at the first it did not),
    /// and how many this replica took up.
    /// `elsewhere` starts with the installations another replica decides
    /// (found in the batches before) and gains those found in this one.
    async fn process_batch(
        &self,
        batch: Vec<PendingDelivery>,
        elsewhere: &mut Vec<Option<InstallationId>>,
    ) -> (bool, usize) {
        let mut decided = 0;
        // Deliveries whose decision changes nothing and asks for nothing (a
        // comment with no command; one intake settled but an older taskgate
        // recorded) are marked processed together, one commit for the lot,
        // written before any other write of the batch (`Unchanged`); each
        // delivery is decided on the state the one before it left, which
        // such a decision does not move.
        let mut unchanged = Unchanged::default();
        // Installations with a delivery put off in this batch: their later
        // deliveries wait behind it.
        let mut held = Vec::new();
        for delivery in batch {
            if held.contains(&delivery.installation) || elsewhere.contains(&delivery.installation) {
                continue;
            }
            decided += 1;
            if let Some(outcome) = settled_outcome(&delivery) {
                unchanged.0.push((delivery, outcome));
                continue;
            }
            if !self
                .inboxes
                .holds(&self.store.inbox(), delivery.installation)
                .await
            {
                elsewhere.push(delivery.installation);
                decided -= 1;
                continue;
            }
            let span = info_span!("delivery", id = %delivery.delivery_id, event = %delivery.event);
            let (installation, seq) = (delivery.installation, delivery.seq);
            let process = self.process(delivery, &mut unchanged);
            match CatchUnwind::new(process.instrument(span.clone())).await {
                Ok(Processed::Stored) => {}
                Ok(Processed::PutOff) => held.push(installation),
                Ok(Processed::NotStored) => return (false, decided),
                Err(panic) => {
                    let message = super::loops::supervisor::panic_message(&*panic);
                    // Those before it were decided: stored before the
                    // restart, not decided again.
                    self.complete_unchanged(&mut unchanged).await;
                    self.panicked(seq, message).instrument(span).await;
                    // The supervisor restarts the loop and counts it.
                    std::panic::resume_unwind(panic);
                }
            }
        }
        (self.complete_unchanged(&mut unchanged).await, decided)
    }

    /// Deciding a delivery panicked: it is marked failed with the panic's
    /// message, so that the restarted loop does not take it again (a
    /// delivery that panics once panics every time).
    async fn panicked(&self, seq: i64, message: String) {
        let why = format!("taskgate panicked deciding this delivery: {message}");
        warn!(error = %why, "delivery could not be processed");
        if let Err(e) = self
            .store
            .complete_delivery(seq, "failed", why, None, vec![], vec![])
            .await
        {
            warn!(error = %e, "could not mark the delivery failed");
        }
    }

    /// Until when to wait for new deliveries when none is ready (clock
    /// time, so a test that moves the clock on wakes it): until the
    /// earliest put-off one is due, at most its idle poll.
    async fn idle_until_ms(&self) -> i64 {
        let now = self.store.clock().now_ms();
        let most = now + self.idle_poll.as_millis() as i64;
        match self.store.next_retry_at_ms().await {
            Ok(Some(at)) => at.clamp(now + 10, most),
            _ => most,
        }
    }

    /// Marks `unchanged` processed in one commit and empties it; returns
    /// whether the store took it.
    async fn complete_unchanged(&self, unchanged: &mut Unchanged) -> bool {
        let unchanged = &mut unchanged.0;
        if unchanged.is_empty() {
            return true;
        }
        let outcomes = unchanged
            .iter()
            .map(|(d, outcome)| (d.seq, outcome.clone()))
            .collect();
        let stored = match self.store.complete_unchanged(outcomes).await {
            Ok(_) => {
                let now = self.store.clock().now_ms();
                for (delivery, outcome) in unchanged.iter() {
                    let _span =
                        info_span!("delivery", id = %delivery.delivery_id, event = %delivery.event)
                            .entered();
                    info!(outcome = %outcome, effects = 0, "processed");
                    self.metrics
                        .processed((now - delivery.received_at_ms).max(0) as f64 / 1000.0);
                }
                true
            }
            Err(e) => {
                warn!(error = %e, "could not mark deliveries processed");
                false
            }
        };
        unchanged.clear();
        stored
    }

    /// Decides a delivery and stores the decision: a decision that changes
    /// nothing and asks for nothing joins `unchanged`, stored with the
    /// others of its batch; any other write stores `unchanged` first, so
    /// deliveries are stored in the order they were decided.
    async fn process(&self, delivery: PendingDelivery, unchanged: &mut Unchanged) -> Processed {
        let (decided, sender) = self.decide(&delivery).await;
        let decided = match decided {
            Decided::Decision(decision) => Ok(decision),
            Decided::Failed(why) => Err(why),
            Decided::Retry(why) => {
                if !self.complete_unchanged(unchanged).await {
                    return Processed::NotStored;
                }
                match self.put_off(&delivery, why).await {
                    None => return Processed::PutOff,
                    Some(given_up) => Err(given_up.to_string()),
                }
            }
        };
        if let Ok(decision) = &decided {
            if decision.changes.is_empty() && decision.effects.is_empty() {
                self.count_own_webhook(&delivery, sender, 0);
                let outcome = decision.outcome.clone();
                // Only its id, event and times are needed from now on.
                let delivery = PendingDelivery {
                    payload: Vec::new(),
                    ..delivery
                };
                unchanged.0.push((delivery, outcome));
                return Processed::Stored;
            }
        }
        if !self.complete_unchanged(unchanged).await {
            return Processed::NotStored;
        }
        let stored = match decided {
            Ok(mut decision) => {
                if delivery.installation.is_none() && !decision.effects.is_empty() {
                    // Only an installation can act on GitHub; a hook set up
                    // outside the app (no `installation` in the payload)
                    // gets its decision recorded but nothing performed.
                    decision.outcome = format!(
                        "{}; {} effect(s) dropped: the delivery names no installation",
                        decision.outcome,
                        decision.effects.len()
                    );
                    decision.effects.clear();
                }
                let effects = decision.effects.len();
                self.count_own_webhook(&delivery, sender, effects);
                let wakes_runs = Runs::affects_runs(&decision.changes);
                let result = self
                    .store
                    .complete_delivery(
                        delivery.seq,
                        "processed",
                        decision.outcome.clone(),
                        delivery.installation,
                        decision.changes,
                        decision.effects,
                    )
                    .await;
                if effects > 0 {
                    self.effects_stored.notify_one();
                }
                if result.is_ok() && wakes_runs {
                    // Only once stored can the run queue see the change.
                    self.runs.runs_changed.notify_one();
                }
                info!(outcome = %decision.outcome, effects, "processed");
                result
            }
            Err(why) => {
                // The intake checked the shape already: this is a payload an
                // older or newer taskgate recorded, or GitHub failed it for a
                // day. Keep it, marked failed.
                warn!(error = %why, "delivery could not be processed");
                self.store
                    .complete_delivery(delivery.seq, "failed", why, None, vec![], vec![])
                    .await
            }
        };
        match stored {
            Ok(_) => {
                self.metrics.processed(
                    (self.store.clock().now_ms() - delivery.received_at_ms).max(0) as f64 / 1000.0,
                );
                Processed::Stored
            }
            Err(e) => {
                warn!(error = %e, "could not store the decision");
                Processed::NotStored
            }
        }
    }

    /// Counts a delivery GitHub sent for taskgate's own write, with the
    /// effects its decision asked for.
    fn count_own_webhook(&self, delivery: &PendingDelivery, sender: Sender, effects: usize) {
        if self.sent_by_own_bot(delivery, sender.as_ref().map(Option::as_ref)) {
            let kind = match &delivery.action {
                Some(action) => format!("{}.{action}", delivery.event),
                None => delivery.event.clone(),
            };
            self.metrics.own_webhook(&kind, effects);
        }
    }

    /// Whether GitHub sent this delivery for something taskgate's own bot
    /// did (an echo of its own write). Deliveries settled at intake never
    /// get here; they ask for nothing anyway.
    /// `sender`: the decided payload's, when its type keeps it (then the
    /// body is not read again).
    fn sent_by_own_bot(&self, delivery: &PendingDelivery, sender: Option<Option<&User>>) -> bool {
        #[derive(serde::Deserialize)]
        struct Sender {
            login: String,
        }
        #[derive(serde::Deserialize)]
        struct Envelope {
            sender: Option<Sender>,
        }
        let Some(bot) = self.context.bot_login.as_deref() else {
            return false;
        };
        if let Some(sender) = sender {
            return sender.is_some_and(|s| s.login == bot);
        }
        serde_json::from_slice::<Envelope>(&delivery.payload)
            .ok()
            .and_then(|e| e.sender)
            .is_some_and(|s| s.login == bot)
    }

    /// Puts a delivery GitHub failed off, with backoff; returns why it is
    /// given up instead once it has been tried for [`RETRY_LIMIT`].
    async fn put_off(&self, delivery: &PendingDelivery, why: String) -> Option<GaveUp> {
        let now = self.store.clock().now_ms();
        let tries = delivery.tries + 1;
        let retry_at = match next_try(delivery.received_at_ms, now, tries, &self.retry, &why) {
            Ok(at) => at,
            Err(given_up) => return Some(given_up),
        };
        warn!(tries, error = %why, wait_ms = retry_at - now, "GitHub failed the decision; trying again later");
        if let Err(e) = self
            .store
            .defer_delivery(
                delivery.seq,
                tries,
                retry_at,
                format!("will try again: {why}"),
            )
            .await
        {
            // Still pending: the next pass takes it again at once.
            warn!(error = %e, "could not put the delivery off");
        }
        None
    }
}

/// A delivery GitHub failed for [`RETRY_LIMIT`]: not tried again. Its
/// Display is the delivery's outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gave up after {tries} tries over {hours} hours: {why}")]
pub struct GaveUp {
    pub tries: u32,
    pub hours: u64,
    /// GitHub's last failure.
    pub why: String,
}

/// When a delivery GitHub failed `tries` times is tried next (ms), or why
/// it is given up: once it has waited [`RETRY_LIMIT`] since it arrived.
fn next_try(
    received_at_ms: i64,
    now_ms: i64,
    tries: u32,
    backoff: &crate::github::executor::Backoff,
    why: &str,
) -> Result<i64, GaveUp> {
    if now_ms - received_at_ms >= RETRY_LIMIT.as_millis() as i64 {
        return Err(GaveUp {
            tries,
            hours: RETRY_LIMIT.as_secs() / 3600,
            why: why.to_owned(),
        });
    }
    Ok(now_ms + backoff.delay(tries).as_millis() as i64)
}

/// Which pending deliveries the processor needs the payload of.
fn needs_payload(event: &str, action: Option<&str>) -> bool {
    DeliveryKind::of(event, action).is_none_or(|kind| kind.matters())
}

/// The outcome of a delivery nothing acts on (intake settles those now;
/// this one was recorded by an older taskgate).
fn settled_outcome(delivery: &PendingDelivery) -> Option<String> {
    match DeliveryKind::of(&delivery.event, delivery.action.as_deref())? {
        DeliveryKind::GitHub(kind) => translate::settled_outcome(&kind),
        DeliveryKind::Internal(_) => None,
    }
}

mod route;
mod run_progress;
mod store;

pub(crate) use store::ProcessorStore;

pub(super) use route::DecideError;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::executor::Backoff;

    #[test]
    fn a_delivery_github_failed_is_tried_later_and_given_up_only_after_a_day() {
        let backoff = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(600),
            max_attempts: 5,
            read_lag: Duration::ZERO,
        };
        let hour = 3_600_000;
        let at = next_try(0, hour, 1, &backoff, "502").unwrap();
        assert!((hour + 800..=hour + 1200).contains(&at), "{at}");
        // Many tries in, the wait is capped at the backoff's maximum.
        let at = next_try(0, 23 * hour, 40, &backoff, "502").unwrap();
        assert!(
            (23 * hour + 480_000..=23 * hour + 720_000).contains(&at),
            "{at}"
        );
        assert_eq!(
            next_try(0, 24 * hour, 41, &backoff, "GitHub answered 502").map_err(|e| e.to_string()),
            Err("gave up after 41 tries over 24 hours: GitHub answered 502".to_owned())
        );
    }
}
