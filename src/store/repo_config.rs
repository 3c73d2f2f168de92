//! Each repository's current config: the text of `.github/taskgate.yml`
//! on its default branch, as of the last push (or plan sync) that read a
//! config which loads.
//!
//! Owns: the `repo_configs` table's statements, and the rule that a
//! story's plan is read back with this config in place of the copy saved
//! with it (`Store::story`), so every decision after a config push, for
//! every story, follows the new config. The copy saved with a plan is the
//! fallback only for a repository with no record (a database from before
//! this table). A repository's first read (`app::sync`'s lazy read, for a
//! comment in a repository nothing recorded) is stored outside a
//! delivery's decision, with its effects, by [`Store::record_first_config`].
//! Must not: parse or judge the config (`core::config::push` decides
//! which text is recorded; a config with problems never is).

use rusqlite::params;

use super::db::Db;
use super::{Store, StoreError};
use taskgate_core::ids::{CommitSha, InstallationId, RepoName};
use taskgate_core::Effect;

/// The config a repository's decisions follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoConfigRecord {
    /// The file's text; `None` when the default branch has none (the
    /// defaults).
    pub config: Option<String>,
    /// The commit it was read at.
    pub sha: CommitSha,
}

/// Applies [`Change::RepoConfigChanged`](taskgate_core::Change::RepoConfigChanged).
pub(super) fn put(
    db: &Db,
    repo: &RepoName,
    sha: &CommitSha,
    config: Option<&str>,
    now_ms: i64,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO repo_configs (repo, config, sha, updated_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(repo) DO UPDATE SET config = ?2, sha = ?3, updated_ms = ?4",
        params![repo.as_str(), config, sha.as_str(), now_ms],
    )?;
    Ok(())
}

/// The column a story's config is read from: the repository's record
/// when there is one, else the copy saved with the plan. `s` is the
/// `stories` row, `c` the `repo_configs` row left-joined on the repo.
pub(super) const STORY_CONFIG: &str = "CASE WHEN c.repo IS NULL THEN s.config ELSE c.config END";

impl Store {
    /// The config saved with `repo`'s most recently planned story (`None`:
    /// no story; `Some(None)`: planned without a config file).
    pub async fn latest_story_config(
        &self,
        repo: &RepoName,
    ) -> Result<Option<Option<String>>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            db.query_opt(
                "SELECT config FROM stories WHERE repo = ?1 ORDER BY updated_ms DESC, story LIMIT 1",
                params![repo.as_str()],
                |r| r.get::<Option<String>>(0),
            )
        })
        .await
    }

    /// Records the first read of `repo`'s config (decided by
    /// `core::config::decide_first_config_read`) and queues its `effects`
    /// (a config's problems said on its commit), in one commit, unless a
    /// record exists by then: what a push decided meanwhile stays. Returns
    /// whether it was recorded.
    pub async fn record_first_config(
        &self,
        installation: InstallationId,
        repo: &RepoName,
        record: RepoConfigRecord,
        effects: Vec<Effect>,
    ) -> Result<bool, StoreError> {
        let repo = repo.clone();
        let now = self.clock().now_ms();
        self.write(move |db| {
            let inserted = db.execute(
                "INSERT INTO repo_configs (repo, config, sha, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(repo) DO NOTHING",
                params![repo.as_str(), record.config, record.sha.as_str(), now],
            )?;
            if inserted == 0 {
                return Ok(false);
            }
            super::outbox::insert(db, None, installation, &effects, now)?;
            Ok(true)
        })
        .await
    }

    /// The config `repo`'s decisions follow, when one was recorded.
    pub async fn repo_config(
        &self,
        repo: &RepoName,
    ) -> Result<Option<RepoConfigRecord>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            db.query_opt(
                "SELECT config, sha FROM repo_configs WHERE repo = ?1",
                params![repo.as_str()],
                |r| {
                    Ok(RepoConfigRecord {
                        config: r.get(0)?,
                        sha: r.sql(1)?,
                    })
                },
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::InstallationId;
    use taskgate_core::ids::StoryId;
    use taskgate_core::sync::StoryPlan;
    use taskgate_core::Change;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    fn planned(repo: &RepoName, story: &StoryId, config: Option<&str>) -> Change {
        Change::StoryPlanned(StoryPlan {
            repo: repo.clone(),
            story: story.clone(),
            installation: InstallationId::new(1),
            source: format!(".taskgate/stories/{story}.yml"),
            plan: "story: s".into(),
            config: config.map(str::to_owned),
            files: BTreeMap::new(),
            sha: crate::testing::sha(&"a".repeat(40)),
        })
    }

    fn config_changed(repo: &RepoName, config: Option<&str>) -> Change {
        Change::RepoConfigChanged {
            repo: repo.clone(),
            sha: crate::testing::sha(&"b".repeat(40)),
            config: config.map(str::to_owned),
        }
    }

    async fn apply(store: &Store, changes: Vec<Change>) {
        crate::store::audit::tests::apply(store, changes).await;
    }

    async fn story_config(store: &Store, repo: &RepoName, story: &StoryId) -> Option<String> {
        store.story(repo, story).await.unwrap().unwrap().config
    }

    on_both_backends! {
        async fn every_story_reads_the_repositorys_current_config_once_one_is_recorded(store: Store) {
            let (a, b) = (repo("acme/a"), repo("acme/b"));
            let old = "review: human\n";
            apply(&store, vec![planned(&a, &StoryId::new("x"), Some(old)), planned(&a, &StoryId::new("y"), None), planned(&b, &StoryId::new("z"), Some(old))]).await;
            // No record yet (a database from before the table): each story's own copy.
            assert_eq!(store.repo_config(&a).await.unwrap(), None);
            assert!(store.latest_story_config(&a).await.unwrap().is_some());
            assert_eq!(store.latest_story_config(&repo("acme/none")).await.unwrap(), None);
            assert_eq!(story_config(&store, &a, &StoryId::new("x")).await.as_deref(), Some(old));
            assert_eq!(story_config(&store, &a, &StoryId::new("y")).await, None);

            let new = "runner_network: false\n";
            apply(&store, vec![config_changed(&a, Some(new))]).await;
            assert_eq!(
                store.repo_config(&a).await.unwrap(),
                Some(RepoConfigRecord { config: Some(new.into()), sha: crate::testing::sha(&"b".repeat(40)) })
            );
            assert_eq!(story_config(&store, &a, &StoryId::new("x")).await.as_deref(), Some(new));
            assert_eq!(story_config(&store, &a, &StoryId::new("y")).await.as_deref(), Some(new));
            assert_eq!(story_config(&store, &b, &StoryId::new("z")).await.as_deref(), Some(old), "per repository");

            // The file removed: the defaults, for every story.
            apply(&store, vec![config_changed(&a, None)]).await;
            assert_eq!(story_config(&store, &a, &StoryId::new("x")).await, None);
            assert_eq!(store.repo_config(&a).await.unwrap().unwrap().config, None);
        }

        async fn a_stored_sha_that_is_no_sha_is_corrupt_data_naming_the_column(store: Store) {
            let a = repo("acme/a");
            apply(&store, vec![config_changed(&a, Some("review: human\n"))]).await;
            store
                .write(move |db| {
                    db.execute("UPDATE repo_configs SET sha = 'main'", params![])?;
                    Ok(())
                })
                .await
                .unwrap();
            match store.repo_config(&a).await {
                // Worded the same on both backends.
                Err(StoreError::Corrupt(why)) => assert_eq!(
                    why,
                    "column 1: `main` is not a full commit sha (40 or 64 lowercase hex digits)"
                ),
                other => panic!("expected corrupt data, got {other:?}"),
            }
        }

        async fn a_first_read_is_recorded_only_where_nothing_is(store: Store) {
            let a = repo("acme/a");
            let first = RepoConfigRecord { config: Some("review: human\n".into()), sha: crate::testing::sha(&"c".repeat(40)) };
            let recorded = store.record_first_config(InstallationId::new(7), &a, first.clone(), vec![]).await.unwrap();
            assert!(recorded);
            assert_eq!(store.repo_config(&a).await.unwrap(), Some(first.clone()));

            // A push's record is never replaced by a (late) first read.
            apply(&store, vec![config_changed(&a, Some("review: auto\n"))]).await;
            let late = store.record_first_config(InstallationId::new(7), &a, first, vec![]).await.unwrap();
            assert!(!late);
            assert_eq!(
                store.repo_config(&a).await.unwrap().and_then(|r| r.config).as_deref(),
                Some("review: auto\n")
            );
        }
    }
}
