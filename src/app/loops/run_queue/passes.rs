//! The run queue's periodic passes, run once per cluster (`Store::our_turn`):
//! lifetime ticks of open branch todos, looks at waiting ship queues, the
//! ends of flaky-test quarantines, and watches of Actions attempts whose
//! webhooks may have been lost. Each records an internal delivery named by
//! its object and period, so the processor decides on it once.
//!
//! Owns: finding what is due and recording it. Must not: decide (the
//! processor does, on the recorded deliveries).

use tracing::warn;

use super::RunQueue;
use crate::app::actions_runs::WatchEvent;
use crate::store::NewDelivery;
use taskgate_core::config::RunnerKind;
use taskgate_core::ids::{DeliveryId, StoryId};
use taskgate_core::internal::InternalEvent;
use taskgate_core::AttemptRef;

impl RunQueue {
    /// The periodic passes, each run once per cluster: by the replica
    /// whose turn it is (`Store::our_turn`: the lease `pass:ticks` or
    /// `pass:actions-watch`, held for two periods and renewed with each
    /// pass). What they record has an id per period, so a pass run twice in
    /// a period (its turn changing hands) records nothing twice.
    pub(super) async fn periodic_passes(&self) {
        // This replica's own workspaces: not a pass taken in turns.
        let _ = tokio::task::spawn_blocking(crate::runner::sandbox::disk::retry_unremoved).await;
        if self.store.our_turn("ticks", self.tick_every).await {
            self.tick().await;
        }
        if self.store.our_turn("actions-watch", self.tick_every).await {
            self.watch_actions().await;
        }
        self.recorded.notify_one();
    }

    /// Records a tick for every task with an open branch todo; the
    /// processor escalates those past `branch_timeout_seconds`. One per task
    /// and period (the delivery id names the period), so a restart or a
    /// slow processor never piles them up.
    async fn tick(&self) {
        self.look_at_ship_queues().await;
        let ends = self.store.quarantine_ends();
        crate::app::flaky::record_ended_quarantines(&ends, self.clock.now_s()).await;
        let tasks = match self.store.tasks_with_open_todos().await {
            Ok(tasks) => tasks,
            Err(e) => {
                warn!(error = %e, "reading open branch todos failed");
                return;
            }
        };
        let period = self.clock.now_ms() / (self.tick_every.as_secs().max(1) as i64 * 1000);
        for (repo, story, task) in tasks {
            let installation = match self.store.story(&repo, &story).await {
                Ok(Some(plan)) => plan.installation,
                _ => continue,
            };
            let event = crate::app::task::TickEvent {
                repo: repo.clone(),
                story: story.clone(),
                task: task.clone(),
            };
            let delivery = NewDelivery::internal(
                DeliveryId::new(format!("taskgate-tick {repo} {story} {task} {period}")),
                installation,
                &InternalEvent::Tick(event),
            );
            if let Err(e) = self.store.record_delivery(delivery).await {
                warn!(error = %e, "recording a tick failed");
            }
        }
    }

    /// Records a look at every ship queue that waits with nothing proving
    /// and no freeze in force: a freeze window ended, or an earlier look
    /// was lost. One per repository and period.
    async fn look_at_ship_queues(&self) {
        let waiting = match self.store.ship_queues_waiting().await {
            Ok(waiting) => waiting,
            Err(e) => {
                warn!(error = %e, "reading the ship queues failed");
                return;
            }
        };
        let period = self.clock.now_ms() / (self.tick_every.as_secs().max(1) as i64 * 1000);
        for (repo, story) in waiting {
            let Ok(Some(plan)) = self.store.story(&repo, &story).await else {
                continue;
            };
            // Frozen still: the look would start nothing (a freeze can hold
            // a queue for days; one delivery a minute would be noise).
            let manual = self.store.repo_freeze(&repo).await.ok().flatten();
            let config =
                taskgate_core::config::load_config(plan.config.as_deref()).unwrap_or_default();
            let frozen = taskgate_core::freeze::freeze_in_force(
                manual.as_ref(),
                &config.freeze_windows,
                self.clock.now_s(),
            );
            if frozen.is_some() {
                continue;
            }
            let event = taskgate_core::ship::ShipEvent {
                repo: repo.clone(),
                story: StoryId::new(String::new()),
                what: taskgate_core::ship::ShipWhat::Advance,
            };
            let delivery = NewDelivery::internal(
                DeliveryId::new(format!("taskgate-ship-queue {repo} {period}")),
                plan.installation,
                &InternalEvent::Ship(event),
            );
            if let Err(e) = self.store.record_delivery(delivery).await {
                warn!(error = %e, "recording a look at a ship queue failed");
            }
        }
    }

    /// Records an Actions watch for every Actions attempt not heard of for
    /// `actions_watch`: its webhooks may have been lost. One per attempt and
    /// period, as ticks are.
    async fn watch_actions(&self) {
        let attempts = match self.store.active_attempts(RunnerKind::Actions).await {
            Ok(attempts) => attempts,
            Err(e) => {
                warn!(error = %e, "reading open Actions attempts failed");
                return;
            }
        };
        let every_ms = (self.actions_watch.as_millis() as i64).max(1);
        let now_ms = self.clock.now_ms();
        let period = now_ms / every_ms;
        for row in attempts {
            let heard_ms = row.started_ms.unwrap_or(row.queued_ms);
            if now_ms - heard_ms < every_ms {
                continue;
            }
            let event = WatchEvent {
                repo: row.repo.clone(),
                attempt: AttemptRef {
                    story: row.story.clone(),
                    task: row.task.clone(),
                    attempt: row.attempt,
                },
            };
            let delivery = NewDelivery::internal(
                DeliveryId::new(format!(
                    "taskgate-actions-watch {} {} {} {} {period}",
                    row.repo, row.story, row.task, row.attempt
                )),
                row.installation,
                &InternalEvent::ActionsWatch(event),
            );
            if let Err(e) = self.store.record_delivery(delivery).await {
                warn!(error = %e, "recording an Actions watch failed");
            }
        }
    }
}
