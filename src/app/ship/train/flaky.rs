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
//! commit, and counted with the tests' recorded events. A car's retry on
//! its own commit is two attempts of its first story's `@ship`, which
//! the recorded history pairs itself: its event is made exactly as the
//! history's (`<story>/@ship`, the commit, the passing attempt), so the
//! two are one event, not two.

use std::collections::BTreeMap;

use super::*;
use taskgate_core::flaky::{EventKind, FlakyEvent};
use taskgate_core::ids::StoryId;
use taskgate_core::results::TestId;
use taskgate_core::ship::{car_branch, CarId, FailingTest};
use taskgate_core::task::RunSubject;

impl Ship {
    /// `tests` failed on a tree and passed on it at `commit` (car `car`'s):
    /// one flaky event of each failing case, and the quarantines they
    /// start. A gate that wrote no test results names no case: it is
    /// logged, nothing can be quarantined.
    /// `retry_of`: the car's first story, when both runs were the car's
    /// own (a retry on `commit`).
    pub(super) async fn train_flaky(
        &self,
        l: &Located,
        (car, retry_of): (CarId, Option<StoryId>),
        commit: &CommitSha,
        tests: &[FailingTest],
    ) -> Result<Decision, ShipError> {
        let (task, attempt) = match retry_of {
            Some(story) => {
                let proof = RunSubject::ShipProof;
                let record = self.store.task_record(&l.repo, &story, &proof).await?;
                let attempt = record.and_then(|r| r.current).map_or(1, |a| a.number);
                (format!("{story}/{proof}"), attempt)
            }
            // A car's tree is proven once: its one attempt.
            None => (car_branch(car), 1),
        };
        let mut seen: BTreeMap<TestId, Vec<FlakyEvent>> = BTreeMap::new();
        for case in tests.iter().filter_map(|t| t.case.clone()) {
            seen.entry(case).or_default().push(FlakyEvent {
                task: task.clone(),
                sha: commit.as_str().to_owned(),
                attempt,
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
