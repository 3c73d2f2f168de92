//! Routing a delivery: parsed once into its typed event and sent, by one
//! exhaustive match, to the handler that loads state and asks the core.
//! A handler's error says whether it is worth another try
//! ([`crate::transient::Transient`]): a transient one is tried again at
//! once a few times, then the delivery is put off.
//!
//! Owns: [`Processor::decide`], the routes, and [`DecideError`]. Must not:
//! store anything or order deliveries (`processor.rs`), or decide (the
//! core does).

use std::time::Duration;

use tracing::warn;

use super::{Decided, Processor, Sender, QUICK_TRIES};
use crate::app::Handled;
use crate::intake::event::{Delivered, DeliveryKind, Webhook};
use crate::intake::translate;
use crate::store::PendingDelivery;
use crate::transient::Transient;
use taskgate_core::ids::{InstallationId, RepoName};
use taskgate_core::internal::InternalEvent;
use taskgate_core::refusal::Refused;
use taskgate_core::webhook::PullRequestEvent;
use taskgate_core::Decision;

impl Processor {
    /// Decides what a delivery implies. Most events need only the core;
    /// plan sync, runs and shipping may first read from GitHub: a failure
    /// there is tried again at once a few times, then reported as
    /// [`Decided::Retry`] so the delivery is put off, not lost. Also says
    /// who sent it, when the payload's type keeps it.
    pub(super) async fn decide(&self, delivery: &PendingDelivery) -> (Decided, Sender) {
        let delivered = match self.read(delivery) {
            Ok(Some(delivered)) => delivered,
            Ok(None) => return (Decided::Decision(self.decide_unused(delivery)), None),
            Err(why) => return (Decided::Failed(why), None),
        };
        let sender = match &delivered {
            Delivered::GitHub(webhook) => webhook.sender().map(Option::<&_>::cloned),
            Delivered::Internal(_) => None,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let decided = match self.decide_once(delivery, &delivered).await {
                Err(DecideError::Transient(why)) if attempt < QUICK_TRIES => {
                    warn!(attempt, error = %why, "reading from GitHub failed; retrying");
                    tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
                    continue;
                }
                Err(DecideError::Transient(why)) => Decided::Retry(why),
                Err(DecideError::Permanent(why)) => Decided::Failed(why),
                Ok(Handled::Decided(decision)) => Decided::Decision(decision),
                // The reason is the command's reply; the decision has
                // what is stored of it (an outcome, an audit entry).
                Ok(Handled::Refused(Refused { decision, .. })) => Decided::Decision(decision),
                Ok(Handled::NotMine) => Decided::Decision(nothing_took(delivery)),
            };
            return (decided, sender);
        }
    }

    /// The delivery's one typed event: the intake's parse while it is kept
    /// (`intake::kept`), else its stored body's. `None`: an event nothing
    /// acts on, decided from its names alone.
    fn read(&self, delivery: &PendingDelivery) -> Result<Option<Delivered>, String> {
        let Some(kind) = DeliveryKind::of(&delivery.event, delivery.action.as_deref()) else {
            return Err(format!(
                "event `{}` is not one taskgate handles",
                delivery.event
            ));
        };
        if !kind.matters() {
            return Ok(None);
        }
        if let DeliveryKind::GitHub(_) = kind {
            if let Some(webhook) = self.kept.take(delivery.seq) {
                return Ok(Some(Delivered::GitHub(webhook)));
            }
            self.metrics.parsed_again();
        }
        kind.parse(&delivery.payload)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// Routes the parsed delivery: the match is exhaustive, so a new event
    /// or internal event cannot be left out.
    async fn decide_once(
        &self,
        delivery: &PendingDelivery,
        delivered: &Delivered,
    ) -> Result<Handled, DecideError> {
        match delivered {
            Delivered::Internal(event) => self.decide_internal((**event).clone()).await,
            Delivered::GitHub(webhook) => self.decide_webhook(delivery.installation, webhook).await,
        }
    }

    /// taskgate's own events, each to the part of the shell that owns it.
    async fn decide_internal(&self, event: InternalEvent) -> Result<Handled, DecideError> {
        match event {
            InternalEvent::Reconcile(pass) => {
                let mut decision = self.syncer.on_reconcile(&pass).await?;
                // A task branch just started: the work pushed while its
                // task was pending may be tested now.
                if let Some(started) = &pass.started {
                    let run = (self.runs)
                        .on_branch_started(&pass.repo, &pass.story, started)
                        .await?;
                    if let Some(run) = run.taken() {
                        decision.merge(run);
                    }
                }
                // The story's ship gate follows its tasks.
                let ship = self.ship.on_reconcile(&pass).await?;
                decision.merge(ship);
                Ok(decision.into())
            }
            InternalEvent::Review(review) => self.api_review(review).await,
            InternalEvent::Ship(ship) => {
                let outcome = self.ship.on_ship_event(ship).await?;
                Ok(self.with_proof_run(outcome).await?.into())
            }
            InternalEvent::Tick(tick) => Ok(self.runs.on_tick(tick).await?.into()),
            InternalEvent::ActionsWatch(watch) => {
                Ok(self.actions.on_watch(watch, self).await?.into())
            }
            InternalEvent::Run(run) => Ok(self.run_progress(run).await?.into()),
            InternalEvent::QuarantineEnded(ended) => {
                Ok(self.flaky.on_quarantine_ended(ended).await?.into())
            }
            InternalEvent::CheckRunKnown(known) => {
                Ok(self.runs.on_check_run_known(known).await?.into())
            }
        }
    }

    /// A ship decision, with the proof runs it asks for started.
    pub(super) async fn with_proof_run(
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
        webhook: &Webhook,
    ) -> Result<Handled, DecideError> {
        let Some(installation) = installation else {
            return Ok(self.decide_in_core(webhook)?.into());
        };
        match webhook {
            Webhook::PullRequest(p) => {
                let pull = translate::pull_request(p)?;
                match self.ship.on_pull_request(&pull).await? {
                    Handled::NotMine => self.ordinary_pull(installation, &pull).await,
                    handled @ (Handled::Decided(_) | Handled::Refused(_)) => Ok(handled),
                }
            }
            Webhook::CheckSuite(p) => {
                let suite = translate::check_suite(p)?;
                Ok((self.runs)
                    .on_check_suite(&suite, &self.permissions)
                    .await?
                    .into())
            }
            // GitHub's merge queue: taskgate is the CI of merge groups.
            Webhook::MergeGroup(p) => {
                let outcome = self.ship.on_merge_group(p).await?;
                Ok(self.with_proof_run(outcome).await?.into())
            }
            Webhook::CheckRun(p) => {
                let run = translate::check_run(p)?;
                Ok(self
                    .runs
                    .on_check_run(&run, self.context.app_id, &self.permissions)
                    .await?
                    .into())
            }
            // A story's deploy or validation run first; any other run may
            // be the Actions runner's.
            Webhook::WorkflowRun(p) => {
                let run = translate::workflow_run(p)?;
                match self.ship.on_workflow_run(&run).await? {
                    Handled::NotMine => Ok(self.actions.on_workflow_run(&run, self).await?.into()),
                    handled @ (Handled::Decided(_) | Handled::Refused(_)) => Ok(handled),
                }
            }
            // A task branch's push is a run; any other may change a plan.
            Webhook::Push(push) => {
                let push = translate::push(push)?;
                let mut decision = match self.runs.on_push(&push).await? {
                    Handled::NotMine => {
                        let mut decision = self.syncer.on_push(installation, &push).await?;
                        // A story proving on the base this push replaced.
                        decision.merge(self.ship.on_default_branch_push(&push).await?);
                        return Ok(decision.into());
                    }
                    Handled::Decided(decision) => decision,
                    Handled::Refused(refused) => refused.decision,
                };
                // A story that moved after `ship` leaves the queue.
                decision.merge(self.ship.on_story_branch_push(&push).await?);
                Ok(decision.into())
            }
            // Every command of a comment, `plan` included: see `app::commands`.
            // A repository with no config recorded has it read first.
            // What that learnt of the record is not read again.
            Webhook::IssueComment(comment) => {
                let seen = match RepoName::parse(&comment.repository.full_name) {
                    Ok(repo) => {
                        (self.syncer)
                            .read_config_if_unrecorded(installation, &repo)
                            .await
                    }
                    Err(_) => crate::app::sync::ConfigSeen::Unread,
                };
                Ok(self.on_comment(installation, comment, seen).await?.into())
            }
            // A review on GitHub, as a review command: `app::commands`.
            Webhook::PullRequestReview(review) => {
                Ok(self.on_review(installation, review).await?.into())
            }
            // The repositories added have their config read (never
            // failing the delivery: `sync::first_read`).
            Webhook::Installation(_) | Webhook::InstallationRepositories(_) => {
                let mut decision = self.decide_in_core(webhook)?;
                let added = crate::app::sync::added_repositories(webhook);
                decision.merge(self.syncer.on_installed(installation, added).await);
                Ok(decision.into())
            }
            Webhook::Ping(_) | Webhook::Issues(_) => Ok(self.decide_in_core(webhook)?.into()),
        }
    }

    /// A pull request that is no story's: the runs', its neutral ship
    /// gate, and the preview of a plan or config it changes.
    async fn ordinary_pull(
        &self,
        installation: InstallationId,
        pull: &PullRequestEvent,
    ) -> Result<Handled, DecideError> {
        let mut decision = self.runs.on_pull_request(pull).await?;
        // Not a story's: `taskgate/ship-gate` is neutral on it, so a
        // required gate does not block it.
        decision
            .effects
            .extend(self.ship.gate_of_ordinary_pull(pull).await?);
        // A plan or the config it changes: checked on its head. A preview
        // GitHub refuses for good costs the pull request its preview,
        // never the decision above.
        match self.syncer.on_pull_request_plans(installation, pull).await {
            Ok(
                Handled::Decided(plans)
                | Handled::Refused(Refused {
                    decision: plans, ..
                }),
            ) => {
                decision.outcome = format!("{}; {}", decision.outcome, plans.outcome);
                decision.effects.extend(plans.effects);
            }
            Ok(Handled::NotMine) => {}
            Err(e) => match DecideError::from(e) {
                DecideError::Transient(why) => return Err(DecideError::Transient(why)),
                DecideError::Permanent(why) => {
                    tracing::warn!(%why, "no plan preview for the pull request");
                }
            },
        }
        Ok(decision.into())
    }

    fn decide_in_core(&self, webhook: &Webhook) -> Result<Decision, DecideError> {
        let event = translate::to_event(webhook)?;
        Ok(taskgate_core::on_event(&event, &self.context))
    }

    /// What the core makes of an event nothing acts on yet.
    pub(super) fn decide_unused(&self, delivery: &PendingDelivery) -> Decision {
        taskgate_core::on_unused(&delivery.event, delivery.action.as_deref())
    }
}

impl Processor {
    /// `POST /api/tasks/{id}/accept|reject`, as `/taskgate approve` or
    /// `/taskgate reject` by the API's token holder.
    async fn api_review(&self, r: taskgate_core::task::ApiReview) -> Result<Handled, DecideError> {
        use taskgate_core::task::{ReviewCommand, Reviewer};
        let command = match r.reject {
            None => ReviewCommand::Approve {
                override_reason: None,
            },
            Some(reason) => ReviewCommand::Reject { reason },
        };
        let by = Reviewer {
            id: taskgate_core::ids::UserId::new(0),
            login: "the HTTP API",
            written_at: None,
        };
        // The API's refusal is only recorded: the decision either way.
        Ok(
            match (self.task_commands)
                .on_review_command(&r.repo, r.issue, &command, by)
                .await?
            {
                Handled::NotMine => Decision::nothing("API review of an unknown task").into(),
                handled @ (Handled::Decided(_) | Handled::Refused(_)) => handled,
            },
        )
    }
}

/// What is stored for a delivery no handler took.
fn nothing_took(delivery: &PendingDelivery) -> Decision {
    let kind = match &delivery.action {
        Some(action) => format!("{}.{action}", delivery.event),
        None => delivery.event.clone(),
    };
    Decision::nothing(format!("{kind}: nothing acts on it"))
}

pub(in crate::app) enum DecideError {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::actions_runs::ActionsError;
    use crate::app::ship::ShipError;
    use crate::app::sync::SyncError;
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
}
