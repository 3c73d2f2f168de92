//! The outbox: effects waiting to be performed on GitHub, with their
//! attempts, next due time and result.

use super::sql::Sql;
use rusqlite::params;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use super::db::{Db, Row};
use super::wakeups::Mark;
use super::{Store, StoreError};
use taskgate_core::ids::{EffectId, InstallationId};
use taskgate_core::Effect;

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

/// Queues `effects` for `installation`, but for a desired-state effect
/// identical to the latest one still pending with its subject
/// (`core::Effect::desired_subject`): that one will set the same state
/// when it is performed, so the copy is left out. A reconcile pass that
/// runs while its predecessor's writes still wait for the budget asks for
/// them again; queued, each copy would spend a write slot, or a call
/// GitHub refuses (a second blocked-by link: 422). Only the latest of a
/// subject is compared: a link removed after it was added is added again.
/// Returns how many were queued.
pub(super) fn insert(
    db: &Db,
    delivery_seq: Option<i64>,
    installation: InstallationId,
    effects: &[Effect],
    now: i64,
) -> Result<usize, StoreError> {
    let mut queued = 0;
    for effect in effects {
        let json = serde_json::to_string(effect)
            .map_err(|e| StoreError::Corrupt(format!("effect does not serialise: {e}")))?;
        let subject = effect.desired_subject();
        if let Some(subject) = &subject {
            let latest = db.query_opt(
                "SELECT effect FROM effects
                 WHERE installation_id = ?1 AND subject = ?2 AND status = 'pending'
                 ORDER BY id DESC LIMIT 1",
                params![Sql(installation), subject],
                |r| r.get::<String>(0),
            )?;
            if latest.as_deref() == Some(json.as_str()) {
                continue;
            }
        }
        // A wake at a later time is due then (`Effect::due_at_ms`).
        let due = effect.due_at_ms().map_or(now, |at| at.max(now));
        db.execute(
            "INSERT INTO effects (delivery_seq, installation_id, effect, status, next_attempt_ms, created_at_ms, subject)
             VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6)",
            params![delivery_seq, Sql(installation), json, due, now, subject],
        )?;
        queued += 1;
    }
    if queued > 0 {
        // Any replica's executor may send them.
        db.wake(Mark::Effects);
    }
    Ok(queued)
}

/// What [`Store::due_by_installation`] found.
#[derive(Debug, Default)]
pub struct DueEffects {
    /// Each installation with effects due, in id order, with its oldest
    /// due effects in id order.
    pub by_installation: Vec<(InstallationId, Vec<EffectRow>)>,
    /// When the earliest effect not due yet falls due.
    pub next_due_ms: Option<i64>,
}

fn row_to_effect(r: &Row) -> Result<(EffectRowRaw, String), StoreError> {
    Ok((
        EffectRowRaw {
            id: r.sql(0)?,
            installation: r.sql(1)?,
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

/// The installations with effects pending, in id order: a skip through
/// the `effects_pending` index, one probe an installation, however many
/// effects each has queued.
const PENDING_INSTALLATIONS: &str = "WITH RECURSIVE inst(id) AS (
        SELECT MIN(installation_id) FROM effects WHERE status = 'pending'
        UNION ALL
        SELECT (SELECT MIN(installation_id) FROM effects
                WHERE status = 'pending' AND installation_id > inst.id)
        FROM inst WHERE inst.id IS NOT NULL)
    SELECT id FROM inst WHERE id IS NOT NULL";

/// One installation's (`?1`) oldest effects due at `?2`, at most `?3`.
/// `+next_attempt_ms`: the time is checked row by row rather than searched
/// by `effects_due`, so the rows come from `effects_pending` in id order,
/// the first few read and none sorted (SQLite would otherwise pick the due
/// index and sort every due row; on PostgreSQL the plus changes nothing).
fn due_head_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM effects
         WHERE status = 'pending' AND installation_id = ?1 AND +next_attempt_ms <= ?2
         ORDER BY id LIMIT ?3"
    )
}

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

    /// The executor's next turn: for each installation with effects due at
    /// `now_ms`, its oldest due ones (at most `per_installation`, in id
    /// order), and when the next effect not yet due falls due.
    ///
    /// Three statements in one read, none reading every pending effect:
    /// the installations with effects pending (a skip through the
    /// `effects_pending` index, one probe each), then each one's first few
    /// due in id order (the same index, from its head), then the earliest
    /// time to come. A plan of thousands of tasks queues thousands of
    /// writes that wait for the write budget, all due; an aggregate over
    /// them on every turn made the executor's turns quadratic in the plan
    /// (issue 32).
    pub async fn due_by_installation(
        &self,
        now_ms: i64,
        per_installation: usize,
    ) -> Result<DueEffects, StoreError> {
        self.read(move |db| {
            let installations = db.query_map(PENDING_INSTALLATIONS, params![], |r| {
                r.sql::<InstallationId>(0)
            })?;
            let mut by_installation = Vec::with_capacity(installations.len());
            for installation in installations {
                let rows = db.query_map(
                    &due_head_sql(),
                    params![Sql(installation), now_ms, per_installation as i64],
                    row_to_effect,
                )?;
                if rows.is_empty() {
                    continue;
                }
                let rows = rows.into_iter().map(decode).collect::<Result<_, _>>()?;
                by_installation.push((installation, rows));
            }
            let next_due_ms = db.query_one(
                "SELECT MIN(next_attempt_ms) FROM effects
                 WHERE status = 'pending' AND next_attempt_ms > ?1",
                params![now_ms],
                |r| r.get::<Option<i64>>(0),
            )?;
            Ok(DueEffects {
                by_installation,
                next_due_ms,
            })
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
                params![Sql(installation), Sql(before)],
                |r| r.get::<Option<i64>>(0),
            )
        })
        .await
    }

    /// Ends an effect whatever its claim (the store's own tests; the
    /// executor settles its claims: [`Store::settle_effect`]).
    #[cfg(test)]
    pub(crate) async fn end_effect(
        &self,
        id: EffectId,
        status: EffectStatus,
        error: Option<String>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        self.write(move |db| {
            db.execute(
                "UPDATE effects SET status = ?2, last_error = COALESCE(?3, last_error), done_at_ms = ?4
                 WHERE id = ?1",
                params![Sql(id), status, error, now],
            )?;
            Ok(())
        })
        .await
    }

    /// Leaves an effect no attempt holds pending, due again at `due_ms`,
    /// noting why (put off before it is claimed: `github::lag`, the write
    /// budget); `failed` counts toward giving up. A claimed attempt ends
    /// through [`Store::settle_effect`].
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
                params![Sql(id), due_ms, error, failed as i64],
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
    /// is never missed between two reads. A wake whose time has not come
    /// (`Effect::WakeShipQueue`) is a wait for time, not work: left out.
    pub async fn unfinished_work(&self) -> Result<i64, StoreError> {
        let now = self.clock.now_ms();
        let wake = format!("{}%", taskgate_core::WAKE_SUBJECT);
        self.read(move |db| {
            db.query_one(
                "SELECT (SELECT COUNT(*) FROM deliveries WHERE status = 'received')
                      + (SELECT COUNT(*) FROM effects WHERE status = 'pending'
                           AND NOT (next_attempt_ms > ?1 AND COALESCE(subject, '') LIKE ?2))",
                params![now, wake],
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
    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::{IssueNumber, RepoName};

    fn comment(n: u64) -> Effect {
        Effect::PostComment {
            repo: RepoName::parse("o/r").unwrap(),
            issue: IssueNumber::new(n),
            body: "hello".into(),
            marker: format!("m{n}"),
        }
    }

    on_both_backends! {
        async fn pruning_forgets_ended_effects_and_keeps_pending_ones(store: Store) {
            let effects = (1..=3).map(comment).collect::<Vec<_>>();
            let now = store.clock().now_ms();
            store
                .write(move |db| insert(db, None, InstallationId::new(1), &effects, now))
                .await
                .unwrap();
            let rows = store.effects().await.unwrap();
            store.end_effect(rows[0].id, EffectStatus::Done, None).await.unwrap();
            store
                .end_effect(rows[1].id, EffectStatus::Failed, Some("GitHub answered 422".into()))
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

        async fn a_desired_state_still_pending_is_not_queued_again(store: Store) {
            let blocked_by = |add: bool, blocker: &str| {
                let (repo, marker) = (RepoName::parse("o/r").unwrap(), "t2".to_owned());
                let blocker = blocker.to_owned();
                match add {
                    true => Effect::AddBlockedBy { repo, marker, blocker, blocker_repo: None },
                    false => Effect::RemoveBlockedBy { repo, marker, blocker, blocker_repo: None },
                }
            };
            let now = store.clock().now_ms();
            let queue = |installation: u64, effects: Vec<Effect>| {
                let store = store.clone();
                async move {
                    let one = InstallationId::new(installation);
                    store.write(move |db| insert(db, None, one, &effects, now)).await.unwrap()
                }
            };
            // A copy in the same batch is left out; a comment is not a
            // state: asked twice, it is posted twice.
            let first = vec![blocked_by(true, "t1"), comment(1), blocked_by(true, "t1"), comment(1)];
            assert_eq!(queue(1, first).await, 3);
            // The next pass asks again while the link still waits.
            assert_eq!(queue(1, vec![blocked_by(true, "t1"), blocked_by(true, "t0")]).await, 1);
            // Another installation's queue is its own.
            assert_eq!(queue(2, vec![blocked_by(true, "t1")]).await, 1);
            // Removed after it was asked for, the link is asked for again:
            // the latest of the subject is the removal.
            assert_eq!(queue(1, vec![blocked_by(false, "t1"), blocked_by(true, "t1")]).await, 2);
            // Once done, asking again queues it.
            for row in store.effects().await.unwrap() {
                store.end_effect(row.id, EffectStatus::Done, None).await.unwrap();
            }
            assert_eq!(queue(1, vec![blocked_by(true, "t1")]).await, 1);
            let kinds: Vec<&str> = (store.effects().await.unwrap().iter())
                .map(|e| e.effect.name())
                .collect();
            assert_eq!(kinds.len(), 1 + 3 + 1 + 2 + 1, "{kinds:?}");
        }

        async fn a_wake_is_due_at_its_time_and_is_no_unfinished_work_before_it(store: Store) {
            let now = store.clock().now_ms();
            let wake = Effect::WakeShipQueue {
                repo: RepoName::parse("o/r").unwrap(),
                at_ms: now + 30_000,
            };
            let effects = vec![wake.clone(), wake];
            let queued = store
                .write(move |db| insert(db, None, InstallationId::new(1), &effects, now))
                .await
                .unwrap();
            assert_eq!(queued, 1, "the same wake asked twice is one");
            assert_eq!(store.unfinished_work().await.unwrap(), 0, "a wait for time, not work");
            let due = store.due_by_installation(now, 10).await.unwrap();
            assert!(due.by_installation.is_empty());
            assert_eq!(due.next_due_ms, Some(now + 30_000));
            store.write(move |db| insert(db, None, InstallationId::new(1), &[comment(1)], now)).await.unwrap();
            assert_eq!(store.unfinished_work().await.unwrap(), 1, "other work still counts");
        }

        async fn an_unknown_status_word_reads_as_corrupt_data(store: Store) {
            store
                .write(move |db| {
                    insert(db, None, InstallationId::new(1), &[comment(1)], 0)?;
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

        async fn a_turn_reads_each_installations_oldest_due_effects(store: Store) {
            let now = store.clock().now_ms();
            store
                .write(move |db| {
                    insert(db, None, InstallationId::new(2), &[comment(1), comment(2)], now)?;
                    insert(db, None, InstallationId::new(1), &[comment(3)], now + 60_000)?;
                    insert(db, None, InstallationId::new(2), &[comment(4)], now)?;
                    insert(db, None, InstallationId::new(3), &[comment(5)], now)
                })
                .await
                .unwrap();
            let ids = store.effects().await.unwrap();
            store.end_effect(ids[0].id, EffectStatus::Done, None).await.unwrap();

            let due = store.due_by_installation(now, 2).await.unwrap();
            let turn: Vec<(InstallationId, Vec<EffectId>)> = due
                .by_installation
                .iter()
                .map(|(i, rows)| (*i, rows.iter().map(|r| r.id).collect()))
                .collect();
            // Installation 1 has nothing due yet; 2 its two oldest still
            // pending (the first is done), 3 its one.
            assert_eq!(
                turn,
                [
                    (InstallationId::new(2), vec![ids[1].id, ids[3].id]),
                    (InstallationId::new(3), vec![ids[4].id]),
                ]
            );
            assert_eq!(due.next_due_ms, Some(now + 60_000));
        }
    }

    /// The executor's turn reads the head of each installation's queue
    /// through `effects_pending`: no statement sorts or aggregates the
    /// due effects, which a plan of thousands of tasks keeps thousands of.
    #[tokio::test]
    async fn a_turn_reads_the_head_of_each_queue_not_every_due_effect() {
        let held = crate::store::testing::sqlite();
        let plans = held
            .store
            .read(|db| {
                let mut plans = Vec::new();
                for (sql, installation) in [
                    (PENDING_INSTALLATIONS.to_owned(), None),
                    (due_head_sql(), Some(1)),
                ] {
                    let explain = format!("EXPLAIN QUERY PLAN {sql}");
                    let rows = match installation {
                        None => db.query_map(&explain, params![], |r| r.get::<String>(3))?,
                        Some(i) => {
                            db.query_map(&explain, params![i, 0, 4], |r| r.get::<String>(3))?
                        }
                    };
                    plans.push(rows.join("; "));
                }
                Ok(plans)
            })
            .await
            .unwrap();
        for plan in &plans {
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
            assert!(!plan.contains("effects_due"), "{plan}");
        }
        assert!(
            plans[1].contains("USING INDEX effects_pending (status=? AND installation_id=?)"),
            "{}",
            plans[1]
        );
    }
}
