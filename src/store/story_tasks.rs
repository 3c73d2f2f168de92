//! A story's tasks as the read-only pages count them (`/api/stories`, the
//! dashboard), read without decoding each task record.
//!
//! Owns: [`StoryTasks`] and its three statements on `tasks`. A 10,000-task
//! plan's records were 10,000 JSON decodes on every `GET` (issue 32), while
//! the pages need of each task only its state, and of the story the sums
//! `/metrics` shows: the database reads the state out of the stored JSON,
//! and the sums are the task rows' `counts` columns added up (each row's
//! share of `task_counts`, kept by `store::task_counts` as records are
//! written).
//! Must not: write, or decide a task's state (the record holds what the
//! core decided; this reads it).

use std::collections::BTreeMap;

use rusqlite::params;

use super::db::{Db, Dialect};
use super::{Store, StoreError, TaskCounts};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::plan::TaskState;
use taskgate_core::task::TaskRecord;

/// What the pages count of one story's task records.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StoryTasks {
    /// Each task's recorded state, by task key (milestones as
    /// `milestone:<id>`); a task with no state recorded is left out.
    pub states: BTreeMap<String, TaskState>,
    /// The story's share of [`TaskCounts`], as `(metric, label) → value`
    /// rows ([`StoryTasks::counts`] reads them).
    pub count_rows: BTreeMap<(String, String), i64>,
    /// Tasks with a branch todo open.
    pub todos_open: usize,
}

impl StoryTasks {
    /// The counts of these tasks (of several stories', once their rows
    /// are added up with [`StoryTasks::add_rows`]).
    pub fn counts(rows: &BTreeMap<(String, String), i64>) -> TaskCounts {
        TaskCounts::from_rows(rows.iter().map(|((m, l), v)| (m.clone(), l.clone(), *v)))
    }

    /// The same, from the decoded records: what [`Store::story_tasks`]
    /// reads without decoding them (its tests compare the two), and what a
    /// page's tests give the view.
    pub fn of_records(records: &BTreeMap<String, TaskRecord>) -> StoryTasks {
        let mut out = StoryTasks::default();
        for (task, record) in records {
            if let Some(state) = record.state {
                out.states.insert(task.clone(), state);
            }
            for (key, value) in super::task_counts::counts_of(record) {
                *out.count_rows.entry(key).or_default() += value;
            }
            out.todos_open += usize::from(record.failure.open.is_some());
        }
        out.count_rows.retain(|_, v| *v != 0);
        out
    }

    /// Adds this story's count rows to `sum`.
    pub fn add_rows(&self, sum: &mut BTreeMap<(String, String), i64>) {
        for (key, value) in &self.count_rows {
            *sum.entry(key.clone()).or_default() += value;
        }
    }
}

fn states(db: &Db, key: [&str; 2]) -> Result<BTreeMap<String, TaskState>, StoreError> {
    // `state` is a kebab-case name, or JSON null before any work: both
    // dialects give SQL NULL for a JSON null read as text.
    let sql = match db.dialect() {
        Dialect::Sqlite => {
            "SELECT task, json_extract(record, '$.state') FROM tasks WHERE repo = ?1 AND story = ?2"
        }
        Dialect::Postgres => {
            "SELECT task, record::jsonb ->> 'state' FROM tasks WHERE repo = ?1 AND story = ?2"
        }
    };
    let rows = db.query_map(sql, params![key[0], key[1]], |r| {
        Ok((r.get::<String>(0)?, r.get::<Option<String>>(1)?))
    })?;
    let mut states = BTreeMap::new();
    for (task, name) in rows {
        let Some(name) = name else { continue };
        let state = TaskState::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| StoreError::Corrupt(format!("task {task}: unknown state `{name}`")))?;
        states.insert(task, state);
    }
    Ok(states)
}

fn count_rows(db: &Db, key: [&str; 2]) -> Result<BTreeMap<(String, String), i64>, StoreError> {
    // Each `counts` is a JSON array of `[metric, label, value]`.
    let sql = match db.dialect() {
        Dialect::Sqlite => {
            "SELECT json_extract(e.value, '$[0]'), json_extract(e.value, '$[1]'),
                    SUM(json_extract(e.value, '$[2]'))
             FROM tasks, json_each(tasks.counts) AS e
             WHERE tasks.repo = ?1 AND tasks.story = ?2 GROUP BY 1, 2"
        }
        Dialect::Postgres => {
            "SELECT e ->> 0, e ->> 1, SUM((e ->> 2)::BIGINT)::BIGINT
             FROM tasks, jsonb_array_elements(tasks.counts::jsonb) AS e
             WHERE tasks.repo = ?1 AND tasks.story = ?2 GROUP BY 1, 2"
        }
    };
    let rows = db.query_map(sql, params![key[0], key[1]], |r| {
        Ok(((r.get::<String>(0)?, r.get::<String>(1)?), r.get::<i64>(2)?))
    })?;
    Ok(rows.into_iter().filter(|(_, v)| *v != 0).collect())
}

fn todos_open(db: &Db, key: [&str; 2]) -> Result<usize, StoreError> {
    // As `Store::tasks_with_open_todos` finds them: `failure.open` there
    // and not JSON null.
    let sql = match db.dialect() {
        Dialect::Sqlite => {
            "SELECT COUNT(*) FROM tasks WHERE repo = ?1 AND story = ?2
             AND json_extract(record, '$.failure.open') IS NOT NULL"
        }
        Dialect::Postgres => {
            "SELECT COUNT(*) FROM tasks WHERE repo = ?1 AND story = ?2
             AND jsonb_typeof(record::jsonb -> 'failure' -> 'open') <> 'null'"
        }
    };
    let n = db.query_opt(sql, params![key[0], key[1]], |r| r.get::<i64>(0))?;
    Ok(n.unwrap_or(0).max(0) as usize)
}

impl Store {
    /// A story's task states and counts, in one read.
    pub async fn story_tasks(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<StoryTasks, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            let key = [repo.as_str(), story.as_str()];
            Ok(StoryTasks {
                states: states(db, key)?,
                count_rows: count_rows(db, key)?,
                todos_open: todos_open(db, key)?,
            })
        })
        .await
    }

    /// Each task's recorded state, by task key (a task with none left out).
    pub async fn task_states(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<BTreeMap<String, TaskState>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| states(db, [repo.as_str(), story.as_str()]))
            .await
    }

    /// The records of a story's tasks named in `tasks` (task keys), by key:
    /// the few a page lists in full.
    pub async fn task_records_of(
        &self,
        repo: &RepoName,
        story: &StoryId,
        tasks: Vec<String>,
    ) -> Result<BTreeMap<String, TaskRecord>, StoreError> {
        if tasks.is_empty() {
            return Ok(BTreeMap::new());
        }
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            // One placeholder a task: the list is a page's (300 or so).
            let marks: Vec<String> = (0..tasks.len()).map(|i| format!("?{}", i + 3)).collect();
            let sql = format!(
                "SELECT task, record FROM tasks WHERE repo = ?1 AND story = ?2 AND task IN ({})",
                marks.join(", ")
            );
            let (repo, story) = (repo.as_str(), story.as_str());
            let mut values: Vec<&dyn rusqlite::ToSql> = vec![&repo, &story];
            values.extend(tasks.iter().map(|t| t as &dyn rusqlite::ToSql));
            super::keyed_records(db, &sql, &values)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use crate::store::IssueLink;
    use taskgate_core::classify::FailureKind;
    use taskgate_core::failure::{Bound, Escalation, FixTotals, LoopState, LoopTotals, OpenTodo};
    use taskgate_core::ids::{IssueId, IssueNumber};
    use taskgate_core::sync::IssueRecord;
    use taskgate_core::task::RunSubject;

    /// The `n`th record: every state in turn (and none), todos open on
    /// some, fixes, escalations and overrides on others.
    fn record(n: usize) -> TaskRecord {
        let states = TaskState::ALL.len();
        let n32 = n as u32;
        TaskRecord {
            state: (n % (states + 1) < states).then(|| TaskState::ALL[n % (states + 1)]),
            override_count: n32 % 3,
            failure: LoopState {
                open: (n % 4 == 1).then(|| OpenTodo {
                    marker: format!("todo {n}"),
                    depth: 1,
                    failed_runs: 1,
                    kind: FailureKind::TestFailure,
                    role: "coder".into(),
                    opened_at: 0,
                    agent: "claude".into(),
                }),
                escalation: (n % 5 == 2).then_some(Escalation {
                    reason: Bound::Attempts,
                    at: 0,
                    round: 1,
                    passed_since: false,
                }),
                totals: LoopTotals {
                    opened: BTreeMap::from([(format!("lint_failure/r{}", n % 2), n as u64)]),
                    fixed: n as u64 / 2,
                    fixed_seconds: 30 * n as u64,
                    fixes: BTreeMap::from([(
                        format!("test_failure/agent{}", n % 3),
                        FixTotals {
                            opened: 1,
                            fixed_with_human: n as u64 % 2,
                            attempts_to_green: 2,
                            seconds_to_green: 7 * n as u64,
                            ..FixTotals::default()
                        },
                    )]),
                },
                fixed_with_human: n32 % 2,
                fixed_without_human: n32 % 3,
                ..LoopState::default()
            },
            ..TaskRecord::default()
        }
    }

    fn issue(number: u64, labels: &[&str]) -> IssueRecord {
        IssueRecord {
            number: IssueNumber::new(number),
            id: IssueId::new(number),
            title: format!("issue {number}"),
            body: "a body the links do not read".into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            open: true,
            parent: None,
            blocked_by: Default::default(),
        }
    }

    async fn put(store: &Store, story: &str, task: RunSubject, record: TaskRecord) {
        let story = StoryId::new(story);
        store
            .write(move |db| {
                let repo = RepoName::parse("o/r").unwrap();
                super::super::tasks::put_task(db, &repo, &story, &task, &record)
            })
            .await
            .unwrap();
    }

    on_both_backends! {
        async fn the_summary_equals_decoding_every_record(store: Store) {
            let (repo, story) = (RepoName::parse("o/r").unwrap(), StoryId::new("file:a"));
            for n in 0..60 {
                put(&store, "file:a", RunSubject::parse(&format!("t{n}")).unwrap(), record(n)).await;
            }
            let milestone = RunSubject::parse("@integration/backtest").unwrap();
            put(&store, "file:a", milestone, record(3)).await;
            // Moved on: its old counts leave the sums.
            put(&store, "file:a", RunSubject::parse("t7").unwrap(), record(8)).await;
            // Another story's tasks, one of them named alike, are not counted.
            put(&store, "file:ab", RunSubject::parse("t1").unwrap(), record(1)).await;

            let records = store.task_records(&repo, &story).await.unwrap();
            let expected = StoryTasks::of_records(&records);
            assert!(expected.states.len() < records.len(), "some records have no state");
            assert_eq!(expected.states.values().collect::<std::collections::HashSet<_>>().len(), TaskState::ALL.len());
            assert!(expected.todos_open > 0);
            let read = store.story_tasks(&repo, &story).await.unwrap();
            assert_eq!(read, expected);
            assert_eq!(StoryTasks::counts(&read.count_rows), StoryTasks::counts(&expected.count_rows));
            assert_eq!(store.task_states(&repo, &story).await.unwrap(), expected.states);

            let listed = vec!["t3".to_owned(), "@integration/backtest".to_owned(), "gone".to_owned()];
            let some = store.task_records_of(&repo, &story, listed).await.unwrap();
            assert_eq!(
                some,
                BTreeMap::from([
                    ("t3".to_owned(), records["t3"].clone()),
                    ("@integration/backtest".to_owned(), records["@integration/backtest"].clone()),
                ])
            );
        }

        async fn the_issue_links_are_the_story_issues_without_their_bodies(store: Store) {
            let repo = RepoName::parse("o/r").unwrap();
            let mine = taskgate_core::story::Marker::Story { story: StoryId::new("file:a") }.key();
            let other = taskgate_core::story::Marker::Story { story: StoryId::new("file:ab") }.key();
            let markers = [mine.clone(), format!("{mine} task=t1"), other.clone(), format!("{other} task=t1")];
            for (n, marker) in markers.into_iter().enumerate() {
                let record = issue(n as u64 + 1, &["taskgate:task", "state:ready"]);
                let repo = repo.clone();
                store
                    .write(move |db| crate::store::objects::put_record(db, &repo, &marker, &record))
                    .await
                    .unwrap();
            }
            let story = StoryId::new("file:a");
            let full = store.story_issues(&repo, &story).await.unwrap();
            let links = store.story_issue_links(&repo, &story).await.unwrap();
            let expected: BTreeMap<String, IssueLink> = full
                .into_iter()
                .map(|(k, i)| (k, IssueLink { number: i.number, labels: i.labels }))
                .collect();
            assert_eq!(links.len(), 2);
            assert_eq!(links, expected);
        }
    }
}
