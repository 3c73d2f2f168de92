//! Comparing two commits (`GET /repos/{owner}/{repo}/compare/{basehead}`):
//! the files a commit changed since another, for flaky tests of kind (b)
//! when the run was on GitHub's runners and taskgate has no checkout, and
//! for plan sync when a push's own list of commits may be capped.

use serde::Deserialize;

use super::RepoClient;
use crate::github::GitHubError;
use taskgate_core::ids::CommitSha;

/// `GET /compare/{basehead}`, as far as taskgate reads it.
#[derive(Debug, Deserialize)]
pub(super) struct Comparison {
    /// `diverged`, `ahead`, `behind` or `identical`.
    pub status: String,
    pub ahead_by: u64,
    pub behind_by: u64,
    pub commits: Vec<ComparedCommit>,
    /// Not in `required` of GitHub's schema: left out of an identical
    /// comparison's answer.
    #[serde(default)]
    pub files: Vec<ChangedFile>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ComparedCommit {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    pub sha: CommitSha,
    pub parents: Vec<ParentRef>,
}

/// A commit's parent as GitHub lists it.
#[derive(Debug, Deserialize)]
pub(super) struct ParentRef {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    pub sha: CommitSha,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChangedFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, …
    pub status: String,
    /// Only on a rename.
    #[serde(default)]
    pub previous_filename: Option<String>,
}

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
        let comparison: Comparison = self
            .get(&path)
            .await?
            .answer(&format!("GET /compare/{base}...{head}"))?;
        if comparison.files.len() >= COMPARE_MAX_FILES {
            return Ok(None);
        }
        let mut paths = Vec::new();
        for f in comparison.files {
            paths.push((f.filename, f.status != "removed"));
            if let Some(old) = f.previous_filename {
                paths.push((old, false));
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
            let comparison: Comparison = self
                .get(&path)
                .await?
                .answer(&format!("GET /compare/{base}...{head}"))?;
            let ahead = usize::try_from(comparison.ahead_by).unwrap_or(usize::MAX);
            let listed = comparison.commits.is_empty();
            for c in comparison.commits {
                out.push((c.sha, c.parents.into_iter().map(|p| p.sha).collect()));
            }
            if listed || out.len() >= ahead {
                return Ok((out, false));
            }
        }
        Ok((out, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::ApiResponse;

    fn answer(body: &str) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_owned().into(),
        }
    }

    /// GitHub's documented example of `GET /compare/{basehead}` (REST
    /// docs, "Compare two commits"), trimmed.
    const COMPARISON: &str = r#"{
      "url": "https://api.github.com/repos/octocat/Hello-World/compare/master...topic",
      "status": "behind", "ahead_by": 1, "behind_by": 2, "total_commits": 1,
      "commits": [{
        "url": "https://api.github.com/repos/octocat/Hello-World/commits/6dcb09b5b57875f334f61aebed695e2e4193db5e",
        "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
        "node_id": "MDY6Q29tbWl0NmRjYjA5YjViNTc4NzVmMzM0ZjYxYWViZWQ2OTVlMmU0MTkzZGI1ZQ==",
        "commit": {"message": "Fix all the bugs"},
        "parents": [{"url": "https://api.github.com/repos/octocat/Hello-World/commits/6dcb09b5b57875f334f61aebed695e2e4193db5e",
                     "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"}]
      }],
      "files": [{
        "sha": "bbcd538c8e72b8c175046e27cc8f907076331401", "filename": "file1.txt",
        "status": "added", "additions": 103, "deletions": 21, "changes": 124
      }]
    }"#;

    #[test]
    fn a_comparison_is_read_from_githubs_example() {
        let c: Comparison = answer(COMPARISON).answer("GET /compare/a...b").unwrap();
        assert_eq!(
            (c.status.as_str(), c.ahead_by, c.behind_by),
            ("behind", 1, 2)
        );
        assert_eq!(c.commits[0].parents.len(), 1);
        assert_eq!(
            (c.files[0].filename.as_str(), c.files[0].status.as_str()),
            ("file1.txt", "added")
        );
        let identical = r#"{"status": "identical", "ahead_by": 0, "behind_by": 0, "commits": []}"#;
        let c: Comparison = answer(identical).answer("GET /compare/a...a").unwrap();
        assert!(c.files.is_empty(), "files may be left out");
    }

    #[test]
    fn a_comparison_missing_a_field_is_an_error_naming_the_call() {
        let err = answer(r#"{"status": "ahead", "behind_by": 0, "commits": []}"#)
            .answer::<Comparison>("GET /compare/main...topic")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /compare/main...topic: missing field `ahead_by` at line 1 column 50");
    }
}
