//! Write pacing shared by replicas: when each installation may next make a
//! content-creating call on GitHub.
//!
//! Owns: the `write_pacing` table (a row per installation: the earliest
//! time its next write may start, one interval after the last) and
//! `write_slots` (the times of its writes in the past hour, for the
//! hourly budget).
//! Must not: choose the budget or wait; the executor does both
//! (`github::executor`, with `core::pace::Pacing`).
//!
//! The idea a reader needs: GitHub's secondary limits count an
//! installation's writes, whichever replica sends them, so the budget lives
//! in the database. Taking a slot is one transaction: the installation's
//! pacing row is upserted first (on PostgreSQL that locks it until the
//! commit, so replicas take slots one at a time), then the slot is the
//! latest of now, one interval after the last slot, and an hour after the
//! `per_hour`-th most recent slot. A slot further off than the caller will
//! wait is not taken ([`WriteSlot::Later`]): the effect is put off until
//! then and takes its slot when it comes back, so no slot is held by a
//! write that is not about to happen. On a SQLite file the one process
//! takes every slot, the same way.

use super::db::Db;
use super::sql::Sql;
use rusqlite::params;

use super::{Store, StoreError};
use taskgate_core::ids::InstallationId;
use taskgate_core::pace::Pacing;

const HOUR_MS: i64 = 3_600_000;

/// When a write may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteSlot {
    /// Taken: the write starts at this time (now, or within the wait).
    At(i64),
    /// Not taken: the budget has no room before this time.
    Later(i64),
}

/// When the hour's budget of `installation` has room again: an hour
/// after the `per_hour`-th newest slot, `None` while the hour is not full
/// (or there is no hourly budget).
fn hour_full_until(
    db: &Db,
    installation: InstallationId,
    per_hour: i64,
) -> Result<Option<i64>, StoreError> {
    if per_hour <= 0 {
        return Ok(None);
    }
    let nth = db.query_opt(
        "SELECT at_ms FROM write_slots WHERE installation_id = ?1
         ORDER BY at_ms DESC LIMIT 1 OFFSET ?2",
        params![Sql(installation), per_hour - 1],
        |r| r.get::<i64>(0),
    )?;
    Ok(nth.map(|at| at + HOUR_MS))
}

impl Store {
    /// Takes `installation`'s next write slot at `now_ms` under `pacing`,
    /// if it comes within `max_wait_ms`.
    pub async fn take_write_slot(
        &self,
        installation: InstallationId,
        now_ms: i64,
        pacing: Pacing,
        max_wait_ms: i64,
    ) -> Result<WriteSlot, StoreError> {
        let interval = pacing.interval_ms();
        let per_hour = i64::from(pacing.per_hour);
        self.write(move |db| {
            // The row first: on PostgreSQL the upsert locks it until the
            // commit, so replicas taking slots are served one at a time.
            let next = db.query_one(
                "INSERT INTO write_pacing (installation_id, next_write_ms) VALUES (?1, ?2)
                 ON CONFLICT(installation_id) DO UPDATE SET next_write_ms = write_pacing.next_write_ms
                 RETURNING next_write_ms",
                params![Sql(installation), now_ms],
                |r| r.get::<i64>(0),
            )?;
            let hour_full = hour_full_until(db, installation, per_hour)?;
            let slot = now_ms.max(next).max(hour_full.unwrap_or(i64::MIN));
            if slot > now_ms + max_wait_ms {
                return Ok(WriteSlot::Later(slot));
            }
            db.execute(
                "UPDATE write_pacing SET next_write_ms = ?2 WHERE installation_id = ?1",
                params![Sql(installation), slot + interval],
            )?;
            if per_hour > 0 {
                db.execute(
                    "INSERT INTO write_slots (installation_id, at_ms) VALUES (?1, ?2)",
                    params![Sql(installation), slot],
                )?;
                db.execute(
                    "DELETE FROM write_slots WHERE installation_id = ?1 AND at_ms <= ?2",
                    params![Sql(installation), slot - HOUR_MS],
                )?;
            }
            Ok(WriteSlot::At(slot))
        })
        .await
    }

    /// When `installation`'s next write may start under `pacing`, as
    /// [`Store::take_write_slot`] would find it at `now_ms`, without taking
    /// it: what an installation with writes due is waiting for.
    pub async fn next_write_slot_ms(
        &self,
        installation: InstallationId,
        now_ms: i64,
        pacing: Pacing,
    ) -> Result<i64, StoreError> {
        let per_hour = i64::from(pacing.per_hour);
        self.read(move |db| {
            let next = db.query_opt(
                "SELECT next_write_ms FROM write_pacing WHERE installation_id = ?1",
                params![Sql(installation)],
                |r| r.get::<i64>(0),
            )?;
            let hour_full = hour_full_until(db, installation, per_hour)?;
            Ok(now_ms
                .max(next.unwrap_or(i64::MIN))
                .max(hour_full.unwrap_or(i64::MIN)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::WriteSlot::{At, Later};
    use crate::store::testing::on_both_backends;
    use crate::store::Store;
    use taskgate_core::ids::InstallationId;
    use taskgate_core::pace::Pacing;

    const SECOND: i64 = 1_000;
    const HOUR: i64 = 3_600 * SECOND;
    const A_MINUTE_OF_60: Pacing = Pacing {
        per_minute: 60,
        per_hour: 0,
    };

    on_both_backends! {
        async fn replicas_writing_for_one_installation_get_slots_an_interval_apart(store: Store) {
            let (a, b) = (store.clone(), store.as_replica("b"));
            let (one, other) = (InstallationId::new(1), InstallationId::new(2));
            let now = 1_700_000_000_000;
            let p = A_MINUTE_OF_60;
            // The first write of an installation goes at once; the next,
            // from either replica, an interval after the one before.
            assert_eq!(a.take_write_slot(one, now, p, HOUR).await.unwrap(), At(now));
            assert_eq!(b.take_write_slot(one, now, p, HOUR).await.unwrap(), At(now + SECOND));
            assert_eq!(a.take_write_slot(one, now + 10, p, HOUR).await.unwrap(), At(now + 2 * SECOND));
            // Another installation has slots of its own.
            assert_eq!(b.take_write_slot(other, now + 10, p, HOUR).await.unwrap(), At(now + 10));
            // Once the installation has been quiet, a write goes at once again.
            let later = now + 60 * SECOND;
            assert_eq!(b.take_write_slot(one, later, p, HOUR).await.unwrap(), At(later));
            assert_eq!(a.take_write_slot(one, later, p, HOUR).await.unwrap(), At(later + SECOND));
        }
    }

    on_both_backends! {
        async fn an_hours_budget_spent_puts_the_next_write_an_hour_after_the_first(store: Store) {
            let one = InstallationId::new(1);
            let now = 1_700_000_000_000;
            let p = Pacing { per_minute: 60, per_hour: 3 };
            for k in 0..3 {
                let at = now + k * SECOND;
                assert_eq!(store.take_write_slot(one, at, p, 5 * SECOND).await.unwrap(), At(at));
            }
            // The fourth has no room until an hour after the first, and is
            // not given a slot meanwhile, however often it asks.
            let asked = now + 3 * SECOND;
            for _ in 0..3 {
                assert_eq!(store.take_write_slot(one, asked, p, 5 * SECOND).await.unwrap(), Later(now + HOUR));
            }
            // Seen without taking it, the slot is the one taking would find.
            assert_eq!(store.next_write_slot_ms(one, asked, p).await.unwrap(), now + HOUR);
            assert_eq!(store.next_write_slot_ms(InstallationId::new(2), asked, p).await.unwrap(), asked);
            assert_eq!(store.take_write_slot(one, now + HOUR, p, 5 * SECOND).await.unwrap(), At(now + HOUR));
            assert_eq!(store.next_write_slot_ms(one, now + HOUR, p).await.unwrap(), now + HOUR + SECOND);
            // The second of the first hour's writes leaves the window next.
            assert_eq!(
                store.take_write_slot(one, now + HOUR, p, 5 * SECOND).await.unwrap(),
                At(now + HOUR + SECOND)
            );
        }
    }

    /// Replicas on connections of their own, taking slots at once:
    /// PostgreSQL's row lock, not one writer thread, keeps them apart.
    #[tokio::test]
    async fn replicas_racing_on_postgres_never_share_a_slot() {
        let database = pgtest::fresh_database();
        let a = Store::open_postgres(database.url()).unwrap();
        let b = Store::open_postgres(database.url()).unwrap();
        let now = 1_700_000_000_000;
        let p = Pacing {
            per_minute: 60,
            per_hour: 15,
        };
        let take_ten = |store: Store| async move {
            let mut slots = Vec::new();
            for _ in 0..10 {
                slots.push(
                    store
                        .take_write_slot(InstallationId::new(7), now, p, 2 * HOUR)
                        .await
                        .unwrap(),
                );
            }
            slots
        };
        let (slots_a, slots_b) = tokio::join!(tokio::spawn(take_ten(a)), tokio::spawn(take_ten(b)));
        let mut slots: Vec<i64> = slots_a
            .unwrap()
            .into_iter()
            .chain(slots_b.unwrap())
            .map(|s| match s {
                At(at) => at,
                Later(at) => panic!("within the wait: {at}"),
            })
            .collect();
        slots.sort_unstable();
        // Fifteen a second apart, then the hour's budget is spent.
        let mut expected: Vec<i64> = (0..15).map(|i| now + i * SECOND).collect();
        expected.extend((0..5).map(|i| now + HOUR + i * SECOND));
        assert_eq!(slots, expected);
    }
}
