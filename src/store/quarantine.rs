//! Flaky-test quarantines (`core::flaky`): one row per quarantine
//! started, kept after it is lifted or expires, and the per-test history
//! the flaky events are found in.
//!
//! Owns: the `quarantine` table's statements and the history read for
//! flaky events. Must not: decide what is flaky or in force
//! (`core::flaky` does, with the time the shell hands it).
//!
//! One idea a reader needs: a quarantine row is never deleted. Its events
//! then count once, and "the repository had a quarantine" is the one fact
//! that says whether its "Flaky tests" issue was asked for already.

use rusqlite::params;

use super::db::{Db, Row};
use super::{Store, StoreError};
use crate::core::flaky::{FlakyEvent, Quarantine, RunResult, TestRun};
use crate::core::Change;
use crate::ids::RepoName;
use crate::results::TestId;

/// History rows read for flaky events, newest kept.
pub const MAX_HISTORY_ROWS: u32 = 20_000;

/// Applies [`Change::QuarantineStarted`] and [`Change::QuarantineLifted`].
pub(super) fn apply(db: &Db, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::QuarantineStarted {
            repo,
            quarantine: q,
        } => {
            let events =
                serde_json::to_string(&q.events).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            db.execute(
                "INSERT INTO quarantine (repo, test_id, since_s, until_s, events, lifted_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(repo, test_id, since_s) DO NOTHING",
                params![
                    repo.as_str(),
                    q.test_id.as_str(),
                    q.since_s,
                    q.until_s,
                    events,
                    q.lifted_by
                ],
            )?;
        }
        Change::QuarantineLifted {
            repo,
            test_id,
            since_s,
            by,
        } => {
            db.execute(
                "UPDATE quarantine SET lifted_by = ?4
                 WHERE repo = ?1 AND test_id = ?2 AND since_s = ?3 AND lifted_by IS NULL",
                params![repo.as_str(), test_id.as_str(), since_s, by],
            )?;
        }
        _ => {}
    }
    Ok(())
}

fn quarantine_of(r: &Row) -> Result<Quarantine, StoreError> {
    let events: String = r.get(3)?;
    let events: Vec<FlakyEvent> =
        serde_json::from_str(&events).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(Quarantine {
        test_id: TestId::new(r.get::<String>(0)?),
        since_s: r.get(1)?,
        until_s: r.get(2)?,
        events,
        lifted_by: r.get(4)?,
    })
}

const COLUMNS: &str = "test_id, since_s, until_s, events, lifted_by";

impl Store {
    /// Every quarantine `repo` ever had (lifted and expired ones too), by
    /// test and start.
    pub async fn quarantines(&self, repo: &RepoName) -> Result<Vec<Quarantine>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM quarantine WHERE repo = ?1 ORDER BY test_id, since_s"
                ),
                params![repo.as_str()],
                quarantine_of,
            )
        })
        .await
    }

    /// The quarantines in force at `now_s`, of every repository, by
    /// repository and test.
    pub async fn quarantines_in_force(
        &self,
        now_s: i64,
    ) -> Result<Vec<(RepoName, Quarantine)>, StoreError> {
        self.read(move |db| {
            let rows = db.query_map(
                &format!(
                    "SELECT {COLUMNS}, repo FROM quarantine
                     WHERE lifted_by IS NULL AND until_s > ?1 ORDER BY repo, test_id"
                ),
                params![now_s],
                |r| Ok((r.get::<String>(5)?, quarantine_of(r)?)),
            )?;
            rows.into_iter()
                .map(|(repo, q)| Ok((RepoName::parse(&repo).map_err(StoreError::Corrupt)?, q)))
                .collect()
        })
        .await
    }

    /// The ids of `repo`'s tests quarantined at `now_s`: what a gate's
    /// verdict leaves out.
    pub async fn quarantined_tests(
        &self,
        repo: &RepoName,
        now_s: i64,
    ) -> Result<Vec<TestId>, StoreError> {
        let all = self.quarantines(repo).await?;
        Ok(crate::core::flaky::in_force_ids(&all, now_s))
    }

    /// The recorded runs of `repo`'s tests that failed at least once, for
    /// flaky events (the newest [`MAX_HISTORY_ROWS`]), oldest first.
    pub async fn flaky_history(&self, repo: &RepoName) -> Result<Vec<TestRun>, StoreError> {
        let repo = repo.clone();
        let mut runs = self
            .read(move |db| {
                db.query_map(
                    "SELECT story, task, attempt, sha, test_id, outcome FROM test_results
                     WHERE repo = ?1 AND test_id IN (
                         SELECT test_id FROM test_results
                         WHERE repo = ?1 AND outcome IN ('failed', 'errored'))
                     ORDER BY story DESC, task DESC, attempt DESC LIMIT ?2",
                    params![repo.as_str(), i64::from(MAX_HISTORY_ROWS)],
                    |r| {
                        let outcome: String = r.get(5)?;
                        Ok(TestRun {
                            task: format!("{}/{}", r.get::<String>(0)?, r.get::<String>(1)?),
                            attempt: u32::try_from(r.get::<i64>(2)?).unwrap_or(0),
                            sha: r.get(3)?,
                            test_id: TestId::new(r.get::<String>(4)?),
                            result: run_result(&outcome),
                            file: None,
                        })
                    },
                )
            })
            .await?;
        runs.reverse();
        Ok(runs)
    }
}

/// A stored outcome as a run's result.
pub fn run_result(outcome: &str) -> RunResult {
    match outcome {
        "passed" => RunResult::Pass,
        "failed" | "errored" => RunResult::Fail,
        _ => RunResult::Skip,
    }
}

#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
