//! The ship queue's sums for `/metrics`, kept up to date as ship records
//! are written, so that a scrape reads a few rows instead of decoding every
//! story's record (10,000 stories were 10,000 JSON decodes a scrape).
//!
//! Owns: the `ship_counts` table (metric, value) and the columns of
//! `story_ships` it is kept from (`landed_at_ms`, `queue_wait_ms`,
//! `proof_runs`, written with the record). Writing a record adds what it
//! counts for less what its row counted for, in the same statement group,
//! so the table always equals the sum over the records; the landings of the
//! last hour are read through the index on `landed_at_ms`. What a story
//! counts for is `core::ship::figures` (`QueueFigures::totals` over the
//! records gives the same, as the tests check). Must not: decide anything.

use std::collections::BTreeMap;

use rusqlite::params;

use super::db::Db;
use super::{Store, StoreError};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::ship::figures::{last_hour_from, QueueTotals, WAIT_BUCKETS_S};
use taskgate_core::ship::StoryRecord;

/// What one story adds to the sums: (landed at, wait in ms, proof runs).
type Counted = (Option<i64>, Option<i64>, i64);

fn counted(record: &StoryRecord) -> Counted {
    (
        record.landed_at_ms,
        record.queue_wait_ms,
        i64::from(record.proof_runs),
    )
}

/// The table's rows one story adds: a landed story counts once, its wait
/// in seconds, and in each bucket its wait is within.
fn rows_of((landed_at, wait_ms, runs): Counted) -> BTreeMap<String, i64> {
    let mut rows = BTreeMap::from([("proof_runs".to_owned(), runs)]);
    if landed_at.is_some() {
        let wait_s = wait_ms.unwrap_or(0) / 1000;
        rows.insert("landed".into(), 1);
        rows.insert("wait_sum_s".into(), wait_s);
        for bound in WAIT_BUCKETS_S {
            if wait_s as f64 <= bound {
                rows.insert(bucket(bound), 1);
            }
        }
    }
    rows
}

fn bucket(bound: f64) -> String {
    format!("wait_le_{}", bound as i64)
}

/// Writes `record`'s row of `story_ships` and moves the sums from what the
/// row counted for to what it counts for now.
pub(super) fn put(
    db: &Db,
    repo: &RepoName,
    story: &StoryId,
    record: &StoryRecord,
) -> Result<(), StoreError> {
    let old: Option<Counted> = db.query_opt(
        "SELECT landed_at_ms, queue_wait_ms, proof_runs FROM story_ships
         WHERE repo = ?1 AND story = ?2",
        params![repo.as_str(), story.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let new = counted(record);
    db.execute(
        "INSERT INTO story_ships (repo, story, record, landed_at_ms, queue_wait_ms, proof_runs)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(repo, story) DO UPDATE SET record = ?3, landed_at_ms = ?4,
             queue_wait_ms = ?5, proof_runs = ?6",
        params![
            repo.as_str(),
            story.as_str(),
            serde_json::to_string(record).expect("plain data serialises"),
            new.0,
            new.1,
            new.2
        ],
    )?;
    let mut delta = rows_of(new);
    for (metric, value) in old.map(rows_of).unwrap_or_default() {
        *delta.entry(metric).or_default() -= value;
    }
    for (metric, value) in delta.into_iter().filter(|(_, v)| *v != 0) {
        // The stored value is named by its table: a bare `value` is
        // ambiguous beside `excluded.value` to PostgreSQL.
        db.execute(
            "INSERT INTO ship_counts (metric, value) VALUES (?1, ?2)
             ON CONFLICT(metric) DO UPDATE SET value = ship_counts.value + excluded.value",
            params![metric, value],
        )?;
    }
    Ok(())
}

impl Store {
    /// The ship queue's figures for `/metrics` at `now_ms`: the kept sums
    /// (a dozen rows) and the last hour's landings through an index. No
    /// record is decoded.
    pub async fn ship_queue_totals(&self, now_ms: i64) -> Result<QueueTotals, StoreError> {
        self.read(move |db| {
            let sums: BTreeMap<String, i64> = db
                .query_map("SELECT metric, value FROM ship_counts", params![], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .into_iter()
                .collect();
            let sum = |metric: &str| sums.get(metric).copied().unwrap_or(0).max(0) as u64;
            let landed = sum("landed");
            let mut wait_buckets: Vec<(f64, u64)> = (WAIT_BUCKETS_S.iter())
                .map(|&b| (b, sum(&bucket(b))))
                .collect();
            wait_buckets.push((f64::INFINITY, landed));
            let last_hour: i64 = db.query_one(
                "SELECT COUNT(*) FROM story_ships WHERE landed_at_ms > ?1",
                params![last_hour_from(now_ms)],
                |r| r.get(0),
            )?;
            Ok(QueueTotals {
                landed,
                landed_last_hour: last_hour.max(0) as u64,
                proof_runs: sum("proof_runs"),
                wait_sum_s: sums.get("wait_sum_s").copied().unwrap_or(0),
                wait_buckets,
            })
        })
        .await
    }
}
