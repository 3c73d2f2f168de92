//! Comparing two commits (`GET /repos/{owner}/{repo}/compare/{basehead}`):
//! the files a commit changed since another, for flaky tests of kind (b)
//! when the run was on GitHub's runners and taskgate has no checkout, and
//! for plan sync when a push's own list of commits may be capped.

use serde_json::Value;

use super::RepoClient;
use crate::github::GitHubError;
use taskgate_core::ids::CommitSha;

/// The changed files a comparison lists at most: "the list of changed
/// files … includes up to 300 changed files for the entire comparison"
/// (GitHub's REST docs).
pub const COMPARE_MAX_FILES: usize = 300;

impl RepoClient<'_> {
    /// The paths `head` changed since `base` (a rename names both), or
    /// `None` when GitHub listed its maximum and there may be more.
    /// `per_page=1`: the files come with the first page whatever its size,
    /// and the commits are not wanted.
    pub async fn changed_files(
        &self,
        base: &str,
        head: &str,
    ) -> Result<Option<Vec<String>>, GitHubError> {
        let Some(changed) = self.changed_paths(base, head).await? else {
            return Ok(None);
        };
        let mut paths: Vec<String> = changed.into_iter().map(|(path, _)| path).collect();
        paths.sort();
        paths.dedup();
        Ok(Some(paths))
    }

    /// Each path `head` changed since `base`, with whether it is there at
    /// `head` (`false`: removed, or the old name of a rename), or `None`
    /// when GitHub listed its maximum and there may be more.
    pub async fn changed_paths(
        &self,
        base: &str,
        head: &str,
    ) -> Result<Option<Vec<(String, bool)>>, GitHubError> {
        let path = self.path(&format!("compare/{base}...{head}?per_page=1"));
        let comparison: Value = self.get(&path).await?.json()?;
        let files = comparison["files"].as_array().cloned().unwrap_or_default();
        if files.len() >= COMPARE_MAX_FILES {
            return Ok(None);
        }
        let mut paths = Vec::new();
        for f in &files {
            if let Some(name) = f["filename"].as_str() {
                paths.push((name.to_owned(), f["status"] != "removed"));
            }
            if let Some(old) = f["previous_filename"].as_str() {
                paths.push((old.to_owned(), false));
            }
        }
        Ok(Some(paths))
    }
}

/// The commits a story branch check lists at most (10 pages of 100).
const MAX_COMPARED_COMMITS: usize = 1000;

impl RepoClient<'_> {
    /// The commits `head` has that `base` lacks, each with its parents
    /// (oldest first, as GitHub lists them), and whether there were more
    /// than [`MAX_COMPARED_COMMITS`].
    pub async fn commits_ahead(
        &self,
        base: &str,
        head: &str,
    ) -> Result<(Vec<(CommitSha, Vec<CommitSha>)>, bool), GitHubError> {
        let mut out = Vec::new();
        for page in 1..=MAX_COMPARED_COMMITS / 100 {
            let path = self.path(&format!("compare/{base}...{head}?per_page=100&page={page}"));
            let comparison: Value = self.get(&path).await?.json()?;
            let ahead = comparison["ahead_by"].as_u64().unwrap_or(0) as usize;
            let listed = comparison["commits"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let sha = |v: &Value| v["sha"].as_str().map(|s| CommitSha(s.to_owned()));
            for c in &listed {
                let parents = c["parents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(sha);
                out.extend(sha(c).map(|s| (s, parents.collect())));
            }
            if listed.is_empty() || out.len() >= ahead {
                return Ok((out, false));
            }
        }
        Ok((out, true))
    }
}
