//! What taskgate learnt about a repository from GitHub's answers: today,
//! that it has no draft pull requests.
//!
//! Owns: the `repo_no_drafts` table (a row per repository where GitHub
//! refused a draft: a private repository on GitHub Free).
//! Must not: decide what a pull request should be; the executor asks
//! before opening one (`github::perform::runs`).

use rusqlite::params;

use super::{Store, StoreError};
use taskgate_core::ids::RepoName;

impl Store {
    /// Whether GitHub has refused a draft pull request in `repo`.
    pub async fn drafts_unavailable(&self, repo: &RepoName) -> Result<bool, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            Ok(db
                .query_opt(
                    "SELECT since_ms FROM repo_no_drafts WHERE repo = ?1",
                    params![repo.as_str()],
                    |r| r.get::<i64>(0),
                )?
                .is_some())
        })
        .await
    }

    /// Remembers that `repo` has no drafts, so later pull requests are
    /// opened as normal ones at once.
    pub async fn remember_no_drafts(&self, repo: &RepoName, now_ms: i64) -> Result<(), StoreError> {
        let repo = repo.clone();
        self.write_one(move |db| {
            db.execute(
                "INSERT INTO repo_no_drafts (repo, since_ms) VALUES (?1, ?2)
                 ON CONFLICT(repo) DO NOTHING",
                params![repo.as_str(), now_ms],
            )?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::RepoName;

    on_both_backends! {
        async fn a_repository_without_drafts_is_remembered_once(store: Store) {
            let (repo, other) = (RepoName::parse("o/private").unwrap(), RepoName::parse("o/public").unwrap());
            assert!(!store.drafts_unavailable(&repo).await.unwrap());
            store.remember_no_drafts(&repo, 1).await.unwrap();
            store.remember_no_drafts(&repo, 2).await.unwrap();
            assert!(store.drafts_unavailable(&repo).await.unwrap());
            assert!(!store.drafts_unavailable(&other).await.unwrap());
        }
    }
}
