//! Write pacing shared by replicas: when each installation may next make a
//! content-creating call on GitHub.
//!
//! Owns: the `write_pacing` table, a row per installation holding the
//! earliest time its next write may start.
//! Must not: decide the spacing or wait; the executor does both
//! (`github::executor::Pacing`).
//!
//! The idea a reader needs: GitHub's secondary limit counts an
//! installation's writes, whichever replica sends them, so the spacing
//! lives in the database. Taking a slot is one upsert that returns the
//! later of "now" and the row's time and moves the row one interval past
//! it; replicas taking slots together are thereby given slots an interval
//! apart. On a SQLite file the one process takes every slot, the same way.

use rusqlite::params;

use super::{Store, StoreError};
use crate::ids::InstallationId;

impl Store {
    /// Takes `installation`'s next write slot at `now_ms`, `interval_ms`
    /// after the one before it: returns when the write may start (`now_ms`
    /// when the installation has not written for an interval).
    pub async fn take_write_slot(
        &self,
        installation: InstallationId,
        now_ms: i64,
        interval_ms: i64,
    ) -> Result<i64, StoreError> {
        self.write_one(move |db| {
            // `CASE`, not two-argument `MAX`: PostgreSQL has no such `MAX`
            // and SQLite no `GREATEST`.
            db.query_one(
                "INSERT INTO write_pacing (installation_id, next_write_ms) VALUES (?1, ?4)
                 ON CONFLICT(installation_id) DO UPDATE SET next_write_ms =
                   CASE WHEN write_pacing.next_write_ms > ?2 THEN write_pacing.next_write_ms + ?3
                        ELSE excluded.next_write_ms END
                 RETURNING next_write_ms - ?3",
                params![installation, now_ms, interval_ms, now_ms + interval_ms],
                |r| r.get::<i64>(0),
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::InstallationId;
    use crate::store::testing::on_both_backends;
    use crate::store::Store;

    const SECOND: i64 = 1_000;

    on_both_backends! {
        async fn replicas_writing_for_one_installation_get_slots_an_interval_apart(store: Store) {
            let (a, b) = (store.clone(), store.as_replica("b"));
            let (one, other) = (InstallationId(1), InstallationId(2));
            let now = 1_700_000_000_000;
            // The first write of an installation goes at once; the next,
            // from either replica, an interval after the one before.
            assert_eq!(a.take_write_slot(one, now, SECOND).await.unwrap(), now);
            assert_eq!(b.take_write_slot(one, now, SECOND).await.unwrap(), now + SECOND);
            assert_eq!(a.take_write_slot(one, now + 10, SECOND).await.unwrap(), now + 2 * SECOND);
            // Another installation has slots of its own.
            assert_eq!(b.take_write_slot(other, now + 10, SECOND).await.unwrap(), now + 10);
            // Once the installation has been quiet, a write goes at once again.
            let later = now + 60 * SECOND;
            assert_eq!(b.take_write_slot(one, later, SECOND).await.unwrap(), later);
            assert_eq!(a.take_write_slot(one, later, SECOND).await.unwrap(), later + SECOND);
        }
    }

    /// Replicas on connections of their own, taking slots at once:
    /// PostgreSQL's upsert, not one writer thread, keeps them apart.
    #[tokio::test]
    async fn replicas_racing_on_postgres_never_share_a_slot() {
        let database = pgtest::fresh_database();
        let a = Store::open_postgres(database.url()).unwrap();
        let b = Store::open_postgres(database.url()).unwrap();
        let now = 1_700_000_000_000;
        let take_ten = |store: Store| async move {
            let mut slots = Vec::new();
            for _ in 0..10 {
                slots.push(
                    store
                        .take_write_slot(InstallationId(7), now, SECOND)
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
            .collect();
        slots.sort_unstable();
        let expected: Vec<i64> = (0..20).map(|i| now + i * SECOND).collect();
        assert_eq!(slots, expected);
    }
}
