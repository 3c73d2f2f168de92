//! The tree a merge queue group of a story must have: GitHub merges the
//! shipped head into the group's base on a branch of taskgate's own, and
//! only a merge whose parents are exactly those two is taken.
//!
//! Owns: those calls. Must not: judge the group (`core::ship::
//! on_merge_group_checks` compares the trees) or adopt whatever the
//! branch holds: the merge GitHub answers with is checked, never a tip
//! read back.

use super::{MergeOutcome, RepoClient};
use crate::github::client::GitHubError;
use taskgate_core::ids::CommitSha;
use taskgate_core::ship::GroupReference;

impl RepoClient<'_> {
    /// Sets `branch` to `base`, has GitHub merge `head` into it, and
    /// answers with that merge's tree if its parents are exactly `base`
    /// and `head`.
    pub(crate) async fn merged_tree(
        &self,
        branch: &str,
        (base, head): (&CommitSha, &CommitSha),
        message: &str,
    ) -> Result<GroupReference, GitHubError> {
        self.set_branch(branch, base).await?;
        let merged = match self.merge_into(branch, head, message).await? {
            MergeOutcome::Merged(sha) => sha,
            MergeOutcome::NothingToMerge => return Ok(GroupReference::Held),
            MergeOutcome::Conflict(said) => return Ok(GroupReference::Conflict(said)),
        };
        let parents = self.commit_parents(&merged).await?;
        if parents != [base.clone(), head.clone()] {
            return Ok(GroupReference::OtherParents {
                commit: merged,
                parents,
            });
        }
        Ok(GroupReference::Tree(self.commit_tree(&merged).await?))
    }
}
