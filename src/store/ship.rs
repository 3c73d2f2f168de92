//! Ship-gate records per story and the deploy/validation runs started for
//! them.

use rusqlite::params;

use super::db::Db;

use super::{Store, StoreError};
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::ship::{StoryRecord, StoryRunRef, StoryWorkflow};
use taskgate_core::story::Marker;
use taskgate_core::sync::StoryPlan;

/// A story as the API lists it: where it lives and its story issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryRow {
    pub repo: RepoName,
    pub story: StoryId,
    pub issue: IssueNumber,
}

fn workflow_name(w: StoryWorkflow) -> &'static str {
    match w {
        StoryWorkflow::Deploy => "deploy",
        StoryWorkflow::Validation => "validation",
    }
}

impl Store {
    pub async fn story_record(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<Option<StoryRecord>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            super::json_record(
                db,
                "SELECT record FROM story_ships WHERE repo = ?1 AND story = ?2",
                params![repo.as_str(), story.as_str()],
            )
        })
        .await
    }

    /// Every ship record of a repository, by story key.
    pub async fn story_records(
        &self,
        repo: &RepoName,
    ) -> Result<Vec<(StoryId, StoryRecord)>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            let records: Vec<(String, StoryRecord)> = super::keyed_records(
                db,
                "SELECT story, record FROM story_ships WHERE repo = ?1",
                params![repo.as_str()],
            )?;
            Ok(records
                .into_iter()
                .map(|(story, record)| (StoryId::new(story), record))
                .collect())
        })
        .await
    }

    /// Every repository's story ship records, in one read: what the ship
    /// queue's figures on `/metrics` and the dashboard count.
    pub async fn all_story_records(&self) -> Result<Vec<StoryRecord>, StoreError> {
        self.read(move |db| {
            let records: Vec<(String, StoryRecord)> =
                super::keyed_records(db, "SELECT story, record FROM story_ships", params![])?;
            Ok(records.into_iter().map(|(_, record)| record).collect())
        })
        .await
    }

    /// Repositories whose ship queue waits with nothing proving or
    /// landing, each with one of its queued stories: a freeze (or a freeze
    /// window) held it, and the queue is looked at again periodically.
    pub async fn ship_queues_waiting(&self) -> Result<Vec<(RepoName, StoryId)>, StoreError> {
        let all: Vec<(String, String)> = self
            .read(|db| {
                db.query_map(
                    "SELECT repo, story, record FROM story_ships ORDER BY repo, story",
                    params![],
                    |r| {
                        Ok((
                            format!("{}\n{}", r.get::<String>(0)?, r.get::<String>(1)?),
                            r.get::<String>(2)?,
                        ))
                    },
                )
            })
            .await?;
        let mut by_repo: std::collections::BTreeMap<String, Vec<(StoryId, StoryRecord)>> =
            std::collections::BTreeMap::new();
        for (key, json) in all {
            let (repo, story) = key.split_once('\n').unwrap_or_default();
            let record: StoryRecord = serde_json::from_str(&json).map_err(super::corrupt)?;
            by_repo
                .entry(repo.to_owned())
                .or_default()
                .push((StoryId::new(story), record));
        }
        Ok(by_repo
            .into_iter()
            .filter_map(|(repo, stories)| {
                let (story, _) = taskgate_core::ship::next_in_queue(&stories, false)?;
                Some((RepoName::parse(&repo).ok()?, story.clone()))
            })
            .collect())
    }

    /// A stored story of `repo` (its oldest), for what every story of a
    /// repository carries: its installation and the repository's config.
    pub async fn a_story_of(&self, repo: &RepoName) -> Result<Option<StoryPlan>, StoreError> {
        let name = repo.as_str().to_owned();
        let stories = self.read(move |db| story_rows(db, Some(&name))).await?;
        let Some(row) = stories.into_iter().next() else {
            return Ok(None);
        };
        self.story(repo, &row.story).await
    }

    /// Every planned story whose issue exists, oldest issue first.
    pub async fn stories(&self) -> Result<Vec<StoryRow>, StoreError> {
        self.read(|db| story_rows(db, None)).await
    }

    /// The story whose issue is `number` in `repo`, if taskgate made it.
    pub async fn story_by_issue(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<StoryId>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            for marker in super::issue_markers(db, &repo, number)? {
                if let Some(Marker::Story { story }) = Marker::from_key(&marker) {
                    return Ok(Some(story));
                }
            }
            Ok(None)
        })
        .await
    }

    /// Records that GitHub started workflow run `run_id` for a story.
    pub async fn put_story_run(
        &self,
        repo: &RepoName,
        run_id: u64,
        run: &StoryRunRef,
    ) -> Result<(), StoreError> {
        let (repo, run) = (repo.clone(), run.clone());
        self.write_one(move |db| {
            db.execute(
                "INSERT INTO story_runs (repo, run_id, story, workflow) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(repo, run_id) DO UPDATE SET story = ?3, workflow = ?4",
                params![
                    repo.as_str(),
                    run_id as i64,
                    run.story.as_str(),
                    workflow_name(run.workflow)
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// The story and workflow a run was dispatched for, if it was.
    pub async fn story_run(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> Result<Option<StoryRunRef>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            let found: Option<(StoryId, String)> = db.query_opt(
                "SELECT story, workflow FROM story_runs WHERE repo = ?1 AND run_id = ?2",
                params![repo.as_str(), run_id as i64],
                |r| Ok((r.sql(0)?, r.get(1)?)),
            )?;
            Ok(found.map(|(story, workflow)| StoryRunRef {
                story,
                workflow: if workflow == "deploy" {
                    StoryWorkflow::Deploy
                } else {
                    StoryWorkflow::Validation
                },
            }))
        })
        .await
    }
}

/// The planned stories whose issue exists, of `repo` or of every
/// repository, oldest issue first.
fn story_rows(db: &Db, repo: Option<&str>) -> Result<Vec<StoryRow>, StoreError> {
    // Two statements rather than `?1 IS NULL`, whose type PostgreSQL
    // cannot tell.
    let sql = format!(
        "SELECT s.repo, s.story, i.marker, i.number FROM stories s
         JOIN issues i ON i.repo = s.repo
         WHERE i.marker NOT LIKE '% %' AND i.marker LIKE 'story=%' {}
         ORDER BY i.number",
        if repo.is_some() {
            "AND s.repo = ?1"
        } else {
            ""
        }
    );
    let one;
    let params: &[&dyn rusqlite::ToSql] = match &repo {
        Some(repo) => {
            one = [repo as &dyn rusqlite::ToSql];
            &one
        }
        None => &[],
    };
    let rows = db.query_map(&sql, params, |r| {
        Ok((
            r.get::<String>(0)?,
            r.sql::<StoryId>(1)?,
            r.get::<String>(2)?,
            r.sql::<IssueNumber>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for (repo, story, marker, number) in rows {
        let own = Marker::Story {
            story: story.clone(),
        }
        .key();
        if marker == own {
            out.push(StoryRow {
                repo: RepoName::parse(&repo).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                story,
                issue: number,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;

    on_both_backends! {
        async fn a_story_run_and_a_ship_record_are_kept_per_repository(store: Store) {
            let (repo, other) = (RepoName::parse("o/r").unwrap(), RepoName::parse("o/x").unwrap());
            let run = StoryRunRef {
                story: "file:s".into(),
                workflow: StoryWorkflow::Validation,
            };
            store.put_story_run(&repo, 9, &run).await.unwrap();
            let seen = store.story_run(&repo, 9).await.unwrap().unwrap();
            assert_eq!((seen.story.as_str(), seen.workflow), ("file:s", StoryWorkflow::Validation));
            assert!(store.story_run(&other, 9).await.unwrap().is_none());
            assert!(store.story_record(&repo, &StoryId::new("file:s")).await.unwrap().is_none());
            assert!(store.story_records(&repo).await.unwrap().is_empty());
        }
    }

    on_both_backends! {
        async fn a_record_stored_before_the_pin_reads_without_it(store: Store) {
            // A queued story as an older taskgate stored it: no `pinned`.
            let old = r#"{"state":"queued","pr":9,"head":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","shipped_by":null,"deploy_run":null,"validation_run":null,"queued_at_ms":10}"#;
            store
                .write_one(move |db| {
                    db.execute(
                        "INSERT INTO story_ships (repo, story, record) VALUES (?1, ?2, ?3)",
                        params!["o/r", "file:s", old],
                    )?;
                    Ok(())
                })
                .await
                .unwrap();
            let repo = RepoName::parse("o/r").unwrap();
            let read = store.story_record(&repo, &StoryId::new("file:s")).await.unwrap().unwrap();
            assert_eq!(read.pinned, None);
            let head = crate::testing::sha(&"b".repeat(40));
            assert_eq!(taskgate_core::ship::pinned_head(&read), Some(&head), "the head as last seen");
        }
    }

    fn record(state: taskgate_core::ship::ShipState, at: i64) -> StoryRecord {
        StoryRecord {
            state,
            queued_at_ms: Some(at),
            ..StoryRecord::default()
        }
    }

    on_both_backends! {
        async fn a_queue_waits_when_stories_are_queued_and_none_proves(store: Store) {
            use taskgate_core::Change;
            use taskgate_core::ship::ShipState::{Proving, Queued, Shippable};
            let (a, b) = (RepoName::parse("o/a").unwrap(), RepoName::parse("o/b").unwrap());
            let put = |repo: &RepoName, story: &StoryId, r: StoryRecord| Change::ShipUpdated {
                repo: repo.clone(),
                story: story.clone(),
                record: Box::new(r),
            };
            let changes = vec![
                put(&a, &StoryId::new("file:late"), record(Queued, 20)),
                put(&a, &StoryId::new("file:early"), record(Queued, 10)),
                put(&a, &StoryId::new("file:done"), record(Shippable, 5)),
                put(&b, &StoryId::new("file:waits"), record(Queued, 1)),
                put(&b, &StoryId::new("file:proves"), record(Proving, 2)),
            ];
            crate::store::audit::tests::apply(&store, changes).await;
            let waiting = store.ship_queues_waiting().await.unwrap();
            assert_eq!(waiting, vec![(a, StoryId::new("file:early"))], "b's queue is busy");
        }
    }

    on_both_backends! {
        async fn the_queue_totals_kept_beside_the_records_equal_the_records_figures(store: Store) {
            use taskgate_core::ship::figures::QueueFigures;
            use taskgate_core::Change;
            const HOUR: i64 = 3_600_000;
            let now = 100 * HOUR;
            let landed = |at: i64, wait_s: i64, runs: u32| StoryRecord {
                landed_at_ms: Some(at),
                queue_wait_ms: Some(wait_s * 1000 + 999),
                proof_runs: runs,
                ..StoryRecord::default()
            };
            let records = [
                landed(now - 10 * 60_000, 600, 1),
                landed(now - HOUR, 59, 2),
                landed(now - 3 * HOUR, 3000, 1),
                landed(now - 30 * HOUR, 90_000, 3),
                landed(now + 500, 60, 1),
                StoryRecord { proof_runs: 4, ..StoryRecord::default() },
            ];
            let repo = RepoName::parse("o/r").unwrap();
            let changes = (records.iter().enumerate())
                .map(|(i, r)| Change::ShipUpdated {
                    repo: repo.clone(),
                    story: StoryId::new(format!("file:s{i}")),
                    record: Box::new(r.clone()),
                })
                .collect();
            crate::store::audit::tests::apply(&store, changes).await;
            let expected = QueueFigures::of(&records, now).totals();
            assert_eq!(store.ship_queue_totals(now).await.unwrap(), expected);
            assert_eq!((expected.landed, expected.landed_last_hour, expected.proof_runs), (5, 2, 12));
            // A record written again moves its sums with it.
            let again = vec![Change::ShipUpdated {
                repo: repo.clone(),
                story: StoryId::new("file:s5"),
                record: Box::new(landed(now - 60_000, 10, 5)),
            }];
            crate::store::audit::tests::apply(&store, again).await;
            let totals = store.ship_queue_totals(now).await.unwrap();
            assert_eq!((totals.landed, totals.landed_last_hour, totals.proof_runs), (6, 3, 13));
        }
    }

    on_both_backends! {
        async fn a_scrape_over_ten_thousand_stories_decodes_no_ship_record(store: Store) {
            use taskgate_core::ship::figures::QueueFigures;
            use taskgate_core::Change;
            let now = 1_000 * 3_600_000;
            let repo = RepoName::parse("o/r").unwrap();
            let all: Vec<StoryRecord> = (0..10_000i64)
                .map(|n| StoryRecord {
                    landed_at_ms: (n % 2 == 0).then_some(now - n * 60_000),
                    queue_wait_ms: (n % 2 == 0).then_some(n * 1_000),
                    proof_runs: 1 + (n % 3) as u32,
                    ..record(taskgate_core::ship::ShipState::Queued, n)
                })
                .collect();
            for (chunk, records) in all.chunks(1_000).enumerate() {
                let changes = (records.iter().enumerate())
                    .map(|(i, r)| Change::ShipUpdated {
                        repo: repo.clone(),
                        story: StoryId::new(format!("file:s{chunk}-{i}")),
                        record: Box::new(r.clone()),
                    })
                    .collect();
                crate::store::audit::tests::apply(&store, changes).await;
            }
            // What a scrape cost before: every record decoded.
            let started = std::time::Instant::now();
            let decoded = store.all_story_records().await.unwrap();
            let before = QueueFigures::of(&decoded, now).totals();
            let decoding = started.elapsed();
            // No record could be decoded now: the scrape does not try.
            store
                .write(|db| db.execute("UPDATE story_ships SET record = 'not json'", params![]))
                .await
                .unwrap();
            // The first read after the rewrite of every row pays for it;
            // a scrape's is the second.
            store.ship_queue_totals(now).await.unwrap();
            let started = std::time::Instant::now();
            let totals = store.ship_queue_totals(now).await.unwrap();
            let summing = started.elapsed();
            assert_eq!(totals, before);
            assert_eq!((totals.landed, totals.landed_last_hour), (5_000, 30));
            eprintln!("10,000 stories: decoding every record {decoding:?}, the kept sums {summing:?}");
        }
    }
}
