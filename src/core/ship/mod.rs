//! The ship gate (SPEC §7): when a story may ship, who shipped it, and what
//! follows — the story PR merged, the deploy workflow, then validation.
//!
//! Owns: [`StoryRecord`] (stored per story, as JSON) and the transitions
//! that turn the story's task states or a ship request, a merge, a deploy or
//! a validation result into a new record and effects: the story PR and its
//! labels, the `taskgate/ship-gate` check run, the merge, the dispatches,
//! and the texts people read on the story issue and PR.
//! Must not: do IO, await or read the clock, or know webhooks: the shell
//! (`app::ship`) finds the story, reads the story branch head and calls in.
//!
//! Two ideas a reader needs:
//! - **Nothing ships by itself.** [`evaluate`] only ever moves a story
//!   between `building` and `shippable` (and keeps the story PR, its label
//!   and the gate in line); only [`on_ship_request`] — a person's label,
//!   command or API call — merges. A merge that did not come through it is
//!   recorded as `merged_past_gate` and said so on the story issue.
//! - **One ship at a time.** A request while `shipping` is a no-op, so the
//!   label added twice (two webhooks) merges once.

mod decide;
mod event;
mod refusal;
mod render;

pub use decide::{
    evaluate, on_deploy_finished, on_merge_refused, on_ship_request, on_story_pr_closed_unmerged,
    on_story_pr_merged, on_story_pr_seen, on_validation_finished, on_workflow_refused, Evaluation,
    ShipContext, ShipDecision, TaskProof, SHIP_GATE,
};
pub use event::{ShipEvent, ShipWhat};
pub use refusal::{on_ship_label_without_permission, ship_refusal, ShipRefusal};
pub use render::{render_merge_refused, render_missing, render_story_pr_body};

use serde::{Deserialize, Serialize};

use crate::ids::{CommitSha, IssueNumber, UserId};

/// Where a story is on its way out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShipState {
    /// Some task (or integration milestone) is not complete yet.
    #[default]
    Building,
    /// Every top-level task is complete: a person may ship it.
    Shippable,
    /// Shipping was asked for: the story PR is being merged and deployed.
    Shipping,
    /// The deploy workflow succeeded; validation runs next.
    Deployed,
    /// Post-deploy validation passed.
    ReviewReady,
    /// The deploy or the validation failed.
    NeedsFix,
}

impl ShipState {
    pub fn name(self) -> &'static str {
        match self {
            ShipState::Building => "building",
            ShipState::Shippable => "shippable",
            ShipState::Shipping => "shipping",
            ShipState::Deployed => "deployed",
            ShipState::ReviewReady => "review-ready",
            ShipState::NeedsFix => "needs-fix",
        }
    }
}

/// How a person asked to ship.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShipVia {
    /// The `ship` label on the story PR.
    Label,
    /// `/taskgate ship`.
    Command,
    /// `POST /api/stories/{id}/ship`.
    Api,
}

impl ShipVia {
    pub fn name(self) -> &'static str {
        match self {
            ShipVia::Label => "label",
            ShipVia::Command => "command",
            ShipVia::Api => "API",
        }
    }
}

/// Who asked to ship, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shipper {
    /// The GitHub user; `None` for the HTTP API, whose token names no one.
    pub user: Option<UserId>,
    pub login: String,
    pub via: ShipVia,
}

/// The `taskgate/ship-gate` check run last written: on which head, with
/// which verdict and reasons, so an unchanged gate costs no write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateMark {
    pub key: String,
    pub green: bool,
    pub missing: Vec<String>,
}

/// What taskgate knows of a story's way out, beyond its plan and tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoryRecord {
    pub state: ShipState,
    /// The story PR (story branch → default branch), once known.
    pub pr: Option<IssueNumber>,
    /// The story PR's head as last seen.
    pub head: Option<CommitSha>,
    /// A story PR was asked for and its webhook has not arrived yet.
    #[serde(default)]
    pub pr_requested: bool,
    /// A person closed the story PR without merging: taskgate does not
    /// open another by itself (reopening it, or a new one, is theirs).
    #[serde(default)]
    pub pr_closed: bool,
    /// The PR body taskgate last wrote.
    #[serde(default)]
    pub pr_body: Option<String>,
    /// The story PR was a draft when last seen (a person opened it so).
    #[serde(default)]
    pub pr_draft: bool,
    /// taskgate asked GitHub to mark this story PR ready, once: a person who
    /// turns it back into a draft afterwards is not overruled.
    #[serde(default)]
    pub pr_ready_asked: bool,
    /// The `shippable` label is on the story PR.
    #[serde(default)]
    pub labelled_shippable: bool,
    /// Why the story is not shippable, as of the last evaluation.
    #[serde(default)]
    pub missing: Vec<String>,
    #[serde(default)]
    pub gate: Option<GateMark>,
    pub shipped_by: Option<Shipper>,
    pub deploy_run: Option<u64>,
    pub validation_run: Option<u64>,
    /// The story PR was merged without a ship request.
    #[serde(default)]
    pub merged_past_gate: bool,
    /// Fix issues opened after failed validations (their marker's round).
    #[serde(default)]
    pub fixes: u32,
}

/// Which of a story's workflows a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoryWorkflow {
    Deploy,
    Validation,
}

impl StoryWorkflow {
    pub fn name(self) -> &'static str {
        match self {
            StoryWorkflow::Deploy => "deploy",
            StoryWorkflow::Validation => "validation",
        }
    }
}

/// A story's deploy or validation run, named on its dispatch so the
/// executor records which workflow run GitHub started for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoryRunRef {
    pub story: String,
    pub workflow: StoryWorkflow,
}
