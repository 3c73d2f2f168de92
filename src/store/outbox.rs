//! The outbox: effects waiting to be performed on GitHub, with their
//! attempts, next due time and result.

use rusqlite::params;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use super::db::{Db, Row};
use super::{Store, StoreError};
use crate::core::Effect;
use crate::ids::{EffectId, InstallationId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectStatus {
    Pending,
    Done,
    Failed,
}

/// Stored as its word, which the queries compare against
/// (`status = 'pending'`).
impl ToSql for EffectStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(match self {
            EffectStatus::Pending => "pending",
            EffectStatus::Done => "done",
            EffectStatus::Failed => "failed",
        }))
    }
}

/// An unknown word reads as [`StoreError::Corrupt`], naming it.
impl FromSql for EffectStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value.as_str()? {
            "pending" => Ok(EffectStatus::Pending),
            "done" => Ok(EffectStatus::Done),
            "failed" => Ok(EffectStatus::Failed),
            other => Err(FromSqlError::Other(
                format!("unknown effect status `{other}`").into(),
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct EffectRow {
    pub id: EffectId,
    pub installation: InstallationId,
    pub effect: Effect,
    pub status: EffectStatus,
    /// Attempts started so far, counting the one about to run once
    /// [`Store::claim_effect_attempt`] has returned.
    pub attempts: u32,
    /// Attempts that ended in a server error or no answer; rate limits are
    /// not failures.
    pub failures: u32,
    pub last_error: Option<String>,
    pub result: Option<String>,
    pub created_at_ms: i64,
}

pub(super) fn insert(
    db: &Db,
    delivery_seq: Option<i64>,
    installation: InstallationId,
    effects: &[Effect],
    now: i64,
) -> Result<(), StoreError> {
    for effect in effects {
        let json = serde_json::to_string(effect)
            .map_err(|e| StoreError::Corrupt(format!("effect does not serialise: {e}")))?;
        db.execute(
            "INSERT INTO effects (delivery_seq, installation_id, effect, status, next_attempt_ms, created_at_ms)
             VALUES (?1, ?2, ?3, 'pending', ?4, ?4)",
            params![delivery_seq, installation, json, now],
        )?;
    }
    Ok(())
}

fn row_to_effect(r: &Row) -> Result<(EffectRowRaw, String), StoreError> {
    Ok((
        EffectRowRaw {
            id: r.get(0)?,
            installation: r.get(1)?,
            status: r.get(3)?,
            attempts: r.get(4)?,
            last_error: r.get(5)?,
            result: r.get(6)?,
            created_at_ms: r.get(7)?,
            failures: r.get(8)?,
        },
        r.get(2)?,
    ))
}

struct EffectRowRaw {
    id: EffectId,
    installation: InstallationId,
    status: EffectStatus,
    attempts: i64,
    last_error: Option<String>,
    result: Option<String>,
    created_at_ms: i64,
    failures: i64,
}

fn decode((raw, json): (EffectRowRaw, String)) -> Result<EffectRow, StoreError> {
    Ok(EffectRow {
        id: raw.id,
        installation: raw.installation,
        effect: serde_json::from_str(&json)
            .map_err(|e| StoreError::Corrupt(format!("effect {} does not parse: {e}", raw.id)))?,
        status: raw.status,
        attempts: raw.attempts as u32,
        failures: raw.failures as u32,
        last_error: raw.last_error,
        result: raw.result,
        created_at_ms: raw.created_at_ms,
    })
}

const COLUMNS: &str =
    "id, installation_id, effect, status, attempts, last_error, result, created_at_ms, failures";

impl Store {
    /// Pending effects whose time has come, oldest first.
    pub async fn due_effects(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<EffectRow>, StoreError> {
        self.read(move |db| {
            let rows = db.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM effects
                     WHERE status = 'pending' AND next_attempt_ms <= ?1 ORDER BY id LIMIT ?2"
                ),
                params![now_ms, limit as i64],
                row_to_effect,
            )?;
            rows.into_iter().map(decode).collect()
        })
        .await
    }

    /// When the earliest pending effect of `installation` queued before
    /// `before` falls due, if any is pending: a reconcile pass waits for
    /// every write queued before it (its own pass's, and an earlier
    /// delivery's), since it reads what they record.
    pub async fn earlier_pending_due_ms(
        &self,
        installation: InstallationId,
        before: EffectId,
    ) -> Result<Option<i64>, StoreError> {
        self.read(move |db| {
            db.query_one(
                "SELECT MIN(next_attempt_ms) FROM effects
                 WHERE status = 'pending' AND installation_id = ?1 AND id < ?2",
                params![installation, before],
                |r| r.get::<Option<i64>>(0),
            )
        })
        .await
    }

    /// When the next pending effect falls due, if any.
    pub async fn next_effect_due_ms(&self) -> Result<Option<i64>, StoreError> {
        self.read(|db| {
            db.query_one(
                "SELECT MIN(next_attempt_ms) FROM effects WHERE status = 'pending'",
                params![],
                |r| r.get::<Option<i64>>(0),
            )
        })
        .await
    }

    /// Claims the effect's next attempt, durably, before GitHub is called:
    /// succeeds only while the effect is pending and due at `now_ms`,
    /// counts the attempt, and returns its number; `None` when it is not
    /// (another replica claimed it first, or it ended meanwhile).
    ///
    /// A claim of `claim_ms` > 0 (replicas sharing PostgreSQL) also moves
    /// the effect's due time to the claim's end: no other replica takes it
    /// until then, and one that died mid-call leaves it due again there,
    /// for anyone. A claim of 0 (one process on a SQLite file) leaves the
    /// due time alone, so a restart retries at once.
    ///
    /// Either way a restart or a takeover that finds `attempts > 0` on a
    /// pending effect knows GitHub may already have accepted it, and looks
    /// before creating again. [`Store::effect_done`], [`Store::effect_failed`]
    /// and [`Store::effect_retry_at`] end the claim.
    pub async fn claim_effect_attempt(
        &self,
        id: EffectId,
        now_ms: i64,
        claim_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        let until_ms = (claim_ms > 0).then(|| now_ms + claim_ms);
        self.write_one(move |db| {
            let attempts = db.query_opt(
                "UPDATE effects SET attempts = attempts + 1, next_attempt_ms = COALESCE(?3, next_attempt_ms)
                 WHERE id = ?1 AND status = 'pending' AND next_attempt_ms <= ?2
                 RETURNING attempts",
                params![id, now_ms, until_ms],
                |r| r.get::<i64>(0),
            )?;
            Ok(attempts.map(|n| n as u32))
        })
        .await
    }

    /// How long [`Store::claim_effect_attempt`] should hold an effect from
    /// other replicas: a lease ([`Store::lease_ms`]) on a shared database,
    /// nothing on a SQLite file (one process, whose restart must retry at
    /// once).
    pub fn effect_claim_ms(&self) -> i64 {
        if self.is_shared() {
            self.lease_ms()
        } else {
            0
        }
    }

    /// Holds the claim on attempt `attempt` of an effect until `until_ms`
    /// (a wait for a write slot would outlast it); whether it was still
    /// this attempt's, i.e. no other replica has taken the effect over.
    pub async fn extend_effect_claim(
        &self,
        id: EffectId,
        attempt: u32,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        self.write_one(move |db| {
            let changed = db.execute(
                "UPDATE effects SET next_attempt_ms = ?3
                 WHERE id = ?1 AND status = 'pending' AND attempts = ?2",
                params![id, attempt as i64, until_ms],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    pub async fn effect_done(
        &self,
        id: EffectId,
        result: Option<String>,
    ) -> Result<(), StoreError> {
        self.finish_effect(id, EffectStatus::Done, result, None)
            .await
    }

    pub async fn effect_failed(&self, id: EffectId, error: String) -> Result<(), StoreError> {
        self.finish_effect(id, EffectStatus::Failed, None, Some(error))
            .await
    }

    async fn finish_effect(
        &self,
        id: EffectId,
        status: EffectStatus,
        result: Option<String>,
        error: Option<String>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        self.write(move |db| {
            db.execute(
                "UPDATE effects SET status = ?2, result = ?3, last_error = COALESCE(?4, last_error), done_at_ms = ?5
                 WHERE id = ?1",
                params![id, status, result, error, now],
            )?;
            Ok(())
        })
        .await
    }

    /// Leaves the effect pending, due again at `due_ms`, noting why.
    /// Schedules the effect's next attempt; `failed` counts this one
    /// toward giving up (a server error or no answer, not a rate limit).
    pub async fn effect_retry_at(
        &self,
        id: EffectId,
        due_ms: i64,
        error: String,
        failed: bool,
    ) -> Result<(), StoreError> {
        self.write(move |db| {
            db.execute(
                "UPDATE effects SET next_attempt_ms = ?2, last_error = ?3, failures = failures + ?4
                 WHERE id = ?1",
                params![id, due_ms, error, failed as i64],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn effects(&self) -> Result<Vec<EffectRow>, StoreError> {
        self.read(|db| {
            let rows = db.query_map(
                &format!("SELECT {COLUMNS} FROM effects ORDER BY id"),
                params![],
                row_to_effect,
            )?;
            rows.into_iter().map(decode).collect()
        })
        .await
    }

    /// Deliveries not yet processed plus effects not yet performed, counted
    /// in one snapshot (one statement), so a delivery queued by an effect
    /// is never missed between two reads.
    pub async fn unfinished_work(&self) -> Result<i64, StoreError> {
        self.read(|db| {
            db.query_one(
                "SELECT (SELECT COUNT(*) FROM deliveries WHERE status = 'received')
                      + (SELECT COUNT(*) FROM effects WHERE status = 'pending')",
                params![],
                |r| r.get(0),
            )
        })
        .await
    }

    /// Forgets up to `limit` effects that ended (done or failed) before
    /// `cutoff_ms`, oldest first; returns how many.
    pub async fn prune_effects(&self, cutoff_ms: i64, limit: usize) -> Result<usize, StoreError> {
        self.write_one(move |db| {
            db.execute(
                "DELETE FROM effects WHERE id IN (
                   SELECT id FROM effects
                   WHERE status != 'pending' AND created_at_ms < ?1
                   ORDER BY id LIMIT ?2)",
                params![cutoff_ms, limit as i64],
            )
        })
        .await
    }

    /// Effects not yet done or failed: the `outbox_depth` gauge.
    pub async fn outbox_depth(&self) -> Result<i64, StoreError> {
        self.read(|db| {
            db.query_one(
                "SELECT COUNT(*) FROM effects WHERE status = 'pending'",
                params![],
                |r| r.get(0),
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::Clock;
    use crate::ids::{IssueNumber, RepoName};
    use crate::store::testing::on_both_backends;

    fn comment(n: u64) -> Effect {
        Effect::PostComment {
            repo: RepoName::parse("o/r").unwrap(),
            issue: IssueNumber(n),
            body: "hello".into(),
            marker: format!("m{n}"),
        }
    }

    /// One pending effect, due now; its id.
    async fn one_effect(store: &Store) -> EffectId {
        let now = store.clock().now_ms();
        store
            .write(move |db| insert(db, None, InstallationId(1), &[comment(1)], now))
            .await
            .unwrap();
        store.effects().await.unwrap()[0].id
    }

    on_both_backends! {
        async fn pruning_forgets_ended_effects_and_keeps_pending_ones(store: Store) {
            let effects = (1..=3).map(comment).collect::<Vec<_>>();
            let now = store.clock().now_ms();
            store
                .write(move |db| insert(db, None, InstallationId(1), &effects, now))
                .await
                .unwrap();
            let rows = store.effects().await.unwrap();
            store.effect_done(rows[0].id, None).await.unwrap();
            store
                .effect_failed(rows[1].id, "GitHub answered 422".into())
                .await
                .unwrap();

            let an_hour_ago = store.clock().now_ms() - 3_600_000;
            assert_eq!(store.prune_effects(an_hour_ago, 100).await.unwrap(), 0);
            let later = store.clock().now_ms() + 1;
            assert_eq!(store.prune_effects(later, 100).await.unwrap(), 2);
            let left = store.effects().await.unwrap();
            assert_eq!(left.len(), 1);
            assert_eq!(left[0].id, rows[2].id, "the pending one stays");
            assert_eq!(store.outbox_depth().await.unwrap(), 1);
        }

        async fn of_two_replicas_claiming_a_due_effect_one_wins(store: Store) {
            let clock = Clock::movable();
            let a = store.clone().with_clock(clock.clone());
            let b = store.as_replica("b").with_clock(clock.clone());
            let id = one_effect(&a).await;
            let now = clock.now_ms();
            assert_eq!(a.claim_effect_attempt(id, now, 30_000).await.unwrap(), Some(1));
            assert_eq!(b.claim_effect_attempt(id, now, 30_000).await.unwrap(), None);
            // Claimed, it is no longer due for anyone until the claim ends.
            assert!(b.due_effects(now, 10).await.unwrap().is_empty());
            assert_eq!(b.effects().await.unwrap()[0].attempts, 1);
        }

        async fn a_claim_that_runs_out_is_taken_over_as_a_second_attempt(store: Store) {
            let clock = Clock::movable();
            let a = store.clone().with_clock(clock.clone());
            let b = store.as_replica("b").with_clock(clock.clone());
            let id = one_effect(&a).await;
            assert_eq!(a.claim_effect_attempt(id, clock.now_ms(), 30_000).await.unwrap(), Some(1));
            // Replica a dies mid-call: nothing ends its claim.
            clock.advance(Duration::from_secs(29));
            assert_eq!(b.claim_effect_attempt(id, clock.now_ms(), 30_000).await.unwrap(), None);
            clock.advance(Duration::from_secs(1));
            let now = clock.now_ms();
            assert_eq!(b.due_effects(now, 10).await.unwrap().len(), 1);
            // Attempt 2: the executor looks for the effect's marker first.
            assert_eq!(b.claim_effect_attempt(id, now, 30_000).await.unwrap(), Some(2));
            // A holds the claim no more and cannot keep it for a slot.
            assert!(!a.extend_effect_claim(id, 1, now + 60_000).await.unwrap());
            assert!(b.extend_effect_claim(id, 2, now + 60_000).await.unwrap());
            clock.advance(Duration::from_secs(59));
            assert_eq!(a.claim_effect_attempt(id, clock.now_ms(), 30_000).await.unwrap(), None);
            // An ended effect is claimed by no one.
            b.effect_done(id, None).await.unwrap();
            clock.advance(Duration::from_secs(3600));
            assert_eq!(a.claim_effect_attempt(id, clock.now_ms(), 30_000).await.unwrap(), None);
        }

        async fn a_claim_holds_an_effect_only_where_replicas_share_the_database(store: Store) {
            let clock = Clock::movable();
            let store = store.with_clock(clock.clone());
            let id = one_effect(&store).await;
            let claim = store.effect_claim_ms();
            assert_eq!(claim, if store.is_shared() { store.lease_ms() } else { 0 });
            let now = clock.now_ms();
            assert_eq!(store.claim_effect_attempt(id, now, claim).await.unwrap(), Some(1));
            // The process dies mid-call and starts again at once.
            let due = store.due_effects(now, 10).await.unwrap();
            let retried = store.claim_effect_attempt(id, now, claim).await.unwrap();
            if store.is_shared() {
                // Another replica may still be calling: wait out the lease.
                assert!(due.is_empty());
                assert_eq!(retried, None);
            } else {
                // One process on a SQLite file: nobody else is calling.
                assert_eq!(due.len(), 1);
                assert_eq!(retried, Some(2));
            }
        }

        async fn an_unknown_status_word_reads_as_corrupt_data(store: Store) {
            store
                .write(move |db| {
                    insert(db, None, InstallationId(1), &[comment(1)], 0)?;
                    db.execute("UPDATE effects SET status = 'lost'", params![])?;
                    Ok(())
                })
                .await
                .unwrap();
            match store.effects().await {
                // Worded the same on both backends.
                Err(StoreError::Corrupt(why)) => assert_eq!(why, "unknown effect status `lost`"),
                other => panic!("expected corrupt data, got {other:?}"),
            }
        }
    }

    /// Replicas on connections of their own, racing for the same effects:
    /// PostgreSQL's row locks, not one writer thread, keep them apart.
    #[tokio::test]
    async fn replicas_racing_on_postgres_claim_each_effect_once() {
        let database = pgtest::fresh_database();
        let a = Store::open_postgres(database.url()).unwrap();
        let b = Store::open_postgres(database.url()).unwrap();
        let effects = (1..=20).map(comment).collect::<Vec<_>>();
        let now = a.clock().now_ms();
        a.write(move |db| insert(db, None, InstallationId(1), &effects, now))
            .await
            .unwrap();
        let ids: Vec<EffectId> = a.effects().await.unwrap().iter().map(|e| e.id).collect();
        let claim_all = |store: Store, ids: Vec<EffectId>| async move {
            let mut won = Vec::new();
            for id in ids {
                if let Some(attempt) = store.claim_effect_attempt(id, now, 30_000).await.unwrap() {
                    won.push((id, attempt));
                }
            }
            won
        };
        let (won_a, won_b) = tokio::join!(
            tokio::spawn(claim_all(a.clone(), ids.clone())),
            tokio::spawn(claim_all(b.clone(), ids.clone()))
        );
        let mut won: Vec<_> = won_a.unwrap().into_iter().chain(won_b.unwrap()).collect();
        won.sort_unstable();
        let once: Vec<_> = ids.iter().map(|id| (*id, 1)).collect();
        assert_eq!(won, once, "each effect claimed once, as its first attempt");
    }
}
