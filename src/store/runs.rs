//! Acceptance attempts and the check runs and workflow runs opened for them.
//!
//! Owns: the statements on `attempts` (queueing, moving, reading),
//! `check_runs` and `workflow_runs`, and [`AttemptRow`] and
//! [`AttemptSummary`].
//! Must not: hold task records (`store::tasks`) or claims on attempts
//! (`store::claims`), or decide when an attempt runs (the core does).

use super::sql::Sql;
use rusqlite::params;

use super::db::{Db, Row};
use super::wakeups::Mark;
use super::{corrupt, Store, StoreError};
use taskgate_core::config::RunnerKind;
use taskgate_core::ids::{CommitSha, EffectId, InstallationId, RepoName, StoryId};
use taskgate_core::report::RunReport;
use taskgate_core::story::markers::encode_value;
use taskgate_core::task::{parse_check_key, AttemptStatus, RunJob, RunSubject};
use taskgate_core::AttemptRef;

// The inbox and the task counts reach `put_task` through here.
pub(super) use super::tasks::put_task;

/// Queues `job`'s attempt for its runner, stamped as queued at `now_ms`.
pub(super) fn queue_attempt(db: &Db, job: &RunJob, now_ms: i64) -> Result<(), StoreError> {
    // Any replica's run queue may take it up.
    db.wake(Mark::Runs);
    db.execute(
        "INSERT INTO attempts (repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, runner, base)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?9, ?10)
         ON CONFLICT(repo, story, task, attempt) DO NOTHING",
        params![
            job.repo.as_str(),
            job.story.as_str(),
            Sql(job.task.clone()),
            job.attempt,
            Sql(job.installation),
            job.sha.as_str(),
            serde_json::to_string(&job.gates).expect("serialises"),
            now_ms,
            runner_name(job.runner),
            job.base.as_ref().map(CommitSha::as_str)
        ],
    )?;
    Ok(())
}

/// One attempt of one task: the key of the `attempts` table.
pub(super) struct AttemptKey<'a> {
    pub repo: &'a RepoName,
    pub story: &'a StoryId,
    pub task: &'a RunSubject,
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
    // The replica running it stops it when it is cancelled.
    db.wake(Mark::Runs);
    db.execute(
        "UPDATE attempts SET status = ?5,
             started_ms = CASE WHEN ?5 = 'running' THEN COALESCE(started_ms, ?6) ELSE started_ms END,
             finished_ms = CASE WHEN ?5 IN ('queued', 'running') THEN finished_ms ELSE ?6 END,
             report = COALESCE(?7, report)
         WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
        params![
            key.repo.as_str(),
            key.story.as_str(),
            Sql(key.task.clone()),
            key.attempt,
            Sql(status),
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

/// An attempt as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    pub repo: RepoName,
    pub story: StoryId,
    pub task: RunSubject,
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
    /// The story branch head the run was dispatched to merge (Actions).
    pub base: Option<CommitSha>,
}

const ATTEMPT_COLUMNS: &str = "repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, started_ms, finished_ms, report, runner, base";

fn read_attempt(r: &Row) -> Result<AttemptRow, StoreError> {
    let repo: String = r.get(0)?;
    let gates: String = r.get(6)?;
    let report: Option<String> = r.get(11)?;
    let runner: String = r.get(12)?;
    Ok(AttemptRow {
        repo: RepoName::parse(&repo).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        story: r.sql(1)?,
        task: r.sql(2)?,
        attempt: r.get(3)?,
        installation: r.sql(4)?,
        sha: r.sql(5)?,
        gates: serde_json::from_str(&gates).map_err(corrupt)?,
        status: r.sql(7)?,
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
        base: r.sql_opt(13)?,
    })
}

/// Gives each attempt the check runs opened for its gates, found by their
/// key (`story=… task=… attempt=… gate=…`). The prefix ends in the space
/// after the story, so story `a` never takes story `ab`'s runs.
fn attach_check_runs(
    db: &Db,
    repo: &RepoName,
    story: &StoryId,
    attempts: &mut [AttemptSummary],
) -> Result<(), StoreError> {
    let prefix = format!("story={} ", encode_value(story.as_str()));
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
            .find(|a| a.task == key.task.key() && a.attempt == key.attempt)
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
        story: &StoryId,
        task: &RunSubject,
    ) -> Result<Vec<AttemptRow>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), Sql(task.clone()));
        self.read(move |db| {
            db.query_map(
                &format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 ORDER BY attempt DESC"
                ),
                params![repo.as_str(), story.as_str(), task],
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
        story: &StoryId,
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
                params![repo.as_str(), story.as_str(), per_task],
                |r| {
                    Ok(AttemptSummary {
                        task: r.get(0)?,
                        attempt: r.get(1)?,
                        sha: r.sql(2)?,
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
        story: &StoryId,
        task: &RunSubject,
        attempt: u32,
    ) -> Result<Option<AttemptRow>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), Sql(task.clone()));
        self.read(move |db| {
            db.query_opt(
                &format!(
                    "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4"
                ),
                params![repo.as_str(), story.as_str(), task, attempt],
                read_attempt,
            )
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
                params![repo.as_str(), run_id as i64, a.story.as_str(), Sql(a.task), a.attempt],
            )?;
            Ok(())
        })
        .await
    }

    /// Records the story branch head an attempt's run merges its head with
    /// (the Actions runner's dispatch names it), unless one is recorded.
    pub async fn put_attempt_base(
        &self,
        repo: &RepoName,
        attempt: &AttemptRef,
        base: &CommitSha,
    ) -> Result<(), StoreError> {
        let (repo, a, base) = (repo.clone(), attempt.clone(), base.clone());
        self.write_one(move |db| {
            db.execute(
                "UPDATE attempts SET base = ?5
                 WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4 AND base IS NULL",
                params![
                    repo.as_str(),
                    a.story.as_str(),
                    Sql(a.task),
                    a.attempt,
                    base.as_str()
                ],
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
                params![repo.as_str(), a.story.as_str(), Sql(a.task), a.attempt],
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
        let found: Option<(StoryId, RunSubject, u32)> = {
            let repo = repo.clone();
            self.read(move |db| {
                db.query_opt(
                    "SELECT story, task, attempt FROM workflow_runs WHERE repo = ?1 AND run_id = ?2",
                    params![repo.as_str(), run_id as i64],
                    |r| Ok((r.sql(0)?, r.sql(1)?, r.get(2)?)),
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
        story: &StoryId,
        task: &RunSubject,
        attempt: u32,
    ) -> Result<Option<String>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), Sql(task.clone()));
        self.read(move |db| {
            db.query_opt(
                "SELECT status FROM attempts WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt = ?4",
                params![repo.as_str(), story.as_str(), task, attempt],
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

    /// Takes the turn of update `effect` on the check run recorded under
    /// `key`: true when no later update of it was sent first (this one
    /// goes ahead, recorded as the newest), false when one was. Effects
    /// are queued in order, but a retried one (GitHub refused it, or a
    /// replica died during the call) can come after a later one, and
    /// sending it would set back what the later one said: an "in
    /// progress" retried after "completed" reopens a finished check run
    /// for good. A retry of the newest update itself goes ahead.
    pub async fn claim_check_run_update(
        &self,
        repo: &RepoName,
        key: &str,
        effect: EffectId,
    ) -> Result<bool, StoreError> {
        let (repo, key) = (repo.clone(), key.to_owned());
        self.write_one(move |db| {
            let changed = db.execute(
                "UPDATE check_runs SET last_update = ?3
                 WHERE repo = ?1 AND key = ?2 AND (last_update IS NULL OR last_update <= ?3)",
                params![repo.as_str(), key, Sql(effect)],
            )?;
            Ok(changed == 1)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                         VALUES ('o/r', ?1, ?2, ?3, 1, '0123456789abcdef0123456789abcdef01234567', '[]', 'failed', 0, 'local')",
                        params![story, task, attempt],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
    }

    on_both_backends! {
        async fn recent_attempts_are_the_newest_few_of_each_task_of_one_story(store: Store) {
            let mut attempts: Vec<(&str, &str, u32)> = (1..=7).map(|n| ("file:s", "a", n)).collect();
            attempts.extend([("file:s", "b", 1), ("file:other", "a", 9)]);
            put_attempts(&store, &attempts).await;
            let repo = RepoName::parse("o/r").unwrap();
            let got: Vec<(String, u32)> = store
                .recent_attempts(&repo, &StoryId::new("file:s"), 5)
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
            let key = taskgate_core::task::check_key;
            let t = RunSubject::Task("t".into());
            for (key, id) in [
                (key(&StoryId::new("file:a"), &t, 2, "unit"), 11),
                (key(&StoryId::new("file:a"), &t, 2, "lint"), 12),
                (key(&StoryId::new("file:a"), &t, 1, "unit"), 10),
                (key(&StoryId::new("file:ab"), &t, 1, "unit"), 99),
                ("another app's id".to_owned(), 98),
            ] {
                store.put_check_run(&repo, &key, id).await.unwrap();
            }
            let got: Vec<(u32, Vec<(String, u64)>)> = store
                .recent_attempts(&repo, &StoryId::new("file:a"), 5)
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
