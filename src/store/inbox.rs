//! The inbox: every verified delivery, recorded before it is acknowledged,
//! processed after.

use rusqlite::{params, Connection, OptionalExtension};

use super::{outbox, unix_now_ms, Store, StoreError};
use crate::core::config::RunnerKind;
use crate::core::{Change, Effect};
use crate::ids::{DeliveryId, InstallationId, RepoName};

#[derive(Clone)]
pub struct NewDelivery {
    pub delivery_id: DeliveryId,
    pub event: String,
    pub action: Option<String>,
    pub installation: Option<InstallationId>,
    pub payload: bytes::Bytes,
    /// `ignored` for events taskgate does not use: recorded, never processed.
    pub ignored: bool,
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
    /// Records a delivery durably. A delivery id seen before is reported as
    /// a duplicate and changes nothing, however the two copies interleave:
    /// the unique index decides, inside the single writer.
    pub async fn record_delivery(&self, d: NewDelivery) -> Result<Recorded, StoreError> {
        self.write_one(move |conn| {
            let status = if d.ignored { "ignored" } else { "received" };
            let inserted = conn.execute(
                "INSERT INTO deliveries (delivery_id, event, action, installation_id, received_at_ms, payload, status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(delivery_id) DO NOTHING",
                params![
                    d.delivery_id.as_str(),
                    d.event,
                    d.action,
                    d.installation.map(|i| i.0 as i64),
                    unix_now_ms(),
                    &d.payload[..],
                    status
                ],
            )?;
            Ok(if inserted == 0 {
                Recorded::Duplicate
            } else {
                Recorded::New {
                    seq: conn.last_insert_rowid(),
                }
            })
        })
        .await
    }

    /// The oldest deliveries not yet processed.
    pub async fn pending_deliveries(
        &self,
        limit: usize,
    ) -> Result<Vec<PendingDelivery>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT seq, delivery_id, event, installation_id, received_at_ms, payload, action
                 FROM deliveries WHERE status = 'received' ORDER BY seq LIMIT ?1",
            )?;
            let rows = stmt.query_map([limit as i64], |r| {
                Ok(PendingDelivery {
                    seq: r.get(0)?,
                    delivery_id: DeliveryId(r.get(1)?),
                    event: r.get(2)?,
                    installation: r
                        .get::<_, Option<i64>>(3)?
                        .map(|i| InstallationId(i as u64)),
                    received_at_ms: r.get(4)?,
                    payload: r.get(5)?,
                    action: r.get(6)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
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
        self.write(move |conn| {
            let updated = conn.execute(
                "UPDATE deliveries SET status = ?2, outcome = ?3, processed_at_ms = ?4
                 WHERE seq = ?1 AND status = 'received'",
                params![seq, status, outcome, unix_now_ms()],
            )?;
            if updated == 0 {
                // Already processed (e.g. by a previous run): do nothing twice.
                return Ok(0);
            }
            for change in &changes {
                apply_change(conn, change)?;
            }
            if effects.is_empty() {
                return Ok(0);
            }
            let installation = installation.ok_or_else(|| {
                StoreError::Corrupt("effects without an installation to act as".into())
            })?;
            outbox::insert(conn, Some(seq), installation, &effects)?;
            Ok(effects.len())
        })
        .await
    }

    pub async fn delivery(&self, id: &str) -> Result<Option<DeliveryRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| {
            Ok(conn
                .query_row(
                    "SELECT delivery_id, event, action, installation_id, status, outcome
                     FROM deliveries WHERE delivery_id = ?1",
                    [id],
                    |r| {
                        Ok(DeliveryRecord {
                            delivery_id: r.get(0)?,
                            event: r.get(1)?,
                            action: r.get(2)?,
                            installation: r.get::<_, Option<i64>>(3)?.map(|i| i as u64),
                            status: r.get(4)?,
                            outcome: r.get(5)?,
                        })
                    },
                )
                .optional()?)
        })
        .await
    }

    pub async fn delivery_count(&self) -> Result<i64, StoreError> {
        self.read(|c| Ok(c.query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))?))
            .await
    }

    /// Repositories an installation is known to cover, from installation events.
    pub async fn installation_repos(
        &self,
        installation: InstallationId,
    ) -> Result<Vec<RepoName>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT repo FROM installation_repos WHERE installation_id = ?1 ORDER BY repo",
            )?;
            let rows = stmt.query_map([installation.0 as i64], |r| r.get::<_, String>(0))?;
            rows.map(|r| {
                let name = r?;
                RepoName::parse(&name).map_err(StoreError::Corrupt)
            })
            .collect()
        })
        .await
    }
}

fn apply_change(conn: &Connection, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::InstallationUpdated {
            installation,
            account,
            added,
            removed,
        } => {
            conn.execute(
                "INSERT INTO installations (id, account, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET account = COALESCE(?2, account), updated_ms = ?3",
                params![installation.0 as i64, account, unix_now_ms()],
            )?;
            for repo in added {
                conn.execute(
                    "INSERT OR IGNORE INTO installation_repos (installation_id, repo) VALUES (?1, ?2)",
                    params![installation.0 as i64, repo.as_str()],
                )?;
            }
            for repo in removed {
                conn.execute(
                    "DELETE FROM installation_repos WHERE installation_id = ?1 AND repo = ?2",
                    params![installation.0 as i64, repo.as_str()],
                )?;
            }
        }
        Change::StoryPlanned(plan) => super::objects::save_story(conn, plan)?,
        Change::TaskUpdated {
            repo,
            story,
            task,
            record,
        } => super::runs::put_task(conn, repo, story, task, record)?,
        Change::RunQueued(job) => super::runs::queue_attempt(conn, job, RunnerKind::Local)?,
        Change::RunDispatched(job) => super::runs::queue_attempt(conn, job, RunnerKind::Actions)?,
        Change::AttemptUpdated {
            repo,
            story,
            task,
            attempt,
            status,
            report,
        } => super::runs::update_attempt(
            conn,
            repo,
            story,
            task,
            *attempt,
            *status,
            report.as_ref(),
        )?,
        Change::ShipUpdated {
            repo,
            story,
            record,
        } => super::ship::put_story_record(conn, repo, story, record)?,
        Change::IssueAdopted {
            repo,
            marker,
            record,
        } => super::objects::put_record(conn, repo, marker, record)?,
        Change::InstallationRemoved { installation } => {
            conn.execute(
                "DELETE FROM installation_repos WHERE installation_id = ?1",
                [installation.0 as i64],
            )?;
            conn.execute(
                "DELETE FROM installations WHERE id = ?1",
                [installation.0 as i64],
            )?;
        }
    }
    Ok(())
}
