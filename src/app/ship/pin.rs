//! The story branch's commits checked against the task PRs' merges, and
//! `accept-commits`: the shell half of `core::ship::vet`.
//!
//! Owns: reading the story branch's commits the default branch lacks
//! (GitHub's comparison) and what the story's task PRs merged as (the task
//! records), once per story head; finding the story an `accept-commits`
//! names. Must not: decide what a foreign commit means or whether one may
//! be accepted (the core's gate, refusal and acceptance do).

use super::*;
use std::collections::BTreeMap;

use taskgate_core::ship::AcceptRefusal;

impl Ship {
    /// Checks the story branch at `head`: [`StoryRecord::vetted`] then
    /// names every commit on it that no proven task PR's merge made and no
    /// person accepted. GitHub's comparison is read once per head: again
    /// only when a commit it named has since been recorded as a task PR's
    /// merge (the push of a merge can arrive before its pull request's
    /// `closed`).
    pub(super) async fn vet(
        &self,
        l: &mut Located,
        client: &Octocrab,
        head: &CommitSha,
    ) -> Result<(), ShipError> {
        let at_head = l.record.vetted.as_ref().filter(|v| v.head == *head);
        if at_head.is_some_and(|v| v.foreign.is_empty()) {
            return Ok(());
        }
        let gh = RepoClient::new(client, &l.repo);
        let merges = self.task_merges(l, &gh).await?;
        if at_head.is_some_and(|v| v.holds(&merges)) {
            return Ok(());
        }
        if l.default_branch.is_empty() {
            l.default_branch = gh.default_branch().await?;
        }
        let (commits, too_many) = gh.commits_ahead(&l.default_branch, head.as_str()).await?;
        l.record.vetted = Some(ship::Vetted {
            head: head.clone(),
            foreign: ship::foreign_commits(head, &commits, &merges, &l.record.accepted),
            too_many,
        });
        Ok(())
    }

    /// Each completed task PR's merge commit, with how many commits the
    /// merge made on the story branch.
    async fn task_merges(
        &self,
        l: &Located,
        gh: &RepoClient<'_>,
    ) -> Result<BTreeMap<CommitSha, u32>, ShipError> {
        let mut merges = BTreeMap::new();
        let records = self.store.task_records(&l.repo, &l.story).await?;
        let done = records
            .into_values()
            .filter(|r| r.state == Some(taskgate_core::plan::TaskState::Completed));
        for r in done {
            match (r.merged_as, r.pr) {
                (Some(sha), _) => {
                    merges.insert(sha, r.merged_commits.unwrap_or(1));
                }
                // Merged before taskgate recorded merges (or its webhook
                // was lost): GitHub says what the merge made.
                (None, Some(pr)) => {
                    if let Some(sha) = gh.get_pull(pr.number).await?.merged_as(pr.number)? {
                        merges.insert(sha, 1);
                    }
                }
                (None, None) => {}
            }
        }
        Ok(merges)
    }

    /// `/taskgate accept-commits <commit>` on a story's issue or PR by
    /// `by`: the story branch checked at its head, then the core's
    /// acceptance (recorded, said, the story evaluated again) or why not.
    /// Not its own when the issue is not a story's.
    pub async fn on_accept_commits(
        &self,
        repo: &RepoName,
        issue_or_pr: IssueNumber,
        by: Shipper,
        given: &str,
    ) -> Result<Handled, ShipError> {
        let Some(story) = self.story_of(repo, issue_or_pr).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(mut l) = self.locate(repo, &story, None).await? else {
            return Ok(Handled::NotMine);
        };
        let client = self.client(&l).await?;
        let Some(head) = RepoClient::new(&client, repo)
            .branch_head(&l.branch)
            .await?
        else {
            return Ok(accept_refused(AcceptRefusal::NothingWaiting));
        };
        l.record.head = Some(head.clone());
        self.vet(&mut l, &client, &head).await?;
        let (accepted, audit) = match ship::on_accept_commits(&l.record, given, &by, &l.ctx()) {
            Ok(done) => done,
            Err(why) => return Ok(accept_refused(why)),
        };
        l.record = accepted.record;
        let said = accepted.effects;
        let mut decision = self.evaluate(l, Some(head)).await?;
        decision.effects.splice(0..0, said);
        decision.changes.push(audit.change());
        Ok(Handled::Decided(decision))
    }
}

/// `accept-commits` refused: the core's reason, nothing changed.
fn accept_refused(why: AcceptRefusal) -> Handled {
    Handled::Refused(Refused {
        decision: Decision::nothing(format!("accept-commits refused: {why}")),
        refusal: Refusal::AcceptCommits(why),
    })
}
