//! Comparing two commits (`GET /repos/{owner}/{repo}/compare/{basehead}`):
//! the files a commit changed since another, for flaky tests of kind (b)
//! when the run was on GitHub's runners and taskgate has no checkout, and
//! for plan sync when a push's own list of commits may be capped.

use serde_json::Value;

use super::RepoClient;
use crate::github::GitHubError;

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
