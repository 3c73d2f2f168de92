//! Refs and merges for the ship queue: the proving branch set to a
//! commit, a branch merged into it (GitHub's merges API), and the default
//! branch fast-forwarded to the tested commit (or found to hold it).

use serde_json::{json, Value};

use super::RepoClient;
use crate::github::client::GitHubError;
use taskgate_core::ids::CommitSha;

/// What GitHub's merges API did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// A merge commit (201).
    Merged(CommitSha),
    /// The base contains the head already (204): nothing to merge.
    NothingToMerge,
    /// The two do not merge cleanly (409).
    Conflict(String),
}

/// Whether a fast-forward was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastForward {
    Done,
    /// The branch is not an ancestor of the commit any more (422).
    NotFastForward(String),
}

impl RepoClient<'_> {
    /// Points branch `name` at `sha`, creating it or moving it by force.
    /// Only GitHub's "Reference does not exist" means the branch is
    /// missing; any other 404 or 422 (the commit unknown, a rule refusing
    /// the update, no access) is the error it is.
    pub(crate) async fn set_branch(&self, name: &str, sha: &CommitSha) -> Result<(), GitHubError> {
        let update = json!({ "sha": sha, "force": true });
        match self
            .patch(&self.path(&format!("git/refs/heads/{name}")), &update)
            .await
        {
            Ok(_) => Ok(()),
            Err(GitHubError::Http {
                status: 404 | 422,
                message,
                ..
            }) if message.contains("Reference does not exist") => {
                let body = json!({ "ref": format!("refs/heads/{name}"), "sha": sha });
                self.post(&self.path("git/refs"), Some(&body)).await?;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// `POST /merges`: merges `head` (a branch or sha) into branch `base`.
    pub(crate) async fn merge_into(
        &self,
        base: &str,
        head: &CommitSha,
        message: &str,
    ) -> Result<MergeOutcome, GitHubError> {
        let body = json!({ "base": base, "head": head, "commit_message": message });
        match self.post(&self.path("merges"), Some(&body)).await {
            Ok(r) if r.status.as_u16() == 204 => Ok(MergeOutcome::NothingToMerge),
            Ok(r) => {
                let v: Value = r.json()?;
                let sha = v["sha"].as_str().ok_or_else(|| {
                    GitHubError::Unexpected("the merge answer names no sha".into())
                })?;
                Ok(MergeOutcome::Merged(CommitSha(sha.to_owned())))
            }
            // A conflict; a 409 of the base's rules is not one, nor one
            // refusing a workflow file to an app without the `workflows`
            // permission (said with its fix where the refusal is read).
            Err(GitHubError::Http {
                status: 409,
                message,
                ..
            }) if !refused_by_rules(&message) => Ok(MergeOutcome::Conflict(message)),
            Err(e) => Err(e),
        }
    }

    /// A commit's parents, in order.
    pub(crate) async fn commit_parents(
        &self,
        sha: &CommitSha,
    ) -> Result<Vec<CommitSha>, GitHubError> {
        let v: Value = self
            .get(&self.path(&format!("commits/{sha}")))
            .await?
            .json()?;
        Ok(v["parents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["sha"].as_str())
            .map(|s| CommitSha(s.to_owned()))
            .collect())
    }

    /// The tree of a commit (GitHub's git data API).
    pub(crate) async fn commit_tree(&self, sha: &CommitSha) -> Result<String, GitHubError> {
        let v: Value = self
            .get(&self.path(&format!("git/commits/{sha}")))
            .await?
            .json()?;
        v["tree"]["sha"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| GitHubError::Unexpected(format!("commit {sha} names no tree")))
    }

    /// Makes a commit of `tree` on `parents` (no branch moves).
    pub(crate) async fn create_commit(
        &self,
        message: &str,
        tree: &str,
        parents: &[CommitSha],
    ) -> Result<CommitSha, GitHubError> {
        let body = json!({ "message": message, "tree": tree, "parents": parents });
        let v: Value = self
            .post(&self.path("git/commits"), Some(&body))
            .await?
            .json()?;
        v["sha"]
            .as_str()
            .map(|s| CommitSha(s.to_owned()))
            .ok_or_else(|| GitHubError::Unexpected("the created commit names no sha".into()))
    }

    /// Whether branch `name` has `sha` in its history, at its tip or
    /// behind it: GitHub compares the two as `identical` or `ahead`.
    pub(crate) async fn branch_contains(
        &self,
        name: &str,
        sha: &CommitSha,
    ) -> Result<bool, GitHubError> {
        let v: Value = self
            .get(&self.path(&format!("compare/{sha}...{name}")))
            .await?
            .json()?;
        Ok(matches!(v["status"].as_str(), Some("identical" | "ahead")))
    }

    /// Moves branch `name` to `sha` only if that is a fast-forward.
    pub(crate) async fn fast_forward(
        &self,
        name: &str,
        sha: &CommitSha,
    ) -> Result<FastForward, GitHubError> {
        let update = json!({ "sha": sha, "force": false });
        match self
            .patch(&self.path(&format!("git/refs/heads/{name}")), &update)
            .await
        {
            Ok(_) => Ok(FastForward::Done),
            Err(GitHubError::Http {
                status: 422,
                message,
                ..
            }) if message.to_ascii_lowercase().contains("fast forward") => {
                Ok(FastForward::NotFastForward(message))
            }
            Err(e) => Err(e),
        }
    }
}

/// A 409 of the merges API that is a refusal, not a conflict: the base's
/// rules, or a workflow file the app may not write.
fn refused_by_rules(message: &str) -> bool {
    message.contains("rule violations")
        || taskgate_core::ship::violations(message).iter().any(|v| {
            matches!(
                v,
                taskgate_core::ship::Violation::WorkflowsPermission { .. }
            )
        })
}

#[cfg(test)]
mod tests {
    use fakehub::{Rule, Ruleset};

    use super::*;
    use taskgate_core::ids::RepoName;

    #[tokio::test]
    async fn set_branch_creates_only_a_missing_branch_and_says_any_other_refusal() {
        let (gh, repo, client) = super::super::fake_installation().await;
        let name = RepoName::parse("acme/widgets").unwrap();
        let gh_repo = RepoClient::new(&client, &name);
        let first = CommitSha(repo.branch_sha("main").unwrap());
        let second = CommitSha(repo.push_files("main", &[("a", "a\n")], "A", "alice"));
        // Missing: created.
        gh_repo
            .set_branch("taskgate/ship-1", &second)
            .await
            .unwrap();
        assert_eq!(repo.branch_sha("taskgate/ship-1"), Some(second.0.clone()));
        // A rule refuses moving it back: the refusal, not a second create.
        repo.with_ruleset(
            Ruleset::new("ship branches")
                .on(&["taskgate/*"])
                .rule(Rule::NonFastForward),
        );
        let refused = gh_repo.set_branch("taskgate/ship-1", &first).await;
        let Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) = refused
        else {
            panic!("{refused:?}");
        };
        assert!(message.contains("Cannot force-push"), "{message}");
        // An unknown commit is GitHub's 422 too, and no branch is made.
        let unknown = CommitSha("0".repeat(40));
        assert!(gh_repo
            .set_branch("taskgate/ship-2", &unknown)
            .await
            .is_err());
        assert_eq!(repo.branch_sha("taskgate/ship-2"), None);
        let creates = gh
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
            .count();
        assert_eq!(
            creates, 2,
            "one create for each missing branch, none after the refusal"
        );
        gh.assert_contract_kept();
    }
}
