//! Which files a task's tested commit changed since the commit tested
//! before it on the same task: what tells a test that flipped across
//! commits that did not touch it (`core::flaky`, kind b) from one whose
//! file was changed.
//!
//! Owns: the `commit_changes` table, and the read of a task's previously
//! tested commit. Must not: compute a diff (the runners do, from git or
//! from GitHub's compare API) or judge a test (`core::flaky` does).
//!
//! One idea a reader needs: a row is a fact about two commits, true
//! forever, written by the runner beside (not inside) a decision: losing
//! one to a crash only leaves that pair undecided, and writing it twice
//! changes nothing.

use std::collections::BTreeMap;

use rusqlite::params;

use super::sql::Sql;
use super::{Store, StoreError};
use taskgate_core::flaky::CommitPair;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::task::RunSubject;

/// Files listed per pair at most; a commit that changed more is stored as
/// "too many to list" (and decides nothing).
pub const MAX_CHANGED_FILES: usize = 3_000;

impl Store {
    /// Records that `head` changed `files` since `base` (`None`: more than
    /// [`MAX_CHANGED_FILES`], or GitHub did not list them all).
    pub async fn record_commit_changes(
        &self,
        repo: &RepoName,
        pair: &CommitPair,
        files: Option<Vec<String>>,
    ) -> Result<(), StoreError> {
        let files = files
            .filter(|f| f.len() <= MAX_CHANGED_FILES)
            .map(|f| serde_json::to_string(&f))
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let (repo, pair) = (repo.clone(), pair.clone());
        self.write_one(move |db| {
            db.execute(
                "INSERT INTO commit_changes (repo, base_sha, head_sha, files)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(repo, base_sha, head_sha) DO NOTHING",
                params![repo.as_str(), pair.base, pair.head, files],
            )
        })
        .await?;
        Ok(())
    }

    /// The recorded changes of those `pairs` that have any: a list of
    /// files, or `None` when there were too many to list.
    pub async fn commit_changes(
        &self,
        repo: &RepoName,
        pairs: Vec<CommitPair>,
    ) -> Result<BTreeMap<CommitPair, Option<Vec<String>>>, StoreError> {
        let repo = repo.clone();
        self.read(move |db| {
            let mut found = BTreeMap::new();
            for pair in pairs {
                let files = db.query_opt(
                    "SELECT files FROM commit_changes
                     WHERE repo = ?1 AND base_sha = ?2 AND head_sha = ?3",
                    params![repo.as_str(), pair.base, pair.head],
                    |r| r.get::<Option<String>>(0),
                )?;
                if let Some(files) = files {
                    let files = files
                        .map(|f| serde_json::from_str::<Vec<String>>(&f))
                        .transpose()
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                    found.insert(pair, files);
                }
            }
            Ok(found)
        })
        .await
    }

    /// The commit a task's attempt before `attempt` finished a run on,
    /// other than `sha`: what `sha`'s changes are counted from. `None`
    /// for a task's first tested commit.
    pub async fn previously_tested_commit(
        &self,
        repo: &RepoName,
        story: &StoryId,
        task: &RunSubject,
        attempt: u32,
        sha: &str,
    ) -> Result<Option<String>, StoreError> {
        self.commit_before(repo, story, task, (attempt, sha), "('passed', 'failed')")
            .await
    }

    /// The commit of the task's last green run before `attempt`, other
    /// than `sha`: a branch todo lists the files changed since
    /// (`core::failure::evidence`). `None` before its first green run.
    pub async fn last_green_commit(
        &self,
        repo: &RepoName,
        story: &StoryId,
        task: &RunSubject,
        attempt: u32,
        sha: &str,
    ) -> Result<Option<String>, StoreError> {
        self.commit_before(repo, story, task, (attempt, sha), "('passed')")
            .await
    }

    /// The newest attempt before `attempt`, at another commit than `sha`,
    /// that ended with a status in `statuses` (an SQL list of constants).
    async fn commit_before(
        &self,
        repo: &RepoName,
        story: &StoryId,
        task: &RunSubject,
        (attempt, sha): (u32, &str),
        statuses: &'static str,
    ) -> Result<Option<String>, StoreError> {
        let (repo, story, task, sha) = (
            repo.clone(),
            story.to_string(),
            Sql(task.clone()),
            sha.to_string(),
        );
        let sql = format!(
            "SELECT sha FROM attempts
             WHERE repo = ?1 AND story = ?2 AND task = ?3 AND attempt < ?4
               AND sha <> ?5 AND status IN {statuses}
             ORDER BY attempt DESC LIMIT 1"
        );
        self.read(move |db| {
            db.query_opt(
                &sql,
                params![repo.as_str(), story, task, attempt, sha],
                |r| r.get::<String>(0),
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests;
