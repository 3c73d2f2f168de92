//! The redelivery pass: asks GitHub to send again the webhooks that did not
//! reach taskgate (it was down or restarting, or the network failed).
//! GitHub never retries a failed delivery by itself.
//!
//! Owns: reading the App's delivery log (`GET /app/hook/deliveries`, newest
//! first, back to the previous pass; at start, back over GitHub's three
//! days) and asking for the redeliveries `core::redeliver` picks
//! (`POST /app/hook/deliveries/{id}/attempts`). A redelivered webhook comes
//! in through the intake like any other, with its delivery id unchanged, so
//! the inbox's dedupe holds.
//! Must not: record or decide anything itself.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use serde::Deserialize;
use tracing::{info, warn};

use crate::clock::Clock;
use crate::github::client::send;
use crate::github::{GitHubApp, GitHubError};
use crate::intake::event::HANDLED_EVENTS;
use crate::store::{store_view, StoreError};

store_view! {
    /// The store as the redelivery pass sees it: whose turn it is, and
    /// which of GitHub's logged deliveries it already holds.
    pub struct RedeliverStore {
        async fn our_turn(pass: &str, period: Duration) -> bool;
        async fn recorded_deliveries(ids: Vec<String>) -> Result<HashSet<String>, StoreError>;
    }
}
use taskgate_core::redeliver::{to_redeliver, HookDelivery, REDELIVERY_WINDOW_SECONDS};

/// Pages of 100 log entries read in one pass at most: a pass after a long
/// outage of a busy app stops there and goes on from the newest.
const MAX_PAGES: usize = 20;
/// Each pass reads back this far before the previous one started, so an
/// attempt logged while a pass ran is not missed.
const OVERLAP_SECONDS: i64 = 600;
/// A delivery asked for is not asked for again this soon: its redelivery
/// may still be on its way (the log shows an attempt once it has ended).
const IN_FLIGHT_SECONDS: i64 = 600;

#[derive(Debug, thiserror::Error)]
pub enum RedeliverError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Redeliver {
    pub github: Arc<GitHubApp>,
    pub store: RedeliverStore,
    /// From the start of one pass to the next; the first runs
    /// `first_after` the start.
    pub every: Duration,
    pub first_after: Duration,
    /// "Now", and the waits between passes (tests move it on).
    pub clock: Clock,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Delivery ids asked for, and when (unix seconds).
    pub asked: std::sync::Mutex<std::collections::HashMap<String, i64>>,
}

/// One entry of GitHub's delivery log, as much as the policy (and
/// `taskgate doctor`) reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct LogEntry {
    pub id: u64,
    pub guid: String,
    pub event: String,
    pub delivered_at: String,
    /// `OK`, `Invalid HTTP Response: 503`, `failed to connect to host`.
    pub status: String,
    #[serde(default)]
    pub redelivery: bool,
    #[serde(default)]
    pub installation_id: Option<u64>,
    #[serde(default)]
    pub repository_id: Option<u64>,
}

/// The App's delivery log, newest first, back to `since` (unix seconds)
/// or [`MAX_PAGES`] pages.
pub(crate) async fn read_log(
    client: &octocrab::Octocrab,
    since: i64,
) -> Result<Vec<LogEntry>, GitHubError> {
    let mut url = "/app/hook/deliveries?per_page=100".to_owned();
    let mut log = Vec::new();
    for _ in 0..MAX_PAGES {
        let response = send(client, Method::GET, &url, None).await?;
        let page: Vec<LogEntry> = response.json()?;
        let reached = page.iter().any(|d| {
            chrono::DateTime::parse_from_rfc3339(&d.delivered_at)
                .is_ok_and(|at| at.timestamp() < since)
        });
        log.extend(page);
        match response.next_page() {
            Some(next) if !reached => url = next,
            _ => break,
        }
    }
    Ok(log)
}

impl LogEntry {
    fn into_core(self) -> Option<HookDelivery> {
        let at = chrono::DateTime::parse_from_rfc3339(&self.delivered_at).ok()?;
        Some(HookDelivery {
            id: self.id,
            guid: self.guid,
            event: self.event,
            delivered_at: at.timestamp(),
            ok: self.status == "OK",
            redelivery: self.redelivery,
        })
    }
}

impl Redeliver {
    /// The passes, until the task is dropped: the first `first_after` from
    /// this call (the clock is read here, not when the future is first
    /// polled, so time moved on meanwhile counts), then one `every` after
    /// the start of the one before.
    pub fn run(self) -> impl std::future::Future<Output = ()> + Send {
        let first_ms = self.clock.now_ms() + self.first_after.as_millis() as i64;
        async move {
            self.clock.sleep_until_ms(first_ms).await;
            let mut since = self.clock.now_s() - REDELIVERY_WINDOW_SECONDS;
            loop {
                let started = self.clock.now_s();
                let next_ms = self.clock.now_ms() + self.every.as_millis() as i64;
                // One replica reads the log for the cluster.
                if !self.store.our_turn("redeliver", self.every).await {
                    self.clock.sleep_until_ms(next_ms).await;
                    continue;
                }
                match self.pass(since).await {
                    Ok(asked) => {
                        if asked > 0 {
                            info!(asked, "asked GitHub to redeliver failed webhooks");
                        }
                        since = started - OVERLAP_SECONDS;
                    }
                    // The same window again next time.
                    Err(e) => warn!(error = %e, "redelivery pass failed"),
                }
                self.clock.sleep_until_ms(next_ms).await;
            }
        }
    }

    /// Reads the log back to `since` (unix seconds) and asks for what the
    /// policy picks; returns how many redeliveries were asked for.
    pub async fn pass(&self, since: i64) -> Result<usize, RedeliverError> {
        let client = self.github.app_client()?;
        let log: Vec<HookDelivery> = read_log(&client, since)
            .await?
            .into_iter()
            .filter_map(LogEntry::into_core)
            .collect();
        let guids: HashSet<String> = log.iter().map(|d| d.guid.clone()).collect();
        let recorded = self
            .store
            .recorded_deliveries(guids.into_iter().collect())
            .await?;
        let now = self.clock.now_s();
        let mut skip = recorded;
        {
            let mut asked = self.asked.lock().expect("not poisoned");
            asked.retain(|_, at| now - *at < IN_FLIGHT_SECONDS);
            skip.extend(asked.keys().cloned());
        }
        let mut asked = 0;
        for id in to_redeliver(&log, now, &skip, HANDLED_EVENTS) {
            let path = format!("/app/hook/deliveries/{id}/attempts");
            match send(&client, Method::POST, &path, None).await {
                Ok(_) => {
                    asked += 1;
                    self.metrics.redelivered(1);
                    if let Some(d) = log.iter().find(|d| d.id == id) {
                        let mut recent = self.asked.lock().expect("not poisoned");
                        recent.insert(d.guid.clone(), now);
                    }
                }
                // GitHub refuses this one (too old, say): the others may go.
                Err(e) if e.status() == Some(422) => {
                    warn!(delivery = id, error = %e, "GitHub refused a redelivery")
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(asked)
    }
}
