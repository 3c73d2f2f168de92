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
//! - On a SQLite file there is one process, which takes every lease.

use rusqlite::params;

use super::{Store, StoreError};

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

    /// Takes (or renews) lease `name` for `for_ms` from now; whether this
    /// replica holds it now.
    pub async fn take_lease(&self, name: &str, for_ms: i64) -> Result<bool, StoreError> {
        let (name, owner) = (name.to_owned(), self.replica.clone());
        let now = self.clock.now_ms();
        self.write_one(move |db| {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::clock::Clock;
    use crate::store::testing::on_both_backends;

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
