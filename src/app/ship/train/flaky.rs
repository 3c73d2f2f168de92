//! A car's flaky tests (issue 31): a tree whose proof failed and then
//! passed (on the same car, or on the car split from it with the same
//! changes) is a flaky event of each test that failed only the first
//! time, recorded and quarantined as a task's are (`app::flaky`,
//! `core::flaky::new_quarantines`).
//!
//! Owns: [`Ship::train_flaky`], the train's `Flaky` action as flaky
//! events, stored (`Change::FlakyEventsSeen`) so that events too few to
//! quarantine count with later ones. Must not: decide a quarantine (`core::flaky` does) or read the
//! runs' reports (the verdict carries the failing cases' ids).
//!
//! The idea a reader needs: the two runs are of one tree but can be of
//! two cars (two commits, two stories' proofs), which no task's history
//! pairs; so the event is made here, under the passing car's branch and
//! commit, and counted with the tests' recorded events.

use std::collections::BTreeMap;

use super::*;
use taskgate_core::flaky::{EventKind, FlakyEvent};
use taskgate_core::results::TestId;
use taskgate_core::ship::{car_branch, CarId, FailingTest};

impl Ship {
    /// `tests` failed on a tree and passed on it at `commit` (car `car`'s):
    /// one flaky event of each failing case, and the quarantines they
    /// start. A gate that wrote no test results names no case: it is
    /// logged, nothing can be quarantined.
    pub(super) async fn train_flaky(
        &self,
        l: &Located,
        car: CarId,
        commit: &CommitSha,
        tests: &[FailingTest],
    ) -> Result<Decision, ShipError> {
        let mut seen: BTreeMap<TestId, Vec<FlakyEvent>> = BTreeMap::new();
        for case in tests.iter().filter_map(|t| t.case.clone()) {
            seen.entry(case).or_default().push(FlakyEvent {
                task: car_branch(car),
                sha: commit.0.clone(),
                // A car's tree is proven once: its one attempt.
                attempt: 1,
                kind: EventKind::Retry,
            });
        }
        let names: Vec<&str> = seen.keys().map(TestId::as_str).collect();
        tracing::info!(%car, commit = %commit.short(), tests = ?names, "ship train: flaky tests");
        let outcome = format!(
            "; flaky on ship batch {car} at {}: {}",
            commit.short(),
            names.join(", ")
        );
        let flaky = crate::app::flaky::Flaky {
            store: self.store.flaky(),
            clock: self.store.clock().clone(),
        };
        // Kept, so that events too few to quarantine now count later.
        let kept = Change::FlakyEventsSeen {
            repo: l.repo.clone(),
            events: (seen.iter())
                .flat_map(|(test, es)| es.iter().map(|e| (test.clone(), e.clone())))
                .collect(),
        };
        let mut d = flaky
            .quarantine_after_events(&l.repo, seen, &l.config)
            .await?;
        d.changes.push(kept);
        d.outcome += &outcome;
        Ok(d)
    }
}
