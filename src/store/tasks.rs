//! Task records: the `tasks` table, and finding a task by its pull
//! request or its issue.
//!
//! Owns: the statements on `tasks` (a record's write moves the counts
//! `/metrics` shows, `store::task_counts`) and [`TaskLocation`].
//! Must not: touch attempts, claims or check runs (`store::runs`,
//! `store::claims`), or decide anything about a task (the core does).

use rusqlite::params;

use super::db::{Db, Dialect};
use super::sql::Sql;
use super::{corrupt, Store, StoreError};
use taskgate_core::ids::{IssueNumber, RepoName, StoryId, TaskId};
use taskgate_core::story::Marker;
use taskgate_core::task::{RunSubject, TaskRecord};

pub(super) fn put_task(
    db: &Db,
    repo: &RepoName,
    story: &StoryId,
    task: &RunSubject,
    record: &TaskRecord,
) -> Result<(), StoreError> {
    // The counts `/metrics` shows move with the record.
    let key = task.key();
    let counts = super::task_counts::on_write(db, [repo.as_str(), story.as_str(), &key], record)?;
    db.execute(
        "INSERT INTO tasks (repo, story, task, record, counts) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(repo, story, task) DO UPDATE SET record = ?4, counts = ?5",
        params![
            repo.as_str(),
            story.as_str(),
            key,
            serde_json::to_string(record).expect("plain data serialises"),
            counts
        ],
    )?;
    Ok(())
}

/// Where a task lives: its story key, plan id and issue marker key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLocation {
    pub story: StoryId,
    pub task: TaskId,
    pub marker: String,
    pub issue: IssueNumber,
}

impl Store {
    pub async fn task_record(
        &self,
        repo: &RepoName,
        story: &StoryId,
        task: &RunSubject,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (repo, story, task) = (repo.clone(), story.to_owned(), Sql(task.clone()));
        self.read(move |db| {
            super::json_record(
                db,
                "SELECT record FROM tasks WHERE repo = ?1 AND story = ?2 AND task = ?3",
                params![repo.as_str(), story.as_str(), task],
            )
        })
        .await
    }

    /// Every task record of a story, by task id.
    pub async fn task_records(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<std::collections::BTreeMap<String, TaskRecord>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            super::keyed_records(
                db,
                "SELECT task, record FROM tasks WHERE repo = ?1 AND story = ?2",
                params![repo.as_str(), story.as_str()],
            )
        })
        .await
    }

    /// Tasks whose failure loop has a branch todo open: the timer looks at
    /// their lifetime bound.
    pub async fn tasks_with_open_todos(
        &self,
    ) -> Result<Vec<(RepoName, StoryId, RunSubject)>, StoreError> {
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
                    RepoName::parse(&repo).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    r.sql::<StoryId>(1)?,
                    r.sql::<RunSubject>(2)?,
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
                            r.sql::<StoryId>(0)?,
                            r.sql::<RunSubject>(1)?,
                            r.get::<String>(2)?,
                        ))
                    },
                )?;
                for (story, task, json) in rows {
                    let record: TaskRecord = serde_json::from_str(&json).map_err(corrupt)?;
                    // Only a plan task has a pull request of its own.
                    let RunSubject::Task(task) = task else {
                        continue;
                    };
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
            task: task.clone(),
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
                let hidden = taskgate_core::hidden_marker(&key);
                if let Some(Marker::Task { story, task }) = Marker::find_in(&hidden) {
                    return Ok(Some(TaskLocation {
                        story,
                        task,
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
