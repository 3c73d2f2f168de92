//! The commit a task's gates test (SPEC §3): its head merged with its
//! story branch, as CI on a pull request tests it, and the warning its
//! gates carry when that is not the head itself.
//!
//! Owns: finding the story branch and asking the mirror for the merge
//! (`runner::test_merge`). Must not: word the warning (`core::story::start`).

use super::{RunError, RunQueue};
use crate::runner::{Mirror, TestMerge};
use crate::store::AttemptRow;
use taskgate_core::ids::CommitSha;
use taskgate_core::story::start::{render_tested_alone, render_tested_merged};

impl RunQueue {
    /// The commit a task's gates test: its head merged with its story
    /// branch, as CI on a pull request tests it (SPEC §3), with what the
    /// gates say about it. Milestones and proofs test their commit as it is.
    pub(super) async fn tested_commit(
        &self,
        row: &AttemptRow,
        mirror: &Mirror,
        token: Option<String>,
    ) -> Result<(String, Vec<String>), RunError> {
        let head = row.sha.as_str().to_owned();
        if row.task.task().is_none() {
            return Ok((head, Vec::new()));
        }
        let story_key = taskgate_core::story::Marker::Story {
            story: row.story.clone(),
        }
        .key();
        let story_issue = (self.store.issue_record(&row.repo, &story_key).await)
            .map_err(|e| RunError::Setup(format!("store: {e}")))?;
        let Some(story_issue) = story_issue else {
            return Ok((head, Vec::new()));
        };
        let base = taskgate_core::story::story_branch(story_issue.number.get());
        let url = self.git.url(row.repo.as_str());
        let merge = mirror
            .test_merge_async(url, token, head.clone(), base.clone())
            .await?;
        let notes = match &merge {
            TestMerge::Head => Vec::new(),
            TestMerge::Merged { base: sha, .. } => {
                vec![render_tested_merged(&base, &git_sha(sha)?)]
            }
            TestMerge::Conflict { base: sha } => {
                vec![render_tested_alone(&base, &git_sha(sha)?)]
            }
        };
        Ok((merge.commit(&head).to_owned(), notes))
    }
}

/// A sha git printed, checked like any other.
fn git_sha(text: &str) -> Result<CommitSha, RunError> {
    CommitSha::parse(text).map_err(|e| RunError::Setup(format!("git: {e}")))
}
