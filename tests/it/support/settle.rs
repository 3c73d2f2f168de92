//! Time moved on and quiet waited for: both clocks advanced together, on
//! to the moment taskgate waits for, until GitHub and taskgate have
//! nothing left to do.
//!
//! Owns: `TestApp::advance`, `advance_until_settled*`, `settle*`. Must not:
//! sleep to synchronise (its one sleep is a 2 ms look inside a bounded
//! poll, and says so).

use std::time::Duration;

use super::{eventually, TestApp};

impl TestApp {
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.fake.advance(by);
    }

    /// Lets time pass until GitHub and taskgate are both quiet: whenever
    /// taskgate is waiting for time (a write slot, a retry, a rate-limit
    /// pause: [`TestApp::waiting_until`]), both clocks move straight on to
    /// the moment it waits for, until nothing is left; then
    /// [`TestApp::settle`]. Returns the time moved on: the time the work
    /// takes on GitHub's clock. Fails after `wall` of real time.
    pub async fn advance_until_settled_within(&self, wall: Duration) -> Duration {
        let moved_before = self.clock.moved_ms();
        let deadline = tokio::time::Instant::now() + wall;
        // What the test just did has reached taskgate (its deliveries are
        // recorded) before "nothing left" can be believed.
        self.fake.echoes_settled().await;
        loop {
            self.watch.check();
            let stats = self.fake.echo_stats();
            let left = self.store().unfinished_work().await.unwrap();
            if left == 0 && stats.delivered == stats.queued {
                self.settle().await;
                let moved = self.clock.moved_ms() - moved_before;
                return Duration::from_millis(moved.max(0) as u64);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not quiet after moving the clocks {:?} on: {left} left",
                Duration::from_millis((self.clock.moved_ms() - moved_before).max(0) as u64)
            );
            if let Some(at) = self.waiting_until().await {
                let by = at - self.clock.now_ms();
                if by > 0 {
                    self.advance(Duration::from_millis(by as u64));
                }
            }
        }
    }

    /// [`TestApp::advance_until_settled_within`] ten minutes.
    pub async fn advance_until_settled(&self) -> Duration {
        self.advance_until_settled_within(Duration::from_secs(600))
            .await
    }

    /// The moment taskgate waits for, when it is waiting for time; `None`
    /// while it works: the effect executor is not asleep on the clock
    /// (it is between effects, or calling GitHub), a request reached
    /// GitHub during a short poll (the poll of [`eventually`]), a webhook
    /// is on its way, a delivery is to be decided, or an installation has
    /// an effect it may perform now. An installation with writes due
    /// waits for its write slot (`Store::next_write_slot_ms`) or its
    /// rate-limit pause, whichever ends later; with none due, taskgate
    /// waits for its next effect or put-off delivery.
    async fn waiting_until(&self) -> Option<i64> {
        let store = self.store();
        let requests = self.fake.request_count();
        // allowed sleep: a 2 ms look inside the bounded poll of
        // `advance_until_settled_within`.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let executor_asleep = self
            .clock
            .sleeps()
            .iter()
            .any(|s| s.at.file().ends_with("github/executor.rs"));
        let stats = self.fake.echo_stats();
        let (received, put_off) = store.inbox_depth().await.unwrap();
        if !executor_asleep
            || self.fake.request_count() != requests
            || stats.delivered != stats.queued
            || received > put_off
        {
            return None;
        }
        let now = self.clock.now_ms();
        let due = store.due_by_installation(now, 1).await.unwrap();
        let pauses = store.installation_pauses().await.unwrap();
        let mut at = [due.next_due_ms, store.next_retry_at_ms().await.unwrap()];
        for (installation, first) in due.by_installation {
            // A pass is not paced: it goes now.
            if first
                .iter()
                .any(|e| matches!(e.effect, taskgate_core::Effect::Reconcile { .. }))
            {
                return None;
            }
            let slot = store
                .next_write_slot_ms(installation, now, self.pacing)
                .await
                .unwrap();
            let pause_end = pauses.get(&installation).map_or(now, |left| now + left);
            let go = slot.max(pause_end);
            if go <= now {
                return None;
            }
            at[0] = Some(at[0].map_or(go, |t| t.min(go)));
        }
        at.into_iter().flatten().min()
    }

    /// Waits until GitHub and taskgate are both quiet: every webhook the
    /// fake sent was answered, every recorded delivery processed, the
    /// outbox empty of due work, and no write made meanwhile (each write
    /// sends webhooks again, so the two are waited for in turn).
    pub async fn settle(&self) {
        self.settle_leaving(0).await;
    }

    /// [`TestApp::settle`], but for `waiting` effects whose retry falls
    /// due only when the test advances the clock.
    pub async fn settle_leaving(&self, waiting: i64) {
        let store = self.store().clone();
        loop {
            self.watch.check();
            self.fake.echoes_settled().await;
            let before = self.fake.echo_stats().queued;
            eventually("deliveries processed and outbox drained", || {
                let store = store.clone();
                async move { store.unfinished_work().await.unwrap() == waiting }
            })
            .await;
            let stats = self.fake.echo_stats();
            if stats.queued == before && stats.delivered == stats.queued {
                return;
            }
        }
    }
}
