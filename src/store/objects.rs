//! What taskgate owns on GitHub: issues by marker, branches, labels, and
//! the stories' last valid plans.

use super::sql::Sql;
use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;

use super::db::{Db, Row};
use super::{Store, StoreError};
use taskgate_core::ids::{CommitSha, InstallationId, IssueId, IssueNumber, RepoName, StoryId};
use taskgate_core::sync::{IssueRecord, StoryPlan};

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain data serialises")
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn read_record(r: &Row) -> Result<(String, IssueRecordRaw), StoreError> {
    Ok((
        r.get(0)?,
        IssueRecordRaw {
            number: r.sql(1)?,
            id: r.sql(2)?,
            title: r.get(3)?,
            body: r.get(4)?,
            labels: r.get(5)?,
            open: r.get(6)?,
            parent: r.get(7)?,
            blocked_by: r.get(8)?,
        },
    ))
}

struct IssueRecordRaw {
    number: IssueNumber,
    id: IssueId,
    title: String,
    body: String,
    labels: String,
    open: bool,
    parent: Option<String>,
    blocked_by: String,
}

impl IssueRecordRaw {
    fn decode(self) -> Result<IssueRecord, StoreError> {
        Ok(IssueRecord {
            number: self.number,
            id: self.id,
            title: self.title,
            body: self.body,
            labels: from_json(&self.labels)?,
            open: self.open,
            parent: self.parent,
            blocked_by: from_json(&self.blocked_by)?,
        })
    }
}

/// An issue as a page links it: [`Store::story_issue_links`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueLink {
    pub number: IssueNumber,
    pub labels: BTreeSet<String>,
}

const RECORD_COLUMNS: &str =
    "marker, number, issue_id, title, body, labels, open, parent, blocked_by";

pub(super) fn put_record(
    db: &Db,
    repo: &RepoName,
    marker: &str,
    r: &IssueRecord,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO issues (repo, marker, number, issue_id, title, body, labels, open, parent, blocked_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT(repo, marker) DO UPDATE SET number = ?3, issue_id = ?4, title = ?5, body = ?6,
             labels = ?7, open = ?8, parent = ?9, blocked_by = ?10",
        params![
            repo.as_str(),
            marker,
            Sql(r.number),
            Sql(r.id),
            r.title,
            r.body,
            json(&r.labels),
            r.open,
            r.parent,
            json(&r.blocked_by)
        ],
    )?;
    Ok(())
}

/// Whether `marker` (which starts with `story_key`) is of that story here:
/// a field boundary follows (`story=a` is a prefix of `story=ab`), and it
/// is not another home's issue of a story with the same key (`story=a
/// home=acme/api task=…`, issue 49: its story is planned elsewhere).
fn of_story(story_key: &str, marker: &str) -> bool {
    let rest = &marker[story_key.len()..];
    rest.is_empty() || (rest.starts_with(' ') && !rest.starts_with(" home="))
}

impl Store {
    /// Issues whose marker starts with `prefix` (e.g. `story=file:x`).
    pub async fn issue_records(
        &self,
        repo: &RepoName,
        prefix: &str,
    ) -> Result<BTreeMap<String, IssueRecord>, StoreError> {
        let (repo, prefix) = (repo.clone(), prefix.to_owned());
        self.read(move |db| {
            let rows = db.query_map(
                &format!(
                    "SELECT {RECORD_COLUMNS} FROM issues WHERE repo = ?1 AND substr(marker, 1, length(?2)) = ?2"
                ),
                params![repo.as_str(), prefix],
                read_record,
            )?;
            rows.into_iter()
                .map(|(marker, raw)| Ok((marker, raw.decode()?)))
                .collect()
        })
        .await
    }

    /// A story's issues by marker key: the story issue and every issue whose
    /// marker names the story (tasks, branch todos). `story=a` is a prefix
    /// of `story=ab`, so a field boundary must follow the story's key.
    pub async fn story_issues(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<BTreeMap<String, IssueRecord>, StoreError> {
        let key = taskgate_core::story::Marker::Story {
            story: story.to_owned(),
        }
        .key();
        let mut issues = self.issue_records(repo, &key).await?;
        issues.retain(|k, _| of_story(&key, k));
        Ok(issues)
    }

    /// [`Store::story_issues`] as a page links them: number and labels,
    /// without the bodies (a 10,000-task story's issues hold megabytes of
    /// them, and a page reads every issue's labels).
    pub async fn story_issue_links(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<BTreeMap<String, IssueLink>, StoreError> {
        let key = taskgate_core::story::Marker::Story {
            story: story.to_owned(),
        }
        .key();
        let repo = repo.clone();
        self.read(move |db| {
            let rows = db.query_map(
                "SELECT marker, number, labels FROM issues WHERE repo = ?1 AND substr(marker, 1, length(?2)) = ?2",
                params![repo.as_str(), key],
                |r| Ok((r.get::<String>(0)?, r.sql::<IssueNumber>(1)?, r.get::<String>(2)?)),
            )?;
            rows.into_iter()
                .filter(|(marker, _, _)| of_story(&key, marker))
                .map(|(marker, number, labels)| {
                    let labels = from_json(&labels)?;
                    Ok((marker, IssueLink { number, labels }))
                })
                .collect()
        })
        .await
    }

    pub async fn issue_record(
        &self,
        repo: &RepoName,
        marker: &str,
    ) -> Result<Option<IssueRecord>, StoreError> {
        let (repo, marker) = (repo.clone(), marker.to_owned());
        self.read(move |db| {
            db.query_opt(
                &format!("SELECT {RECORD_COLUMNS} FROM issues WHERE repo = ?1 AND marker = ?2"),
                params![repo.as_str(), marker],
                read_record,
            )?
            .map(|(_, raw)| raw.decode())
            .transpose()
        })
        .await
    }

    pub async fn put_issue_record(
        &self,
        repo: &RepoName,
        marker: &str,
        record: IssueRecord,
    ) -> Result<(), StoreError> {
        let (repo, marker) = (repo.clone(), marker.to_owned());
        self.write(move |db| put_record(db, &repo, &marker, &record))
            .await
    }

    /// Replaces everything recorded for `repo` with what a resync read
    /// from GitHub, in one transaction.
    pub async fn replace_owned(
        &self,
        repo: &RepoName,
        issues: BTreeMap<String, IssueRecord>,
        branches: BTreeSet<String>,
        labels: BTreeSet<String>,
    ) -> Result<(), StoreError> {
        let repo = repo.clone();
        self.write(move |db| {
            for table in ["issues", "branches", "labels"] {
                db.execute(
                    &format!("DELETE FROM {table} WHERE repo = ?1"),
                    params![repo.as_str()],
                )?;
            }
            for (marker, record) in &issues {
                put_record(db, &repo, marker, record)?;
            }
            for (table, names) in [("branches", &branches), ("labels", &labels)] {
                for name in names {
                    db.execute(
                        &format!("INSERT INTO {table} (repo, name) VALUES (?1, ?2)"),
                        params![repo.as_str(), name],
                    )?;
                }
            }
            Ok(())
        })
        .await
    }

    pub async fn branches(&self, repo: &RepoName) -> Result<BTreeSet<String>, StoreError> {
        self.names("branches", repo).await
    }

    pub async fn labels(&self, repo: &RepoName) -> Result<BTreeSet<String>, StoreError> {
        self.names("labels", repo).await
    }

    pub async fn add_branch(&self, repo: &RepoName, name: &str) -> Result<(), StoreError> {
        self.add_name("branches", repo, name).await
    }

    pub async fn add_label(&self, repo: &RepoName, name: &str) -> Result<(), StoreError> {
        self.add_name("labels", repo, name).await
    }

    async fn names(
        &self,
        table: &'static str,
        repo: &RepoName,
    ) -> Result<BTreeSet<String>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            let rows = db.query_map(
                &format!("SELECT name FROM {table} WHERE repo = ?1"),
                params![repo.as_str()],
                |r| r.get::<String>(0),
            )?;
            Ok(rows.into_iter().collect())
        })
        .await
    }

    async fn add_name(
        &self,
        table: &'static str,
        repo: &RepoName,
        name: &str,
    ) -> Result<(), StoreError> {
        let (repo, name) = (repo.clone(), name.to_owned());
        self.write(move |db| {
            db.execute(
                &format!("INSERT INTO {table} (repo, name) VALUES (?1, ?2) ON CONFLICT DO NOTHING"),
                params![repo.as_str(), name],
            )?;
            Ok(())
        })
        .await
    }

    /// Where each of `repo`'s planned stories was planned from (a plan
    /// file's path, or `issue #N`).
    pub async fn story_sources(&self, repo: &RepoName) -> Result<Vec<String>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            db.query_map(
                "SELECT source FROM stories WHERE repo = ?1 ORDER BY source",
                params![repo.as_str()],
                |r| r.get::<String>(0),
            )
        })
        .await
    }

    /// A story's last valid plan, with the config its decisions follow:
    /// the repository's current one (`store::repo_config`), else the copy
    /// saved with the plan.
    pub async fn story(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<Option<StoryPlan>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |db| {
            // The repository's current config, not the copy saved with
            // the plan, where one is recorded (`store::repo_config`).
            let sql = format!(
                "SELECT s.installation_id, s.source, s.plan, {}, s.files, s.sha
                 FROM stories s LEFT JOIN repo_configs c ON c.repo = s.repo
                 WHERE s.repo = ?1 AND s.story = ?2",
                super::repo_config::STORY_CONFIG
            );
            db.query_opt(&sql, params![repo.as_str(), story.as_str()], |r| {
                Ok((
                    r.sql::<InstallationId>(0)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                    r.get::<Option<String>>(3)?,
                    r.get::<String>(4)?,
                    r.sql::<CommitSha>(5)?,
                ))
            })?
            .map(|(installation, source, plan, config, files, sha)| {
                Ok(StoryPlan {
                    repo: repo.clone(),
                    story: story.clone(),
                    installation,
                    source,
                    plan,
                    config,
                    files: from_json(&files)?,
                    sha,
                })
            })
            .transpose()
        })
        .await
    }
}

/// Saves a story's plan, stamped at `now_ms`; called inside the
/// transaction that queues the effects following from it.
pub(super) fn save_story(db: &Db, s: &StoryPlan, now_ms: i64) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO stories (repo, story, installation_id, source, plan, config, files, sha, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(repo, story) DO UPDATE SET installation_id = ?3, source = ?4, plan = ?5, config = ?6,
             files = ?7, sha = ?8, updated_ms = ?9",
        params![
            s.repo.as_str(),
            s.story.as_str(),
            Sql(s.installation),
            s.source,
            s.plan,
            s.config,
            json(&s.files),
            s.sha.as_str(),
            now_ms
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use taskgate_core::ids::{IssueId, IssueNumber};

    fn record(number: u64) -> IssueRecord {
        IssueRecord {
            number: IssueNumber::new(number),
            id: IssueId::new(number),
            title: String::new(),
            body: String::new(),
            labels: BTreeSet::new(),
            open: true,
            parent: None,
            blocked_by: BTreeSet::new(),
        }
    }

    on_both_backends! {
        async fn a_storys_issues_are_its_own_not_those_of_a_story_its_key_prefixes(store: Store) {
            let repo = RepoName::parse("o/r").unwrap();
            for (n, key) in [
                (1, "story=file:a"),
                (2, "story=file:a task=x"),
                (3, "story=file:ab"),
                (4, "story=file:ab task=y"),
            ] {
                store.put_issue_record(&repo, key, record(n)).await.unwrap();
            }
            let got: Vec<String> = store
                .story_issues(&repo, &StoryId::new("file:a"))
                .await
                .unwrap()
                .into_keys()
                .collect();
            assert_eq!(got, ["story=file:a", "story=file:a task=x"]);
            assert_eq!(
                store
                    .issue_records(&repo, "story=file:a")
                    .await
                    .unwrap()
                    .len(),
                4
            );
        }
    }
}
