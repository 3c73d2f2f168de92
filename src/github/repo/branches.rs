//! A ready task's branch (SPEC §3): made where it is missing, and how far
//! an existing one is from the story branch.
//!
//! Owns the two calls `perform::branches` needs beyond the refs and merges
//! of `refs.rs`: a create that says whether it created, and a comparison's
//! counts. Must not: decide what to do with them (`core::story::start`).

use serde_json::json;

use super::compare::Comparison;
use super::RepoClient;
use crate::github::client::GitHubError;
use taskgate_core::ids::CommitSha;

impl RepoClient<'_> {
    /// Creates branch `name` at `sha`: `true` when made, `false` when it
    /// exists already (GitHub's 422 "Reference already exists").
    pub(crate) async fn create_branch_if_new(
        &self,
        name: &str,
        sha: &CommitSha,
    ) -> Result<bool, GitHubError> {
        let body = json!({ "ref": format!("refs/heads/{name}"), "sha": sha });
        match self.post(&self.path("git/refs"), Some(&body)).await {
            Ok(_) => Ok(true),
            Err(GitHubError::Http {
                status: 422,
                message,
                ..
            }) if message.contains("already exists") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// GitHub's comparison of `base` with `head` (branches or shas):
    /// `(ahead_by, behind_by)`, the commits `head` has that `base` lacks
    /// and the other way round.
    pub(crate) async fn ahead_behind(
        &self,
        base: &str,
        head: &str,
    ) -> Result<(u64, u64), GitHubError> {
        // One commit listed is enough: only the counts are read.
        let path = self.path(&format!("compare/{base}...{head}?per_page=1"));
        let v: Comparison = self
            .get(&path)
            .await?
            .answer(&format!("GET /compare/{base}...{head}"))?;
        Ok((v.ahead_by, v.behind_by))
    }
}
