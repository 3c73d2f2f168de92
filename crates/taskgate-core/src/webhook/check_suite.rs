//! `check_suite`: GitHub asks for checks on a push, or a person presses
//! "Re-run all checks".
//!
//! Owns: the event's shape, and whether it asks for a retry.
//! Must not: look anything up (whether the branch is a task's is the
//! shell's to read).

use super::action::CheckSuiteAction;
use crate::ids::{CommitSha, InstallationId, RepoName};
use crate::Actor;

/// A check suite webhook, in taskgate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSuiteEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub action: CheckSuiteAction,
    pub head_sha: CommitSha,
    /// The branch it checks (none for a suite of a fork's or a tag's).
    pub head_branch: Option<String>,
    /// Who pressed "Re-run all checks" (for `rerequested`).
    pub sender: Option<Actor>,
}

impl CheckSuiteEvent {
    /// "Re-run all checks": a retry of the head. GitHub asks for a suite on
    /// every push (`requested`), taskgate's own branch creations and
    /// merges included; the push itself is what starts a run.
    pub fn is_retry(&self) -> bool {
        self.action == CheckSuiteAction::Rerequested
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_re_run_all_checks_is_a_retry() {
        let mut suite = CheckSuiteEvent {
            repo: RepoName::parse("o/r").unwrap(),
            installation: None,
            action: CheckSuiteAction::Requested,
            head_sha: crate::ids::sha("abc"),
            head_branch: Some("taskgate/task-1".into()),
            sender: None,
        };
        assert!(!suite.is_retry());
        suite.action = CheckSuiteAction::Rerequested;
        assert!(suite.is_retry());
        suite.action = CheckSuiteAction::parse("completed");
        assert!(!suite.is_retry());
    }
}
