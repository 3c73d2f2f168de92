//! Claims on attempts: which replica runs an attempt, until when.
//!
//! Owns: the `claimed_by` and `lease_until_ms` columns of `attempts`, and
//! the rule that one replica of a shared database (PostgreSQL) runs an
//! attempt while its claim lasts, while a SQLite file's one process
//! always holds its own.
//! Must not: queue, move or read attempts otherwise (`store::runs`), or
//! claim an attempt that has ended.

use rusqlite::params;

use super::sql::Sql;
use super::{Store, StoreError};
use taskgate_core::ids::RepoName;
use taskgate_core::AttemptRef;

impl Store {
    /// Claims a queued or running attempt for this replica until a lease
    /// from now ([`Store::lease_ms`], by the database's clock on
    /// PostgreSQL: `store::leases`), or renews this replica's claim;
    /// whether this replica holds it now. On PostgreSQL it is held only
    /// when unclaimed, already this replica's, or its lease has run out, so
    /// one replica runs it; on a SQLite file (one process) the claim is
    /// always this process's, so a restart takes its old claims at once.
    /// An attempt that has ended is never claimed.
    pub async fn claim_attempt(
        &self,
        repo: &RepoName,
        attempt: &AttemptRef,
    ) -> Result<bool, StoreError> {
        let (repo, a, owner) = (repo.clone(), attempt.clone(), self.replica().to_owned());
        let (process_now, moved) = self.lease_clock();
        let lease = self.lease_ms();
        let alone = i64::from(!self.is_shared());
        self.write(move |db| {
            // The database's clock on PostgreSQL (`store::leases`).
            let now = super::leases::lease_now_ms(db, process_now, moved)?;
            let until = now + lease;
            let changed = db.execute(
                "UPDATE attempts SET claimed_by = ?5, lease_until_ms = ?6
                 WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4
                   AND status IN ('queued', 'running')
                   AND (?8 = 1 OR claimed_by IS NULL OR claimed_by = ?5 OR lease_until_ms <= ?7)",
                params![
                    repo.as_str(),
                    a.story.as_str(),
                    Sql(a.task),
                    a.attempt,
                    owner,
                    until,
                    now,
                    alone
                ],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    /// Which replica claimed an attempt, and until when (ms); `None` when
    /// unclaimed or unknown.
    pub async fn attempt_claim(
        &self,
        repo: &RepoName,
        attempt: &AttemptRef,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let (repo, a) = (repo.clone(), attempt.clone());
        self.read(move |db| {
            let claim = db.query_opt(
                "SELECT claimed_by, lease_until_ms FROM attempts
                 WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
                params![repo.as_str(), a.story.as_str(), Sql(a.task), a.attempt],
                |r| Ok((r.get::<Option<String>>(0)?, r.get::<Option<i64>>(1)?)),
            )?;
            Ok(match claim {
                Some((Some(by), Some(until))) => Some((by, until)),
                _ => None,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::Clock;
    use crate::store::testing::on_both_backends;

    /// Queues attempt 1 of task `t` of story `s` in `o/r`, with `status`.
    async fn one_attempt(store: &Store, status: &'static str) -> (RepoName, AttemptRef) {
        store
            .write(move |db| {
                db.execute(
                    "INSERT INTO attempts (repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, runner)
                     VALUES ('o/r', 's', 't', 1, 1, 'abc', '[]', ?1, 0, 'local')",
                    params![status],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        let attempt = AttemptRef {
            story: "s".into(),
            task: taskgate_core::task::RunSubject::Task("t".into()),
            attempt: 1,
        };
        (RepoName::parse("o/r").unwrap(), attempt)
    }

    /// Replicas `a` (this store's own name) and `b` on one database and
    /// one movable clock, with 30 s claims.
    fn two_replicas(store: &Store) -> (Store, Store, Clock) {
        let clock = Clock::movable();
        let lease = Duration::from_secs(30);
        let a = store.clone().with_clock(clock.clone()).with_lease(lease);
        let b = store
            .as_replica("b")
            .with_clock(clock.clone())
            .with_lease(lease);
        (a, b, clock)
    }

    on_both_backends! {
        async fn an_attempt_is_run_by_the_replica_that_claimed_it_until_its_claim_runs_out(store: Store) {
            let (repo, attempt) = one_attempt(&store, "queued").await;
            let (a, b, clock) = two_replicas(&store);
            // On a shared database (PostgreSQL) a claim keeps other
            // replicas off; a SQLite file has one process, whose claims
            // always succeed.
            let shared = store.is_shared();
            assert!(a.claim_attempt(&repo, &attempt).await.unwrap());
            assert_eq!(b.claim_attempt(&repo, &attempt).await.unwrap(), !shared);
            if shared {
                let (by, until) = a.attempt_claim(&repo, &attempt).await.unwrap().unwrap();
                assert_eq!(by, a.replica());
                assert!(until > clock.now_ms() + 29_000, "claimed for the lease");
            }
            // The holder renews it while the run goes on.
            clock.advance(Duration::from_secs(20));
            assert!(a.claim_attempt(&repo, &attempt).await.unwrap());
            clock.advance(Duration::from_secs(20));
            assert_eq!(b.claim_attempt(&repo, &attempt).await.unwrap(), !shared);
            // Its holder gone quiet, the claim runs out and another takes
            // it over; the first then finds its claim lost.
            clock.advance(Duration::from_secs(11));
            assert!(b.claim_attempt(&repo, &attempt).await.unwrap());
            assert_eq!(a.claim_attempt(&repo, &attempt).await.unwrap(), !shared);
            let (by, _) = a.attempt_claim(&repo, &attempt).await.unwrap().unwrap();
            assert_eq!(by, if shared { "b" } else { a.replica() });
        }

        async fn a_replica_whose_clock_runs_ahead_takes_over_no_live_claim(store: Store) {
            let (repo, attempt) = one_attempt(&store, "queued").await;
            let a = store.clone();
            let b = store
                .as_replica("b")
                .with_clock(Clock::from_source(crate::store::leases::Ahead(3_600_000)));
            assert!(a.claim_attempt(&repo, &attempt).await.unwrap());
            // On PostgreSQL the claim runs out by the database's clock; a
            // SQLite file's one process holds all its claims anyway.
            assert_eq!(b.claim_attempt(&repo, &attempt).await.unwrap(), !store.is_shared());
        }

        async fn an_attempt_that_ended_is_claimed_by_no_one(store: Store) {
            let (repo, attempt) = one_attempt(&store, "passed").await;
            let (a, b, _) = two_replicas(&store);
            assert!(!a.claim_attempt(&repo, &attempt).await.unwrap());
            assert!(!b.claim_attempt(&repo, &attempt).await.unwrap());
            assert_eq!(a.attempt_claim(&repo, &attempt).await.unwrap(), None);
            let unknown = AttemptRef { attempt: 2, ..attempt };
            assert!(!a.claim_attempt(&repo, &unknown).await.unwrap());
        }
    }
}
