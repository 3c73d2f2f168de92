//! `pull_request`: a task's, a story's or a revert's pull request moved.
//!
//! Owns: which part of taskgate a pull request is for ([`ShipPull`] for the
//! ship gate, [`TaskPull`] for the runs), read off its branches and whether
//! its head is a fork's. Must not: look anything up (whether the story or
//! task exists is the shell's to read).

use super::action::PullRequestAction;
use super::BranchRef;
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName};
use crate::story::BranchName;
use crate::Actor;

/// A pull request webhook, in taskgate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub action: PullRequestAction,
    pub number: IssueNumber,
    pub head: BranchRef,
    /// The branch it merges into.
    pub base: String,
    /// The repository's id, and its head's (`None`: a deleted fork).
    pub repo_id: u64,
    pub head_repo_id: Option<u64>,
    /// The repository's default branch, when the payload names it.
    pub default_branch: Option<String>,
    pub draft: bool,
    pub merged: bool,
    /// The merge commit (the base branch's new head) once merged.
    pub merge_commit: Option<CommitSha>,
    /// Who merged it, once merged.
    pub merged_by: Option<Actor>,
    /// How many commits it has (a rebase merge makes as many on the base).
    pub commits: Option<u32>,
    /// The label added (`labeled`).
    pub label: Option<String>,
    /// Who acted (for `synchronize`, who pushed).
    pub sender: Option<Actor>,
    /// Who opened it (`pull_request.user`).
    pub author: Option<Actor>,
    /// The issues its body closes with a keyword ("Fixes #9"), as GitHub
    /// reads them (`task::closing_references`).
    pub closes: Vec<IssueNumber>,
    /// The head a `synchronize` replaced (its `before`).
    pub before: Option<CommitSha>,
    /// An `edited` that moved its base (`changes.base`).
    pub base_changed: bool,
}

/// What a pull request is to the ship gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShipPull {
    /// A story's pull request: head `taskgate/story-<n>`.
    Story(IssueNumber),
    /// A rollback's revert: head `taskgate/revert-<n>`, `n` the story.
    Revert(IssueNumber),
}

/// What a pull request is to the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskPull {
    /// An action the runs do not act on (`labeled`, and any other).
    Ignored,
    /// A fork's pull request aimed at a story branch or from a task
    /// branch: refused; `new_head` when it brings a new head.
    ForkForTask { new_head: bool },
    /// A fork's pull request for anything else.
    Fork,
    /// From this repository: a task's own, if its head is a task branch.
    Head,
}

impl PullRequestEvent {
    /// The head is not this repository's: a fork's, or `None` when the
    /// fork was deleted. Compared by id, since a name can be taken again
    /// by someone else (a renamed or deleted repository).
    pub fn from_fork(&self) -> bool {
        self.head_repo_id != Some(self.repo_id)
    }

    /// The ship gate's part: a story or revert branch of this repository
    /// (a fork may name its branch `taskgate/story-<n>` too), into the
    /// default branch when the payload names it. `None`: not the ship
    /// gate's.
    pub fn for_ship(&self) -> Option<ShipPull> {
        let pull = match self.head.branch {
            BranchName::Story(n) => ShipPull::Story(n),
            BranchName::Revert(n) => ShipPull::Revert(n),
            // A part's story PR ships with its story (issue 49 step 6).
            BranchName::Task { .. } | BranchName::Part { .. } | BranchName::NotOurs(_) => {
                return None
            }
        };
        let into_default = self.default_branch.as_ref().is_none_or(|d| *d == self.base);
        (!self.from_fork() && into_default).then_some(pull)
    }

    /// The runs' part.
    pub fn for_runs(&self) -> TaskPull {
        let moved_base = self.action == PullRequestAction::Edited && self.base_changed;
        if matches!(
            self.action,
            PullRequestAction::Labeled | PullRequestAction::Other(_)
        ) || (self.action == PullRequestAction::Edited && !moved_base)
        {
            return TaskPull::Ignored;
        }
        if !self.from_fork() {
            return TaskPull::Head;
        }
        let aims_at_taskgate = matches!(BranchName::parse(&self.base), BranchName::Story(_))
            || matches!(self.head.branch, BranchName::Task { .. });
        if !aims_at_taskgate {
            return TaskPull::Fork;
        }
        let new_head = matches!(
            self.action,
            PullRequestAction::Opened
                | PullRequestAction::Synchronize
                | PullRequestAction::Reopened
        );
        TaskPull::ForkForTask { new_head }
    }

    /// Who pushed the head, for `synchronize` (its sender pushed the new
    /// commits); `None` for any other action.
    pub fn pusher(&self) -> Option<&Actor> {
        (self.action == PullRequestAction::Synchronize)
            .then_some(self.sender.as_ref())
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(action: &str, head: &str, base: &str, from_fork: bool) -> PullRequestEvent {
        PullRequestEvent {
            repo: RepoName::parse("o/r").unwrap(),
            installation: None,
            action: PullRequestAction::parse(action),
            number: IssueNumber::new(7),
            head: BranchRef::new(head, crate::ids::sha("abc")),
            base: base.into(),
            repo_id: 1,
            head_repo_id: if from_fork { Some(2) } else { Some(1) },
            default_branch: Some("main".into()),
            draft: false,
            merged: false,
            merge_commit: None,
            merged_by: None,
            commits: None,
            label: None,
            sender: None,
            author: None,
            closes: vec![],
            before: None,
            base_changed: false,
        }
    }

    #[test]
    fn a_story_or_revert_branch_of_this_repository_into_the_default_branch_is_the_ship_gates() {
        let story = pull("opened", "taskgate/story-12", "main", false);
        assert_eq!(
            story.for_ship(),
            Some(ShipPull::Story(IssueNumber::new(12)))
        );
        let revert = pull("closed", "taskgate/revert-12", "main", false);
        assert_eq!(
            revert.for_ship(),
            Some(ShipPull::Revert(IssueNumber::new(12)))
        );
        let mut unknown_default = pull("opened", "taskgate/story-12", "dev", false);
        unknown_default.default_branch = None;
        assert_eq!(
            unknown_default.for_ship(),
            Some(ShipPull::Story(IssueNumber::new(12)))
        );
    }

    #[test]
    fn a_forks_story_branch_another_base_or_another_branch_is_not_the_ship_gates() {
        assert_eq!(
            pull("opened", "taskgate/story-12", "main", true).for_ship(),
            None
        );
        assert_eq!(
            pull("opened", "taskgate/story-12", "dev", false).for_ship(),
            None
        );
        assert_eq!(
            pull("opened", "taskgate/task-3-x", "main", false).for_ship(),
            None
        );
        assert_eq!(pull("opened", "feature", "main", false).for_ship(), None);
    }

    #[test]
    fn a_fork_aimed_at_a_story_or_from_a_task_branch_is_refused_with_its_new_head() {
        let at_story = pull("opened", "feature", "taskgate/story-12", true);
        assert_eq!(
            at_story.for_runs(),
            TaskPull::ForkForTask { new_head: true }
        );
        let from_task = pull("closed", "taskgate/task-3-x", "main", true);
        assert_eq!(
            from_task.for_runs(),
            TaskPull::ForkForTask { new_head: false }
        );
        assert_eq!(
            pull("opened", "feature", "main", true).for_runs(),
            TaskPull::Fork
        );
        let mut deleted_fork = pull("opened", "taskgate/task-3-x", "main", false);
        deleted_fork.head_repo_id = None;
        assert!(deleted_fork.from_fork());
    }

    #[test]
    fn the_runs_ignore_labels_and_look_up_this_repositorys_heads() {
        let labeled = pull("labeled", "taskgate/task-3-x", "taskgate/story-1", false);
        assert_eq!(labeled.for_runs(), TaskPull::Ignored);
        let other = pull("assigned", "taskgate/task-3-x", "taskgate/story-1", true);
        assert_eq!(other.for_runs(), TaskPull::Ignored);
        let own = pull("synchronize", "feature", "main", false);
        assert_eq!(own.for_runs(), TaskPull::Head);
    }

    #[test]
    fn only_a_synchronize_names_a_pusher() {
        let pusher = Actor {
            id: crate::ids::UserId::new(5),
            login: "ana".into(),
            is_bot: false,
            via_app: None,
        };
        let mut sync = pull(
            "synchronize",
            "taskgate/task-3-x",
            "taskgate/story-1",
            false,
        );
        sync.sender = Some(pusher.clone());
        assert_eq!(sync.pusher(), Some(&pusher));
        let mut opened = sync.clone();
        opened.action = PullRequestAction::Opened;
        assert_eq!(opened.pusher(), None);
    }
}
