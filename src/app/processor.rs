//! The processor: recorded deliveries → core decisions → stored effects.
//!
//! Owns: the order deliveries are decided in (one at a time, later ones of
//! an installation behind one put off), parsing each once into the typed
//! event (`intake::event::Delivered`) and routing it with one exhaustive
//! match, and storing each decision with its effects in one transaction.
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
use crate::intake::event::{Delivered, DeliveryKind, Webhook};
use crate::intake::translate;
use crate::metrics::Metrics;
use crate::store::{PendingDelivery, Store};
use crate::transient::Transient;
use taskgate_core::ids::{InstallationId, RepoName};
use taskgate_core::internal::InternalEvent;
use taskgate_core::{Context, Decision};

pub struct Processor {
    pub store: Store,
    pub metrics: Arc<Metrics>,
    pub context: Context,
    /// Woken by the intake when a delivery is recorded.
    pub recorded: Arc<Notify>,
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
        // Deliveries nothing acts on (intake settles those now; these were
        // recorded by an older taskgate) are marked processed together, one
        // commit for the lot; the others are decided one at a time, each on
        // the state the one before it left.
        let mut unchanged = Vec::new();
        // Installations with a delivery put off in this batch: their later
        // deliveries wait behind it.
        let mut held = Vec::new();
        for delivery in batch {
            if held.contains(&delivery.installation) || elsewhere.contains(&delivery.installation) {
                continue;
            }
            decided += 1;
            if let Some(outcome) = settled_outcome(&delivery) {
                unchanged.push((delivery, outcome));
                continue;
            }
            if !self.complete_unchanged(&mut unchanged).await {
                return (false, decided);
            }
            if !self.inboxes.holds(&self.store, delivery.installation).await {
                elsewhere.push(delivery.installation);
                decided -= 1;
                continue;
            }
            let span = info_span!("delivery", id = %delivery.delivery_id, event = %delivery.event);
            let (installation, seq) = (delivery.installation, delivery.seq);
            match CatchUnwind::new(self.process(delivery).instrument(span.clone())).await {
                Ok(Processed::Stored) => {}
                Ok(Processed::PutOff) => held.push(installation),
                Ok(Processed::NotStored) => return (false, decided),
                Err(panic) => {
                    let message = super::loops::supervisor::panic_message(&*panic);
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

    /// Decides what a delivery implies. Most events need only the core;
    /// plan sync, runs and shipping may first read from GitHub: a failure
    /// there is tried again at once a few times, then reported as
    /// [`Decided::Retry`] so the delivery is put off, not lost.
    async fn decide(&self, delivery: &PendingDelivery) -> Decided {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.decide_once(delivery).await {
                Err(DecideError::Transient(why)) if attempt < QUICK_TRIES => {
                    warn!(attempt, error = %why, "reading from GitHub failed; retrying");
                    tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
                }
                Err(DecideError::Transient(why)) => return Decided::Retry(why),
                Err(DecideError::Permanent(why)) => return Decided::Failed(why),
                Ok(decision) => return Decided::Decision(decision),
            }
        }
    }

    /// Parses the delivery once into its typed event and routes it: the
    /// match is exhaustive, so a new event or internal event cannot be
    /// left out.
    async fn decide_once(&self, delivery: &PendingDelivery) -> Result<Decision, DecideError> {
        let Some(kind) = DeliveryKind::of(&delivery.event, delivery.action.as_deref()) else {
            return Err(DecideError::Permanent(format!(
                "event `{}` is not one taskgate handles",
                delivery.event
            )));
        };
        if !kind.matters() {
            return Ok(self.decide_unused(delivery));
        }
        let delivered = kind
            .parse(&delivery.payload)
            .map_err(|e| DecideError::Permanent(e.to_string()))?;
        match delivered {
            Delivered::Internal(event) => self.decide_internal(*event).await,
            Delivered::GitHub(webhook) => {
                self.decide_webhook(delivery.installation, *webhook).await
            }
        }
    }

    /// taskgate's own events, each to the part of the shell that owns it.
    async fn decide_internal(&self, event: InternalEvent) -> Result<Decision, DecideError> {
        match event {
            InternalEvent::Reconcile(pass) => {
                let mut decision = self.syncer.on_reconcile(&pass).await?;
                // A task branch just started: the work pushed while its
                // task was pending may be tested now.
                if let Some(started) = &pass.started {
                    let run = (self.runs)
                        .on_branch_started(&pass.repo, &pass.story, started)
                        .await?;
                    if let Some(run) = run {
                        decision.merge(run);
                    }
                }
                // The story's ship gate follows its tasks.
                let ship = self.ship.on_reconcile(&pass).await?;
                decision.merge(ship);
                Ok(decision)
            }
            InternalEvent::Review(review) => self.api_review(review).await,
            InternalEvent::Ship(ship) => {
                let outcome = self.ship.on_ship_event(ship).await?;
                Ok(self.with_proof_run(outcome).await?)
            }
            InternalEvent::Tick(tick) => Ok(self.runs.on_tick(tick).await?),
            InternalEvent::ActionsWatch(watch) => Ok(self.actions.on_watch(watch, self).await?),
            InternalEvent::Run(run) => Ok(self.run_progress(run).await?),
            InternalEvent::QuarantineEnded(ended) => {
                Ok(self.flaky.on_quarantine_ended(ended).await?)
            }
            InternalEvent::CheckRunKnown(known) => Ok(self.runs.on_check_run_known(known).await?),
        }
    }

    /// A ship decision, with the proof runs it asks for started.
    async fn with_proof_run(
        &self,
        outcome: crate::app::ship::ShipOutcome,
    ) -> Result<Decision, crate::store::StoreError> {
        let mut decision = outcome.decision;
        for p in outcome.stopped {
            let why = "the ship batch it proved was dissolved";
            let stop = self.proofs.stop_proof(&p.repo, &p.story, &p.commit, why);
            decision.merge(stop.await?);
        }
        for p in outcome.proof_runs {
            let run = self
                .proofs
                .start_ship_proof(&p.repo, (&p.story, &p.task), &p.commit, &p.gates_of)
                .await?;
            decision.merge(run);
        }
        Ok(decision)
    }

    /// GitHub's webhooks. Only an installation can act on GitHub: without
    /// one, the core answers what it can alone.
    async fn decide_webhook(
        &self,
        installation: Option<InstallationId>,
        webhook: Webhook,
    ) -> Result<Decision, DecideError> {
        let Some(installation) = installation else {
            return self.decide_in_core(&webhook);
        };
        match &webhook {
            Webhook::PullRequest(p) => {
                let pull = translate::pull_request(p)?;
                match self.ship.on_pull_request(&pull).await? {
                    Some(decision) => Ok(decision),
                    None => {
                        let mut decision = self.runs.on_pull_request(&pull).await?;
                        // Not a story's: `taskgate/ship-gate` is neutral on
                        // it, so a required gate does not block it.
                        decision
                            .effects
                            .extend(self.ship.gate_of_ordinary_pull(&pull).await?);
                        // A plan or the config it changes: checked on its head.
                        // A preview GitHub refuses for good costs the pull
                        // request its preview, never the decision above.
                        match self.syncer.on_pull_request_plans(installation, &pull).await {
                            Ok(Some(plans)) => {
                                decision.outcome =
                                    format!("{}; {}", decision.outcome, plans.outcome);
                                decision.effects.extend(plans.effects);
                            }
                            Ok(None) => {}
                            Err(e) => match DecideError::from(e) {
                                DecideError::Transient(why) => {
                                    return Err(DecideError::Transient(why))
                                }
                                DecideError::Permanent(why) => {
                                    tracing::warn!(%why, "no plan preview for the pull request");
                                }
                            },
                        }
                        Ok(decision)
                    }
                }
            }
            Webhook::CheckSuite(p) => {
                let suite = translate::check_suite(p)?;
                Ok(self.runs.on_check_suite(&suite, &self.permissions).await?)
            }
            // GitHub's merge queue: taskgate is the CI of merge groups.
            Webhook::MergeGroup(p) => {
                let outcome = self.ship.on_merge_group(p).await?;
                Ok(self.with_proof_run(outcome).await?)
            }
            Webhook::CheckRun(p) => {
                let run = translate::check_run(p)?;
                Ok(self
                    .runs
                    .on_check_run(&run, self.context.app_id, &self.permissions)
                    .await?)
            }
            // A story's deploy or validation run first; any other run may
            // be the Actions runner's.
            Webhook::WorkflowRun(p) => {
                let run = translate::workflow_run(p)?;
                match self.ship.on_workflow_run(&run).await? {
                    Some(decision) => Ok(decision),
                    None => Ok(self.actions.on_workflow_run(&run, self).await?),
                }
            }
            // A task branch's push is a run; any other may change a plan.
            Webhook::Push(push) => {
                let push = translate::push(push)?;
                match self.runs.on_push(&push).await? {
                    Some(mut decision) => {
                        // A story that moved after `ship` leaves the queue.
                        let ship = self.ship.on_story_branch_push(&push).await?;
                        decision.merge(ship);
                        Ok(decision)
                    }
                    None => {
                        let mut decision = self.syncer.on_push(installation, &push).await?;
                        // A story proving on the base this push replaced.
                        let ship = self.ship.on_default_branch_push(&push).await?;
                        decision.merge(ship);
                        Ok(decision)
                    }
                }
            }
            // Every command of a comment, `plan` included: see `app::commands`.
            // A repository with no config recorded has it read first.
            Webhook::IssueComment(comment) => {
                if let Ok(repo) = RepoName::parse(&comment.repository.full_name) {
                    (self.syncer)
                        .read_config_if_unrecorded(installation, &repo)
                        .await;
                }
                self.on_comment(installation, comment).await
            }
            // A review on GitHub, as a review command: `app::commands`.
            Webhook::PullRequestReview(review) => self.on_review(installation, review).await,
            // The repositories added have their config read (never
            // failing the delivery: `sync::first_read`).
            Webhook::Installation(_) | Webhook::InstallationRepositories(_) => {
                let mut decision = self.decide_in_core(&webhook)?;
                let added = super::sync::added_repositories(&webhook);
                decision.merge(self.syncer.on_installed(installation, added).await);
                Ok(decision)
            }
            Webhook::Ping(_) | Webhook::Issues(_) => self.decide_in_core(&webhook),
        }
    }

    fn decide_in_core(&self, webhook: &Webhook) -> Result<Decision, DecideError> {
        let event = translate::to_event(webhook)?;
        Ok(taskgate_core::on_event(&event, &self.context))
    }

    /// What the core makes of an event nothing acts on yet.
    fn decide_unused(&self, delivery: &PendingDelivery) -> Decision {
        taskgate_core::on_unused(&delivery.event, delivery.action.as_deref())
    }

    /// Marks `unchanged` processed in one commit and empties it; returns
    /// whether the store took it.
    async fn complete_unchanged(&self, unchanged: &mut Vec<(PendingDelivery, String)>) -> bool {
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

    /// Decides a delivery and stores the decision.
    async fn process(&self, delivery: PendingDelivery) -> Processed {
        let decided = match self.decide(&delivery).await {
            Decided::Decision(decision) => Ok(decision),
            Decided::Failed(why) => Err(why),
            Decided::Retry(why) => match self.put_off(&delivery, why).await {
                None => return Processed::PutOff,
                Some(given_up) => Err(given_up.to_string()),
            },
        };
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
                if self.sent_by_own_bot(&delivery) {
                    let kind = match &delivery.action {
                        Some(action) => format!("{}.{action}", delivery.event),
                        None => delivery.event.clone(),
                    };
                    self.metrics.own_webhook(&kind, effects);
                }
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

    /// Whether GitHub sent this delivery for something taskgate's own bot
    /// did (an echo of its own write). Deliveries settled at intake never
    /// get here; they ask for nothing anyway.
    fn sent_by_own_bot(&self, delivery: &PendingDelivery) -> bool {
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

impl Processor {
    /// `POST /api/tasks/{id}/accept|reject`, as `/taskgate approve` or
    /// `/taskgate reject` by the API's token holder.
    async fn api_review(&self, r: taskgate_core::task::ApiReview) -> Result<Decision, DecideError> {
        use taskgate_core::task::{ReviewCommand, Reviewer};
        let command = match r.reject {
            None => ReviewCommand::Approve {
                override_reason: None,
            },
            Some(reason) => ReviewCommand::Reject { reason },
        };
        let by = Reviewer {
            id: taskgate_core::ids::UserId(0),
            login: "the HTTP API",
            written_at: None,
        };
        Ok(
            match self
                .task_commands
                .on_review_command(&r.repo, r.issue, &command, by)
                .await?
            {
                Some((decision, _)) => decision,
                None => Decision::nothing("API review of an unknown task"),
            },
        )
    }
}

pub(super) enum DecideError {
    /// Worth another try: GitHub answered 5xx, rate-limited us, or did not answer.
    Transient(String),
    Permanent(String),
}

/// Any error that says whether it is worth another try: one conversion
/// for the store's, GitHub's, a payload's and each handler's.
impl<E: Transient> From<E> for DecideError {
    fn from(e: E) -> Self {
        if e.is_transient() {
            DecideError::Transient(e.to_string())
        } else {
            DecideError::Permanent(e.to_string())
        }
    }
}

mod run_progress;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::actions_runs::ActionsError;
    use crate::app::ship::ShipError;
    use crate::app::sync::SyncError;
    use crate::github::executor::Backoff;
    use crate::store::{CommitError, StoreError};

    #[test]
    fn a_commit_the_database_refuses_for_good_is_not_tried_again() {
        let commit = |transient| {
            StoreError::Commit(CommitError::Database {
                message: "UNIQUE constraint failed".into(),
                transient,
            })
        };
        let retried = |e: StoreError| matches!(DecideError::from(e), DecideError::Transient(_));
        assert!(!retried(commit(false)));
        assert!(!retried(StoreError::Commit(CommitError::Panicked {
            why: "a bug".into()
        })));
        assert!(retried(commit(true)));
        assert!(retried(StoreError::WriterGone));
        assert!(!matches!(
            DecideError::from(SyncError::Store(commit(false))),
            DecideError::Transient(_)
        ));
    }

    #[test]
    fn every_handlers_store_error_is_judged_as_the_store_judges_it() {
        let refused = || {
            StoreError::Commit(CommitError::Database {
                message: "UNIQUE constraint failed".into(),
                transient: false,
            })
        };
        let retried = |e: DecideError| matches!(e, DecideError::Transient(_));
        // A commit refused for good is not tried again for a day, whichever
        // handler met it.
        assert!(!retried(ShipError::Store(refused()).into()));
        assert!(!retried(ActionsError::Store(refused()).into()));
        assert!(!retried(
            ActionsError::Ship(ShipError::Store(refused())).into()
        ));
        assert!(retried(ShipError::Store(StoreError::WriterGone).into()));
        assert!(retried(ActionsError::Store(StoreError::WriterGone).into()));
        assert!(!retried(ShipError::Payload("bad".into()).into()));
    }

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
