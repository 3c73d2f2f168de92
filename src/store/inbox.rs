//! The inbox: every verified delivery, recorded before it is acknowledged,
//! processed after.

use super::sql::Sql;
use rusqlite::params;

use tracing::warn;

use super::db::{Db, Dialect};
use super::wakeups::Mark;
use super::{outbox, payloads, Store, StoreError};
use taskgate_core::ids::{DeliveryId, InstallationId, RepoName};
use taskgate_core::{Change, Effect};

#[derive(Clone)]
pub struct NewDelivery {
    pub delivery_id: DeliveryId,
    pub event: String,
    pub action: Option<String>,
    pub installation: Option<InstallationId>,
    pub payload: bytes::Bytes,
    pub disposition: Disposition,
    /// A webhook's body digest: a body recorded before under another
    /// delivery id is a duplicate too (issue 45: a signed body replayed
    /// under a new id). `None` for taskgate's own events, which their id
    /// alone names.
    pub body_digest: Option<BodyDigest>,
}

/// The SHA-256 of a webhook's raw body, in hex. The sender chooses
/// `X-GitHub-Delivery`; the signature covers only the body, so the body is
/// what names a delivery that cannot be replayed under a new id. Kept in
/// the delivery's row, as long as its id is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyDigest(String);

impl BodyDigest {
    pub fn of(body: &[u8]) -> BodyDigest {
        use sha2::Digest;
        BodyDigest(hex::encode(sha2::Sha256::digest(body)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl NewDelivery {
    /// One of taskgate's own events, for the processor to decide like any
    /// webhook. `delivery_id` makes recording it twice a no-op.
    pub fn internal(
        delivery_id: DeliveryId,
        installation: InstallationId,
        event: &taskgate_core::internal::InternalEvent,
    ) -> NewDelivery {
        NewDelivery {
            body_digest: None,
            delivery_id,
            event: event.name().to_owned(),
            action: None,
            installation: Some(installation),
            payload: event.payload().into(),
            disposition: Disposition::Pending,
        }
    }

    /// Names what happened, for the logs (`taskgate.run.finished`).
    pub fn with_action(mut self, action: &str) -> NewDelivery {
        self.action = Some(action.to_owned());
        self
    }
}

/// What is already known at intake about the work a delivery needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Left to the processor, which decides it after the answer.
    Pending,
    /// An event taskgate does not subscribe to: recorded, never processed.
    Ignored,
    /// Already decided, from its event and action alone, with nothing to
    /// change or do (`outcome` says so): recorded as processed at once,
    /// so the processor never reads it back or writes it a second time.
    Settled { outcome: String },
}

impl Disposition {
    /// The status, outcome and processing time a delivery is stored with.
    fn stored(&self, now: i64) -> (&'static str, Option<&str>, Option<i64>) {
        match self {
            Disposition::Pending => ("received", None, None),
            Disposition::Ignored => ("ignored", None, None),
            Disposition::Settled { outcome } => ("processed", Some(outcome.as_str()), Some(now)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    New { seq: i64 },
    Duplicate,
}

#[derive(Debug, Clone)]
pub struct PendingDelivery {
    pub seq: i64,
    pub delivery_id: DeliveryId,
    pub event: String,
    pub action: Option<String>,
    pub installation: Option<InstallationId>,
    pub received_at_ms: i64,
    pub payload: Vec<u8>,
    /// Earlier tries that met a GitHub failure (see [`Store::defer_delivery`]).
    pub tries: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub installation: Option<u64>,
    pub status: String,
    pub outcome: Option<String>,
}

impl Store {
    /// Records a delivery durably. A delivery id seen before, or a webhook
    /// body seen before under any id ([`BodyDigest`]), is reported as a
    /// duplicate and changes nothing, however the two copies interleave:
    /// the unique indexes decide, inside the single writer.
    pub async fn record_delivery(&self, d: NewDelivery) -> Result<Recorded, StoreError> {
        // Compressed here, on the caller's thread, so the single writer
        // spends its time only on writing.
        let payload = payloads::encode(d.payload.clone());
        let now = self.clock.now_ms();
        if self.is_shared() {
            return self.record_delivery_pg(d, payload, now).await;
        }
        self.write(move |db| {
            let (status, outcome, processed_at) = d.disposition.stored(now);
            // No row comes back when the id is already recorded.
            let inserted = db.query_opt(
                "INSERT INTO deliveries (delivery_id, event, action, installation_id, received_at_ms,
                                         status, outcome, processed_at_ms, body_digest)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT DO NOTHING
                 RETURNING seq",
                params![
                    d.delivery_id.as_str(),
                    d.event,
                    d.action,
                    d.installation.map(Sql),
                    now,
                    status,
                    outcome,
                    processed_at,
                    d.body_digest.as_ref().map(BodyDigest::as_str)
                ],
                |r| r.get::<i64>(0),
            )?;
            let Some(seq) = inserted else {
                return Ok(Recorded::Duplicate);
            };
            if status == "received" {
                db.wake(Mark::Delivery(d.installation));
            }
            db.execute(
                "INSERT INTO delivery_payloads (seq, codec, payload) VALUES (?1, ?2, ?3)",
                params![seq, payload.codec, &payload.bytes[..]],
            )?;
            Ok(Recorded::New { seq })
        })
        .await
    }

    /// [`Store::record_delivery`] on PostgreSQL: a job the writer records
    /// with the other deliveries of its batch, in one statement
    /// ([`batched`]).
    async fn record_delivery_pg(
        &self,
        d: NewDelivery,
        payload: payloads::Encoded,
        now: i64,
    ) -> Result<Recorded, StoreError> {
        let (status, outcome, processed_at_ms) = d.disposition.stored(now);
        let row = batched::DeliveryRow {
            delivery_id: d.delivery_id.into_string(),
            event: d.event,
            action: d.action,
            installation: d.installation,
            received_at_ms: now,
            status,
            outcome: outcome.map(str::to_owned),
            processed_at_ms,
            codec: payload.codec,
            payload: payload.bytes,
            body_digest: d.body_digest.map(|b| b.0),
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit_job(Box::new(batched::DeliveryJob::new(row, reply)))?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// The oldest deliveries not yet processed, with the payloads of those
    /// for which `needs_payload(event, action)` holds; the others come back
    /// with an empty payload (most deliveries are decided from their event
    /// and action alone, and reading ~10 KB each for nothing showed up in
    /// the intake benchmark). A delivery whose payload row is missing or
    /// unreadable (it never should be: both rows are written in one
    /// savepoint) also comes back empty, so it is marked failed instead of
    /// waiting forever; the log says why.
    ///
    /// A delivery put off by [`Store::defer_delivery`] is left out until it
    /// is due, and so is every later delivery of its installation: they may
    /// depend on what it decides.
    pub async fn pending_deliveries(
        &self,
        limit: usize,
        needs_payload: fn(&str, Option<&str>) -> bool,
    ) -> Result<Vec<PendingDelivery>, StoreError> {
        self.pending_deliveries_after(limit, i64::MIN, needs_payload)
            .await
    }

    /// [`Store::pending_deliveries`] recorded after `after_seq`: where a
    /// replica reads on when every delivery before is another replica's.
    pub async fn pending_deliveries_after(
        &self,
        limit: usize,
        after_seq: i64,
        needs_payload: fn(&str, Option<&str>) -> bool,
    ) -> Result<Vec<PendingDelivery>, StoreError> {
        let now = self.clock.now_ms();
        self.read(move |db| {
            let args = params![limit as i64, now, after_seq];
            let mut pending = db.query_map(pending_sql(db.dialect()), args, |r| {
                Ok(PendingDelivery {
                    seq: r.get(0)?,
                    delivery_id: DeliveryId::new(r.get::<String>(1)?),
                    event: r.get(2)?,
                    installation: r.sql_opt(3)?,
                    received_at_ms: r.get(4)?,
                    action: r.get(5)?,
                    payload: Vec::new(),
                    tries: r.get(6)?,
                })
            })?;
            for delivery in &mut pending {
                if !needs_payload(&delivery.event, delivery.action.as_deref()) {
                    continue;
                }
                let stored = db.query_opt(
                    "SELECT codec, payload FROM delivery_payloads WHERE seq = ?1",
                    params![delivery.seq],
                    |r| Ok((r.get::<String>(0)?, r.get::<Vec<u8>>(1)?)),
                )?;
                let Some((codec, bytes)) = stored else {
                    warn!(seq = delivery.seq, "delivery has no stored payload");
                    continue;
                };
                match payloads::decode(&codec, bytes) {
                    Ok(raw) => delivery.payload = raw,
                    Err(e) => warn!(seq = delivery.seq, error = %e, "stored payload unreadable"),
                }
            }
            Ok(pending)
        })
        .await
    }

    /// Marks deliveries processed whose decisions changed nothing and asked
    /// for nothing, all in one transaction: one commit for many of them
    /// instead of one each. Returns how many were still pending.
    pub async fn complete_unchanged(
        &self,
        outcomes: Vec<(i64, String)>,
    ) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        self.write(move |db| {
            let mut updated = 0;
            for (seq, outcome) in &outcomes {
                updated += db.execute(
                    "UPDATE deliveries SET status = 'processed', outcome = ?2, processed_at_ms = ?3
                     WHERE seq = ?1 AND status = 'received'",
                    params![seq, outcome, now],
                )?;
            }
            Ok(updated)
        })
        .await
    }

    /// Marks a delivery processed and stores what its decision implies, in
    /// one transaction: the state changes and the effects for the outbox.
    /// Returns how many effects were queued.
    pub async fn complete_delivery(
        &self,
        seq: i64,
        status: &'static str,
        outcome: String,
        installation: Option<InstallationId>,
        changes: Vec<Change>,
        effects: Vec<Effect>,
    ) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        self.write(move |db| {
            let updated = db.execute(
                "UPDATE deliveries SET status = ?2, outcome = ?3, processed_at_ms = ?4
                 WHERE seq = ?1 AND status = 'received'",
                params![seq, status, outcome, now],
            )?;
            if updated == 0 {
                // Already processed (e.g. by a previous run): do nothing twice.
                return Ok(0);
            }
            for change in &changes {
                apply_change(db, change, now)?;
            }
            if effects.is_empty() {
                return Ok(0);
            }
            let installation = installation.ok_or_else(|| {
                StoreError::Corrupt("effects without an installation to act as".into())
            })?;
            outbox::insert(db, Some(seq), installation, &effects, now)
        })
        .await
    }

    /// Puts a delivery off until `retry_at_ms`, its `tries`-th try having
    /// met a GitHub failure (`why`, kept as its outcome until it is
    /// processed). Does nothing to a delivery processed meanwhile.
    pub async fn defer_delivery(
        &self,
        seq: i64,
        tries: u32,
        retry_at_ms: i64,
        why: String,
    ) -> Result<(), StoreError> {
        self.write_one(move |db| {
            db.execute(
                "UPDATE deliveries SET tries = ?2, retry_at_ms = ?3, outcome = ?4
                 WHERE seq = ?1 AND status = 'received'",
                params![seq, tries, retry_at_ms, why],
            )?;
            Ok(())
        })
        .await
    }

    /// Forgets up to `limit` deliveries decided before `cutoff_ms` (their
    /// rows and payloads), oldest first; returns how many. Undecided ones
    /// stay, and so does the newest delivery of all, so a `seq` is never
    /// given out twice.
    pub async fn prune_deliveries(
        &self,
        cutoff_ms: i64,
        limit: usize,
    ) -> Result<usize, StoreError> {
        self.write(move |db| {
            let seqs = db.query_map(
                "SELECT seq FROM deliveries
                 WHERE status != 'received' AND received_at_ms < ?1
                   AND seq < (SELECT MAX(seq) FROM deliveries)
                 ORDER BY seq LIMIT ?2",
                params![cutoff_ms, limit as i64],
                |r| r.get::<i64>(0),
            )?;
            for seq in &seqs {
                db.execute("DELETE FROM delivery_payloads WHERE seq = ?1", params![seq])?;
                db.execute("DELETE FROM deliveries WHERE seq = ?1", params![seq])?;
            }
            Ok(seqs.len())
        })
        .await
    }

    /// Deliveries not processed yet, and how many of those are put off
    /// (GitHub failed their decision): the `inbox_depth` gauges.
    pub async fn inbox_depth(&self) -> Result<(i64, i64), StoreError> {
        self.read(|db| {
            db.query_one(
                "SELECT COUNT(*), COUNT(retry_at_ms) FROM deliveries WHERE status = 'received'",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .await
    }

    /// When the earliest put-off delivery falls due, if one is waiting for
    /// a time still to come (one already due is in the next batch, or
    /// waits behind another that is not).
    pub async fn next_retry_at_ms(&self) -> Result<Option<i64>, StoreError> {
        let now = self.clock.now_ms();
        self.read(move |db| {
            db.query_one(
                "SELECT MIN(retry_at_ms) FROM deliveries
                 WHERE status = 'received' AND retry_at_ms > ?1",
                params![now],
                |r| r.get(0),
            )
        })
        .await
    }

    pub async fn delivery(&self, id: &str) -> Result<Option<DeliveryRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |db| {
            db.query_opt(
                "SELECT delivery_id, event, action, installation_id, status, outcome
                 FROM deliveries WHERE delivery_id = ?1",
                params![id],
                |r| {
                    Ok(DeliveryRecord {
                        delivery_id: r.get(0)?,
                        event: r.get(1)?,
                        action: r.get(2)?,
                        installation: r.get::<Option<i64>>(3)?.map(|i| i as u64),
                        status: r.get(4)?,
                        outcome: r.get(5)?,
                    })
                },
            )
        })
        .await
    }

    pub async fn delivery_count(&self) -> Result<i64, StoreError> {
        self.read(|db| db.query_one("SELECT COUNT(*) FROM deliveries", params![], |r| r.get(0)))
            .await
    }

    /// Deliveries that could never be decided (marked `failed`).
    pub async fn failed_deliveries(&self) -> Result<i64, StoreError> {
        self.read(|db| {
            db.query_one(
                "SELECT COUNT(*) FROM deliveries WHERE status = 'failed'",
                params![],
                |r| r.get(0),
            )
        })
        .await
    }

    /// Repositories an installation is known to cover, from installation events.
    pub async fn installation_repos(
        &self,
        installation: InstallationId,
    ) -> Result<Vec<RepoName>, StoreError> {
        self.read(move |db| {
            db.query_map(
                "SELECT repo FROM installation_repos WHERE installation_id = ?1 ORDER BY repo",
                params![Sql(installation)],
                |r| {
                    RepoName::parse(&r.get::<String>(0)?)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))
                },
            )
        })
        .await
    }
}

/// The deliveries [`Store::pending_deliveries`] may hand out: `?1` at most,
/// as of `?2`. A put-off delivery holds back the later ones of the same
/// installation, no installation counting as one of its own. PostgreSQL
/// has no `IS` between two values: it says `IS NOT DISTINCT FROM`.
fn pending_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "SELECT seq, delivery_id, event, installation_id, received_at_ms, action, tries
             FROM deliveries d
             WHERE status = 'received' AND (retry_at_ms IS NULL OR retry_at_ms <= ?2)
               AND seq > ?3
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries e
                 WHERE e.status = 'received' AND e.seq < d.seq AND e.retry_at_ms > ?2
                   AND e.installation_id IS d.installation_id)
             ORDER BY seq LIMIT ?1"
        }
        Dialect::Postgres => {
            "SELECT seq, delivery_id, event, installation_id, received_at_ms, action, tries
             FROM deliveries d
             WHERE status = 'received' AND (retry_at_ms IS NULL OR retry_at_ms <= ?2)
               AND seq > ?3
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries e
                 WHERE e.status = 'received' AND e.seq < d.seq AND e.retry_at_ms > ?2
                   AND e.installation_id IS NOT DISTINCT FROM d.installation_id)
             ORDER BY seq LIMIT ?1"
        }
    }
}

/// Applies one state change; `now_ms` is the time its rows are stamped with.
fn apply_change(db: &Db, change: &Change, now_ms: i64) -> Result<(), StoreError> {
    match change {
        Change::InstallationUpdated {
            installation,
            account,
            added,
            removed,
        } => {
            db.execute(
                "INSERT INTO installations (id, account, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET account = COALESCE(?2, installations.account),
                                                updated_ms = ?3",
                params![Sql(*installation), account, now_ms],
            )?;
            for repo in added {
                db.execute(
                    "INSERT INTO installation_repos (installation_id, repo) VALUES (?1, ?2)
                     ON CONFLICT DO NOTHING",
                    params![Sql(*installation), repo.as_str()],
                )?;
            }
            for repo in removed {
                db.execute(
                    "DELETE FROM installation_repos WHERE installation_id = ?1 AND repo = ?2",
                    params![Sql(*installation), repo.as_str()],
                )?;
            }
        }
        Change::StoryPlanned(plan) => super::objects::save_story(db, plan, now_ms)?,
        Change::StoryRetired { repo, story } => {
            db.execute(
                "DELETE FROM stories WHERE repo = ?1 AND story = ?2",
                params![repo.as_str(), story.as_str()],
            )?;
        }
        Change::TaskUpdated {
            repo,
            story,
            task,
            record,
        } => super::runs::put_task(db, repo, story, task, record)?,
        Change::RunQueued(job) => super::runs::queue_attempt(db, job, now_ms)?,
        Change::AttemptUpdated {
            repo,
            story,
            task,
            attempt,
            status,
            report,
        } => {
            let key = super::runs::AttemptKey {
                repo,
                story,
                task,
                attempt: *attempt,
            };
            if let Some(report) = report {
                super::tests_history::record(db, &key, report)?;
            }
            super::runs::update_attempt(db, key, *status, report.as_ref(), now_ms)?
        }
        Change::ShipUpdated {
            repo,
            story,
            record,
        } => super::ship_counts::put(db, repo, story, record)?,
        Change::TrainUpdated { repo, train } => super::train::put(db, repo, train)?,
        Change::IssueAdopted {
            repo,
            marker,
            record,
        } => super::objects::put_record(db, repo, marker, record)?,
        Change::Audited(entry) => super::audit::insert(db, entry)?,
        Change::FreezeChanged { repo, freeze } => super::freeze::put(db, repo, freeze.as_ref())?,
        Change::RepoConfigChanged { repo, sha, config } => {
            super::repo_config::put(db, repo, sha, config.as_deref(), now_ms)?
        }
        Change::QuarantineStarted { .. }
        | Change::QuarantineLifted { .. }
        | Change::FlakyEventsSeen { .. } => super::quarantine::apply(db, change)?,
        Change::InstallationRemoved { installation } => {
            db.execute(
                "DELETE FROM installation_repos WHERE installation_id = ?1",
                params![Sql(*installation)],
            )?;
            db.execute(
                "DELETE FROM installations WHERE id = ?1",
                params![Sql(*installation)],
            )?;
        }
    }
    Ok(())
}

pub(super) mod batched;
#[cfg(test)]
mod tests;
