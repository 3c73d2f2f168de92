//! Claims on effects: which replica performs an effect's attempt, until
//! when, and whether its outcome may still be recorded.
//!
//! Owns: the claim side of the outbox (`attempts` counted on a claim, the
//! due time moved to the claim's end) and the fence on an attempt's
//! outcome ([`Store::settle_effect`]).
//! Must not: choose which effect runs next (`github::executor`) or call
//! GitHub.
//!
//! The idea a reader needs: a claim is judged by the database's clock on
//! PostgreSQL (`store::leases`), both when it is taken and when its
//! outcome is recorded. A call to GitHub that outlived its claim may
//! have raced another replica's attempt at the same effect, so what it
//! learned is dropped, and the effect is retried under the normal rules
//! (the next attempt looks for its marker first). On a SQLite file one
//! process holds every claim: only a newer attempt fences an older one.

use super::sql::Sql;
use rusqlite::params;

use super::{Store, StoreError};
use taskgate_core::ids::EffectId;

/// An attempt [`Store::claim_effect_attempt`] claimed: its number, and
/// until when no other replica takes the effect (by the database's clock;
/// now, on a SQLite file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    pub attempt: u32,
    pub until_ms: i64,
}

/// How a claimed attempt ended ([`Store::settle_effect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// Done, with what the executor keeps of GitHub's answer.
    Done(Option<String>),
    /// Failed for good, with GitHub's message.
    Failed(String),
    /// Pending again, due at `due_ms`, noting why; `failed` counts the
    /// attempt toward giving up (a server error or no answer, not a rate
    /// limit).
    RetryAt {
        due_ms: i64,
        why: String,
        failed: bool,
    },
}

impl Store {
    /// Claims the effect's next attempt, durably, before GitHub is called:
    /// succeeds only while the effect is pending and due, counts the
    /// attempt, and returns its number and until when it is held; `None`
    /// when it is not (another replica claimed it first, or it ended
    /// meanwhile).
    ///
    /// A claim of `claim_ms` > 0 (replicas sharing PostgreSQL) also moves
    /// the effect's due time to the claim's end: no other replica takes it
    /// until then, and one that died mid-call leaves it due again there,
    /// for anyone. "Due" and the claim's end are read on the database's
    /// clock there (`store::leases`), so a replica whose clock runs ahead
    /// cannot take a live claim. A claim of 0 (one process on a SQLite
    /// file) leaves the due time alone, so a restart retries at once.
    ///
    /// Either way a restart or a takeover that finds `attempts > 0` on a
    /// pending effect knows GitHub may already have accepted it, and looks
    /// before creating again. [`Store::settle_effect`] ends the claim.
    pub async fn claim_effect_attempt(
        &self,
        id: EffectId,
        claim_ms: i64,
    ) -> Result<Option<Claimed>, StoreError> {
        let (process_now, moved) = self.lease_clock();
        self.write(move |db| {
            let now = super::leases::lease_now_ms(db, process_now, moved)?;
            let until_ms = (claim_ms > 0).then(|| now + claim_ms);
            let attempts = db.query_opt(
                "UPDATE effects SET attempts = attempts + 1, next_attempt_ms = COALESCE(?3, next_attempt_ms)
                 WHERE id = ?1 AND status = 'pending' AND next_attempt_ms <= ?2
                 RETURNING attempts",
                params![Sql(id), now, until_ms],
                |r| r.get::<i64>(0),
            )?;
            Ok(attempts.map(|n| Claimed {
                attempt: n as u32,
                until_ms: until_ms.unwrap_or(now),
            }))
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

    /// Ends attempt `attempt` of an effect with `settlement`, if its claim
    /// still holds: no other replica has taken the effect over (the attempt
    /// is still the latest) and, where replicas share the database, the
    /// claim has not run out by the database's clock. Whether it was
    /// recorded; when not, the outcome is dropped and the effect stays
    /// pending, due since its claim ran out, for the next claim (which
    /// looks for what this attempt may have made, by its marker).
    pub async fn settle_effect(
        &self,
        id: EffectId,
        attempt: u32,
        settlement: Settlement,
    ) -> Result<bool, StoreError> {
        let (process_now, moved) = self.lease_clock();
        let (done_at, shared) = (self.clock.now_ms(), i64::from(self.is_shared()));
        self.write(move |db| {
            let now = super::leases::lease_now_ms(db, process_now, moved)?;
            const HELD: &str = "id = ?1 AND status = 'pending' AND attempts = ?2
                 AND (?3 = 0 OR next_attempt_ms > ?4)";
            let changed = match settlement {
                Settlement::Done(result) => db.execute(
                    &format!("UPDATE effects SET status = 'done', result = ?5, done_at_ms = ?6 WHERE {HELD}"),
                    params![Sql(id), attempt, shared, now, result, done_at],
                )?,
                Settlement::Failed(why) => db.execute(
                    &format!("UPDATE effects SET status = 'failed', last_error = ?5, done_at_ms = ?6 WHERE {HELD}"),
                    params![Sql(id), attempt, shared, now, why, done_at],
                )?,
                Settlement::RetryAt { due_ms, why, failed } => db.execute(
                    &format!(
                        "UPDATE effects SET next_attempt_ms = ?5, last_error = ?6, failures = failures + ?7
                         WHERE {HELD}"
                    ),
                    params![Sql(id), attempt, shared, now, due_ms, why, i64::from(failed)],
                )?,
            };
            Ok(changed == 1)
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
    use crate::store::EffectStatus;
    use taskgate_core::ids::{InstallationId, IssueNumber, RepoName};
    use taskgate_core::Effect;

    fn comment(n: u64) -> Effect {
        Effect::PostComment {
            repo: RepoName::parse("o/r").unwrap(),
            issue: IssueNumber::new(n),
            body: "hello".into(),
            marker: format!("m{n}"),
        }
    }

    /// One pending effect, due now; its id.
    async fn one_effect(store: &Store) -> EffectId {
        let now = store.clock().now_ms();
        store
            .write(move |db| {
                super::super::outbox::insert(db, None, InstallationId::new(1), &[comment(1)], now)
            })
            .await
            .unwrap();
        store.effects().await.unwrap()[0].id
    }

    /// The attempt number of a claim, if taken.
    async fn claim(store: &Store, id: EffectId, claim_ms: i64) -> Option<u32> {
        let claimed = store.claim_effect_attempt(id, claim_ms).await.unwrap();
        claimed.map(|c| c.attempt)
    }

    fn done() -> Settlement {
        Settlement::Done(None)
    }

    on_both_backends! {
        async fn of_two_replicas_claiming_a_due_effect_one_wins(store: Store) {
            let clock = Clock::movable();
            let a = store.clone().with_clock(clock.clone());
            let b = store.as_replica("b").with_clock(clock.clone());
            let id = one_effect(&a).await;
            assert_eq!(claim(&a, id, 30_000).await, Some(1));
            assert_eq!(claim(&b, id, 30_000).await, None);
            // Claimed, it is no longer due for anyone until the claim ends.
            assert!(b.due_effects(clock.now_ms(), 10).await.unwrap().is_empty());
            assert_eq!(b.effects().await.unwrap()[0].attempts, 1);
        }

        async fn a_claim_that_runs_out_is_taken_over_as_a_second_attempt(store: Store) {
            let clock = Clock::movable();
            let a = store.clone().with_clock(clock.clone());
            let b = store.as_replica("b").with_clock(clock.clone());
            let id = one_effect(&a).await;
            assert_eq!(claim(&a, id, 30_000).await, Some(1));
            // Replica a dies mid-call: nothing ends its claim.
            clock.advance(Duration::from_secs(29));
            assert_eq!(claim(&b, id, 30_000).await, None);
            clock.advance(Duration::from_secs(1));
            assert_eq!(b.due_effects(clock.now_ms(), 10).await.unwrap().len(), 1);
            // Attempt 2: the executor looks for the effect's marker first.
            assert_eq!(claim(&b, id, 30_000).await, Some(2));
            // A's attempt, answered at last, is not recorded; b's is.
            assert!(!a.settle_effect(id, 1, done()).await.unwrap());
            assert!(b.settle_effect(id, 2, done()).await.unwrap());
            // An ended effect is claimed by no one.
            clock.advance(Duration::from_secs(3600));
            assert_eq!(claim(&a, id, 30_000).await, None);
        }

        async fn a_claim_holds_an_effect_only_where_replicas_share_the_database(store: Store) {
            let clock = Clock::movable();
            let store = store.with_clock(clock.clone());
            let id = one_effect(&store).await;
            let claim_ms = store.effect_claim_ms();
            assert_eq!(claim_ms, if store.is_shared() { store.lease_ms() } else { 0 });
            assert_eq!(claim(&store, id, claim_ms).await, Some(1));
            // The process dies mid-call and starts again at once.
            let due = store.due_effects(clock.now_ms(), 10).await.unwrap();
            let retried = claim(&store, id, claim_ms).await;
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

        async fn an_outcome_learned_after_the_claim_ran_out_is_not_recorded(store: Store) {
            let clock = Clock::movable();
            let store = store.with_clock(clock.clone());
            let id = one_effect(&store).await;
            let claim_ms = store.effect_claim_ms();
            assert_eq!(claim(&store, id, claim_ms).await, Some(1));
            // GitHub answers after the claim ran out (by the database's
            // clock, which a test moves on with the process's).
            clock.advance(Duration::from_millis(store.lease_ms() as u64 + 1_000));
            let recorded = store.settle_effect(id, 1, done()).await.unwrap();
            let effect = store.effects().await.unwrap().remove(0);
            if store.is_shared() {
                // Dropped: still pending, due, claimed next as attempt 2.
                assert!(!recorded);
                assert_eq!((effect.status, effect.attempts), (EffectStatus::Pending, 1));
                assert_eq!(claim(&store, id, claim_ms).await, Some(2));
                assert!(store.settle_effect(id, 2, done()).await.unwrap());
            } else {
                // One process: its claims last until it ends them.
                assert!(recorded);
                assert_eq!(effect.status, EffectStatus::Done);
            }
        }

        async fn a_replica_whose_clock_runs_ahead_takes_over_no_live_effect(store: Store) {
            let a = store.clone();
            let ahead = Clock::from_source(crate::store::leases::Ahead(3_600_000));
            let b = store.as_replica("b").with_clock(ahead);
            let id = one_effect(&a).await;
            let claim_ms = a.effect_claim_ms();
            assert_eq!(claim(&a, id, claim_ms).await, Some(1));
            let taken = claim(&b, id, claim_ms).await;
            // On PostgreSQL the claim lasts a lease of the database's time.
            assert_eq!(taken, (!store.is_shared()).then_some(2));
            // And the outcome of a's call is recorded where it holds.
            let recorded = a.settle_effect(id, 1, done()).await.unwrap();
            assert_eq!(recorded, store.is_shared());
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
        a.write(move |db| {
            super::super::outbox::insert(db, None, InstallationId::new(1), &effects, now)
        })
        .await
        .unwrap();
        let ids: Vec<EffectId> = a.effects().await.unwrap().iter().map(|e| e.id).collect();
        let claim_all = |store: Store, ids: Vec<EffectId>| async move {
            let mut won = Vec::new();
            for id in ids {
                if let Some(claim) = store.claim_effect_attempt(id, 30_000).await.unwrap() {
                    won.push((id, claim.attempt));
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
