//! Rate-limit pauses shared by replicas: until when GitHub asked an
//! installation to wait.
//!
//! Owns: the `pause:<installation>` rows of the `leases` table (no table
//! of their own: a pause is who holds what until when, with GitHub as the
//! holder and the replica that learned it as the owner).
//! Must not: decide how long to wait or hold the calls; the executor does
//! both (`github::executor`).
//!
//! The idea a reader needs: GitHub's primary and secondary rate limits
//! count per installation token, whichever replica sends the request, so
//! a pause one replica learned holds every replica's calls for that
//! installation. It is kept on the database's clock like a lease
//! (`leases::lease_now_ms`): written as "now + wait" there and read back
//! as the wait left, so replicas whose clocks differ hold it equally long.
//! A later, longer pause extends it; a shorter one never shortens it.
//! On a SQLite file the one process learns and reads its own pauses.

use std::collections::HashMap;

use rusqlite::params;

use super::leases::lease_now_ms;
use super::wakeups::Mark;
use super::{Store, StoreError};
use taskgate_core::ids::InstallationId;

const PREFIX: &str = "pause:";

impl Store {
    /// Records that GitHub asked `installation` to wait `wait_ms` from now,
    /// for every replica.
    pub async fn pause_installation(
        &self,
        installation: InstallationId,
        wait_ms: i64,
    ) -> Result<(), StoreError> {
        let (name, owner) = (
            format!("{PREFIX}{}", installation.get()),
            self.replica.clone(),
        );
        let (process_now, moved) = self.lease_clock();
        self.write(move |db| {
            let until = lease_now_ms(db, process_now, moved)? + wait_ms.max(0);
            // Executors busy with the installation hold it at their next turn.
            db.wake(Mark::Effects);
            db.execute(
                "INSERT INTO leases (name, owner, until_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
                 WHERE leases.until_ms < excluded.until_ms",
                params![name, owner, until],
            )?;
            Ok(())
        })
        .await
    }

    /// The installations GitHub paused, each with the milliseconds of its
    /// pause left.
    pub async fn installation_pauses(&self) -> Result<HashMap<InstallationId, i64>, StoreError> {
        let (process_now, moved) = self.lease_clock();
        self.read(move |db| {
            let now = lease_now_ms(db, process_now, moved)?;
            let rows = db.query_map(
                "SELECT name, until_ms FROM leases WHERE name LIKE 'pause:%' AND until_ms > ?1",
                params![now],
                |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
            )?;
            Ok(rows
                .into_iter()
                .filter_map(|(name, until)| {
                    let id = name.strip_prefix(PREFIX)?.parse().ok()?;
                    Some((InstallationId::new(id), until - now))
                })
                .collect())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::InstallationId;

    on_both_backends! {
        async fn a_pause_learned_by_one_replica_is_read_by_the_others_and_only_grows(store: Store) {
            let (a, b) = (store.clone(), store.as_replica("b"));
            let (one, other) = (InstallationId::new(1), InstallationId::new(2));
            assert!(b.installation_pauses().await.unwrap().is_empty());
            a.pause_installation(one, 60_000).await.unwrap();
            // A shorter pause learned later does not cut the first one short.
            b.pause_installation(one, 1_000).await.unwrap();
            let pauses = b.installation_pauses().await.unwrap();
            assert_eq!(pauses.keys().collect::<Vec<_>>(), vec![&one]);
            let left = pauses[&one];
            assert!((50_000..=60_000).contains(&left), "{left}");
            assert!(!pauses.contains_key(&other));
        }
    }
}
