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
//! - **One ship at a time.** A request while `queued`, `proving` or
//!   `shipping` is a no-op, so the label added twice (two webhooks) ships
//!   once. A shipped story is proven on the current base before anything
//!   lands (`queue`).

mod approvals;
mod decide;
mod deploy;
mod event;
pub mod figures;
mod in_train;
mod landing;
mod merge_queue;
mod ordinary;
pub mod parts;
mod pin;
mod vet;
pub(crate) use landing::WORKFLOWS_DOC;
mod proof;
mod queue;
mod raced;
mod refusal;
mod render;
mod render_queue;
mod rollback;
mod route;
mod rules;
mod train;
mod train_notes;

pub use approvals::{
    missing_lines, on_story_approved, owners_of, pattern_matches, team_questions, ApprovalFacts,
    ApprovalWait, Missing, ReviewFact, TeamMember, TeamQuestion, CODEOWNERS_PATHS,
};
pub use decide::{
    evaluate, on_merge_refused, on_ship_request, on_story_pr_closed_unmerged, on_story_pr_seen,
    Evaluation, ShipContext, ShipDecision, TaskProof, SHIP_GATE,
};
pub use deploy::{
    on_deploy_finished, on_story_pr_merged, on_validation_finished, on_workflow_refused,
};
pub use event::{ShipEvent, ShipWhat};
pub use in_train::{
    on_car_land_undone, on_car_landed, on_car_landing, on_car_proof_started, on_train_refused,
    BatchStory, CarLanding,
};
pub use landing::{
    landing_holds, on_land_failed, on_land_refused, on_landed_proven, on_landed_untested,
    on_rules_changed, planned_via, refuse_unlandable, LandRefusal, PullLanding,
};
pub use merge_queue::{
    on_merge_group_checks, on_merge_group_destroyed, queued_head, GroupReference, MergeGroup,
};
pub use ordinary::{gate_of_group_without_story, gate_of_ordinary_pull, NOT_A_STORY};
pub use pin::{on_story_head_moved, pinned_head, proof_parents, UnexpectedParents};
pub use proof::{proof_failing_tests, proof_failures, proof_gate, proof_task, ProofVerdict};
pub use queue::{
    next_in_queue, on_base_moved, on_freeze_changed, on_proof_commit, on_proof_failed,
    on_proof_passed, priority_name, queue_length, queue_order, ship_audit, ship_branch,
    start_proof, ProofStep, MAX_PROOF_ROUNDS,
};
pub use raced::{raced, RacedBuild};
pub use refusal::{on_ship_label_without_permission, ship_refusal, ShipRefusal};
pub use render::{render_merge_refused, render_missing, render_story_pr_body};
pub use render_queue::render_land_refused;
pub use rollback::{
    on_revert_base_moved, on_revert_commit, on_revert_failed, on_revert_merged, on_revert_passed,
    on_revert_pr_seen, revert_branch, rollback_audit, rollback_refusal, start_rollback, Rollback,
    RollbackAsk, RollbackRefusal, RollbackState,
};
pub use route::{held_by_freeze, start_proof_serially, start_proof_train_off, train_unfit};
pub use rules::{
    landing_plan, violations, BranchRule, BranchRules, Bypass, LandVia, LandingPlan, QueueGrouping,
    QueueMethod, QueueSettings, ReviewFlags, RuleKind, Unlandable, Violation,
};
pub use train::{
    build_car_effect, car_branch, car_of, likely_culprit, on_train_event, shown_record, Built, Car,
    CarHead, CarId, Entry, FailingTest, Priority, Refusal, Train, TrainAction, TrainEvent,
    TrainOff, TrainSettings, TrainStats, TRAIN_OFF_MS,
};
pub use train_notes::on_car_proving;
pub use vet::{foreign_commits, on_accept_commits, rebased_commits, AcceptRefusal, Vetted};

use serde::{Deserialize, Serialize};

use crate::ids::{CommitSha, IssueNumber, StoryId, UserId};

/// Where a story is on its way out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShipState {
    /// Some task (or integration milestone) is not complete yet.
    #[default]
    Building,
    /// Every top-level task is complete: a person may ship it.
    Shippable,
    /// A person shipped it: it waits its turn in the repository's ship
    /// queue (or for a freeze to lift).
    Queued,
    /// Its turn: the story is merged with the current base on
    /// `taskgate/ship-<issue>` and its gates run on that commit.
    Proving,
    /// Proven on the current base: the default branch is being moved to
    /// the tested commit, then the deploy follows.
    Shipping,
    /// The deploy workflow succeeded; validation runs next.
    Deployed,
    /// Post-deploy validation passed.
    ReviewReady,
    /// The deploy or the validation failed.
    NeedsFix,
    /// Its revert landed on the default branch.
    RolledBack,
}

impl ShipState {
    pub fn name(self) -> &'static str {
        match self {
            ShipState::Building => "building",
            ShipState::Shippable => "shippable",
            ShipState::Queued => "queued",
            ShipState::Proving => "proving",
            ShipState::Shipping => "shipping",
            ShipState::Deployed => "deployed",
            ShipState::ReviewReady => "review-ready",
            ShipState::NeedsFix => "needs-fix",
            ShipState::RolledBack => "rolled-back",
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
    /// Where the story goes in the queue (`ship --priority`); records from
    /// before priorities read as normal.
    #[serde(default)]
    pub priority: Priority,
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
    /// The story head the accepted ship request was made on: the only
    /// head that is proven and lands for it (`pin`). Set when the story
    /// joins the queue; a head that moves away from it takes the story
    /// out. Absent in records from before the pin (JSON, so old rows read
    /// on both stores): then the head as last seen.
    #[serde(default)]
    pub pinned: Option<CommitSha>,
    /// The story branch's commits as last checked (`pin`): one that no
    /// proven task PR made keeps the story from shipping.
    #[serde(default)]
    pub vetted: Option<vet::Vetted>,
    /// Commits no task PR made that a person accepted by name
    /// (`accept-commits`), each with its ancestry (`vet`).
    #[serde(default)]
    pub accepted: Vec<CommitSha>,
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
    /// When the story joined the ship queue (unix ms): the queue's order.
    #[serde(default)]
    pub queued_at_ms: Option<i64>,
    /// The proof on the current base under way (`proving`, `shipping`).
    #[serde(default)]
    pub proof: Option<ShipProof>,
    /// The last proof failed: on which base, and why. Shown on the gate
    /// until the story head changes or a later proof passes.
    #[serde(default)]
    pub proof_failed: Option<ProofFailure>,
    /// The tested commit that landed on the default branch.
    #[serde(default)]
    pub landed: Option<CommitSha>,
    /// A landed commit whose tree is not the proven tree, being proven
    /// now (its gates run on it; red rolls it back).
    #[serde(default)]
    pub landed_proving: Option<CommitSha>,
    /// The story's rollback, once asked for.
    #[serde(default)]
    pub rollback: Option<rollback::Rollback>,
    /// The last ship was proven but the default branch's rules (or a
    /// failed landing) kept it out: shown on the gate until the story
    /// moves on.
    #[serde(default)]
    pub land_refused: Option<LandRefusal>,
    /// The last ship was refused for the story PR's reviews: it ships
    /// again, as its shipper, when an approving review of this head
    /// arrives (`approvals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting: Option<ApprovalWait>,
    /// When the story last landed (unix ms) and how long it had waited
    /// since its ship request: the queue's figures ([`figures`]).
    #[serde(default)]
    pub landed_at_ms: Option<i64>,
    #[serde(default)]
    pub queue_wait_ms: Option<i64>,
    /// Proof runs started for this story's ships, every round of every
    /// ship: summed, the proof runs per landed story.
    #[serde(default)]
    pub proof_runs: u32,
    /// Why this story ships through the one-story queue though the
    /// repository asks for the ship train (`route`): said once on the
    /// story issue, shown by `GET /api/queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_because: Option<String>,
}

/// One proof of a story on the base it is to land on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShipProof {
    /// 1 for the first proof of this ship; one more each time the base
    /// moved before the tested commit could land.
    pub round: u32,
    /// The default branch's head the story was merged with.
    pub base: CommitSha,
    /// The story head that was merged: the pinned head.
    pub head: CommitSha,
    /// The merge commit on `taskgate/ship-<issue>`, once GitHub made it:
    /// the commit that is tested and, if green, lands.
    pub commit: Option<CommitSha>,
    /// How it lands under the default branch's rules, decided when the
    /// proof started.
    #[serde(default)]
    pub landing: LandingPlan,
    /// Through the merge queue: the pull requests of the groups ahead of
    /// the story's, which its group's tree holds too (nearest the branch
    /// first); what the gate on the group names besides the story.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ahead: Vec<crate::ids::IssueNumber>,
}

/// Why the last proof refused the ship.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofFailure {
    /// The base commit the story failed on.
    pub base: CommitSha,
    /// The story head that was proven.
    pub head: CommitSha,
    /// The tested merge commit, when there was one (none on a conflict).
    pub commit: Option<CommitSha>,
    /// One line per failing gate: the gate, its kind and the failing test.
    pub failures: Vec<String>,
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
    pub story: StoryId,
    pub workflow: StoryWorkflow,
}
