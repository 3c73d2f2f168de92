//! Each repository's ship train (`core::ship::Train`, issue 31): one row
//! per repository that ever queued a story, the train as JSON.
//!
//! Owns: the `ship_trains` table's statements. Must not: decide anything
//! about the train (`core::ship::on_train_event` does); it is written only
//! through [`Change::TrainUpdated`](taskgate_core::Change::TrainUpdated),
//! in the transaction that stores the effects its actions caused.

use rusqlite::params;

use super::db::Db;
use super::{Store, StoreError};
use taskgate_core::ids::RepoName;
use taskgate_core::ship::{Train, TrainStats};

/// Applies [`Change::TrainUpdated`](taskgate_core::Change::TrainUpdated).
pub(super) fn put(db: &Db, repo: &RepoName, train: &Train) -> Result<(), StoreError> {
    // The stats beside the record: `/metrics` reads them alone.
    db.execute(
        "INSERT INTO ship_trains (repo, record, stats) VALUES (?1, ?2, ?3)
         ON CONFLICT(repo) DO UPDATE SET record = ?2, stats = ?3",
        params![
            repo.as_str(),
            serde_json::to_string(train).expect("plain data serialises"),
            serde_json::to_string(&train.stats).expect("plain data serialises")
        ],
    )?;
    Ok(())
}

impl Store {
    /// The ship train of `repo`; an empty one where none was stored yet.
    pub async fn ship_train(&self, repo: &RepoName) -> Result<Train, StoreError> {
        let repo = repo.clone();
        let train: Option<Train> = self
            .read(move |db| {
                super::json_record(
                    db,
                    "SELECT record FROM ship_trains WHERE repo = ?1",
                    params![repo.as_str()],
                )
            })
            .await?;
        Ok(train.unwrap_or_default())
    }
}

impl Store {
    /// Every repository's ship train counts, for `/metrics`.
    pub async fn ship_train_stats(&self) -> Result<Vec<TrainStats>, StoreError> {
        let stats: Vec<(String, TrainStats)> = self
            .read(|db| {
                super::keyed_records(
                    db,
                    "SELECT repo, stats FROM ship_trains WHERE stats IS NOT NULL",
                    params![],
                )
            })
            .await?;
        Ok(stats.into_iter().map(|(_, s)| s).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::StoryId;
    use taskgate_core::ship::{on_train_event, Entry, Priority, TrainEvent, TrainSettings};
    use taskgate_core::Change;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    /// A train with a story in a car being built on `main`.
    fn building() -> Train {
        let mut train = Train::default();
        for event in [
            TrainEvent::MainMoved {
                head: crate::testing::sha(&"a".repeat(40)),
            },
            TrainEvent::Enqueued(Entry {
                story: StoryId::new("file:checkout"),
                head: crate::testing::sha(&"b".repeat(40)),
                priority: Priority::Normal,
                queued_at_ms: 5,
                files: ["src/pay.rs".to_string()].into(),
                conflicted: false,
            }),
        ] {
            train = on_train_event(&train, event, TrainSettings::default(), 0).0;
        }
        assert_eq!(train.cars.len(), 1, "a car formed: {train:?}");
        train
    }

    on_both_backends! {
        async fn a_repositorys_train_is_kept_whole_and_per_repository(store: Store) {
            let (a, b) = (repo("acme/a"), repo("acme/b"));
            assert_eq!(store.ship_train(&a).await.unwrap(), Train::default());
            let train = building();
            let put = |repo: &RepoName, train: Train| Change::TrainUpdated {
                repo: repo.clone(),
                train: Box::new(train),
            };
            crate::store::audit::tests::apply(&store, vec![put(&a, train.clone())]).await;
            assert_eq!(store.ship_train(&a).await.unwrap(), train);
            assert_eq!(store.ship_train(&b).await.unwrap(), Train::default(), "per repository");
            let mut later = train.clone();
            later.stats.landed = 1;
            later.cars.clear();
            crate::store::audit::tests::apply(&store, vec![put(&a, later.clone())]).await;
            assert_eq!(store.ship_train(&a).await.unwrap(), later);
            assert_eq!(store.ship_train_stats().await.unwrap(), vec![later.stats]);
        }
    }
}
