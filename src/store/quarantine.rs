//! Flaky-test quarantines (`core::flaky`): one row per quarantine
//! started, kept after it is lifted or expires, the per-test history
//! the flaky events are found in, and the flaky events seen outside any
//! task's history (the ship train's), kept so they count later.
//!
//! Owns: the `quarantine` and `flaky_events` tables' statements and the history read for
//! flaky events. Must not: decide what is flaky or in force
//! (`core::flaky` does, with the time the shell hands it).
//!
//! One idea a reader needs: a quarantine row is never deleted. Its events
//! then count once, and "the repository had a quarantine" is the one fact
//! that says whether its "Flaky tests" issue was asked for already.

use std::collections::BTreeSet;

use rusqlite::params;

use super::db::{Db, Row};
use super::{Store, StoreError};
use taskgate_core::flaky::{EventKind, FlakyEvent, Quarantine, RunResult, TestRun};
use taskgate_core::ids::RepoName;
use taskgate_core::results::TestId;
use taskgate_core::Change;

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
        Change::FlakyEventsSeen { repo, events } => {
            for (test, e) in events {
                db.execute(
                    "INSERT INTO flaky_events (repo, test_id, task, sha, attempt, kind)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT(repo, test_id, task, sha, attempt, kind) DO NOTHING",
                    params![
                        repo.as_str(),
                        test.as_str(),
                        e.task,
                        e.sha,
                        e.attempt,
                        kind_name(e.kind)
                    ],
                )?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Retry => "retry",
        EventKind::Untouched => "untouched",
    }
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
        self.unlifted_ending_between(now_s, i64::MAX).await
    }

    /// The quarantines of every repository that ran out (not lifted)
    /// after `from_s` and by `to_s`, by repository and test.
    pub async fn quarantines_ended_between(
        &self,
        from_s: i64,
        to_s: i64,
    ) -> Result<Vec<(RepoName, Quarantine)>, StoreError> {
        self.unlifted_ending_between(from_s, to_s).await
    }

    /// The quarantines not lifted whose end is after `from_s` and by
    /// `to_s`, of every repository.
    async fn unlifted_ending_between(
        &self,
        from_s: i64,
        to_s: i64,
    ) -> Result<Vec<(RepoName, Quarantine)>, StoreError> {
        self.read(move |db| {
            let rows = db.query_map(
                &format!(
                    "SELECT {COLUMNS}, repo FROM quarantine
                     WHERE lifted_by IS NULL AND until_s > ?1 AND until_s <= ?2
                     ORDER BY repo, test_id"
                ),
                params![from_s, to_s],
                |r| Ok((r.get::<String>(5)?, quarantine_of(r)?)),
            )?;
            rows.into_iter()
                .map(|(repo, q)| {
                    Ok((
                        RepoName::parse(&repo).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                        q,
                    ))
                })
                .collect()
        })
        .await
    }

    /// The flaky events of `test` seen outside any task's history
    /// ([`Change::FlakyEventsSeen`]), oldest first.
    pub async fn flaky_events_seen(
        &self,
        repo: &RepoName,
        test: &TestId,
    ) -> Result<Vec<FlakyEvent>, StoreError> {
        let (repo, test) = (repo.clone(), test.clone());
        self.read(move |db| {
            db.query_map(
                "SELECT task, sha, attempt, kind FROM flaky_events
                 WHERE repo = ?1 AND test_id = ?2 ORDER BY task, sha, attempt, kind",
                params![repo.as_str(), test.as_str()],
                |r| {
                    let kind: String = r.get(3)?;
                    Ok(FlakyEvent {
                        task: r.get(0)?,
                        sha: r.get(1)?,
                        attempt: u32::try_from(r.get::<i64>(2)?).unwrap_or(0),
                        kind: match kind.as_str() {
                            "untouched" => EventKind::Untouched,
                            _ => EventKind::Retry,
                        },
                    })
                },
            )
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
        Ok(taskgate_core::flaky::in_force_ids(&all, now_s))
    }

    /// The recorded runs of those of `tests` that can have flaky events,
    /// oldest first (the newest [`MAX_HISTORY_ROWS`] of each chunk of
    /// ids): every run of a test in `failing_now` (it fails in the run
    /// being decided, not stored yet), and of the others only those that
    /// failed at least once before (a test that never failed has none).
    pub async fn flaky_history(
        &self,
        repo: &RepoName,
        tests: &[TestId],
        failing_now: &BTreeSet<TestId>,
    ) -> Result<Vec<TestRun>, StoreError> {
        let mut runs = Vec::new();
        for chunk in tests.chunks(HISTORY_IDS_PER_QUERY) {
            let (repo, chunk) = (repo.clone(), chunk.to_vec());
            let failing: Vec<bool> = chunk.iter().map(|t| failing_now.contains(t)).collect();
            let mut rows = self
                .read(move |db| history_of(db, &repo, &chunk, &failing))
                .await?;
            rows.reverse();
            runs.extend(rows);
        }
        Ok(runs)
    }
}

/// Ids asked for in one statement (`IN (?2, …)`), far below both
/// databases' limits on parameters.
const HISTORY_IDS_PER_QUERY: usize = 200;

/// The history of `tests` (each with whether it fails now), newest first.
/// Always [`HISTORY_IDS_PER_QUERY`] ids of each list, the unused ones
/// NULL: one statement text, kept in the statement cache.
fn history_of(
    db: &Db,
    repo: &RepoName,
    tests: &[TestId],
    failing: &[bool],
) -> Result<Vec<TestRun>, StoreError> {
    let n = HISTORY_IDS_PER_QUERY;
    let asked = padded(tests.iter().map(TestId::as_str).collect(), n);
    let failing_now = padded(
        tests
            .iter()
            .zip(failing)
            .filter_map(|(t, f)| f.then_some(t.as_str()))
            .collect(),
        n,
    );
    let list = |from: usize| {
        (from..from + n)
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // ?1 the repository, ?2 the row limit, then the asked ids, then those
    // failing now.
    let sql = format!(
        "SELECT story, task, attempt, sha, test_id, outcome, file FROM test_results t
         WHERE repo = ?1 AND test_id IN ({})
           AND (test_id IN ({}) OR EXISTS (
               SELECT 1 FROM test_results f
               WHERE f.repo = t.repo AND f.test_id = t.test_id
                 AND f.outcome IN ('failed', 'errored')))
         ORDER BY story DESC, task DESC, attempt DESC LIMIT ?2",
        list(3),
        list(3 + n)
    );
    let (repo_text, limit) = (repo.as_str(), i64::from(MAX_HISTORY_ROWS));
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&repo_text, &limit];
    params.extend(
        asked
            .iter()
            .chain(&failing_now)
            .map(|t| t as &dyn rusqlite::ToSql),
    );
    db.query_map(&sql, &params, |r| {
        let outcome: String = r.get(5)?;
        Ok(TestRun {
            task: format!("{}/{}", r.get::<String>(0)?, r.get::<String>(1)?),
            attempt: u32::try_from(r.get::<i64>(2)?).unwrap_or(0),
            sha: r.get(3)?,
            test_id: TestId::new(r.get::<String>(4)?),
            result: run_result(&outcome),
            file: r.get(6)?,
        })
    })
}

/// `ids` and then NULLs, `n` in all.
fn padded(ids: Vec<&str>, n: usize) -> Vec<Option<&str>> {
    let mut ids: Vec<Option<&str>> = ids.into_iter().map(Some).collect();
    ids.resize(n, None);
    ids
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
mod tests;
