//! After a run's report: the flaky events of its tests and the
//! quarantines they start, with the repository's "Flaky tests" tracking
//! issue (`core::flaky`).
//!
//! Owns: gathering what the core needs — the recorded history of the
//! report's tests, this attempt's results (not stored yet: they are
//! written by the same decision), the files changed between the commits
//! a test flipped across (recorded by the runners,
//! `store::commit_changes`), the repository's quarantines and the time.
//! Must not: compute a diff (the runners do), decide (`core::flaky::new_quarantines` and
//! `on_new_quarantines` do) or read anything a task printed beyond its
//! test results: only recorded history quarantines a test.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Clock;
use crate::store::{NewDelivery, StoreError};
use taskgate_core::config::load_config;
use taskgate_core::config::RepoConfig;
use taskgate_core::flaky::{self, Changes, CommitPair, FlakyEvent, RunResult, TestRun};
use taskgate_core::ids::RepoName;
use taskgate_core::ids::{DeliveryId, StoryId};
use taskgate_core::internal::{InternalEvent, QuarantineEnded};
use taskgate_core::report::RunReport;
use taskgate_core::results::{Outcome, TestId};
use taskgate_core::task::RunSubject;
use taskgate_core::Decision;
use tracing::warn;

/// One finished attempt, as the quarantine sees it.
pub(crate) struct FinishedRun<'a> {
    pub repo: &'a RepoName,
    pub story: &'a StoryId,
    pub task: &'a RunSubject,
    pub attempt: u32,
    pub report: &'a RunReport,
}

/// The flaky-test tracking of a repository: what a finished run's
/// results quarantine, and the tracking issue when a quarantine ends.
/// Its own handle with its own store view: the task runs hand it each
/// report, the processor each quarantine's end.
#[derive(Clone)]
pub struct Flaky {
    pub(crate) store: FlakyStore,
    pub clock: Clock,
}

impl Flaky {
    /// The time decisions are taken at, in unix seconds.
    fn now(&self) -> i64 {
        self.clock.now_s()
    }

    /// The quarantines `run`'s results start, if any, and the tracking
    /// issue's effect; nothing when no test of it became flaky enough.
    pub(crate) async fn quarantine_after_run(
        &self,
        run: &FinishedRun<'_>,
        config: &RepoConfig,
    ) -> Result<Decision, StoreError> {
        let key = format!("{}/{}", run.story, run.task);
        let sha = run.report.sha.clone().unwrap_or_default();
        let mut current: Vec<TestRun> = Vec::new();
        for gate in &run.report.gates {
            for case in gate.tests.iter().flat_map(|t| &t.cases) {
                current.push(TestRun {
                    task: key.clone(),
                    attempt: run.attempt,
                    sha: sha.clone(),
                    test_id: case.id.clone(),
                    result: result_of(&case.outcome),
                    file: case.file.clone(),
                });
            }
        }
        if sha.is_empty() || current.is_empty() {
            return Ok(Decision::default());
        }
        let mut ids: Vec<TestId> = current.iter().map(|r| r.test_id.clone()).collect();
        ids.sort();
        ids.dedup();
        let failing_now: BTreeSet<TestId> = current
            .iter()
            .filter(|r| r.result == RunResult::Fail)
            .map(|r| r.test_id.clone())
            .collect();
        let mut runs: Vec<TestRun> = self
            .store
            .flaky_history(run.repo, &ids, &failing_now)
            .await?
            .into_iter()
            .filter(|r| !(r.task == key && r.attempt == run.attempt))
            .collect();
        runs.extend(current);
        let events = self.events_of(run.repo, &runs, config).await?;
        self.quarantine(run.repo, &events, config).await
    }

    /// The quarantines flaky events seen outside a task's history start
    /// (the ship train's: a tree failed in one car's proof and passed in
    /// another's, two runs no task's history pairs), counted with the
    /// events the tests' recorded history has.
    pub(crate) async fn quarantine_after_events(
        &self,
        repo: &RepoName,
        seen: BTreeMap<TestId, Vec<FlakyEvent>>,
        config: &RepoConfig,
    ) -> Result<Decision, StoreError> {
        if seen.is_empty() {
            return Ok(Decision::default());
        }
        let ids: Vec<TestId> = seen.keys().cloned().collect();
        let runs = (self.store)
            .flaky_history(repo, &ids, &BTreeSet::new())
            .await?;
        let mut events = self.events_of(repo, &runs, config).await?;
        for (test, more) in seen {
            let all = events.entry(test).or_default();
            all.extend(more);
            all.sort();
            all.dedup();
        }
        self.quarantine(repo, &events, config).await
    }

    /// The flaky events of `runs`, with what the runners recorded of the
    /// commits a test flipped across (`store::commit_changes`): kind (b)
    /// needs them.
    async fn events_of(
        &self,
        repo: &RepoName,
        runs: &[TestRun],
        config: &RepoConfig,
    ) -> Result<BTreeMap<TestId, Vec<FlakyEvent>>, StoreError> {
        let known = (self.store)
            .commit_changes(repo, flaky::flips_across_commits(runs))
            .await?;
        let unrelated = config.flaky.unrelated_globs();
        let changes = Changes {
            files: &|pair: &CommitPair| known.get(pair).cloned().flatten(),
            unrelated: &|path: &str| unrelated.is_match(path),
        };
        Ok(flaky::flaky_events(runs, changes))
    }

    /// The quarantines `events` start now, with the tracking issue's
    /// effect (`core::flaky`).
    async fn quarantine(
        &self,
        repo: &RepoName,
        events: &BTreeMap<TestId, Vec<FlakyEvent>>,
        config: &RepoConfig,
    ) -> Result<Decision, StoreError> {
        if events.is_empty() {
            return Ok(Decision::default());
        }
        // The events seen outside any task's history count too (the ship
        // train's, stored when they were too few to quarantine).
        let mut events = events.clone();
        for (test, all) in &mut events {
            all.extend(self.store.flaky_events_seen(repo, test).await?);
            all.sort();
            all.dedup();
        }
        let before = self.store.quarantines(repo).await?;
        let now = self.now();
        let started = flaky::new_quarantines(&events, &before, &config.flaky, now);
        let prefix = format!("/{}", super::commands::syntax_of(config).prefix);
        Ok(flaky::on_new_quarantines(
            repo, &before, started, &prefix, now,
        ))
    }
}

fn result_of(outcome: &Outcome) -> RunResult {
    match outcome {
        Outcome::Passed => RunResult::Pass,
        Outcome::Failed { .. } | Outcome::Errored { .. } => RunResult::Fail,
        Outcome::Skipped { .. } => RunResult::Skip,
    }
}

/// How far back the periodic pass looks for quarantines that ran out: a
/// replica down for less than this still updates the tracking issue.
const ENDED_LOOKBACK_S: i64 = 7 * 86_400;

impl Flaky {
    /// A quarantine ran out: the repository's "Flaky tests" issue is
    /// rewritten without it.
    pub async fn on_quarantine_ended(
        &self,
        ended: QuarantineEnded,
    ) -> Result<Decision, StoreError> {
        let quarantines = self.store.quarantines(&ended.repo).await?;
        let story = self.store.a_story_of(&ended.repo).await?;
        let config =
            load_config(story.as_ref().and_then(|s| s.config.as_deref())).unwrap_or_default();
        let prefix = format!("/{}", super::commands::syntax_of(&config).prefix);
        Ok(flaky::on_quarantine_ended(
            &ended.repo,
            &quarantines,
            &ended.test_id,
            &prefix,
            self.now(),
        ))
    }
}

/// Records the end of every quarantine that ran out lately (the run
/// queue's periodic pass). The delivery id names the quarantine, so each
/// end is decided once however often it is seen.
pub(super) async fn record_ended_quarantines(store: &QuarantineEndsStore, now_s: i64) {
    let ended = match store
        .quarantines_ended_between(now_s - ENDED_LOOKBACK_S, now_s)
        .await
    {
        Ok(ended) => ended,
        Err(e) => return warn!(error = %e, "reading ended quarantines failed"),
    };
    for (repo, q) in ended {
        let Ok(Some(story)) = store.a_story_of(&repo).await else {
            continue;
        };
        let event = QuarantineEnded {
            repo: repo.clone(),
            test_id: q.test_id.clone(),
            since_s: q.since_s,
        };
        let delivery = NewDelivery::internal(
            DeliveryId::new(format!(
                "taskgate-quarantine-ended {repo} {} {}",
                q.since_s, q.test_id
            )),
            story.installation,
            &InternalEvent::QuarantineEnded(event),
        );
        if let Err(e) = store.record_delivery(delivery).await {
            warn!(error = %e, "recording a quarantine's end failed");
        }
    }
}

mod store;

pub(crate) use store::{FlakyStore, QuarantineEndsStore};
