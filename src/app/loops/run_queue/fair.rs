//! Fair shares of the local runner between installations: which queued
//! attempts start when runners come free.
//!
//! Owns: the order queued attempts are started in ([`fair_order`]), and
//! taking them up: claiming and starting as many as runners are free,
//! telling the others how many runs are ahead of them; none while the
//! host's disk is below its floor (each queued attempt says so, once).
//! Must not: run an attempt (`app::loops::run_queue` does), or decide about a
//! task.
//!
//! The idea a reader needs: attempts are taken in rounds, one per
//! installation with attempts queued in each round; within a round the
//! installation with the fewest runs going comes first (then the one whose
//! oldest attempt waited longest), and within an installation attempts
//! keep the order they were queued in. A 10,000-task plan in one
//! installation therefore delays another installation's run by one turn
//! of the runner at most, where one global FIFO made it wait for all
//! 10,000.
//!
//! One exception to queued order: ship train proofs waiting together
//! start in the order of their cars ([`cars_first`]), each in a place a
//! proof held. A car's retry is queued after the speculative car behind
//! it started waiting, and the car behind can land only after the car
//! ahead: the runner goes to the car ahead first.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tracing::{debug, info, warn};

use super::{attempt_ref, key, AttemptKey, RunQueue};
use crate::app::task::Progress;
use crate::store::AttemptRow;
use taskgate_core::config::RunnerKind;
use taskgate_core::host_disk::LowDisk;
use taskgate_core::ids::{InstallationId, RepoName};
use taskgate_core::task::{AttemptStatus, RunSubject};

impl RunQueue {
    /// Stops the runs the processor cancelled; claims and starts queued
    /// attempts no replica runs, as many as runners are free, in
    /// [`fair_order`]; tells the others how many runs are ahead of them.
    /// An attempt is claimed only when it can start, so a replica holds
    /// no more than it runs.
    pub(super) async fn take_up_runs(self: &Arc<Self>) {
        let active = match self.store.active_attempts(RunnerKind::Local).await {
            Ok(active) => active,
            Err(e) => {
                warn!(error = %e, "reading queued runs failed");
                return;
            }
        };
        let keys: std::collections::HashSet<AttemptKey> = active.iter().map(key).collect();
        // A finished attempt stays in hand until the processor has
        // recorded that end (it leaves the active set), so it is never
        // started a second time in between.
        self.in_hand.lock().retain(|k, run| {
            let keep = keys.contains(k);
            if !keep && !run.finished {
                info!(task = %k.2, attempt = k.3, "attempt cancelled: stopping it");
                run.cancel.cancel();
            }
            keep
        });
        self.told_waiting().retain(|k| keys.contains(k));
        self.told_held().retain(|k| keys.contains(k));
        let (mut running, mut going, mut waiting) = (HashMap::new(), 0, Vec::new());
        {
            let runs = self.in_hand.lock();
            for row in active {
                match runs.get(&key(&row)) {
                    Some(run) if !run.finished => {
                        *running.entry(row.installation).or_insert(0) += 1;
                        going += 1;
                    }
                    Some(_) => {}
                    None => waiting.push(row),
                }
            }
        }
        let mut free = self.runner.capacity().saturating_sub(going);
        if free > 0 && !waiting.is_empty() {
            let floor = self.floor.clone();
            let low = tokio::task::spawn_blocking(move || floor.low())
                .await
                .ok()
                .flatten();
            if let Some(low) = low {
                // Nothing starts below the floor: each says why, once.
                for row in &waiting {
                    self.tell_held(row, low).await;
                }
                return;
            }
        }
        if free > 0 {
            self.cars_first(&mut waiting).await;
        }
        for (place, row) in fair_order(waiting, &running).into_iter().enumerate() {
            if free == 0 {
                self.tell_waiting(&row, going + place).await;
                continue;
            }
            match self
                .store
                .claim_attempt(&row.repo, &attempt_ref(&row))
                .await
            {
                Ok(true) => {
                    self.start_run(row);
                    free -= 1;
                }
                Ok(false) => {
                    debug!(task = %row.task, attempt = row.attempt, "another replica runs this attempt");
                }
                Err(e) => warn!(error = %e, "claiming an attempt failed"),
            }
        }
    }

    fn told_waiting(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<AttemptKey>> {
        (self.in_hand.told_waiting.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn told_held(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<AttemptKey>> {
        (self.in_hand.told_held.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records, once, that a queued attempt is held by the host's low
    /// disk: its check runs say so.
    async fn tell_held(&self, row: &AttemptRow, low: LowDisk) {
        if row.status != AttemptStatus::Queued || !self.told_held().insert(key(row)) {
            return;
        }
        let held = Progress::Held {
            attempt: row.attempt,
            low,
        };
        self.record(row, held, &AtomicBool::new(false)).await;
    }

    /// Records, once, that a queued attempt waits with `ahead` runs
    /// before it: its check runs say so. An attempt another replica took
    /// up (running) is not set back.
    async fn tell_waiting(&self, row: &AttemptRow, ahead: usize) {
        if row.status != AttemptStatus::Queued || !self.told_waiting().insert(key(row)) {
            return;
        }
        let waiting = Progress::Waiting {
            attempt: row.attempt,
            ahead,
        };
        self.record(row, waiting, &AtomicBool::new(false)).await;
    }
}

impl RunQueue {
    /// [`cars_first`] with each repository's ship train as stored: a
    /// proof's rank is the place of the car built at its commit.
    async fn cars_first(&self, waiting: &mut [AttemptRow]) {
        let proofs: Vec<&AttemptRow> = (waiting.iter())
            .filter(|r| r.task == RunSubject::ShipProof)
            .collect();
        if proofs.len() < 2 {
            return; // nothing to order
        }
        let repos: std::collections::BTreeSet<RepoName> =
            proofs.iter().map(|r| r.repo.clone()).collect();
        let mut trains = HashMap::new();
        for repo in repos {
            match self.store.ship_train(&repo).await {
                Ok(train) => {
                    trains.insert(repo, train);
                }
                Err(e) => warn!(error = %e, "reading the ship train failed"),
            }
        }
        cars_first(waiting, |row| {
            let train = trains.get(&row.repo)?;
            (train.cars.iter()).position(|c| c.built.as_ref().is_some_and(|b| b.commit == row.sha))
        });
    }
}

/// Reorders the ship train proofs of `waiting` among the places they
/// hold: by `rank` (the place of the proof's car in its train: the car
/// ahead first), then in the order queued. Rows without a rank (tasks,
/// the one-story queue's proofs, a car gone) keep their place.
pub(super) fn cars_first(waiting: &mut [AttemptRow], rank: impl Fn(&AttemptRow) -> Option<usize>) {
    let places: Vec<(usize, usize)> = (waiting.iter().enumerate())
        .filter_map(|(i, row)| Some((i, rank(row)?)))
        .collect();
    let mut ordered: Vec<(usize, usize)> = places.clone();
    ordered.sort_by_key(|&(i, rank)| (rank, waiting[i].queued_ms, i));
    let rows: Vec<AttemptRow> = ordered.iter().map(|&(i, _)| waiting[i].clone()).collect();
    for ((place, _), row) in places.into_iter().zip(rows) {
        waiting[place] = row;
    }
}

/// `queued` (oldest first) in the order they should start, given how many
/// runs each installation has going now.
pub(super) fn fair_order(
    queued: Vec<AttemptRow>,
    running: &HashMap<InstallationId, usize>,
) -> Vec<AttemptRow> {
    // Each installation's attempts, in the order queued; installations in
    // the order of their oldest attempt.
    let mut lanes: Vec<(InstallationId, std::collections::VecDeque<AttemptRow>)> = Vec::new();
    for row in queued {
        match lanes.iter_mut().find(|(i, _)| *i == row.installation) {
            Some((_, lane)) => lane.push_back(row),
            None => lanes.push((row.installation, [row].into())),
        }
    }
    // Fewest runs going first; a stable sort keeps the oldest first among
    // equals.
    lanes.sort_by_key(|(i, _)| running.get(i).copied().unwrap_or(0));
    let mut order = Vec::new();
    while !lanes.is_empty() {
        for (_, lane) in &mut lanes {
            order.extend(lane.pop_front());
        }
        lanes.retain(|(_, lane)| !lane.is_empty());
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::config::RunnerKind;
    use taskgate_core::ids::{CommitSha, RepoName};
    use taskgate_core::task::AttemptStatus;

    fn queued(installation: u64, task: &str, queued_ms: i64) -> AttemptRow {
        AttemptRow {
            repo: RepoName::parse(&format!("o/r{installation}")).unwrap(),
            story: "s".into(),
            task: taskgate_core::task::RunSubject::Task(task.into()),
            attempt: 1,
            installation: InstallationId::new(installation),
            sha: crate::testing::sha("abc"),
            gates: vec![],
            status: AttemptStatus::Queued,
            queued_ms,
            started_ms: None,
            finished_ms: None,
            report: None,
            runner: RunnerKind::Local,
            base: None,
        }
    }

    fn names(order: &[AttemptRow]) -> Vec<String> {
        order
            .iter()
            .map(|r| format!("{}:{}", r.installation, r.task))
            .collect()
    }

    #[test]
    fn another_installations_run_waits_one_turn_behind_a_backlog_of_ten_thousand() {
        let mut rows: Vec<AttemptRow> = (0..10_000)
            .map(|n| queued(1, &format!("t{n}"), n))
            .collect();
        rows.push(queued(2, "reply", 10_000));
        // With nothing running, it goes second: after one of the backlog's.
        let order = fair_order(rows.clone(), &HashMap::new());
        assert_eq!(names(&order[..3]), ["1:t0", "2:reply", "1:t1"]);
        // With the backlog's runs holding every runner, it goes first.
        let busy = HashMap::from([(InstallationId::new(1), 2)]);
        let order = fair_order(rows, &busy);
        assert_eq!(names(&order[..2]), ["2:reply", "1:t0"]);
        // The backlog keeps its own order.
        let backlog: Vec<String> = order.iter().skip(1).map(|r| r.task.key()).collect();
        assert!(backlog
            .windows(2)
            .all(|w| w[0][1..].parse::<u32>().unwrap() < w[1][1..].parse::<u32>().unwrap()));
    }

    #[test]
    fn ship_train_proofs_start_in_the_order_of_their_cars_in_the_places_they_hold() {
        let proof = |commit: &str, queued_ms| AttemptRow {
            task: taskgate_core::task::RunSubject::ShipProof,
            sha: crate::testing::sha(commit),
            ..queued(1, "", queued_ms)
        };
        // The speculative car 2's run waited first; car 1's retry was
        // queued behind it, and a task's run in between.
        let mut waiting = vec![
            proof("car-2", 1),
            queued(1, "task", 2),
            proof("car-1", 3),
            proof("serial", 4),
        ];
        let cars = ["car-1", "car-2"];
        cars_first(&mut waiting, |row| {
            cars.iter().position(|c| row.sha == crate::testing::sha(c))
        });
        let label = |sha: &CommitSha| {
            ["car-1", "car-2", "serial", "abc"]
                .into_iter()
                .find(|l| crate::testing::sha(l) == *sha)
                .unwrap_or("?")
        };
        let order: Vec<String> = (waiting.iter())
            .map(|r| format!("{} {}", r.task, label(&r.sha)))
            .collect();
        assert_eq!(
            order,
            ["@ship car-1", "task abc", "@ship car-2", "@ship serial"]
        );
    }

    #[test]
    fn rounds_take_one_attempt_of_each_installation() {
        let rows = vec![
            queued(1, "a", 1),
            queued(1, "b", 2),
            queued(3, "x", 3),
            queued(1, "c", 4),
            queued(2, "y", 5),
            queued(3, "z", 6),
        ];
        let order = fair_order(rows, &HashMap::new());
        assert_eq!(names(&order), ["1:a", "3:x", "2:y", "1:b", "3:z", "1:c"]);
    }
}
