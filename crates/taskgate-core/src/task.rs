//! A leaf task's life through its acceptance runs (SPEC §3, §6): which
//! commit is tested, which attempt is current, what each gate last said, and
//! the state that follows (`in-progress` → `testing` → `review` or
//! `test-failed`, `completed` when its pull request merges).
//!
//! Owns: [`TaskRecord`] (stored per task, as JSON) and the transitions
//! `on_*` that turn a trigger or a runner report into a new record, the
//! check-run effects, and the run to queue or cancel.
//! Must not: do IO, await or read the clock (`now` comes in), run anything,
//! or know webhooks: the shell (`app::task`) translates webhooks into
//! [`Trigger`]s and runner progress into [`RunProgress`].
//!
//! Two ideas a reader needs:
//! - **One current attempt.** Every trigger that tests a new commit (or a
//!   retry) starts attempt n+1 and supersedes a queued or running one; its
//!   check runs are completed as cancelled and the shell stops its
//!   processes. Reports for any attempt but the current one are ignored, so
//!   a slow, superseded run can never overwrite a newer verdict.
//! - **Verdicts per gate.** A retry may run one gate; the task passes when
//!   every gate of the plan has passed at the head commit.

mod check;
mod decide;
mod deps;
mod fix_pull;
mod fork;
mod heads;
mod loop_hook;
mod merged_past;
pub mod milestone;
mod moot;
mod progress;
#[cfg(test)]
mod props;
mod ready;
mod render;
mod review;
mod review_text;
mod runner_fault;
mod subject;
#[cfg(test)]
mod test_fixture;

pub use check::{check_key, parse_check_key, CheckKey};
pub use decide::{
    on_branch_started, on_dependencies_complete, on_pull_closed, on_ready_for_review,
    on_run_progress, on_trigger, HeadSource, PullClosed, Pusher, RunProgress, TaskContext,
    TaskDecision, Trigger,
};
pub use deps::{env_name, proven_head, render_actions_unsupported, run_deps, RunDep};
pub use fix_pull::{
    closing_references, decide_fix_pull, on_fix_pushed, render_fix_merge_refused,
    render_left_to_a_person, render_wrong_base, FixPull, FixPullFacts, NotAFix, TodoTask,
};
pub use fork::decide_fork_pull;
pub use loop_hook::{
    follow_verdict, loop_context, on_check_runs_known, on_lifetime_tick, LoopInputs,
};
pub use moot::on_moot;
pub use progress::{Progress, RunEvent};
pub use ready::{note_pull, on_converted_to_draft, Doer, DraftOf};
pub use render::{check_name, render_fork_summary, render_merge_refused, workflow_refused};
pub use review::{
    answer_review, api_review_refusal, on_github_review, on_review_command,
    render_review_not_permitted, render_review_refused, ApiReview, GitHubReview, ReviewCommand,
    ReviewInputs, ReviewRefusal, Reviewer, MAX_REVISIONS,
};
pub use review_text::{render_explain, render_status, render_story_status};
pub use subject::{RunSubject, SubjectError};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::classify::FailureKind;
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName, StoryId};
use crate::plan::TaskState;

/// Overrides kept in [`TaskRecord::overrides`] (who and why, for a person).
pub const KEPT_OVERRIDES: usize = 10;

/// What taskgate knows of one leaf task beyond its plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// `None` until work starts: the reconciler derives pending/ready.
    pub state: Option<TaskState>,
    /// The task pull request (task branch → story branch), once known.
    pub pr: Option<PullRef>,
    /// A draft PR was asked for and its webhook has not arrived yet.
    #[serde(default)]
    pub pr_requested: bool,
    /// The head commit of the task branch, as last seen.
    pub head: Option<CommitSha>,
    /// When taskgate learned of `head` (unix seconds): an approval written
    /// before it is for an older head (issue 45). `None` in records older
    /// than this field.
    #[serde(default)]
    pub head_seen_at: Option<i64>,
    /// Heads the branch had before, the most recent last: a webhook that
    /// names one arrived late and is ignored (`heads`).
    #[serde(default)]
    pub superseded: Vec<CommitSha>,
    /// Attempts started so far; the next one is `attempts + 1`.
    pub attempts: u32,
    pub current: Option<Attempt>,
    /// The latest verdict of each gate, by gate name.
    #[serde(default)]
    pub verdicts: BTreeMap<String, GateVerdict>,
    /// The failure loop: branch todos, bounds, escalation.
    #[serde(default)]
    pub failure: crate::failure::LoopState,
    /// A person acted on this task since its last green run: a command,
    /// or, while a todo is open or green, a ready for review, a push or a
    /// retry of theirs (`TaskRecord::note_person`; counts against the
    /// autonomous fix rate).
    #[serde(default)]
    pub human_involved: bool,
    /// Whose signal the task PR's draft is (`task::ready`); `None` when
    /// it is not a draft, or in records older than this field.
    #[serde(default)]
    pub draft_of: Option<DraftOf>,
    /// The head at which taskgate marked its own draft ready, with the
    /// merge in the same effect: GitHub's `ready_for_review` for it is
    /// that, not a person's.
    #[serde(default)]
    pub marked_ready: Option<CommitSha>,
    /// `/revise` requests since the last approval or resume (SPEC §3: the
    /// third pauses the task).
    #[serde(default)]
    pub revisions: u32,
    /// The last [`KEPT_OVERRIDES`] `/approve --override` decisions, oldest
    /// first; [`TaskRecord::override_count`] counts them all.
    #[serde(default)]
    pub overrides: Vec<Override>,
    #[serde(default)]
    pub override_count: u32,
    /// The state a `/pause` left, restored by `/resume`.
    #[serde(default)]
    pub paused_from: Option<TaskState>,
    /// Who pushed the task's commits (the last few, by id): they may not
    /// approve it themselves unless the repository allows it.
    #[serde(default)]
    pub pushed_by: Vec<crate::ids::UserId>,
    /// What its branch was started from when the task became ready
    /// (`core::story::start`); `None` before, and for branches made by an
    /// older taskgate at planning time.
    #[serde(default)]
    pub branch: Option<crate::story::BranchStart>,
    /// The commit its PR's merge made on the story branch: the ship gate
    /// takes only such commits on a story branch (`core::ship::vet`).
    #[serde(default)]
    pub merged_as: Option<CommitSha>,
    /// How many commits that merge made on the story branch when more
    /// than one: the PR's commits, rebased by taskgate (`merge_method:
    /// rebase`) onto the story branch one by one.
    #[serde(default)]
    pub merged_commits: Option<u32>,
    /// The head its PR was merged at before its gates passed there
    /// (`task::merged_past`): the task completes when they pass at it.
    #[serde(default)]
    pub merged_unproven: Option<CommitSha>,
    /// The latest approval of the task, with the head it approved
    /// (`/approve`, with or without `--override`); a newer head needs a new
    /// one.
    #[serde(default)]
    pub approval: Option<Approval>,
    /// The head its PR was merged at under `review: human` without an
    /// approval there (`task::merged_past`): `/approve` completes it.
    #[serde(default)]
    pub merged_unreviewed: Option<CommitSha>,
}

/// A person approved the task at a head: who, which commit, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub by: crate::ids::UserId,
    /// Shown where the approval is named (the story PR, the dashboard).
    pub login: String,
    /// The head approved: only its merge completes the task.
    pub sha: CommitSha,
    /// Unix seconds.
    pub at: i64,
    /// The GitHub review that gave it, when one did: its dismissal takes
    /// it back (`task::review::github`).
    #[serde(default)]
    pub review: Option<u64>,
}

impl TaskRecord {
    /// A person acted on the task (`human_involved`): a todo already
    /// green counts the wait for them (`core::failure::note_person`).
    pub fn note_person(&mut self) {
        self.human_involved = true;
        self.failure = crate::failure::note_person(&self.failure);
    }

    /// A branch todo is open, or green with the task not complete: a
    /// person's push or retry now counts against the fix rate.
    pub fn fix_under_way(&self) -> bool {
        self.failure.open.is_some() || !self.failure.greened.is_empty()
    }

    /// The task completed at `now`: its green todos count as fixed.
    pub(crate) fn complete(&mut self, now: i64) {
        self.state = Some(TaskState::Completed);
        self.failure = crate::failure::on_task_completed(&self.failure, now);
    }

    /// Someone approved the task at `sha`.
    pub fn approved_at(&self, sha: &CommitSha) -> bool {
        self.approval.as_ref().is_some_and(|a| a.sha == *sha)
    }
}

/// A person accepted the task despite its checker (`/approve --override`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override {
    /// Users are identified by id; the login is not recorded.
    pub actor: crate::ids::UserId,
    pub reason: String,
    /// Unix seconds.
    pub at: i64,
    /// The head it accepted: its merge completes the task
    /// (`task::merged_past`). `None` in records older than this field.
    #[serde(default)]
    pub sha: Option<CommitSha>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRef {
    pub number: IssueNumber,
    pub draft: bool,
}

/// One acceptance run of some gates at one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub number: u32,
    pub sha: CommitSha,
    pub gates: Vec<String>,
    pub status: AttemptStatus,
    pub queued_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The runner it was handed to; `None` for an attempt recorded before
    /// attempts named theirs (it may be an Actions one, so a cancel asks
    /// for its workflow run, which finds none for a local one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<crate::config::RunnerKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    Queued,
    Running,
    Passed,
    Failed,
    /// Superseded by a newer commit or retry.
    Cancelled,
    /// Never ran: its commit no longer exists (force-pushed away).
    Skipped,
}

impl AttemptStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStatus::Queued => "queued",
            AttemptStatus::Running => "running",
            AttemptStatus::Passed => "passed",
            AttemptStatus::Failed => "failed",
            AttemptStatus::Cancelled => "cancelled",
            AttemptStatus::Skipped => "skipped",
        }
    }

    pub fn is_active(self) -> bool {
        matches!(self, AttemptStatus::Queued | AttemptStatus::Running)
    }

    /// The status a stored word names; `None` for any other word.
    pub fn parse(word: &str) -> Option<AttemptStatus> {
        [
            AttemptStatus::Queued,
            AttemptStatus::Running,
            AttemptStatus::Passed,
            AttemptStatus::Failed,
            AttemptStatus::Cancelled,
            AttemptStatus::Skipped,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateVerdict {
    pub sha: CommitSha,
    pub attempt: u32,
    pub passed: bool,
    pub kind: Option<FailureKind>,
    pub summary: Option<String>,
}

/// A run the shell must start: stored with the decision that queued it, so
/// a crash between deciding and running loses nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunJob {
    pub repo: RepoName,
    pub installation: InstallationId,
    pub story: StoryId,
    pub task: RunSubject,
    pub attempt: u32,
    pub sha: CommitSha,
    pub gates: Vec<String>,
    /// The story branch's head the run merges into `sha` first (SPEC §3),
    /// where the runner needs it said: the Actions runner's dispatch
    /// records it when it is performed (the local runner reads the branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<CommitSha>,
    /// The runner the core handed it to (`TaskContext::runner`).
    #[serde(default)]
    pub runner: crate::config::RunnerKind,
    /// Proven heads of the tasks of other repositories it depends on
    /// ([`run_deps`]), fetched by the runner before the gates run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<RunDep>,
}
