//! Counts over every task record, kept up to date as records are written,
//! so that a `/metrics` scrape reads a few rows instead of decoding every
//! task record (5,000 tasks were 5,000 JSON decodes a scrape).
//!
//! Owns: the `task_counts` table (metric, label, value) and each task row's
//! `counts` column: what that task adds to the table. Writing a record
//! adds its new counts less its old ones, in the same savepoint, so the
//! table always equals the sum over the records. What a task counts for is
//! the core's `LoopStats::add`, its state and its overrides, nothing else.

use std::collections::BTreeMap;

use rusqlite::{params, Connection};

use super::db::Db;
use super::{corrupt, Store, StoreError};
use taskgate_core::failure::{FixTotals, LoopStats};
use taskgate_core::task::TaskRecord;

/// The sums `/metrics` shows over every task.
#[derive(Debug, Default, PartialEq)]
pub struct TaskCounts {
    /// Tasks by their state (`blocked`, `testing`, …).
    pub by_state: BTreeMap<String, i64>,
    pub loop_stats: LoopStats,
    /// Approvals that overrode a failing checker.
    pub overrides: i64,
}

impl TaskCounts {
    /// The sums of `(metric, label, value)` rows as `task_counts` holds
    /// them (a row of the table, or a sum of the `counts` columns).
    pub fn from_rows(rows: impl IntoIterator<Item = (String, String, i64)>) -> TaskCounts {
        let mut counts = TaskCounts::default();
        for (metric, label, value) in rows {
            let n = value.max(0) as u64;
            let stats = &mut counts.loop_stats;
            match metric.as_str() {
                "tasks" if value != 0 => {
                    counts.by_state.insert(label, value);
                }
                "overrides" => counts.overrides = value,
                "todos_opened" if value != 0 => {
                    let (kind, role) = label.split_once('/').unwrap_or((&label, ""));
                    stats
                        .todos_opened
                        .insert((kind.to_owned(), role.to_owned()), n);
                }
                "todos_fixed" => stats.todos_fixed = n,
                "fixed_seconds" => stats.fixed_seconds_total = n,
                "fixed_without_human" => stats.fixed_without_human = n,
                "fixed_with_human" => stats.fixed_with_human = n,
                "escalated" => stats.escalated_tasks = n,
                fix if fix.starts_with("fix_") && value != 0 => {
                    let (kind, agent) = label.split_once('/').unwrap_or((&label, ""));
                    let key = (agent.to_owned(), kind.to_owned());
                    if let Some(figure) = fix_count(stats.fixes.entry(key).or_default(), fix) {
                        *figure = n;
                    }
                }
                _ => {}
            }
        }
        counts
    }
}

/// What one task adds: (metric, label) → value.
type Counts = BTreeMap<(String, String), i64>;

pub(super) fn counts_of(record: &TaskRecord) -> Counts {
    let mut stats = LoopStats::default();
    stats.add(&record.failure);
    let mut counts = Counts::new();
    let mut put = |metric: &str, label: &str, value: i64| {
        if value != 0 {
            *counts
                .entry((metric.to_owned(), label.to_owned()))
                .or_default() += value;
        }
    };
    if let Some(state) = record.state {
        put("tasks", state.name(), 1);
    }
    put("overrides", "", i64::from(record.override_count));
    for ((kind, role), n) in &stats.todos_opened {
        put("todos_opened", &format!("{kind}/{role}"), *n as i64);
    }
    put("todos_fixed", "", stats.todos_fixed as i64);
    put("fixed_seconds", "", stats.fixed_seconds_total as i64);
    put("fixed_without_human", "", stats.fixed_without_human as i64);
    put("fixed_with_human", "", stats.fixed_with_human as i64);
    put("escalated", "", stats.escalated_tasks as i64);
    for ((agent, kind), fix) in &stats.fixes {
        // A kind has no `/`: the first one ends it.
        let label = format!("{kind}/{agent}");
        for (metric, value) in fix_counts(fix) {
            put(&metric, &label, value as i64);
        }
    }
    counts
}

/// The fix-rate figures' rows, one metric each (label `kind/agent`); a
/// histogram's buckets one row each (`fix_seconds_le_300`).
fn fix_counts(f: &FixTotals) -> Vec<(String, u64)> {
    let mut rows: Vec<(String, u64)> = [
        ("fix_opened", f.opened),
        ("fix_without_human", f.fixed_without_human),
        ("fix_with_human", f.fixed_with_human),
        ("fix_escalated", f.escalated),
        ("fix_superseded", f.superseded),
        ("fix_greened", f.greened),
        ("fix_attempts", f.attempts_to_green),
        ("fix_seconds", f.seconds_to_green),
        ("fix_waited", f.waited_for_person),
        ("fix_waiting", f.seconds_waiting_for_person),
    ]
    .into_iter()
    .map(|(m, v)| (m.to_owned(), v))
    .collect();
    for (prefix, buckets) in [
        ("fix_seconds_le_", &f.seconds_to_green_buckets),
        ("fix_waiting_le_", &f.waiting_buckets),
    ] {
        rows.extend(
            buckets
                .0
                .iter()
                .map(|(le, n)| (format!("{prefix}{le}"), *n)),
        );
    }
    rows
}

/// The figure `metric` names in `f`, if it is a fix-rate row.
fn fix_count<'f>(f: &'f mut FixTotals, metric: &str) -> Option<&'f mut u64> {
    let bucket = |prefix: &str| metric.strip_prefix(prefix)?.parse::<u64>().ok();
    if let Some(le) = bucket("fix_seconds_le_") {
        return Some(f.seconds_to_green_buckets.0.entry(le).or_default());
    }
    if let Some(le) = bucket("fix_waiting_le_") {
        return Some(f.waiting_buckets.0.entry(le).or_default());
    }
    Some(match metric {
        "fix_opened" => &mut f.opened,
        "fix_without_human" => &mut f.fixed_without_human,
        "fix_with_human" => &mut f.fixed_with_human,
        "fix_escalated" => &mut f.escalated,
        "fix_superseded" => &mut f.superseded,
        "fix_greened" => &mut f.greened,
        "fix_attempts" => &mut f.attempts_to_green,
        "fix_seconds" => &mut f.seconds_to_green,
        "fix_waited" => &mut f.waited_for_person,
        "fix_waiting" => &mut f.seconds_waiting_for_person,
        _ => return None,
    })
}

fn encode(counts: &Counts) -> String {
    let rows: Vec<(&str, &str, i64)> = counts
        .iter()
        .map(|((metric, label), value)| (metric.as_str(), label.as_str(), *value))
        .collect();
    serde_json::to_string(&rows).expect("plain data serialises")
}

fn decode(json: &str) -> Result<Counts, StoreError> {
    let rows: Vec<(String, String, i64)> = serde_json::from_str(json).map_err(corrupt)?;
    Ok(rows.into_iter().map(|(m, l, v)| ((m, l), v)).collect())
}

/// Adds `new` less `old` to the table.
fn apply(db: &Db, old: &Counts, new: &Counts) -> Result<(), StoreError> {
    let mut delta = new.clone();
    for (key, value) in old {
        *delta.entry(key.clone()).or_default() -= value;
    }
    for ((metric, label), value) in delta.into_iter().filter(|(_, v)| *v != 0) {
        // The stored value is named by its table: a bare `value` is
        // ambiguous beside `excluded.value` to PostgreSQL.
        db.execute(
            "INSERT INTO task_counts (metric, label, value) VALUES (?1, ?2, ?3)
             ON CONFLICT(metric, label) DO UPDATE SET value = task_counts.value + excluded.value",
            params![metric, label, value],
        )?;
    }
    Ok(())
}

/// Moves the table from the task's stored counts to `record`'s; returns
/// the counts to store in its row.
pub(super) fn on_write(db: &Db, key: [&str; 3], record: &TaskRecord) -> Result<String, StoreError> {
    let old: Option<Option<String>> = db.query_opt(
        "SELECT counts FROM tasks WHERE repo = ?1 AND story = ?2 AND task = ?3",
        params![key[0], key[1], key[2]],
        |r| r.get(0),
    )?;
    let old = match old.flatten() {
        Some(json) => decode(&json)?,
        None => Counts::new(),
    };
    let new = counts_of(record);
    apply(db, &old, &new)?;
    Ok(encode(&new))
}

/// Counts the records written before the table existed, once.
///
/// SQLite only, and so on SQLite's connection: only a SQLite file can hold
/// records from before the table (a PostgreSQL database is created with
/// it), and the rows are found by SQLite's `rowid`.
pub(super) fn backfill(conn: &Connection) -> Result<(), StoreError> {
    let tx = conn.unchecked_transaction()?;
    let rows: Vec<(i64, String)> = {
        let mut stmt = tx.prepare("SELECT rowid, record FROM tasks WHERE counts IS NULL")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    for (rowid, json) in rows {
        let record: TaskRecord = serde_json::from_str(&json).map_err(corrupt)?;
        let counts = counts_of(&record);
        apply(&Db::Sqlite(&tx), &Counts::new(), &counts)?;
        tx.execute(
            "UPDATE tasks SET counts = ?2 WHERE rowid = ?1",
            params![rowid, encode(&counts)],
        )?;
    }
    tx.commit()?;
    Ok(())
}

impl Store {
    /// The counts over every task, for `/metrics`: a few rows, whatever the
    /// number of tasks.
    pub async fn task_counts(&self) -> Result<TaskCounts, StoreError> {
        self.read(|db| {
            let rows = db.query_map(
                "SELECT metric, label, value FROM task_counts",
                params![],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
            )?;
            Ok(TaskCounts::from_rows(rows))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::failure::{LoopState, LoopTotals};
    use taskgate_core::ids::RepoName;
    use taskgate_core::plan::TaskState;

    fn record(state: TaskState, todos: u64, overrides: u32) -> TaskRecord {
        TaskRecord {
            state: Some(state),
            override_count: overrides,
            failure: LoopState {
                totals: LoopTotals {
                    opened: BTreeMap::from([("test_failure/coder".to_owned(), todos)]),
                    fixed: todos,
                    fixed_seconds: 60 * todos,
                    fixes: BTreeMap::from([(
                        "test_failure/label:fix/me".to_owned(),
                        FixTotals {
                            opened: todos,
                            fixed_without_human: todos,
                            attempts_to_green: 2 * todos,
                            seconds_to_green: 60 * todos,
                            ..FixTotals::default()
                        },
                    )]),
                },
                fixed_without_human: todos as u32,
                ..LoopState::default()
            },
            ..TaskRecord::default()
        }
    }

    async fn put(store: &Store, task: String, record: TaskRecord) {
        store
            .write(move |db| {
                let repo = RepoName::parse("o/r").unwrap();
                super::super::runs::put_task(
                    db,
                    &repo,
                    &taskgate_core::ids::StoryId::new("s"),
                    &taskgate_core::task::RunSubject::parse(&task).unwrap(),
                    &record,
                )
            })
            .await
            .unwrap();
    }

    on_both_backends! {
        async fn a_scrape_reads_the_counts_and_decodes_no_task_record(store: Store) {
            for n in 0..5_000 {
                let state = if n % 10 == 0 {
                    TaskState::Blocked
                } else {
                    TaskState::Testing
                };
                put(
                    &store,
                    format!("t{n}"),
                    record(state, 1, (n % 100 == 0) as u32),
                )
                .await;
            }
            // One task moves on: its old counts leave, its new ones arrive.
            put(&store, "t0".into(), record(TaskState::Completed, 3, 0)).await;
            // No record could be decoded now: the scrape does not try.
            store
                .write(|db| db.execute("UPDATE tasks SET record = 'not json'", params![]))
                .await
                .unwrap();

            let started = std::time::Instant::now();
            let counts = store.task_counts().await.unwrap();
            let took = started.elapsed();
            assert_eq!(
                counts.by_state,
                BTreeMap::from([
                    ("blocked".to_owned(), 499),
                    ("completed".to_owned(), 1),
                    ("testing".to_owned(), 4_500),
                ])
            );
            assert_eq!(counts.overrides, 49);
            let stats = &counts.loop_stats;
            let opened = (String::from("test_failure"), String::from("coder"));
            assert_eq!(stats.todos_opened, BTreeMap::from([(opened, 5_002)]));
            assert_eq!(
                (stats.todos_fixed, stats.fixed_seconds_total),
                (5_002, 300_120)
            );
            assert_eq!(stats.fixed_without_human, 5_002);
            let fix = &stats.fixes[&("label:fix/me".to_owned(), "test_failure".to_owned())];
            assert_eq!(
                (fix.opened, fix.fixed_without_human, fix.attempts_to_green, fix.seconds_to_green),
                (5_002, 5_002, 10_004, 300_120)
            );
            assert_eq!(stats.fixes.len(), 1, "{:?}", stats.fixes);
            eprintln!("a scrape's task counts over 5,000 tasks: {took:?}");
        }
    }

    // SQLite only: `backfill` on open, for files older than the counts table.
    #[tokio::test]
    async fn records_written_before_the_counts_existed_are_counted_once_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = Store::open(&path).unwrap();
        put(&store, "a".into(), record(TaskState::Blocked, 2, 1)).await;
        put(&store, "b".into(), record(TaskState::Review, 0, 0)).await;
        let counted = store.task_counts().await.unwrap();
        // As an older taskgate left them: records, no counts.
        store
            .write(|db| db.batch("UPDATE tasks SET counts = NULL; DELETE FROM task_counts;"))
            .await
            .unwrap();
        drop(store);
        let reopened = Store::open(&path).unwrap();
        assert_eq!(reopened.task_counts().await.unwrap(), counted);
        drop(reopened);
        assert_eq!(
            Store::open(&path).unwrap().task_counts().await.unwrap(),
            counted
        );
    }
}
