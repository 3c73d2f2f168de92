//! Refs and merges for the ship queue: the proving branch set to a
//! commit, a branch merged into it (GitHub's merges API), and the default
//! branch fast-forwarded to the tested commit (or found to hold it).
//!
//! The idea a reader needs (issue 51): anyone who may push to a branch
//! may push between two of taskgate's calls on it. So a commit taskgate
//! builds on a branch in several calls is taken only from GitHub's
//! answers, never from the branch's tip read back: a ref update must
//! answer the sha asked for, and a merge asked for on a branch taskgate
//! just pointed at `previous` must answer a commit whose parents are
//! exactly `previous` and the head ([`RepoClient::merge_onto`]). Anything
//! else is [`Merged::Raced`]: the caller builds again on a
//! [`fresh_branch`], and never adopts what it found.

use serde::Deserialize;
use serde_json::json;

use super::compare::Comparison;
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

/// A merge asked for on a branch taskgate had just pointed at a commit
/// of its own (`previous`), as GitHub's answer shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The merge commit, whose parents are exactly `previous` and the head.
    Made(CommitSha),
    /// `previous` holds the head already (GitHub's 204, checked by
    /// comparing the two commits, not the branch).
    Contained,
    /// `previous` and the head do not merge cleanly (409).
    Conflict(String),
    /// Someone else's commit was on the branch when GitHub merged: what
    /// GitHub built on (the merge's first parent, or the branch's tip) is
    /// `found`, not `previous`. Nothing of it may be used.
    Raced { found: Option<CommitSha> },
}

/// How many branches a commit taskgate builds in several calls is tried on
/// (the branch the core named, then fresh ones) before the build is
/// refused as raced: a push landing between taskgate's calls three times
/// running is no accident.
pub const BUILD_ATTEMPTS: u32 = 3;

/// A branch no one can name before it exists: `name` and a random suffix
/// (`taskgate/ship-batch-3-5f0c2a9e41d7`), under the same rules as `name`
/// (a ruleset's `taskgate/ship-batch-*` matches both).
pub fn fresh_branch(name: &str) -> String {
    let mut bytes = [0u8; 6];
    getrandom::getrandom(&mut bytes).expect("the system's random source");
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{name}-{suffix}")
}

/// The commit GitHub's merges API made (its 201), as far as it is read.
#[derive(Debug, Deserialize)]
struct MergeCommit {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    sha: CommitSha,
    parents: Vec<ShaOf>,
}

/// `{"sha": …}`: a parent of a commit, or the object a ref points at.
#[derive(Debug, Deserialize)]
struct ShaOf {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    sha: CommitSha,
}

/// `GET /commits/{sha}`, as far as its parents.
#[derive(Debug, Deserialize)]
struct CommitParents {
    parents: Vec<ShaOf>,
}

/// `GET /git/commits/{sha}`: the commit's tree.
#[derive(Debug, Deserialize)]
struct GitCommit {
    tree: TreeRef,
}

/// A tree's sha (a tree, not a commit: kept as text).
#[derive(Debug, Deserialize)]
struct TreeRef {
    sha: String,
}

/// A ref as GitHub answers its creation or update.
#[derive(Debug, Deserialize)]
struct RefAnswer {
    object: ShaOf,
}

/// What GitHub's merges API answered, read.
enum MergeAnswer {
    Merged(MergeCommit),
    NothingToMerge,
    Conflict(String),
}

impl MergeCommit {
    /// Whether this is exactly the merge of `head` into `previous`.
    fn merges(&self, previous: &CommitSha, head: &CommitSha) -> bool {
        matches!(self.parents.as_slice(), [p, h] if p.sha == *previous && h.sha == *head)
    }
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
    /// GitHub's answer must name `sha`: anything else is an error, never
    /// a branch taskgate builds on.
    pub(crate) async fn set_branch(&self, name: &str, sha: &CommitSha) -> Result<(), GitHubError> {
        let update = json!({ "sha": sha, "force": true });
        let answer = match self
            .patch(&self.path(&format!("git/refs/heads/{name}")), &update)
            .await
        {
            Ok(answer) => answer,
            Err(GitHubError::Http {
                status: 404 | 422,
                message,
                ..
            }) if message.contains("Reference does not exist") => {
                let body = json!({ "ref": format!("refs/heads/{name}"), "sha": sha });
                self.post(&self.path("git/refs"), Some(&body)).await?
            }
            Err(e) => return Err(e),
        };
        let RefAnswer { object } = answer.answer(&format!("updating refs/heads/{name}"))?;
        if object.sha != *sha {
            return Err(GitHubError::Unexpected(format!(
                "GitHub pointed `{name}` at {} when asked for {}",
                object.sha.short(),
                sha.short()
            )));
        }
        Ok(())
    }

    /// `POST /merges`: merges `head` (a branch or sha) into branch `base`.
    pub(crate) async fn merge_into(
        &self,
        base: &str,
        head: &CommitSha,
        message: &str,
    ) -> Result<MergeOutcome, GitHubError> {
        Ok(match self.merge_answer(base, head, message).await? {
            MergeAnswer::Merged(commit) => MergeOutcome::Merged(commit.sha),
            MergeAnswer::NothingToMerge => MergeOutcome::NothingToMerge,
            MergeAnswer::Conflict(why) => MergeOutcome::Conflict(why),
        })
    }

    /// Merges `head` into `branch`, which taskgate has just pointed at
    /// `previous` (a commit it made, or the base): only the merge of
    /// exactly those two is [`Merged::Made`]. A conflict is checked too,
    /// since someone else's commit on the branch may be what conflicts.
    pub(crate) async fn merge_onto(
        &self,
        branch: &str,
        previous: &CommitSha,
        head: &CommitSha,
        message: &str,
    ) -> Result<Merged, GitHubError> {
        Ok(match self.merge_answer(branch, head, message).await? {
            MergeAnswer::Merged(commit) if commit.merges(previous, head) => {
                Merged::Made(commit.sha)
            }
            MergeAnswer::Merged(commit) => Merged::Raced {
                found: commit.parents.into_iter().next().map(|p| p.sha),
            },
            MergeAnswer::NothingToMerge if self.holds(previous, head).await? => Merged::Contained,
            MergeAnswer::NothingToMerge => Merged::Raced { found: None },
            MergeAnswer::Conflict(why) => match self.branch_head(branch).await? {
                Some(tip) if tip == *previous => Merged::Conflict(why),
                found => Merged::Raced { found },
            },
        })
    }

    /// Whether commit `sha` has `ancestor` in its history (or is it).
    async fn holds(&self, sha: &CommitSha, ancestor: &CommitSha) -> Result<bool, GitHubError> {
        self.branch_contains(sha.as_str(), ancestor).await
    }

    async fn merge_answer(
        &self,
        base: &str,
        head: &CommitSha,
        message: &str,
    ) -> Result<MergeAnswer, GitHubError> {
        let body = json!({ "base": base, "head": head, "commit_message": message });
        match self.post(&self.path("merges"), Some(&body)).await {
            Ok(r) if r.status.as_u16() == 204 => Ok(MergeAnswer::NothingToMerge),
            Ok(r) => Ok(MergeAnswer::Merged(r.answer("POST /merges")?)),
            // A conflict; a 409 of the base's rules is not one, nor one
            // refusing a workflow file to an app without the `workflows`
            // permission (said with its fix where the refusal is read).
            Err(GitHubError::Http {
                status: 409,
                message,
                ..
            }) if !refused_by_rules(&message) => Ok(MergeAnswer::Conflict(message)),
            Err(e) => Err(e),
        }
    }

    /// A commit's parents, in order.
    pub(crate) async fn commit_parents(
        &self,
        sha: &CommitSha,
    ) -> Result<Vec<CommitSha>, GitHubError> {
        let commit: CommitParents = self
            .get(&self.path(&format!("commits/{sha}")))
            .await?
            .answer(&format!("GET /commits/{sha}"))?;
        Ok(commit.parents.into_iter().map(|p| p.sha).collect())
    }

    /// The tree of a commit (GitHub's git data API).
    pub(crate) async fn commit_tree(&self, sha: &CommitSha) -> Result<String, GitHubError> {
        let commit: GitCommit = self
            .get(&self.path(&format!("git/commits/{sha}")))
            .await?
            .answer(&format!("GET /git/commits/{sha}"))?;
        Ok(commit.tree.sha)
    }

    /// Makes a commit of `tree` on `parents` (no branch moves).
    pub(crate) async fn create_commit(
        &self,
        message: &str,
        tree: &str,
        parents: &[CommitSha],
    ) -> Result<CommitSha, GitHubError> {
        let body = json!({ "message": message, "tree": tree, "parents": parents });
        let made: ShaOf = self
            .post(&self.path("git/commits"), Some(&body))
            .await?
            .answer("POST /git/commits")?;
        Ok(made.sha)
    }

    /// Whether branch `name` has `sha` in its history, at its tip or
    /// behind it: GitHub compares the two as `identical` or `ahead`.
    pub(crate) async fn branch_contains(
        &self,
        name: &str,
        sha: &CommitSha,
    ) -> Result<bool, GitHubError> {
        let v: Comparison = self
            .get(&self.path(&format!("compare/{sha}...{name}")))
            .await?
            .answer(&format!("GET /compare/{sha}...{name}"))?;
        Ok(matches!(v.status.as_str(), "identical" | "ahead"))
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
        let first = crate::testing::sha(&repo.branch_sha("main").unwrap());
        let second = crate::testing::sha(&repo.push_files("main", &[("a", "a\n")], "A", "alice"));
        // Missing: created.
        gh_repo
            .set_branch("taskgate/ship-1", &second)
            .await
            .unwrap();
        assert_eq!(
            repo.branch_sha("taskgate/ship-1"),
            Some(second.as_str().to_owned())
        );
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
        let unknown = crate::testing::sha(&"0".repeat(40));
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

    #[tokio::test]
    async fn only_the_merge_of_exactly_the_commit_before_and_the_head_is_taken() {
        let (gh, repo, client) = super::super::fake_installation().await;
        let name = RepoName::parse("acme/widgets").unwrap();
        let gh_repo = RepoClient::new(&client, &name);
        let base = crate::testing::sha(&repo.push_files(
            "main",
            &[("shared.txt", "base\n")],
            "B",
            "alice",
        ));
        let head = crate::testing::sha(&repo.push_files(
            "taskgate/story-1",
            &[("story.txt", "x\n")],
            "S",
            "alice",
        ));
        let clash = repo.push_files(
            "taskgate/story-2",
            &[("shared.txt", "story\n")],
            "S",
            "alice",
        );
        let clash = crate::testing::sha(&clash);
        let moved = crate::testing::sha(&repo.push_files(
            "main",
            &[("shared.txt", "moved\n")],
            "M",
            "alice",
        ));
        let merge_on = move |branch: &'static str, previous: CommitSha, head: CommitSha| async move {
            gh_repo
                .merge_onto(branch, &previous, &head, "Merge")
                .await
                .unwrap()
        };

        // Nothing came in between: the merge of the two is taken.
        gh_repo.set_branch("taskgate/ship-1", &base).await.unwrap();
        let made = merge_on("taskgate/ship-1", base.clone(), head.clone()).await;
        let Merged::Made(made) = made else {
            panic!("{made:?}");
        };
        let parents = gh_repo.commit_parents(&made).await.unwrap();
        assert_eq!(parents, [base.clone(), head.clone()]);
        // A commit that holds the head already: nothing to merge.
        gh_repo.set_branch("taskgate/ship-2", &made).await.unwrap();
        let contained = merge_on("taskgate/ship-2", made.clone(), head.clone()).await;
        assert_eq!(contained, Merged::Contained);
        // A true conflict of the commit before and the head.
        gh_repo.set_branch("taskgate/ship-3", &moved).await.unwrap();
        let conflict = merge_on("taskgate/ship-3", moved.clone(), clash.clone()).await;
        assert!(matches!(conflict, Merged::Conflict(_)), "{conflict:?}");

        // A writer's commit came in between: the merge is built on it.
        gh_repo.set_branch("taskgate/ship-4", &base).await.unwrap();
        let theirs = repo.push_files(
            "taskgate/ship-4",
            &[("mallory.txt", "mine\n")],
            "Mine",
            "mallory",
        );
        let raced = merge_on("taskgate/ship-4", base.clone(), head.clone()).await;
        assert_eq!(
            raced,
            Merged::Raced {
                found: Some(crate::testing::sha(&theirs))
            }
        );
        // Her own merge of the head (any tree, the parents taskgate's would
        // have): GitHub has nothing to merge, and that is no proof either.
        gh_repo.set_branch("taskgate/ship-5", &base).await.unwrap();
        let parents = [base.as_str(), head.as_str()];
        repo.push_merge(
            "taskgate/ship-5",
            &parents,
            &[("mallory.txt", "mine\n")],
            "mallory",
        );
        let raced = merge_on("taskgate/ship-5", base.clone(), head.clone()).await;
        assert_eq!(raced, Merged::Raced { found: None });
        // Her commit conflicting with the story: not the story's conflict.
        gh_repo.set_branch("taskgate/ship-6", &base).await.unwrap();
        let theirs = repo.push_files(
            "taskgate/ship-6",
            &[("story.txt", "hers\n")],
            "Mine",
            "mallory",
        );
        let raced = merge_on("taskgate/ship-6", base.clone(), head.clone()).await;
        assert_eq!(
            raced,
            Merged::Raced {
                found: Some(crate::testing::sha(&theirs))
            }
        );
        gh.assert_contract_kept();
    }
}
