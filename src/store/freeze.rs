//! The manual freeze of each repository (`core::freeze`): one row per
//! frozen repository, none for the others.
//!
//! Owns: the `repo_freezes` table's statements. Must not: decide whether a
//! freeze is in force (windows from the config count too:
//! `core::freeze::freeze_in_force`).

use super::sql::Sql;
use rusqlite::params;

use super::db::{Db, Row};
use super::{Store, StoreError};
use taskgate_core::freeze::Freeze;
use taskgate_core::ids::{RepoName, UserId};

/// Applies [`Change::FreezeChanged`](taskgate_core::Change::FreezeChanged):
/// `Some` freezes (or replaces the reason), `None` lifts the freeze.
pub(super) fn put(db: &Db, repo: &RepoName, freeze: Option<&Freeze>) -> Result<(), StoreError> {
    match freeze {
        Some(f) => db.execute(
            "INSERT INTO repo_freezes (repo, reason, by_login, by_id, since_s)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(repo) DO UPDATE SET reason = ?2, by_login = ?3, by_id = ?4, since_s = ?5",
            params![
                repo.as_str(),
                f.reason,
                f.by_login,
                f.by_id.map(Sql),
                f.since_s
            ],
        )?,
        None => db.execute(
            "DELETE FROM repo_freezes WHERE repo = ?1",
            params![repo.as_str()],
        )?,
    };
    Ok(())
}

fn freeze_of(r: &Row) -> Result<Freeze, StoreError> {
    Ok(Freeze {
        reason: r.get(0)?,
        by_login: r.get(1)?,
        by_id: r.sql_opt::<UserId>(2)?,
        since_s: r.get(3)?,
    })
}

impl Store {
    /// The manual freeze of `repo`, if a command froze it.
    pub async fn repo_freeze(&self, repo: &RepoName) -> Result<Option<Freeze>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            db.query_opt(
                "SELECT reason, by_login, by_id, since_s FROM repo_freezes WHERE repo = ?1",
                params![repo.as_str()],
                freeze_of,
            )
        })
        .await
    }

    /// Every manually frozen repository, by name.
    pub async fn repo_freezes(&self) -> Result<Vec<(RepoName, Freeze)>, StoreError> {
        self.read(|db| {
            let rows = db.query_map(
                "SELECT reason, by_login, by_id, since_s, repo FROM repo_freezes ORDER BY repo",
                params![],
                |r| Ok((r.get::<String>(4)?, freeze_of(r)?)),
            )?;
            rows.into_iter()
                .map(|(repo, f)| {
                    Ok((
                        RepoName::parse(&repo).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                        f,
                    ))
                })
                .collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::Change;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    fn freeze(reason: &str, since_s: i64) -> Freeze {
        Freeze {
            reason: reason.into(),
            by_login: "alice".into(),
            by_id: Some(UserId::new(7)),
            since_s,
        }
    }

    async fn apply(store: &Store, changes: Vec<Change>) {
        crate::store::audit::tests::apply(store, changes).await;
    }

    on_both_backends! {
        async fn a_freeze_is_kept_per_repository_updated_and_lifted(store: Store) {
            let (a, b) = (repo("acme/a"), repo("acme/b"));
            assert_eq!(store.repo_freeze(&a).await.unwrap(), None);
            let first = freeze("release in progress", 100);
            apply(&store, vec![Change::FreezeChanged { repo: a.clone(), freeze: Some(first.clone()) }]).await;
            assert_eq!(store.repo_freeze(&a).await.unwrap(), Some(first));
            assert_eq!(store.repo_freeze(&b).await.unwrap(), None, "per repository");

            let api = Freeze { by_id: None, ..freeze("hotfix first", 100) };
            apply(&store, vec![Change::FreezeChanged { repo: a.clone(), freeze: Some(api.clone()) }]).await;
            assert_eq!(store.repo_freeze(&a).await.unwrap(), Some(api.clone()));
            assert_eq!(store.repo_freezes().await.unwrap(), vec![(a.clone(), api)]);

            apply(&store, vec![Change::FreezeChanged { repo: a.clone(), freeze: None }]).await;
            assert_eq!(store.repo_freeze(&a).await.unwrap(), None);
            assert!(store.repo_freezes().await.unwrap().is_empty());
            // Lifting a freeze that is not there changes nothing.
            apply(&store, vec![Change::FreezeChanged { repo: b.clone(), freeze: None }]).await;
            assert_eq!(store.repo_freeze(&b).await.unwrap(), None);
        }
    }
}
