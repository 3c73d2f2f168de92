//! A ship train car's merge commit (issue 31): the base with each story's
//! head merged in queue order on `taskgate/ship-batch-<car>`, with
//! GitHub's merges API, as today's one-story proof commit is built.
//!
//! Owns: [`RepoClient::build_car`]. Must not: decide what a conflict
//! means for the train (`core::ship::on_train_event` does, from
//! `TrainEvent::Conflict`) or read the store.
//!
//! What is built is what GitHub's answers say was built (issue 51): each
//! merge must come back with exactly the commit before it (the base, or
//! the previous merge) and the story's pinned head as parents
//! (`RepoClient::merge_onto`). A writer's push between two of these calls
//! makes the attempt worthless: the car is built again from the base on a
//! fresh branch, at most [`BUILD_ATTEMPTS`] branches in all, and what was
//! found is never adopted.

use super::refs::{fresh_branch, Merged, BUILD_ATTEMPTS};
use super::RepoClient;
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
    /// Someone else's commit came in between taskgate's calls on each of
    /// [`BUILD_ATTEMPTS`] branches, the last `branch`: nothing was built.
    Raced { branch: String },
}

impl RepoClient<'_> {
    /// Points `branch` at `base` and merges each head into it in order;
    /// `message(story)` is each merge commit's message. A head the commit
    /// before it already contains adds no commit (GitHub's 204). Raced,
    /// the car is built again on a fresh branch.
    pub async fn build_car(
        &self,
        branch: &str,
        base: &CommitSha,
        heads: &[(StoryId, CommitSha)],
        message: impl Fn(&StoryId) -> String,
    ) -> Result<CarBuild, GitHubError> {
        let mut on = branch.to_owned();
        for attempt in 1..=BUILD_ATTEMPTS {
            if attempt > 1 {
                on = fresh_branch(branch);
            }
            if let Some(build) = self.build_car_on(&on, base, heads, &message).await? {
                return Ok(build);
            }
        }
        Ok(CarBuild::Raced { branch: on })
    }

    /// One attempt at [`RepoClient::build_car`] on `branch`; `None` when
    /// a merge came back on a commit taskgate did not make.
    async fn build_car_on(
        &self,
        branch: &str,
        base: &CommitSha,
        heads: &[(StoryId, CommitSha)],
        message: &impl Fn(&StoryId) -> String,
    ) -> Result<Option<CarBuild>, GitHubError> {
        self.set_branch(branch, base).await?;
        let mut tip = base.clone();
        for (story, head) in heads {
            let merged = match self.merge_onto(branch, &tip, head, &message(story)).await {
                Err(GitHubError::Http { message, .. }) if refuses_the_story(&message) => {
                    let story = story.clone();
                    return Ok(Some(CarBuild::Refused { story, message }));
                }
                merged => merged?,
            };
            match merged {
                Merged::Made(commit) => tip = commit,
                Merged::Contained => {}
                Merged::Conflict(why) => {
                    let story = story.clone();
                    return Ok(Some(CarBuild::Conflict { story, why }));
                }
                Merged::Raced { found } => {
                    tracing::warn!(%branch, ?found, "a merge came back on someone else's commit: the car is built again on a fresh branch");
                    return Ok(None);
                }
            }
        }
        let tree = self.commit_tree(&tip).await?;
        let tree = CommitSha::parse(&tree)
            .map_err(|e| GitHubError::Unexpected(format!("GET /git/commits/{tip}: {e}")))?;
        Ok(Some(CarBuild::Built(Built { commit: tip, tree })))
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
        let base = crate::testing::sha(&repo.push_files(
            "main",
            &[("shared.txt", "base\n")],
            "B",
            "alice",
        ));
        let mut heads = Vec::new();
        for n in 1..=3 {
            let branch = format!("taskgate/story-{n}");
            let file = format!("story{n}.txt");
            let head = repo.push_files(&branch, &[(file.as_str(), "x\n")], "S", "alice");
            heads.push((story(n), crate::testing::sha(&head)));
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
            Some(built.commit.as_str().to_owned())
        );
        for n in 1..=3 {
            let file = format!("story{n}.txt");
            assert_eq!(
                repo.file(built.commit.as_str(), &file).as_deref(),
                Some("x\n")
            );
        }
        // Each merge's first parent is the one before it, down to the base.
        let mut tip = built.commit.clone();
        for (_, head) in heads.iter().rev() {
            let parents = gh_repo.commit_parents(&tip).await.unwrap();
            assert_eq!(parents[1], *head);
            tip = parents[0].clone();
        }
        assert_eq!(tip, base);
        assert_eq!(
            built.tree.as_str(),
            repo.commit(built.commit.as_str()).unwrap().tree
        );

        // A fourth story that changes what the second changed conflicts:
        // it is named, and the car is not built.
        let clash = repo.push_files("taskgate/story-4", &[("story2.txt", "y\n")], "S", "alice");
        heads.insert(2, (story(4), crate::testing::sha(&clash)));
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

    /// A writer who pushes `mallory.txt` onto the branch taskgate just
    /// wrote, after each of its writes to a branch matching `pattern`.
    fn push_after_every_write(repo: &fakehub::RepoHandle, pattern: &'static str) {
        repo.on_next_write_to(pattern, move |repo, branch| {
            repo.push_files(branch, &[("mallory.txt", "mine\n")], "Mine", "mallory");
            push_after_every_write(repo, pattern);
        });
    }

    /// Two stories' heads on `acme/widgets`, and the base they merge on.
    fn two_stories(repo: &fakehub::RepoHandle) -> (CommitSha, Vec<(StoryId, CommitSha)>) {
        let base = crate::testing::sha(&repo.push_files(
            "main",
            &[("shared.txt", "base\n")],
            "B",
            "alice",
        ));
        let heads = (1..=2)
            .map(|n| {
                let (branch, file) = (format!("taskgate/story-{n}"), format!("story{n}.txt"));
                let head = repo.push_files(&branch, &[(file.as_str(), "x\n")], "S", "alice");
                (story(n), crate::testing::sha(&head))
            })
            .collect();
        (base, heads)
    }

    #[tokio::test]
    async fn a_push_racing_the_car_is_never_built_on_the_car_is_built_again_on_a_fresh_branch() {
        let (gh, repo, client) = super::super::fake_installation().await;
        let name = RepoName::parse("acme/widgets").unwrap();
        let gh_repo = RepoClient::new(&client, &name);
        let (base, heads) = two_stories(&repo);
        // Mallory pushes onto the batch branch between taskgate's reset
        // and its first merge.
        repo.on_next_write_to("taskgate/ship-batch-*", |repo, branch| {
            repo.push_files(branch, &[("mallory.txt", "mine\n")], "Mine", "mallory");
        });
        let message = |s: &StoryId| format!("Ship {s} in batch 1");
        let built = gh_repo
            .build_car("taskgate/ship-batch-1", &base, &heads, message)
            .await
            .unwrap();
        let CarBuild::Built(built) = built else {
            panic!("{built:?}");
        };
        assert_eq!(repo.races_armed(), 0, "her push came in");
        assert_eq!(repo.file(built.commit.as_str(), "mallory.txt"), None);
        // The car is exactly the base and the two heads, merged in order.
        let mut tip = built.commit.clone();
        for (_, head) in heads.iter().rev() {
            let parents = gh_repo.commit_parents(&tip).await.unwrap();
            assert_eq!(parents.len(), 2);
            assert_eq!(parents[1], *head);
            tip = parents[0].clone();
        }
        assert_eq!(tip, base);
        // Built on a fresh branch, which holds it; the raced one is left.
        let fresh: Vec<String> = (gh.requests().iter())
            .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
            .filter_map(|r| r.body["ref"].as_str().map(str::to_owned))
            .collect();
        let [first, second] = fresh.as_slice() else {
            panic!("{fresh:?}");
        };
        assert_eq!(first, "refs/heads/taskgate/ship-batch-1");
        let second = second.strip_prefix("refs/heads/").unwrap();
        assert!(second.starts_with("taskgate/ship-batch-1-"), "{second}");
        assert_eq!(
            repo.branch_sha(second),
            Some(built.commit.as_str().to_owned())
        );
        gh.assert_contract_kept();
    }

    #[tokio::test]
    async fn a_car_raced_on_every_branch_is_not_built() {
        let (gh, repo, client) = super::super::fake_installation().await;
        let name = RepoName::parse("acme/widgets").unwrap();
        let gh_repo = RepoClient::new(&client, &name);
        let (base, heads) = two_stories(&repo);
        push_after_every_write(&repo, "taskgate/ship-batch-*");
        let message = |s: &StoryId| format!("Ship {s} in batch 1");
        let built = gh_repo
            .build_car("taskgate/ship-batch-1", &base, &heads, message)
            .await
            .unwrap();
        let CarBuild::Raced { branch } = built else {
            panic!("{built:?}");
        };
        assert!(branch.starts_with("taskgate/ship-batch-1-"), "{branch}");
        let branches = (gh.requests().iter())
            .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs") && r.status == 201)
            .count();
        assert_eq!(branches, BUILD_ATTEMPTS as usize, "one branch per attempt");
        gh.assert_contract_kept();
    }
}
