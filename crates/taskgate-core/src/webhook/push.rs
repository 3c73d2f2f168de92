//! `push`: a branch moved, was created or was deleted.
//!
//! Owns: which branch a push is to (a story's, a task's, the default
//! branch, another) and whether it brings work to test. Must not: look
//! anything up (whether the story or task exists is the shell's to read).

use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName};
use crate::story::BranchName;
use crate::Actor;

/// A push webhook, in taskgate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    /// The ref as GitHub sent it: `refs/heads/<branch>`, `refs/tags/<tag>`.
    pub git_ref: String,
    pub before: CommitSha,
    pub after: CommitSha,
    /// The repository's default branch, when the payload names it.
    pub default_branch: Option<String>,
    /// The commits GitHub lists (at most 2048).
    pub commits: Vec<PushedCommit>,
    pub deleted: bool,
    /// The ref is new (`before` is all zeros).
    pub created: bool,
    /// Who pushed.
    pub sender: Option<Actor>,
}

/// One commit a push lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedCommit {
    pub id: CommitSha,
    /// New to the repository with this push. GitHub marks a commit that
    /// was on another branch already `false` (a fast-forward onto the
    /// story branch's commits brings none of its own).
    pub distinct: bool,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub removed: Vec<String>,
}

impl PushEvent {
    /// The branch pushed, parsed (a tag is never one of taskgate's).
    pub fn branch(&self) -> BranchName {
        BranchName::parse(&self.git_ref)
    }

    /// The story issue, for a push to a story branch.
    pub fn story_branch(&self) -> Option<IssueNumber> {
        match self.branch() {
            BranchName::Story(n) => Some(n),
            _ => None,
        }
    }

    /// The task issue, for a push to a task branch.
    pub fn task_branch(&self) -> Option<IssueNumber> {
        match self.branch() {
            BranchName::Task { issue, .. } => Some(issue),
            _ => None,
        }
    }

    /// A push to the default branch, which the payload names.
    pub fn to_default_branch(&self) -> bool {
        let branch = self.git_ref.strip_prefix("refs/heads/");
        self.default_branch.is_some() && branch == self.default_branch.as_deref()
    }

    /// A branch made at a commit the repository already had (taskgate's
    /// own task and story branches, or a person's `git push origin
    /// HEAD:new`): GitHub lists no commit, and there is no work to test.
    pub fn creates_branch_without_commits(&self) -> bool {
        self.created && self.commits.is_empty()
    }

    /// Whether the push brings work of its own (SPEC §3: "runs start for
    /// commits that bring work"). It does not when it creates a branch at
    /// a commit the repository had, or when every commit it lists was on
    /// another branch already (`distinct: false`): taskgate fast-forwarding
    /// a task branch to its story branch, or a person pushing a branch
    /// onto commits another one holds. A push listing no commit on an
    /// existing branch (a force-push back to an older commit) moves the
    /// head to something untested, and does bring work.
    pub fn brings_work(&self) -> bool {
        if self.creates_branch_without_commits() {
            return false;
        }
        self.commits.is_empty() || self.commits.iter().any(|c| c.distinct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(git_ref: &str) -> PushEvent {
        PushEvent {
            repo: RepoName::parse("o/r").unwrap(),
            installation: None,
            git_ref: git_ref.into(),
            before: crate::ids::sha("a"),
            after: crate::ids::sha("b"),
            default_branch: Some("main".into()),
            commits: vec![],
            deleted: false,
            created: false,
            sender: None,
        }
    }

    fn commit(distinct: bool) -> PushedCommit {
        PushedCommit {
            id: crate::ids::sha("c"),
            distinct,
            added: vec![],
            modified: vec![],
            removed: vec![],
        }
    }

    #[test]
    fn a_push_names_the_story_or_task_branch_it_is_to() {
        let story = push("refs/heads/taskgate/story-12");
        assert_eq!(story.story_branch(), Some(IssueNumber::new(12)));
        assert_eq!(story.task_branch(), None);
        let task = push("refs/heads/taskgate/task-14-entry");
        assert_eq!(task.task_branch(), Some(IssueNumber::new(14)));
        assert_eq!(task.story_branch(), None);
        assert_eq!(push("refs/heads/feature").story_branch(), None);
    }

    #[test]
    fn only_a_branch_named_as_the_default_one_is_the_default_branch() {
        assert!(push("refs/heads/main").to_default_branch());
        assert!(!push("refs/heads/mainline").to_default_branch());
        assert!(!push("refs/tags/main").to_default_branch());
        let mut unknown = push("refs/heads/main");
        unknown.default_branch = None;
        assert!(!unknown.to_default_branch());
    }

    #[test]
    fn a_push_brings_work_unless_it_creates_a_branch_or_lists_only_known_commits() {
        let mut created = push("refs/heads/taskgate/task-1");
        created.created = true;
        assert!(created.creates_branch_without_commits());
        assert!(!created.brings_work());
        let mut known = push("refs/heads/taskgate/task-1");
        known.commits = vec![commit(false)];
        assert!(!known.brings_work());
        known.commits.push(commit(true));
        assert!(known.brings_work());
        // A force-push back to an older commit lists none, and moves the
        // head to something untested.
        assert!(push("refs/heads/taskgate/task-1").brings_work());
    }
}
