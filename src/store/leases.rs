//! Leases: which replica holds a piece of shared work, until when.
//!
//! Owns: the `leases` table and this process's name in it
//! ([`Store::replica`]).
//! Must not: decide what a lease guards; its users do (the processor holds
//! an installation's deliveries, each periodic pass holds its turn).
//!
//! Ideas a reader needs:
//! - **A lease is a row** `(name, owner, until_ms)`. Taking it is one
//!   upsert that succeeds when the row is free, expired, or already ours,
//!   so two replicas can never both hold it, and a replica that died (even
//!   by SIGKILL) lets go when its time runs out. PostgreSQL is the only
//!   shared component: no coordinator.
//! - **Work done under a lease is still fenced by its own row** (a
//!   delivery is marked processed only while it is `received`, an effect
//!   claimed only while it is due): a lease that ran out mid-work costs
//!   repeated work, never a second result.
//! - **Leases run on the database's clock.** On PostgreSQL "now" for a
//!   lease, an attempt's claim or an effect's claim is read from the
//!   server (`clock_timestamp()`) inside the statement's transaction
//!   ([`lease_now_ms`]), never from the replica asking: a replica whose
//!   clock runs an hour ahead would otherwise see every live lease as run
//!   out and take it. Only time a test moved on ([`Clock::moved_ms`]) is
//!   added. A SQLite file has one process, whose clock is the only one:
//!   there the store's clock serves.
//! - On a SQLite file there is one process, which takes every lease.
//!
//! [`Clock::moved_ms`]: crate::clock::Clock::moved_ms

use rusqlite::params;

use super::db::{Db, Dialect};
use super::{Store, StoreError};

/// The database's time in whole milliseconds since the epoch (rounded
/// down), when the statement runs.
const DATABASE_NOW_MS: &str =
    "SELECT CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)";

/// "Now" for leases and claims, within `db`'s transaction: the
/// database's clock on PostgreSQL, moved on by `moved_ms` (what a test
/// advanced the process's clock by); `process_now_ms` on a SQLite file.
pub(super) fn lease_now_ms(db: &Db, process_now_ms: i64, moved_ms: i64) -> Result<i64, StoreError> {
    match db.dialect() {
        Dialect::Sqlite => Ok(process_now_ms),
        Dialect::Postgres => {
            let now = db.query_one(DATABASE_NOW_MS, params![], |r| r.get::<i64>(0))?;
            Ok(now + moved_ms)
        }
    }
}

/// This process's name among the replicas: host, pid and a random part,
/// so a restarted process (same pid in a new container) is someone else.
pub(super) fn replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    format!("{host}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

impl Store {
    /// This replica's name in leases and claims.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The process's "now" and how far a test moved it on, for
    /// [`lease_now_ms`].
    pub(super) fn lease_clock(&self) -> (i64, i64) {
        (self.clock.now_ms(), self.clock.moved_ms())
    }

    /// Takes (or renews) lease `name` for `for_ms` from now (by the
    /// database's clock, [`lease_now_ms`]); whether this replica holds it
    /// now.
    pub async fn take_lease(&self, name: &str, for_ms: i64) -> Result<bool, StoreError> {
        let (name, owner) = (name.to_owned(), self.replica.clone());
        let (process_now, moved) = self.lease_clock();
        self.write(move |db| {
            let now = lease_now_ms(db, process_now, moved)?;
            let held = db.query_opt(
                "INSERT INTO leases (name, owner, until_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
                 WHERE leases.owner = excluded.owner OR leases.until_ms <= ?4
                 RETURNING owner",
                params![name, owner, now + for_ms, now],
                |r| r.get::<String>(0),
            )?;
            Ok(held.is_some())
        })
        .await
    }

    /// Whether this replica runs periodic pass `pass` (retention, the
    /// redelivery pass, …) this time: once per cluster. The holder renews
    /// its turn with each pass; a replica that died gives it up two periods
    /// later. On a SQLite file it is always this process's turn.
    pub async fn our_turn(&self, pass: &str, period: std::time::Duration) -> bool {
        if !self.shared {
            return true;
        }
        let hold = 2 * (period.as_millis() as i64).max(self.lease_ms);
        match self.take_lease(&format!("pass:{pass}"), hold).await {
            Ok(ours) => ours,
            Err(e) => {
                tracing::warn!(error = %e, pass, "could not take the pass's turn; skipping it");
                false
            }
        }
    }

    /// Lets lease `name` go, if this replica holds it.
    pub async fn release_lease(&self, name: &str) -> Result<(), StoreError> {
        let (name, owner) = (name.to_owned(), self.replica.clone());
        self.write_one(move |db| {
            db.execute(
                "DELETE FROM leases WHERE name = ?1 AND owner = ?2",
                params![name, owner],
            )?;
            Ok(())
        })
        .await
    }
}

/// A clock running `.0` ms ahead of the system's: a replica whose host
/// keeps the wrong time (tests of leases on the database's clock).
#[cfg(test)]
pub(crate) struct Ahead(pub i64);

#[cfg(test)]
impl crate::clock::TimeSource for Ahead {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis() + self.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Ahead;
    use crate::clock::Clock;
    use crate::store::testing::on_both_backends;

    /// Replicas share only the database: a replica whose clock runs an
    /// hour ahead must not see a live lease as run out.
    #[tokio::test]
    async fn a_replica_whose_clock_runs_ahead_cannot_take_a_live_lease_on_postgres() {
        let held = crate::store::testing::postgres();
        let a = held.store.clone();
        let hour = 3_600_000;
        let b = held
            .store
            .as_replica("b")
            .with_clock(Clock::from_source(Ahead(hour)));
        assert!(a.take_lease("inbox:7", 60_000).await.unwrap());
        assert!(!b.take_lease("inbox:7", 60_000).await.unwrap());
        // Its own lease lasts a minute of the database's time, not an hour
        // less: a replica on the right time cannot take it either.
        assert!(b.take_lease("pass:retention", 60_000).await.unwrap());
        assert!(!a.take_lease("pass:retention", 60_000).await.unwrap());
    }

    on_both_backends! {
        async fn a_lease_is_held_by_one_replica_until_it_runs_out(store: Store) {
            let clock = Clock::movable();
            let a = store.clone().with_clock(clock.clone());
            let b = store.as_replica("b").with_clock(clock.clone());
            assert!(a.take_lease("pass:retention", 60_000).await.unwrap());
            assert!(!b.take_lease("pass:retention", 60_000).await.unwrap());
            // The holder renews it; the other still cannot take it.
            assert!(a.take_lease("pass:retention", 60_000).await.unwrap());
            clock.advance(Duration::from_secs(30));
            assert!(!b.take_lease("pass:retention", 60_000).await.unwrap());
            // Its holder gone quiet, it runs out and another takes it.
            clock.advance(Duration::from_secs(31));
            assert!(b.take_lease("pass:retention", 60_000).await.unwrap());
            assert!(!a.take_lease("pass:retention", 60_000).await.unwrap());
            // Released, it is free at once.
            b.release_lease("pass:retention").await.unwrap();
            assert!(a.take_lease("pass:retention", 60_000).await.unwrap());
            // Other leases are other rows.
            assert!(b.take_lease("inbox:7", 60_000).await.unwrap());
        }
    }
}
