//! GitHub's repository webhooks as domain events: a pull request moved, a
//! branch was pushed, a check run or suite was asked for again, a workflow
//! run progressed. The intake (`intake/translate.rs`) builds them from the
//! payloads; the shell's handlers take them, never a payload.
//!
//! Owns: the events' shapes (ids typed, actions as enums, the sender as an
//! [`Actor`](crate::Actor)) and the questions every handler used to answer
//! for itself: is this from a fork, is this branch ours, which part of
//! taskgate is it for. Answered once here, with unit tests.
//! Must not: know JSON or a payload's layout, or read state: a question
//! that needs the store (is this story known) stays the shell's.

pub mod action;
mod check_run;
mod check_suite;
mod pull_request;
mod push;
mod review;
mod workflow_run;

pub use check_run::CheckRunEvent;
pub use check_suite::CheckSuiteEvent;
pub use pull_request::{PullRequestEvent, ShipPull, TaskPull};
pub use push::{PushEvent, PushedCommit};
pub use review::{ReviewEvent, ReviewVerdict};
pub use workflow_run::{RunRepository, WorkflowRun, WorkflowRunEvent};

use crate::ids::CommitSha;
use crate::story::BranchName;

/// A branch at a commit, as a webhook names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchRef {
    /// The name as GitHub sent it (without `refs/heads/`): what the store
    /// and GitHub know the branch by.
    pub name: String,
    /// The name parsed: which of taskgate's branches it is, if any.
    pub branch: BranchName,
    pub sha: CommitSha,
}

impl BranchRef {
    pub fn new(name: &str, sha: CommitSha) -> Self {
        BranchRef {
            name: name.to_owned(),
            branch: BranchName::parse(name),
            sha,
        }
    }
}
