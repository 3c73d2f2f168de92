//! Per-test history: the outcome and duration of each test a gate's
//! reports listed, per attempt, and what the dashboard
//! asks of it: a story's slowest and most-failing tests.
//!
//! Owns: the `test_results` table's statements. Must not: judge tests
//! (`core::report::evidence` does) or read reports (the runner does).
//!
//! One idea a reader needs: rows are written with the attempt's report,
//! in the same transaction ([`Change::AttemptUpdated`] with a report), and
//! an attempt's rows are replaced whole when its report is written again,
//! so the history never holds half an attempt. Only the cases the report
//! kept are stored (`core::report::MAX_CASES_KEPT` per gate, failing first).
//!
//! [`Change::AttemptUpdated`]: taskgate_core::Change::AttemptUpdated

use rusqlite::params;

use super::db::Db;
use super::runs::AttemptKey;
use super::sql::Sql;
use super::{Store, StoreError};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::report::RunReport;
use taskgate_core::results::Outcome;

/// Rows shown per list on the dashboard.
pub const STORY_TEST_ROWS: u32 = 5;

/// Replaces the attempt's rows with the tests of `report`.
pub(super) fn record(db: &Db, key: &AttemptKey<'_>, report: &RunReport) -> Result<(), StoreError> {
    let scope = params![
        key.repo.as_str(),
        key.story.as_str(),
        Sql(key.task.clone()),
        key.attempt
    ];
    db.execute(
        "DELETE FROM test_results WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
        scope,
    )?;
    let sha = report.sha.as_deref().unwrap_or("");
    for gate in &report.gates {
        for case in gate.tests.iter().flat_map(|t| &t.cases) {
            let duration = case.duration_ms.and_then(|ms| i64::try_from(ms).ok());
            db.execute(
                "INSERT INTO test_results
                     (repo, story, task, attempt, sha, gate, test_id, outcome, duration_ms, file)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT(repo, story, task, attempt, gate, test_id) DO NOTHING",
                params![
                    key.repo.as_str(),
                    key.story.as_str(),
                    Sql(key.task.clone()),
                    key.attempt,
                    sha,
                    gate.gate,
                    case.id.as_str(),
                    outcome_name(&case.outcome),
                    duration,
                    case.file
                ],
            )?;
        }
    }
    Ok(())
}

fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed { .. } => "failed",
        Outcome::Errored { .. } => "errored",
        Outcome::Skipped { .. } => "skipped",
    }
}

/// One test of a story, over every attempt that ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestStat {
    pub task: String,
    pub test_id: String,
    /// Attempts that listed it.
    pub runs: u64,
    /// Of those, failed or errored.
    pub failures: u64,
    /// The mean of the durations reported, in milliseconds.
    pub mean_ms: Option<u64>,
}

const STAT_COLUMNS: &str = "task, test_id, COUNT(*),
    SUM(CASE WHEN outcome IN ('failed', 'errored') THEN 1 ELSE 0 END),
    CAST(AVG(duration_ms) AS BIGINT)";

fn stat_of(r: &super::db::Row) -> Result<TestStat, StoreError> {
    let n = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(TestStat {
        task: r.get(0)?,
        test_id: r.get(1)?,
        runs: n(r.get(2)?),
        failures: n(r.get(3)?),
        mean_ms: r.get::<Option<i64>>(4)?.map(n),
    })
}

impl Store {
    /// A story's slowest tests by mean duration, slowest first (ties by
    /// task and id), at most `limit`.
    pub async fn slowest_tests(
        &self,
        repo: &RepoName,
        story: &StoryId,
        limit: u32,
    ) -> Result<Vec<TestStat>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_string());
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {STAT_COLUMNS} FROM test_results
                     WHERE repo = ?1 AND story = ?2
                     GROUP BY task, test_id
                     HAVING COUNT(duration_ms) > 0
                     ORDER BY 5 DESC, task, test_id LIMIT ?3"
                ),
                params![repo.as_str(), story, i64::from(limit)],
                stat_of,
            )
        })
        .await
    }

    /// A story's tests that failed most often (at least once), most first
    /// (ties by task and id), at most `limit`.
    pub async fn most_failing_tests(
        &self,
        repo: &RepoName,
        story: &StoryId,
        limit: u32,
    ) -> Result<Vec<TestStat>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_string());
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {STAT_COLUMNS} FROM test_results
                     WHERE repo = ?1 AND story = ?2
                     GROUP BY task, test_id
                     HAVING SUM(CASE WHEN outcome IN ('failed', 'errored') THEN 1 ELSE 0 END) > 0
                     ORDER BY 4 DESC, task, test_id LIMIT ?3"
                ),
                params![repo.as_str(), story, i64::from(limit)],
                stat_of,
            )
        })
        .await
    }
}

#[cfg(test)]
pub(super) mod tests;
