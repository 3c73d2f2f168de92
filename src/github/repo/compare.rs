//! Comparing two commits (`GET /repos/{owner}/{repo}/compare/{basehead}`):
//! the files a commit changed since another, for flaky tests of kind (b)
//! when the run was on GitHub's runners and taskgate has no checkout.

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
        let path = self.path(&format!("compare/{base}...{head}?per_page=1"));
        let comparison: Value = self.get(&path).await?.json()?;
        let files = comparison["files"].as_array().cloned().unwrap_or_default();
        if files.len() >= COMPARE_MAX_FILES {
            return Ok(None);
        }
        let mut paths: Vec<String> = files
            .iter()
            .flat_map(|f| [&f["filename"], &f["previous_filename"]])
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        paths.sort();
        paths.dedup();
        Ok(Some(paths))
    }
}
