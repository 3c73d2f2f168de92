//! What the failure loop keeps per task and what its transitions take
//! and give: the records the shell stores as JSON ([`LoopState`] and what
//! it holds), a failed run as the shell reports it ([`FailedRun`]), and
//! a transition's answer ([`LoopDecision`]).
//!
//! Owns: these types and their serde shapes (stored: fields are added
//! with defaults, never renamed). Must not: decide anything (the parent
//! module's transitions do).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{stats, FailingTest, FixTotals};
use crate::classify::FailureKind;
use crate::config::{Limits, RepoConfig};
use crate::effect::Effect;
use crate::ids::{CommitSha, RepoName, StoryId};
use crate::plan::Task;

/// Failed runs kept in [`LoopState::failures`].
pub const KEPT_FAILURES: usize = 10;
/// Closed todos kept in [`LoopState::history`].
pub const KEPT_HISTORY: usize = 20;

/// What the loop has done for one task, counted, not listed, so a record
/// stays small however long the task lives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopTotals {
    /// Todos opened, by `kind/role`.
    pub opened: BTreeMap<String, u64>,
    /// Todos closed by a green run, and their summed lifetime.
    pub fixed: u64,
    pub fixed_seconds: u64,
    /// The fix rate, by `kind/agent` (`failure::stats`).
    pub fixes: BTreeMap<String, FixTotals>,
}

/// Everything the loop remembers about one task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopState {
    /// The open branch todo, if any.
    pub open: Option<OpenTodo>,
    /// The last [`KEPT_HISTORY`] closed todos, oldest first (the report
    /// reads them; the metrics read [`LoopState::totals`]).
    pub history: Vec<ClosedTodo>,
    /// Running counts over the task's whole life, for `/metrics`.
    pub totals: LoopTotals,
    /// The last [`KEPT_FAILURES`] failed runs, oldest first, texts clipped.
    pub failures: Vec<FailureRecord>,
    /// Set when a bound is hit; see [`is_task_blocked`].
    pub escalation: Option<Escalation>,
    /// Manual mode: a todo proposed, waiting for `/taskgate approve-branch`.
    pub proposal: Option<Proposal>,
    pub last_green: Option<CommitSha>,
    /// Fixed todos of completed tasks (counted at completion,
    /// [`super::on_task_completed`]): no person's action from the todo's
    /// opening to the task's completion, or some.
    pub fixed_without_human: u32,
    pub fixed_with_human: u32,
    /// Todos a green run closed whose task has not completed yet: their
    /// fix counts when it does, oldest first, at most [`KEPT_HISTORY`].
    pub greened: Vec<GreenFix>,
    /// The newest run attempt handled: older or equal ones are redeliveries.
    pub last_attempt: u32,
    /// Failure episodes started (the round in todo markers); 0 before any.
    pub round: u32,
    /// This episode is waiting for `max_concurrent_branches`; said once.
    pub deferred: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTodo {
    /// The todo issue's marker key.
    pub marker: String,
    /// 1 for the first todo of an episode.
    pub depth: u32,
    /// Failed runs counted on this todo, the opening one included.
    pub failed_runs: u32,
    pub kind: FailureKind,
    pub role: String,
    pub opened_at: i64,
    /// The agent its role's route named when it opened (`failure::stats`).
    #[serde(default = "stats::unrecorded_agent")]
    pub agent: String,
}

/// A todo a green run closed, waiting for its task to complete to count
/// (`failure::stats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GreenFix {
    pub kind: FailureKind,
    pub agent: String,
    /// When its gates went green (unix seconds).
    pub at: i64,
    /// A person acted while the todo was open.
    #[serde(default)]
    pub person: bool,
    /// A person acted after it went green, before the task completed.
    #[serde(default)]
    pub person_after: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// A green run closed it.
    Fixed,
    /// Its attempts ran out and a deeper todo replaced it.
    Superseded,
    /// A bound was hit and a person was called.
    Escalated,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedTodo {
    pub marker: String,
    pub depth: u32,
    pub kind: FailureKind,
    pub role: String,
    pub opened_at: i64,
    pub closed_at: i64,
    pub resolution: Resolution,
    /// Failed runs counted on it.
    #[serde(default)]
    pub failed_runs: u32,
    #[serde(default = "stats::unrecorded_agent")]
    pub agent: String,
}

/// One failed run as remembered (texts clipped, see [`FailedRun`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    pub attempt: u32,
    pub sha: CommitSha,
    pub gates: Vec<GateFailure>,
    pub changes_since_green: Option<String>,
    pub at: i64,
    /// The task's last green commit when this run failed: the diff's base,
    /// and what tells two failures of one episode.
    #[serde(default)]
    pub last_green: Option<CommitSha>,
    /// The repository's web page (`https://github.com/o/r`), for compare
    /// links; `None` when the shell did not say.
    #[serde(default)]
    pub repo_url: Option<String>,
}

/// The bound that was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The todo at the deepest allowed level used all its attempts and
    /// failed again.
    Attempts,
    /// A deeper todo was needed beyond `max_branch_depth` (lowered while
    /// a todo was open).
    Depth,
    /// A todo outlived `branch_timeout_seconds`.
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    pub reason: Bound,
    pub at: i64,
    /// The episode it ended.
    pub round: u32,
    /// A green run came since: failures are handled again. The record and
    /// the `needs-human` label stay until a person clears them.
    #[serde(default)]
    pub passed_since: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The marker key the todo will have.
    pub marker: String,
    pub depth: u32,
    pub kind: FailureKind,
    pub role: String,
    /// The failed run it was proposed for.
    pub attempt: u32,
    pub proposed_at: i64,
}

/// A failed acceptance run as the shell reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRun {
    /// The shell's run counter for this task: increases with every run.
    pub attempt: u32,
    pub sha: CommitSha,
    /// Failing gates, in plan order; the first one's kind names the todo.
    pub gates: Vec<GateFailure>,
    /// What changed since the last green run (e.g. a short log), if known.
    pub changes_since_green: Option<String>,
    pub now: i64,
    /// The task's last green commit, if any.
    pub last_green: Option<CommitSha>,
    /// The repository's web page, from the shell (compare links).
    pub repo_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateFailure {
    pub gate: String,
    pub kind: FailureKind,
    /// The classifier's summary: untrusted tool output.
    pub summary: String,
    /// The failing commands: from the plan, shown verbatim but inert.
    pub commands: Vec<String>,
    /// The failing tests (from the gate's reports), else the classifier's
    /// `file:line` findings; at most [`TESTS_KEPT`], texts clipped.
    #[serde(default)]
    pub tests: Vec<FailingTest>,
    /// How many failed in all (`tests` may list fewer).
    #[serde(default)]
    pub tests_failed: usize,
    /// The log around the first error of the first failing command.
    #[serde(default)]
    pub excerpt: Option<String>,
    /// The gate's check run on GitHub (its `html_url`), from the shell.
    #[serde(default)]
    pub check_run: Option<String>,
}

/// What a transition needs to know besides the state.
#[derive(Debug, Clone, Copy)]
pub struct LoopContext<'a> {
    pub repo: &'a RepoName,
    /// The story key.
    pub story: &'a StoryId,
    pub task: &'a Task,
    /// Marker key of the task issue.
    pub task_marker: &'a str,
    pub task_branch: &'a str,
    pub config: &'a RepoConfig,
    /// Already story-effective ([`RepoConfig::effective_limits`]).
    pub limits: &'a Limits,
    pub auto_fix: bool,
    /// Other tasks' open todos in this story (`max_concurrent_branches`).
    pub open_todos_in_story: u32,
    /// A human command touched this task since the todo opened.
    pub human_involved: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopDecision {
    pub state: LoopState,
    pub effects: Vec<Effect>,
    pub outcome: LoopOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopOutcome {
    /// A first todo was opened.
    Opened {
        depth: u32,
    },
    /// The open todo counted another failed run.
    Updated {
        failed_runs: u32,
    },
    /// A spent todo was superseded by a deeper one.
    Deepened {
        depth: u32,
    },
    Escalated(Bound),
    /// Manual mode: a todo was proposed on the task.
    Proposed,
    /// `max_concurrent_branches` reached: the task waits.
    Deferred,
    /// The open todo was closed by a green run.
    Closed {
        resolution_seconds: i64,
    },
    /// Check runs unknown when a failure was recorded are linked now (and
    /// the open todo's body shows them).
    Linked,
    Nothing,
}
