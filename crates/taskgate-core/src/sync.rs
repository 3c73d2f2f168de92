//! Plan → GitHub: the reconciler that makes a story's issues, links, labels
//! and branches match its plan (SPEC §1–3).
//!
//! Owns: deciding which GitHub objects to create or change, given the plan
//! and what taskgate last wrote to GitHub ([`RepoView`]).
//! Must not: do IO, await, or read the clock; it only returns effects.
//!
//! The one idea a reader needs: **reconciliation converges**. A pass first
//! creates whatever issues are missing (their numbers and ids are not known
//! until GitHub answers) and ends with [`Effect::Reconcile`], which runs the
//! next pass once the creates are recorded. A pass that finds every issue
//! compares each desired title, body, label set, sub-issue parent and
//! blocked-by set with the recorded one and emits only the differences, so
//! an unchanged plan costs zero write calls.

mod decide;
mod desired;
mod pace;
mod preview;
pub mod reach;
#[cfg(test)]
mod test_support;

use std::collections::BTreeMap;

pub use decide::{
    checked_plan, decide_comment_plan, decide_plan, decide_plan_comment_without_yaml,
    decide_reconcile, decide_removed_plan, record_branch_start, CommentPlan, Known,
    MAX_RECONCILE_ROUNDS, PLAN_CHECK,
};
pub use desired::{reconcile, IssueRecord, RepoView};
pub use pace::announce_pace;
pub use preview::{decide_plan_preview, PlanPreview};

use crate::ids::{CommitSha, InstallationId, RepoName, StoryId};

/// A story's last valid plan and the repository files discovery saw, kept
/// so that later passes render exactly what the first one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryPlan {
    pub repo: RepoName,
    /// The story key (`file:momentum`, `issue:12`).
    pub story: StoryId,
    pub installation: InstallationId,
    /// Where the plan came from: a file path or `issue #n`.
    pub source: String,
    pub plan: String,
    pub config: Option<String>,
    pub files: BTreeMap<String, String>,
    /// The default branch's head when the plan was read; branches start here.
    pub sha: CommitSha,
}
