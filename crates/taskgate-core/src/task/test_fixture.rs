//! The task the unit tests of `decide` and `review` act on: one leaf task
//! of a story, its context as the shell would build it.

use crate::config::{MergeMethod, ReviewMode, RunnerKind};
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName};
use crate::task::TaskContext;

/// The story key every context here names.
static STORY: std::sync::LazyLock<crate::ids::StoryId> =
    std::sync::LazyLock::new(|| crate::ids::StoryId::new("file:s"));
/// The task every context here names.
static TASK: std::sync::LazyLock<super::RunSubject> =
    std::sync::LazyLock::new(|| super::RunSubject::Task("data".into()));

/// A commit sha made of one repeated hex digit.
pub(super) fn sha(c: char) -> CommitSha {
    crate::ids::sha(&std::iter::repeat_n(c, 40).collect::<String>())
}

pub(super) struct Fixture {
    pub repo: RepoName,
    pub gates: Vec<String>,
    pub review: ReviewMode,
    /// The clock the decisions see.
    pub now: i64,
    /// Dependencies not complete yet (empty: the task is ready).
    pub waiting_for: Vec<IssueNumber>,
    /// The repository's runner (`local` unless a test says).
    pub runner: RunnerKind,
}

impl Fixture {
    pub(super) fn new(gates: &[&str], review: ReviewMode) -> Fixture {
        Fixture {
            repo: RepoName::parse("o/r").unwrap(),
            gates: gates.iter().map(|g| g.to_string()).collect(),
            review,
            now: 1_000,
            waiting_for: vec![],
            runner: RunnerKind::Local,
        }
    }

    pub(super) fn ctx(&self) -> TaskContext<'_> {
        TaskContext {
            repo: &self.repo,
            installation: InstallationId::new(1),
            story: &STORY,
            task: &TASK,
            title: "Data loading",
            task_marker: "story=file:s task=data",
            task_issue: IssueNumber::new(14),
            branch: "taskgate/task-14-data-loading",
            story_branch: "taskgate/story-12",
            gates: &self.gates,
            waiting_for: &self.waiting_for,
            review: self.review,
            merge_method: MergeMethod::Squash,
            runner: self.runner,
            runner_workflow: "taskgate-run.yml",
            now: self.now,
        }
    }
}
