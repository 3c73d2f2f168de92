//! Task records, acceptance attempts and the check runs opened for them.

use rusqlite::params;

use super::db::{Db, Dialect, Row};
use super::{corrupt, Store, StoreError};
use crate::core::config::RunnerKind;
use crate::core::report::RunReport;
use crate::core::story::markers::encode_value;
use crate::core::story::Marker;
use crate::core::task::{parse_check_key, AttemptStatus, RunJob, TaskRecord};
use crate::core::AttemptRef;
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName};

pub(super) fn put_task(
    db: &Db,
    repo: &RepoName,
    story: &str,
    task: &str,
    record: &TaskRecord,
) -> Result<(), StoreError> {
    // The counts `/metrics` shows move with the record.
    let counts = super::task_counts::on_write(db, [repo.as_str(), story, task], record)?;
    db.execute(
        "INSERT INTO tasks (repo, story, task, record, counts) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(repo, story, task) DO UPDATE SET record = ?4, counts = ?5",
        params![
            repo.as_str(),
            story,
            task,
            serde_json::to_string(record).expect("plain data serialises"),
            counts
        ],
    )?;
    Ok(())
}

/// Queues `job`'s attempt, stamped as queued at `now_ms`.
pub(super) fn queue_attempt(
    db: &Db,
    job: &RunJob,
    runner: RunnerKind,
    now_ms: i64,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO attempts (repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, runner)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?9)
         ON CONFLICT(repo, story, task, attempt) DO NOTHING",
        params![
            job.repo.as_str(),
            job.story,
            job.task,
            job.attempt,
            job.installation,
            job.sha.as_str(),
            serde_json::to_string(&job.gates).expect("serialises"),
            now_ms,
            runner_name(runner)
        ],
    )?;
    Ok(())
}

/// One attempt of one task: the key of the `attempts` table.
pub(super) struct AttemptKey<'a> {
    pub repo: &'a RepoName,
    pub story: &'a str,
    pub task: &'a str,
    pub attempt: u32,
}

/// Moves an attempt to `status` at `now_ms` (its start or its end, as
/// the status says), keeping its report unless a new one comes.
pub(super) fn update_attempt(
    db: &Db,
    key: AttemptKey<'_>,
    status: AttemptStatus,
    report: Option<&RunReport>,
    now_ms: i64,
) -> Result<(), StoreError> {
    let report = report.map(|r| serde_json::to_string(r).expect("serialises"));
    db.execute(
        "UPDATE attempts SET status = ?5,
             started_ms = CASE WHEN ?5 = 'running' THEN COALESCE(started_ms, ?6) ELSE started_ms END,
             finished_ms = CASE WHEN ?5 IN ('queued', 'running') THEN finished_ms ELSE ?6 END,
             report = COALESCE(?7, report)
         WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
        params![
            key.repo.as_str(),
            key.story,
            key.task,
            key.attempt,
            status,
            now_ms,
            report
        ],
    )?;
    Ok(())
}

fn runner_name(runner: RunnerKind) -> &'static str {
    match runner {
        RunnerKind::Local => "local",
        RunnerKind::Actions => "actions",
    }
}

/// Where a task lives: its story key, plan id and issue marker key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLocation {
    pub story: String,
    pub task: String,
    pub marker: String,
    pub issue: IssueNumber,
}

/// An attempt as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    pub repo: RepoName,
    pub story: String,
    pub task: String,
    pub attempt: u32,
    pub installation: InstallationId,
    pub sha: CommitSha,
    pub gates: Vec<String>,
    pub status: AttemptStatus,
    pub queued_ms: i64,
    pub started_ms: Option<i64>,
    pub finished_ms: Option<i64>,
    pub report: Option<RunReport>,
    pub runner: RunnerKind,
}

const ATTEMPT_COLUMNS: &str = "repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, started_ms, finished_ms, report, runner";

fn read_attempt(r: &Row) -> Result<AttemptRow, StoreError> {
    let repo: String = r.get(0)?;
    let gates: String = r.get(6)?;
    let report: Option<String> = r.get(11)?;
    let runner: String = r.get(12)?;
    Ok(AttemptRow {
        repo: RepoName::parse(&repo).map_err(StoreError::Corrupt)?,
        story: r.get(1)?,
        task: r.get(2)?,
        attempt: r.get(3)?,
        installation: r.get(4)?,
        sha: CommitSha(r.get(5)?),
        gates: serde_json::from_str(&gates).map_err(corrupt)?,
        status: r.get(7)?,
        queued_ms: r.get(8)?,
        started_ms: r.get(9)?,
        finished_ms: r.get(10)?,
        report: report
            .map(|s| serde_json::from_str(&s))
            .transpose()
            .map_err(corrupt)?,
        runner: match runner.as_str() {
            "local" => RunnerKind::Local,
            "actions" => RunnerKind::Actions,
            other => return Err(StoreError::Corrupt(format!("unknown runner `{other}`"))),
        },
    })
}

/// Gives each attempt the check runs opened for its gates, found by their
/// key (`story=… task=… attempt=… gate=…`). The prefix ends in the space
/// after the story, so story `a` never takes story `ab`'s runs.
fn attach_check_runs(
    db: &Db,
    repo: &RepoName,
    story: &str,
    attempts: &mut [AttemptSummary],
) -> Result<(), StoreError> {
    let prefix = format!("story={} ", encode_value(story));
    let rows = db.query_map(
        "SELECT key, id FROM check_runs
         WHERE repo = ?1 AND substr(key, 1, length(?2)) = ?2 ORDER BY key",
        params![repo.as_str(), prefix],
        |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
    )?;
    for (key, id) in rows {
        let Some(key) = parse_check_key(&key) else {
            continue; // not one of ours
        };
        if let Some(a) = attempts
            .iter_mut()
            .find(|a| a.task == key.task && a.attempt == key.attempt)
        {
            a.checks.push((key.gate, id as u64));
        }
    }
    Ok(())
}

/// An attempt without its report, for lists (the dashboard).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptSummary {
    pub task: String,
    pub attempt: u32,
    pub sha: CommitSha,
    pub status: String,
    pub queued_ms: i64,
    pub started_ms: Option<i64>,
    pub finished_ms: Option<i64>,
    pub runner: String,
    /// The check runs opened for its gates: gate name and check run id.
    pub checks: Vec<(String, u64)>,
}

impl Store {
    pub async fn task_record(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), task.to_owned());
        self.read(move |db| {
            super::json_record(
                db,
                "SELECT record FROM tasks WHERE repo = ?1 AND story = ?2 AND task = ?3",
                params![repo.as_str(), story, task],
            )
        })
        .await
    }

    /// Every task record of a story, by task id.
    pub async fn task_records(
        &self,
        repo: &RepoName,
        story: &str,
    ) -> Result<std::collections::BTreeMap<String, TaskRecord>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            super::keyed_records(
                db,
                "SELECT task, record FROM tasks WHERE repo = ?1 AND story = ?2",
                params![repo.as_str(), story],
            )
        })
        .await
    }

    /// Attempts of `runner` still to run or running, oldest first.
    pub async fn active_attempts(&self, runner: RunnerKind) -> Result<Vec<AttemptRow>, StoreError> {
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE status IN ('queued', 'running') AND runner = ?1 ORDER BY queued_ms"
                ),
                params![runner_name(runner)],
                read_attempt,
            )
        })
        .await
    }

    /// A task's attempts, newest first.
    pub async fn attempts(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
    ) -> Result<Vec<AttemptRow>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), task.to_owned());
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 ORDER BY attempt DESC"
                ),
                params![repo.as_str(), story, task],
                read_attempt,
            )
        })
        .await
    }

    /// The newest `per_task` attempts of each task of a story, newest
    /// first; reports are left in the database.
    pub async fn recent_attempts(
        &self,
        repo: &RepoName,
        story: &str,
        per_task: u32,
    ) -> Result<Vec<AttemptSummary>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            // PostgreSQL (before 16) wants the subquery named; SQLite takes
            // the name too.
            let mut attempts = db.query_map(
                "SELECT task, attempt, sha, status, queued_ms, started_ms, finished_ms, runner FROM (
                     SELECT *, row_number() OVER (PARTITION BY task ORDER BY attempt DESC) AS nth
                     FROM attempts WHERE repo = ?1 AND story = ?2) AS recent
                 WHERE nth <= ?3 ORDER BY task, attempt DESC",
                params![repo.as_str(), story, per_task],
                |r| {
                    Ok(AttemptSummary {
                        task: r.get(0)?,
                        attempt: r.get(1)?,
                        sha: CommitSha(r.get(2)?),
                        status: r.get(3)?,
                        queued_ms: r.get(4)?,
                        started_ms: r.get(5)?,
                        finished_ms: r.get(6)?,
                        runner: r.get(7)?,
                        checks: Vec::new(),
                    })
                },
            )?;
            attach_check_runs(db, &repo, &story, &mut attempts)?;
            Ok(attempts)
        })
        .await
    }

    /// One attempt of a task.
    pub async fn attempt(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
        attempt: u32,
    ) -> Result<Option<AttemptRow>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), task.to_owned());
        self.read(move |db| {
            db.query_opt(
                &format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4"
                ),
                params![repo.as_str(), story, task, attempt],
                read_attempt,
            )
        })
        .await
    }

    /// Claims a queued or running attempt for this replica until a lease
    /// from now ([`Store::lease_ms`]), or renews this replica's claim;
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
        let now = self.clock.now_ms();
        let until = now + self.lease_ms();
        let alone = i64::from(!self.is_shared());
        self.write_one(move |db| {
            let changed = db.execute(
                "UPDATE attempts SET claimed_by = ?5, lease_until_ms = ?6
                 WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4
                   AND status IN ('queued', 'running')
                   AND (?8 = 1 OR claimed_by IS NULL OR claimed_by = ?5 OR lease_until_ms <= ?7)",
                params![
                    repo.as_str(),
                    a.story,
                    a.task,
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
                params![repo.as_str(), a.story, a.task, a.attempt],
                |r| Ok((r.get::<Option<String>>(0)?, r.get::<Option<i64>>(1)?)),
            )?;
            Ok(match claim {
                Some((Some(by), Some(until))) => Some((by, until)),
                _ => None,
            })
        })
        .await
    }

    /// Records that GitHub started workflow run `run_id` for an attempt.
    pub async fn put_workflow_run(
        &self,
        repo: &RepoName,
        run_id: u64,
        attempt: &AttemptRef,
    ) -> Result<(), StoreError> {
        let (repo, a) = (repo.clone(), attempt.clone());
        self.write_one(move |db| {
            db.execute(
                "INSERT INTO workflow_runs (repo, run_id, story, task, attempt) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(repo, run_id) DO UPDATE SET story = ?3, task = ?4, attempt = ?5",
                params![repo.as_str(), run_id as i64, a.story, a.task, a.attempt],
            )?;
            Ok(())
        })
        .await
    }

    /// The workflow runs recorded for an attempt, oldest first.
    pub async fn workflow_runs_of_attempt(
        &self,
        repo: &RepoName,
        attempt: &AttemptRef,
    ) -> Result<Vec<u64>, StoreError> {
        let (repo, a) = (repo.clone(), attempt.clone());
        self.read(move |db| {
            db.query_map(
                "SELECT run_id FROM workflow_runs WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4 ORDER BY run_id",
                params![repo.as_str(), a.story, a.task, a.attempt],
                |r| Ok(r.get::<i64>(0)? as u64),
            )
        })
        .await
    }

    /// The attempt workflow run `run_id` was dispatched for, if taskgate
    /// dispatched it.
    pub async fn workflow_run_attempt(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> Result<Option<AttemptRow>, StoreError> {
        let repo = repo.clone();
        let found: Option<(String, String, u32)> = {
            let repo = repo.clone();
            self.read(move |db| {
                db.query_opt(
                    "SELECT story, task, attempt FROM workflow_runs WHERE repo = ?1 AND run_id = ?2",
                    params![repo.as_str(), run_id as i64],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
            })
            .await?
        };
        match found {
            Some((story, task, attempt)) => self.attempt(&repo, &story, &task, attempt).await,
            None => Ok(None),
        }
    }

    pub async fn attempt_status(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
        attempt: u32,
    ) -> Result<Option<String>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), task.to_owned());
        self.read(move |db| {
            db.query_opt(
                "SELECT status FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
                params![repo.as_str(), story, task, attempt],
                |r| r.get(0),
            )
        })
        .await
    }

    pub async fn put_check_run(
        &self,
        repo: &RepoName,
        key: &str,
        id: u64,
    ) -> Result<(), StoreError> {
        let (repo, key) = (repo.clone(), key.to_owned());
        self.write_one(move |db| {
            db.execute(
                "INSERT INTO check_runs (repo, key, id) VALUES (?1, ?2, ?3)
                 ON CONFLICT(repo, key) DO UPDATE SET id = ?3",
                params![repo.as_str(), key, id as i64],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn check_run_id(
        &self,
        repo: &RepoName,
        key: &str,
    ) -> Result<Option<u64>, StoreError> {
        let (repo, key) = (repo.clone(), key.to_owned());
        self.read(move |db| {
            db.query_opt(
                "SELECT id FROM check_runs WHERE repo = ?1 AND key = ?2",
                params![repo.as_str(), key],
                |r| Ok(r.get::<i64>(0)? as u64),
            )
        })
        .await
    }

    /// Tasks whose failure loop has a branch todo open: the timer looks at
    /// their lifetime bound.
    pub async fn tasks_with_open_todos(
        &self,
    ) -> Result<Vec<(RepoName, String, String)>, StoreError> {
        self.read(|db| {
            // An open todo is a `failure.open` that is there and not JSON
            // null (`None` is stored as null). SQLite's `json_extract` is
            // NULL for both a missing key and a JSON null; PostgreSQL's
            // `jsonb_typeof` is NULL for the one and 'null' for the other,
            // and `<> 'null'` leaves both out.
            let sql = match db.dialect() {
                Dialect::Sqlite => {
                    "SELECT repo, story, task FROM tasks WHERE json_extract(record, '$.failure.open') IS NOT NULL"
                }
                Dialect::Postgres => {
                    "SELECT repo, story, task FROM tasks WHERE jsonb_typeof(record::jsonb -> 'failure' -> 'open') <> 'null'"
                }
            };
            db.query_map(sql, params![], |r| {
                let repo = r.get::<String>(0)?;
                Ok((
                    RepoName::parse(&repo).map_err(StoreError::Corrupt)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                ))
            })
        })
        .await
    }

    /// The task whose pull request is `number`.
    pub async fn task_by_pull(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<TaskLocation>, StoreError> {
        let repo_name = repo.clone();
        let found = self
            .read(move |db| {
                let rows = db.query_map(
                    "SELECT story, task, record FROM tasks WHERE repo = ?1",
                    params![repo_name.as_str()],
                    |r| {
                        Ok((
                            r.get::<String>(0)?,
                            r.get::<String>(1)?,
                            r.get::<String>(2)?,
                        ))
                    },
                )?;
                for (story, task, json) in rows {
                    let record: TaskRecord = serde_json::from_str(&json).map_err(corrupt)?;
                    if record.pr.is_some_and(|p| p.number == number) {
                        return Ok(Some((story, task)));
                    }
                }
                Ok(None)
            })
            .await?;
        let Some((story, task)) = found else {
            return Ok(None);
        };
        let marker = Marker::Task {
            story: story.clone(),
            task: crate::core::plan::TaskId::new(task.as_str()),
        }
        .key();
        Ok(self
            .issue_record(repo, &marker)
            .await?
            .map(|r| TaskLocation {
                story,
                task,
                marker,
                issue: r.number,
            }))
    }

    /// The task whose issue is `number` in `repo`, if taskgate made it.
    pub async fn task_by_issue(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<TaskLocation>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            for key in super::issue_markers(db, &repo, number)? {
                let hidden = crate::core::hidden_marker(&key);
                if let Some(Marker::Task { story, task }) = Marker::find_in(&hidden) {
                    return Ok(Some(TaskLocation {
                        story,
                        task: task.as_str().to_owned(),
                        marker: key,
                        issue: number,
                    }));
                }
            }
            Ok(None)
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

    /// Puts attempts of repository `o/r` into `store`, each `(story, task,
    /// attempt)`.
    async fn put_attempts(store: &Store, attempts: &[(&str, &str, u32)]) {
        let attempts: Vec<(String, String, u32)> = attempts
            .iter()
            .map(|(story, task, attempt)| (story.to_string(), task.to_string(), *attempt))
            .collect();
        store
            .write(move |db| {
                for (story, task, attempt) in attempts {
                    db.execute(
                        "INSERT INTO attempts (repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, runner)
                         VALUES ('o/r', ?1, ?2, ?3, 1, 'abc', '[]', 'failed', 0, 'local')",
                        params![story, task, attempt],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
    }

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
            task: "t".into(),
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

        async fn an_attempt_that_ended_is_claimed_by_no_one(store: Store) {
            let (repo, attempt) = one_attempt(&store, "passed").await;
            let (a, b, _) = two_replicas(&store);
            assert!(!a.claim_attempt(&repo, &attempt).await.unwrap());
            assert!(!b.claim_attempt(&repo, &attempt).await.unwrap());
            assert_eq!(a.attempt_claim(&repo, &attempt).await.unwrap(), None);
            let unknown = AttemptRef { attempt: 2, ..attempt };
            assert!(!a.claim_attempt(&repo, &unknown).await.unwrap());
        }

        async fn recent_attempts_are_the_newest_few_of_each_task_of_one_story(store: Store) {
            let mut attempts: Vec<(&str, &str, u32)> = (1..=7).map(|n| ("file:s", "a", n)).collect();
            attempts.extend([("file:s", "b", 1), ("file:other", "a", 9)]);
            put_attempts(&store, &attempts).await;
            let repo = RepoName::parse("o/r").unwrap();
            let got: Vec<(String, u32)> = store
                .recent_attempts(&repo, "file:s", 5)
                .await
                .unwrap()
                .into_iter()
                .map(|a| (a.task, a.attempt))
                .collect();
            let want: Vec<(String, u32)> = [("a", 7), ("a", 6), ("a", 5), ("a", 4), ("a", 3), ("b", 1)]
                .into_iter()
                .map(|(t, n)| (t.to_owned(), n))
                .collect();
            assert_eq!(got, want);
        }

        async fn an_attempts_check_runs_come_with_it_and_no_other_storys(store: Store) {
            put_attempts(&store, &[("file:a", "t", 1), ("file:a", "t", 2), ("file:ab", "t", 1)])
                .await;
            let repo = RepoName::parse("o/r").unwrap();
            let key = crate::core::task::check_key;
            for (key, id) in [
                (key("file:a", "t", 2, "unit"), 11),
                (key("file:a", "t", 2, "lint"), 12),
                (key("file:a", "t", 1, "unit"), 10),
                (key("file:ab", "t", 1, "unit"), 99),
                ("another app's id".to_owned(), 98),
            ] {
                store.put_check_run(&repo, &key, id).await.unwrap();
            }
            let got: Vec<(u32, Vec<(String, u64)>)> = store
                .recent_attempts(&repo, "file:a", 5)
                .await
                .unwrap()
                .into_iter()
                .map(|a| (a.attempt, a.checks))
                .collect();
            let checks =
                |list: &[(&str, u64)]| list.iter().map(|(g, id)| (g.to_string(), *id)).collect();
            assert_eq!(
                got,
                vec![
                    (2, checks(&[("lint", 12), ("unit", 11)])),
                    (1, checks(&[("unit", 10)])),
                ]
            );
        }
    }
}
