//! The story branch's commits checked against the task PRs' merges
//! (issue 28 item 1): the shell half of `core::ship::pin`.
//!
//! Owns: reading the story branch's commits the default branch lacks
//! (GitHub's comparison) and the commits the story's task PRs merged as
//! (the task records), once per story head. Must not: decide what a
//! foreign commit means (the core's gate and refusal do).

use super::*;

impl Ship {
    /// Checks the story branch at `head` unless it was found clean there
    /// already: [`StoryRecord::vetted`] then names every commit on it that
    /// no proven task PR's merge made. A head with such commits is checked
    /// again each time (a task PR's merge may have been recorded since).
    pub(super) async fn vet(
        &self,
        l: &mut Located,
        client: &Octocrab,
        head: &CommitSha,
    ) -> Result<(), ShipError> {
        if l.record
            .vetted
            .as_ref()
            .is_some_and(|v| v.head == *head && v.foreign.is_empty() && !v.too_many)
        {
            return Ok(());
        }
        let gh = RepoClient::new(client, &l.repo);
        if l.default_branch.is_empty() {
            l.default_branch = gh.default_branch().await?;
        }
        let (commits, too_many) = gh.commits_ahead(&l.default_branch, head.as_str()).await?;
        let mut merges = std::collections::BTreeSet::new();
        let records = self.store.task_records(&l.repo, &l.story).await?;
        let done = records
            .into_values()
            .filter(|r| r.state == Some(crate::core::plan::TaskState::Completed));
        for r in done {
            match (r.merged_as, r.pr) {
                (Some(sha), _) => {
                    merges.insert(sha);
                }
                // Merged before taskgate recorded merges (or its webhook
                // was lost): GitHub says what the merge made.
                (None, Some(pr)) => {
                    let pull = gh.get_pull(pr.number).await?;
                    if pull["merged"].as_bool() == Some(true) {
                        let sha = pull["merge_commit_sha"].as_str().unwrap_or_default();
                        merges.insert(CommitSha(sha.to_owned()));
                    }
                }
                (None, None) => {}
            }
        }
        l.record.vetted = Some(ship::Vetted {
            head: head.clone(),
            foreign: ship::foreign_commits(head, &commits, &merges),
            too_many,
        });
        Ok(())
    }
}
