//! A ship train car's merge commit (issue 31): the base with each story's
//! head merged in queue order on `taskgate/ship-batch-<car>`, with
//! GitHub's merges API, as today's one-story proof commit is built.
//!
//! Owns: [`RepoClient::build_car`]. Must not: decide what a conflict
//! means for the train (`core::ship::on_train_event` does, from
//! `TrainEvent::Conflict`) or read the store.

use super::{MergeOutcome, RepoClient};
use crate::github::client::GitHubError;
use taskgate_core::ids::{CommitSha, StoryId};
use taskgate_core::ship::{Built, Violation};

/// What building a car's commit came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CarBuild {
    /// Every head merged: the car's commit and its tree (what proofs are
    /// keyed by).
    Built(Built),
    /// `story`'s head does not merge cleanly on the base and the heads
    /// before it; nothing after it was merged.
    Conflict { story: StoryId, why: String },
    /// GitHub refused to merge `story`'s head for what it changes (a
    /// workflow file without the `workflows` permission): `message` in its
    /// words. A car without it may be built; nothing after it was merged.
    Refused { story: StoryId, message: String },
}

impl RepoClient<'_> {
    /// Points `branch` at `base` and merges each head into it in order;
    /// `message(story)` is each merge commit's message. A head the branch
    /// already contains adds no commit (GitHub's 204).
    pub async fn build_car(
        &self,
        branch: &str,
        base: &CommitSha,
        heads: &[(StoryId, CommitSha)],
        message: impl Fn(&StoryId) -> String,
    ) -> Result<CarBuild, GitHubError> {
        self.set_branch(branch, base).await?;
        let mut tip = base.clone();
        for (story, head) in heads {
            let merged = match self.merge_into(branch, head, &message(story)).await {
                Err(GitHubError::Http { message, .. }) if refuses_the_story(&message) => {
                    let story = story.clone();
                    return Ok(CarBuild::Refused { story, message });
                }
                merged => merged?,
            };
            match merged {
                MergeOutcome::Merged(commit) => tip = commit,
                MergeOutcome::NothingToMerge => {}
                MergeOutcome::Conflict(why) => {
                    return Ok(CarBuild::Conflict {
                        story: story.clone(),
                        why,
                    })
                }
            }
        }
        let tree = CommitSha(self.commit_tree(&tip).await?);
        Ok(CarBuild::Built(Built { commit: tip, tree }))
    }
}

/// Whether GitHub's refusal of a merge is for what the story changes, so
/// that a car without the story would be built: a workflow file the App
/// may not write. Any other refusal (a rule on the batch branches) would
/// meet every car, and is the caller's error.
fn refuses_the_story(message: &str) -> bool {
    let violations = taskgate_core::ship::violations(message);
    !violations.is_empty()
        && (violations.iter()).all(|v| matches!(v, Violation::WorkflowsPermission { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::ids::RepoName;

    fn story(n: u32) -> StoryId {
        StoryId::new(format!("issue:{n}"))
    }

    #[tokio::test]
    async fn a_car_merges_each_story_in_order_on_the_base_and_stops_at_a_conflict() {
        let (gh, repo, client) = super::super::fake_installation().await;
        let name = RepoName::parse("acme/widgets").unwrap();
        let gh_repo = RepoClient::new(&client, &name);
        let base = CommitSha(repo.push_files("main", &[("shared.txt", "base\n")], "B", "alice"));
        let mut heads = Vec::new();
        for n in 1..=3 {
            let branch = format!("taskgate/story-{n}");
            let file = format!("story{n}.txt");
            let head = repo.push_files(&branch, &[(file.as_str(), "x\n")], "S", "alice");
            heads.push((story(n), CommitSha(head)));
        }
        let message = |s: &StoryId| format!("Ship {s} in batch 1");
        let built = gh_repo
            .build_car("taskgate/ship-batch-1", &base, &heads, message)
            .await
            .unwrap();
        let CarBuild::Built(built) = built else {
            panic!("{built:?}");
        };
        assert_eq!(
            repo.branch_sha("taskgate/ship-batch-1"),
            Some(built.commit.0.clone())
        );
        for n in 1..=3 {
            let file = format!("story{n}.txt");
            assert_eq!(repo.file(&built.commit.0, &file).as_deref(), Some("x\n"));
        }
        // Each merge's first parent is the one before it, down to the base.
        let mut tip = built.commit.clone();
        for (_, head) in heads.iter().rev() {
            let parents = gh_repo.commit_parents(&tip).await.unwrap();
            assert_eq!(parents[1], *head);
            tip = parents[0].clone();
        }
        assert_eq!(tip, base);
        assert_eq!(built.tree.0, repo.commit(&built.commit.0).unwrap().tree);

        // A fourth story that changes what the second changed conflicts:
        // it is named, and the car is not built.
        let clash = repo.push_files("taskgate/story-4", &[("story2.txt", "y\n")], "S", "alice");
        heads.insert(2, (story(4), CommitSha(clash)));
        let refused = gh_repo
            .build_car("taskgate/ship-batch-2", &base, &heads, message)
            .await
            .unwrap();
        let CarBuild::Conflict { story: who, why } = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(who, story(4));
        assert!(why.contains("Merge conflict"), "{why}");
        gh.assert_contract_kept();
    }
}
