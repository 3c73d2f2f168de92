//! `merge_group` webhooks of GitHub's merge queue. For a story shipping
//! through it: `checks_requested` proves the group (the story's gates on
//! its commit, the `@ship` pseudo task), `destroyed` ends the ship when
//! the group left the queue without merging. For a group of any other
//! pull request: `taskgate/ship-gate` is neutral there (`core::ship::
//! gate_of_group_without_story`), so the repository's own checks decide.
//!
//! Owns: finding the story a group is for (its pull request, named in the
//! group's ref); reading what the core judges a group by — its tree, the
//! tree GitHub makes merging the shipped head into the group's base on
//! `taskgate/queue-check-<issue>` (its parents checked), the groups
//! ahead of it (remembered from their own `checks_requested`) — and, for
//! a group dequeued, the story branch's head. Must not: decide
//! (`core::ship::on_merge_group_*`) or run the proof (the processor does,
//! on the outcome's proof run).

use std::collections::HashMap;
use std::sync::Mutex;

use super::queue::ShipOutcome;
use super::*;
use crate::intake::payload::{MergeGroupAction, MergeGroupPayload};
use taskgate_core::ship::GroupReference;

/// How many groups ahead are followed at most.
const MAX_AHEAD: usize = 100;

/// The merge groups taskgate was asked to check and that were not
/// destroyed yet, by repository and group commit: the pull request each
/// adds, and the commit it was built on. A group's base is the group
/// ahead of it, so following bases from a group to the branch's head
/// names every pull request its tree holds besides its own. Kept in
/// memory: after a restart, what is ahead is unknown until the queue
/// builds its groups again (and said so).
#[derive(Default)]
pub struct GroupsSeen {
    groups: Mutex<HashMap<(RepoName, CommitSha), (IssueNumber, CommitSha)>>,
}

impl GroupsSeen {
    fn seen(&self, repo: &RepoName, group: &CommitSha, number: IssueNumber, base: &CommitSha) {
        self.lock()
            .insert((repo.clone(), group.clone()), (number, base.clone()));
    }

    fn destroyed(&self, repo: &RepoName, group: &CommitSha) {
        self.lock().remove(&(repo.clone(), group.clone()));
    }

    /// The pull requests of the groups between `branch_head` and `base`,
    /// nearest the branch first; `None` when a group on the way is not
    /// known.
    fn ahead(
        &self,
        repo: &RepoName,
        base: &CommitSha,
        branch_head: Option<&CommitSha>,
    ) -> Option<Vec<IssueNumber>> {
        let groups = self.lock();
        let mut ahead = Vec::new();
        let mut at = base.clone();
        while Some(&at) != branch_head {
            let (number, below) = groups.get(&(repo.clone(), at.clone()))?;
            if ahead.len() == MAX_AHEAD {
                return None;
            }
            ahead.push(*number);
            at = below.clone();
        }
        ahead.reverse();
        Some(ahead)
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(RepoName, CommitSha), (IssueNumber, CommitSha)>> {
        self.groups
            .lock()
            .expect("the merge groups seen are not poisoned")
    }
}

impl Ship {
    /// A `merge_group` webhook: the decision for the story whose PR the
    /// group merges, and the proof run it asks for; the neutral gate for
    /// a group of any other pull request.
    pub async fn on_merge_group(&self, p: &MergeGroupPayload) -> Result<ShipOutcome, ShipError> {
        let repo = RepoName::parse(&p.repository.full_name)
            .map_err(|e| ShipError::Payload(e.to_string()))?;
        let Some(number) = p.merge_group.pull_number() else {
            return Ok(Decision::nothing("a merge group of no pull request").into());
        };
        let group = &p.merge_group.head_sha;
        match &p.action {
            MergeGroupAction::ChecksRequested => {
                self.groups
                    .seen(&repo, group, number, &p.merge_group.base_sha)
            }
            MergeGroupAction::Destroyed => self.groups.destroyed(&repo, group),
            MergeGroupAction::Other(_) => {}
        }
        let story = self.story_of(&repo, number).await?;
        let default = p.repository.default_branch.as_deref();
        let located = match &story {
            Some(story) => self.locate(&repo, story, default).await?,
            None => None,
        };
        let Some(l) = located else {
            return self.on_group_without_story(&repo, p, number).await;
        };
        match &p.action {
            MergeGroupAction::ChecksRequested => {
                let client = self.client(&l).await?;
                let gh = RepoClient::new(&client, &repo);
                let Some(head) = ship::queued_head(&l.record).cloned() else {
                    let d = ship::on_merge_group_checks(&l.record, &unread(p), &l.ctx());
                    return Ok(l.outcome(d.0, d.1, taskgate_core::task::RunSubject::ShipProof));
                };
                let facts = self.read_group(&gh, &repo, (l.issue, &head), p).await?;
                let (d, step) = ship::on_merge_group_checks(&l.record, &facts, &l.ctx());
                Ok(l.outcome(d, step, taskgate_core::task::RunSubject::ShipProof))
            }
            MergeGroupAction::Destroyed => {
                let reason = p.reason.as_deref().unwrap_or("dequeued");
                // GitHub drops a PR whose head moved, maybe before the push
                // reaches taskgate: the branch says which reason it was.
                let head = match reason {
                    "merged" | "invalidated" => None,
                    _ => {
                        let client = self.client(&l).await?;
                        RepoClient::new(&client, &repo)
                            .branch_head(&l.branch)
                            .await?
                    }
                };
                let d = ship::on_merge_group_destroyed(
                    &l.record,
                    group,
                    reason,
                    head.as_ref(),
                    &l.ctx(),
                );
                Ok(l.finish(d).into())
            }
            MergeGroupAction::Other(action) => {
                Ok(Decision::nothing(format!("merge_group {action}: nothing to do")).into())
            }
        }
    }

    /// What the core judges the story's group by: its tree, the tree of
    /// its base with the shipped `head` merged, and the groups ahead.
    async fn read_group(
        &self,
        gh: &RepoClient<'_>,
        repo: &RepoName,
        (issue, head): (IssueNumber, &CommitSha),
        p: &MergeGroupPayload,
    ) -> Result<ship::MergeGroup, ShipError> {
        let group = &p.merge_group;
        let tree = gh.commit_tree(&group.head_sha).await?;
        let check_branch = format!("taskgate/queue-check-{issue}");
        let message = format!(
            "taskgate: the story of #{issue} at {} merged into {}",
            head.short(),
            group.base_sha.short()
        );
        let expected = gh
            .merged_tree(&check_branch, (&group.base_sha, head), &message)
            .await?;
        let branch = base_branch(&group.base_ref);
        let branch_head = gh.branch_head(branch).await?;
        let ahead = self
            .groups
            .ahead(repo, &group.base_sha, branch_head.as_ref())
            .unwrap_or_default();
        Ok(ship::MergeGroup {
            commit: group.head_sha.clone(),
            tree,
            base: group.base_sha.clone(),
            expected,
            ahead,
        })
    }

    /// A group of pull request `number`, which is no story's: its gate,
    /// neutral unless the queue's grouping would land a story ahead of it
    /// on the strength of it.
    async fn on_group_without_story(
        &self,
        repo: &RepoName,
        p: &MergeGroupPayload,
        number: IssueNumber,
    ) -> Result<ShipOutcome, ShipError> {
        if !matches!(p.action, MergeGroupAction::ChecksRequested) {
            return Ok(Decision::nothing("a merge group of no story's PR").into());
        }
        let group = &p.merge_group;
        let said = || {
            format!(
                "merge group {} of #{number}, no story's: its gate",
                group.head_sha.short()
            )
        };
        // No story of the repository is in its merge queue: none can be
        // ahead of this group, whatever the grouping, and GitHub need not
        // be asked anything (most repositories' groups are all of this kind).
        let records = self.store.story_records(repo).await?;
        if !records.iter().any(|(_, r)| ship::queued_head(r).is_some()) {
            let gate = ship::gate_of_group_without_story(
                repo,
                (&group.head_sha, number),
                Some(&[]),
                taskgate_core::ship::QueueGrouping::AllGreen,
            );
            return Ok(Decision {
                effects: vec![gate],
                ..Decision::nothing(said())
            }
            .into());
        }
        let Some(installation) = p.installation.as_ref().map(|i| i.id) else {
            return Ok(Decision::nothing("a merge group without an installation").into());
        };
        let client = self.github.installation_client(installation).await?;
        let gh = RepoClient::new(&client, repo);
        let branch = base_branch(&group.base_ref);
        let branch_head = gh.branch_head(branch).await?;
        let ahead = self
            .groups
            .ahead(repo, &group.base_sha, branch_head.as_ref());
        let stories_ahead = match ahead {
            Some(prs) => {
                let mut stories = Vec::new();
                for n in prs {
                    if self.story_of(repo, n).await?.is_some() {
                        stories.push(n);
                    }
                }
                Some(stories)
            }
            None => None,
        };
        let grouping = gh.branch_rules(branch).await?.queue.grouping;
        let gate = ship::gate_of_group_without_story(
            repo,
            (&group.head_sha, number),
            stories_ahead.as_deref(),
            grouping,
        );
        Ok(Decision {
            effects: vec![gate],
            ..Decision::nothing(said())
        }
        .into())
    }
}

impl Ship {
    /// The neutral gate on an ordinary pull request's head
    /// (`core::ship::gate_of_ordinary_pull`), never on a story's head.
    pub async fn gate_of_ordinary_pull(
        &self,
        pull: &PullRequestEvent,
    ) -> Result<Option<taskgate_core::Effect>, ShipError> {
        if ship::gate_of_ordinary_pull(pull, &[]).is_none() {
            return Ok(None);
        }
        let records = self.store.story_records(&pull.repo).await?;
        let heads: Vec<&CommitSha> = records.iter().flat_map(|(_, r)| story_heads(r)).collect();
        Ok(ship::gate_of_ordinary_pull(pull, &heads))
    }
}

/// The commits a story's own gate is, or was last, written on.
fn story_heads(r: &StoryRecord) -> impl Iterator<Item = &CommitSha> {
    let proof = r.proof.as_ref();
    [
        r.head.as_ref(),
        r.pinned.as_ref(),
        proof.map(|p| &p.head),
        proof.and_then(|p| p.commit.as_ref()),
    ]
    .into_iter()
    .flatten()
}

/// The branch a group merges into, from its `base_ref`.
fn base_branch(base_ref: &str) -> &str {
    base_ref.strip_prefix("refs/heads/").unwrap_or(base_ref)
}

/// A group whose facts were not read (its story is not in the queue:
/// the core ignores it).
fn unread(p: &MergeGroupPayload) -> ship::MergeGroup {
    ship::MergeGroup {
        commit: p.merge_group.head_sha.clone(),
        tree: String::new(),
        base: p.merge_group.base_sha.clone(),
        expected: GroupReference::Unread,
        ahead: vec![],
    }
}
