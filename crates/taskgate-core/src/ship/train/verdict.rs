//! A proof's verdict on a car: a pass, a first failure (checked again
//! before anyone is blamed), or a confirmed one.
//!
//! Owns: what a finished run does to its car, the flaky events, and the
//! trees remembered as proven, failed once and failed. Must not: blame
//! (`blame`: a confirmed failure waits for the cars ahead, `train`).
//!
//! The idea a reader needs: a failure is checked by proving the same tree
//! again. A car of one story runs again on the same commit. A car of
//! several is split at once (`blame::narrow`): its second car is built on
//! the first with the same changes, so it has the failed tree again, and
//! its run is the check, side by side with the first car's run instead of
//! one period after it. The gates run on a checkout of the commit, so the
//! same tree is the same test. A tree that then passes was a flake: a
//! flaky event, nobody blamed; one that fails again is confirmed.

use super::proven::remember_proven;
use super::{remember_failed, CarId, FailedTree, FailingTest, ProvenTree, Step, TrainAction};
use crate::ids::CommitSha;

impl Step {
    /// A run of car `id` on `commit` ended with `failing` tests (none: a
    /// pass). A run of a car dissolved meanwhile, or of an older commit,
    /// says nothing.
    pub(super) fn proved(&mut self, id: CarId, commit: &CommitSha, failing: Vec<FailingTest>) {
        let Some(at) = self.position(id) else {
            return;
        };
        let car = &mut self.t.cars[at];
        let tree = match &car.built {
            Some(b) if car.proving && b.commit == *commit => b.tree.clone(),
            _ => return,
        };
        car.proving = false;
        let earlier = take_tree(&mut self.t.failed_once, &tree);
        if failing.is_empty() {
            if let Some(earlier) = earlier {
                self.flaky(id, commit, &earlier, earlier.failing.clone());
            }
            self.pass(at);
            if self.t.cars[at].aside {
                // The suspect was innocent: it waits again, for a car in
                // line (the tree it made is remembered as proven).
                let car = self.t.cars.remove(at);
                self.t.waiting.extend(car.stories);
            }
            return;
        }
        let Some(earlier) = earlier else {
            // A first failure: nobody is blamed until the tree fails again.
            self.t.stats.flaky_retries += 1;
            self.t.failed_once.push(FailedTree {
                tree,
                failing: failing.clone(),
                commit: Some(commit.clone()),
            });
            if self.t.cars[at].stories.len() > 1 {
                self.narrow(at, &failing);
            }
            return;
        };
        let flaky: Vec<FailingTest> = (earlier.failing.iter())
            .filter(|t| !failing.iter().any(|f| f.is(t)))
            .cloned()
            .collect();
        self.flaky(id, commit, &earlier, flaky);
        self.t.cars[at].failure = Some(failing.clone());
        remember_failed(&mut self.t.failed, tree, failing);
    }

    pub(super) fn pass(&mut self, at: usize) {
        let car = &mut self.t.cars[at];
        car.passed = true;
        if let Some(b) = &car.built {
            // A car proven with no run of its own ran no gates.
            let gates_of = if car.reused {
                &[][..]
            } else {
                &car.gates_of[..]
            };
            let proven = ProvenTree {
                tree: b.tree.clone(),
                gates_of: gates_of.iter().cloned().collect(),
            };
            remember_proven(&mut self.t.proven, proven);
        }
    }

    /// Tests that failed on a tree and then passed on it: on `commit`
    /// both times (the car's retry: two attempts of its first story's
    /// proof), or on another car's commit first (the split car).
    fn flaky(
        &mut self,
        car: CarId,
        commit: &CommitSha,
        earlier: &FailedTree,
        tests: Vec<FailingTest>,
    ) {
        if !tests.is_empty() {
            self.actions.push(TrainAction::Flaky {
                car,
                commit: commit.clone(),
                tests,
                retried: earlier.commit.as_ref() == Some(commit),
            });
        }
    }
}

/// The record of `tree` in `list`, taken out.
fn take_tree(list: &mut Vec<FailedTree>, tree: &CommitSha) -> Option<FailedTree> {
    let at = list.iter().position(|f| f.tree == *tree)?;
    Some(list.remove(at))
}
