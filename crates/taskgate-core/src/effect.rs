//! Effects: the GitHub calls a decision implies, as data. They are stored in
//! the outbox and performed by `github::executor`; adding a behaviour means
//! adding an event arm and maybe an effect, nothing else.

use serde::{Deserialize, Serialize};

use crate::ids::{CommentId, CommitSha, IssueNumber, RepoName, StoryId, TaskId};

/// GitHub's reaction contents (the REST API's enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    #[serde(rename = "+1")]
    PlusOne,
    #[serde(rename = "-1")]
    MinusOne,
    Laugh,
    Confused,
    Heart,
    Hooray,
    Rocket,
    Eyes,
}

/// Open, or closed with GitHub's `state_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueState {
    Open,
    ClosedCompleted,
    ClosedNotPlanned,
}

/// A check run created already completed (e.g. `taskgate/plan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunSpec {
    pub name: String,
    pub head_sha: CommitSha,
    pub conclusion: CheckConclusion,
    pub title: String,
    pub summary: String,
    pub annotations: Vec<CheckAnnotation>,
}

/// A check run's next status, with what it shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckUpdate {
    pub status: CheckStatus,
    /// GitHub's conclusion when `status` is completed.
    pub conclusion: Option<CheckConclusion>,
    pub output: Option<crate::report::CheckOutput>,
    /// Offer the "Retry" button (`requested_action` identifier `retry`).
    pub retry_button: bool,
    /// Also offer "Approve branch todo" (`approve_branch`): manual mode.
    #[serde(default)]
    pub approve_button: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Queued => "queued",
            CheckStatus::InProgress => "in_progress",
            CheckStatus::Completed => "completed",
        }
    }
}

/// A check run's conclusion, of those taskgate writes (GitHub's names, as
/// serialized and sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
}

impl CheckConclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Cancelled => "cancelled",
            CheckConclusion::Skipped => "skipped",
        }
    }

    /// `success` when `passed`, else `failure`.
    pub fn of(passed: bool) -> CheckConclusion {
        if passed {
            CheckConclusion::Success
        } else {
            CheckConclusion::Failure
        }
    }
}

/// One acceptance attempt of a task, by its story key, task id and number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRef {
    pub story: StoryId,
    pub task: crate::task::RunSubject,
    pub attempt: u32,
}

/// The identifier of the check-run "Retry" button.
pub const RETRY_ACTION: &str = "retry";
/// The identifier of the check-run "Approve branch todo" button.
pub const APPROVE_BRANCH_ACTION: &str = "approve_branch";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckAnnotation {
    pub path: String,
    pub line: u32,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// A new comment. `marker` is written into the body as a hidden HTML
    /// comment and is how a retry after a crash finds a comment GitHub had
    /// already accepted, so it is never posted twice.
    PostComment {
        repo: RepoName,
        issue: IssueNumber,
        body: String,
        marker: String,
    },
    /// The one comment on `issue` carrying the hidden `marker`, edited in
    /// place when it exists, else created: a report that is kept current
    /// rather than repeated (the checker report on a task PR).
    UpsertComment {
        repo: RepoName,
        issue: IssueNumber,
        marker: String,
        body: String,
    },
    /// A reaction on an issue comment; GitHub itself makes this idempotent.
    ReactToComment {
        repo: RepoName,
        comment: CommentId,
        reaction: Reaction,
    },
    /// A repository label; an existing one is left as it is.
    EnsureLabel {
        repo: RepoName,
        name: String,
        color: String,
        description: String,
    },
    /// A new issue carrying the hidden `marker`; recorded under it.
    CreateIssue {
        repo: RepoName,
        marker: String,
        title: String,
        body: String,
        labels: Vec<String>,
        /// Logins to assign (a role's `assignees`); GitHub drops the ones
        /// that cannot be assigned.
        #[serde(default)]
        assignees: Vec<String>,
    },
    /// A new comment on the issue recorded under `marker`, for decisions
    /// that know an issue by its marker only (a branch todo created in the
    /// same batch). `comment_marker` plays the role of
    /// [`Effect::PostComment`]'s `marker`.
    CommentOnMarker {
        repo: RepoName,
        marker: String,
        body: String,
        comment_marker: String,
    },
    /// Adds and removes labels on the issue recorded under `marker`,
    /// keeping the others (`needs-human` on an escalation and on `/resume`);
    /// a label to remove that it does not carry counts as removed.
    LabelMarked {
        repo: RepoName,
        marker: String,
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// Takes `assignees` off the issue recorded under `marker` (`DELETE
    /// .../issues/{n}/assignees`); one it does not carry counts as removed.
    /// A closed branch todo stops its agent this way.
    UnassignMarked {
        repo: RepoName,
        marker: String,
        assignees: Vec<String>,
    },
    /// Changes to the issue recorded under `marker`; `None` leaves a field.
    UpdateIssue {
        repo: RepoName,
        marker: String,
        title: Option<String>,
        body: Option<String>,
        /// The whole label set.
        labels: Option<Vec<String>>,
        state: Option<IssueState>,
    },
    /// Makes `child` a sub-issue of `parent` (both marker keys). The
    /// parent is in `repo`; the child is in `child_repo` when it lives in
    /// another repository of the owner (a task of a story spanning
    /// repositories, issue 49), else in `repo` too.
    LinkSubIssue {
        repo: RepoName,
        parent: String,
        child: String,
        replace_parent: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child_repo: Option<RepoName>,
    },
    /// `marker`'s issue (in `repo`) is blocked by `blocker`'s (issue
    /// dependencies), which is in `blocker_repo` when that is another
    /// repository, else in `repo`.
    AddBlockedBy {
        repo: RepoName,
        marker: String,
        blocker: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocker_repo: Option<RepoName>,
    },
    RemoveBlockedBy {
        repo: RepoName,
        marker: String,
        blocker: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocker_repo: Option<RepoName>,
    },
    /// A branch at `sha`; an existing branch is left as it is.
    CreateBranch {
        repo: RepoName,
        name: String,
        sha: CommitSha,
    },
    /// A ready task's branch (SPEC §3): made at the story branch's head,
    /// or, when it exists, brought up to date with it (a fast-forward, or
    /// a merge of the story branch: `core::story::start`). What was done
    /// is reported through the inbox (a reconcile pass that records it on
    /// the task); a conflict is said on the task's issue (`marker`).
    StartTaskBranch {
        repo: RepoName,
        /// The story key and the task id, for the report.
        story: StoryId,
        task: TaskId,
        name: String,
        story_branch: String,
        marker: String,
    },
    CreateCheckRun {
        repo: RepoName,
        check: CheckRunSpec,
    },
    /// A check run created `queued` on `head_sha`, its `external_id` set to
    /// `key`; recorded under `key` so later updates find it, and looked up
    /// by it when a create is retried after a crash.
    OpenCheckRun {
        repo: RepoName,
        key: String,
        name: String,
        head_sha: CommitSha,
        title: String,
        summary: String,
    },
    /// Moves the check run recorded under `key` on.
    UpdateCheckRun {
        repo: RepoName,
        key: String,
        update: CheckUpdate,
    },
    /// Waits (as a transient retry) until the check run opened under `key`
    /// has its id recorded, then tells the task of `attempt` through the
    /// inbox (`InternalEvent::CheckRunKnown`): evidence written while the
    /// check run's create was still waiting on GitHub's answer named no
    /// link, and the task's branch todo gets it then. Calls nothing.
    AwaitCheckRun {
        repo: RepoName,
        key: String,
        attempt: AttemptRef,
    },
    /// A pull request; one that already exists for `head` counts as done.
    CreatePullRequest {
        repo: RepoName,
        head: String,
        base: String,
        title: String,
        body: String,
        draft: bool,
    },
    /// Merges pull request `number` if its head is still `sha`. A refusal
    /// (conflict, changed head, not mergeable) is posted on the issue under
    /// `report_to` instead of being retried.
    MergePullRequest {
        repo: RepoName,
        number: IssueNumber,
        sha: CommitSha,
        method: crate::config::MergeMethod,
        title: String,
        report_to: String,
        /// taskgate's own draft: marked ready for review first, in this
        /// effect, so a retry does both (`core::task::ready`).
        #[serde(default)]
        ready_first: bool,
        /// An agent's fix merged into this task branch (`task::fix_pull`):
        /// GitHub's refusal is said on the fix's pull request, in its words.
        #[serde(default)]
        fix_into: Option<String>,
    },
    /// Starts a `workflow_dispatch` workflow (an agent, the Actions runner,
    /// deploy, validation). When GitHub refuses (no such workflow, no
    /// `workflow_dispatch` trigger, unknown inputs) and `report_to` names an
    /// issue marker, the refusal is posted there, so the people waiting on
    /// the workflow hear why it never started.
    DispatchWorkflow {
        repo: RepoName,
        /// The workflow file name (`agent-coder.yml`) or id.
        workflow: String,
        /// The branch or tag the workflow runs on.
        git_ref: String,
        inputs: std::collections::BTreeMap<String, String>,
        report_to: Option<String>,
        /// The acceptance attempt this run is for (the Actions runner): the
        /// executor records which workflow run GitHub started for it, so
        /// the run's `workflow_run` webhooks find their way back.
        #[serde(default)]
        attempt: Option<AttemptRef>,
        /// The story deploy or validation this run is for: the executor
        /// records which workflow run GitHub started for it, and reports a
        /// refusal to the story's ship gate.
        #[serde(default)]
        story_run: Option<crate::ship::StoryRunRef>,
    },
    /// Hands an attempt to the Actions runner (`runner: actions`): the
    /// runner `workflow` is dispatched on the default branch with the
    /// attempt's inputs. The performer reads what the run needs said and
    /// the core does not know: the default branch, and the story branch's
    /// head the run merges the task's head with (SPEC §3), recorded on the
    /// attempt the first time, so a retried dispatch names the same one.
    DispatchRun {
        job: Box<crate::task::RunJob>,
        workflow: String,
    },
    /// Cancels the workflow run dispatched for a superseded Actions-runner
    /// attempt, if GitHub named one; a run already completed is left be.
    CancelWorkflowRun {
        repo: RepoName,
        attempt: AttemptRef,
    },
    /// Adds and removes labels on an issue or pull request by number (the
    /// story PR, which has no marker); removing one it lacks counts as done.
    LabelIssue {
        repo: RepoName,
        issue: IssueNumber,
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// Changes a pull request's title or body; `None` leaves a field.
    UpdatePullRequest {
        repo: RepoName,
        number: IssueNumber,
        title: Option<String>,
        body: Option<String>,
    },
    /// Marks a draft pull request ready for review (GitHub has no REST call
    /// for it: GraphQL's `markPullRequestReadyForReview`).
    MarkPullRequestReady {
        repo: RepoName,
        number: IssueNumber,
    },
    /// Builds a ship's proving commit: `branch` (`taskgate/ship-<issue>`)
    /// is set to `base`, then `head` is merged into it with GitHub's
    /// merges API. The merge commit (or a conflict) is told to the story
    /// through the inbox (`ShipWhat::ProofCommit` / `ProofConflict`).
    PrepareShipCommit {
        repo: RepoName,
        story: StoryId,
        branch: String,
        base: CommitSha,
        head: CommitSha,
        message: String,
        round: u32,
        /// The branch's rules require linear history: the merge commit's
        /// tree is committed again on `base` alone (the story squashed
        /// onto the base), and that commit is the proof.
        #[serde(default)]
        linear: bool,
    },
    /// Builds a ship train car's commit (issue 31): `branch`
    /// (`taskgate/ship-batch-<car>`) is set to `base`, then each head is
    /// merged into it in order with its message, stopping at the first
    /// that conflicts. Told to the train through the inbox
    /// (`ShipWhat::CarBuilt` / `CarConflict`).
    BuildShipCar {
        repo: RepoName,
        car: crate::ship::CarId,
        branch: String,
        base: CommitSha,
        heads: Vec<crate::ship::CarHead>,
    },
    /// Lands a proven ship: fast-forwards `branch` (the default branch) to
    /// `commit`, never forced, once `taskgate/ship-gate` is green on it; or,
    /// with `pull`, merges the story PR instead (where the rules ask for
    /// it). GitHub refusing because the branch moved is told to the story
    /// (`ShipWhat::BaseMoved`); a rule's refusal (`LandRefused`) and any
    /// other failure (`LandFailed`) take it out of the queue.
    LandShipCommit {
        repo: RepoName,
        story: StoryId,
        branch: String,
        commit: CommitSha,
        round: u32,
        report_to: String,
        /// A rollback's revert commit, not a ship's proof: GitHub's answers
        /// go to the rollback.
        #[serde(default)]
        revert: bool,
        /// Land by merging the story PR, not by a fast-forward.
        #[serde(default)]
        pull: Option<crate::ship::PullLanding>,
        /// A ship train car's landing (`story` is its first story): the
        /// fast-forward done is told to the train (`ShipWhat::CarLanded`).
        #[serde(default)]
        car: Option<crate::ship::CarId>,
    },
    /// Builds a rollback's revert commit: the tree of `reverts`' first
    /// parent on top of `reverts`, on `branch`, then `onto`'s head merged
    /// in when it moved past `reverts`. Told to the story through the
    /// inbox (`ShipWhat::RevertCommit` / `RevertConflict`).
    PrepareRevert {
        repo: RepoName,
        story: StoryId,
        branch: String,
        reverts: CommitSha,
        onto: String,
        message: String,
        round: u32,
    },
    /// Looks at the repository's ship queue once this decision is stored.
    AdvanceShipQueue {
        repo: RepoName,
    },
    /// Looks at the repository's ship queue at `at_ms` (clock time): the
    /// end of the ship train's batching wait (`TrainAction::Wait`). Stored
    /// due then ([`Effect::due_at_ms`]), so nothing sleeps for it and a
    /// restart keeps it.
    WakeShipQueue {
        repo: RepoName,
        at_ms: i64,
    },
    /// Runs the next reconciliation pass of `story` once everything queued
    /// before it is done. `round` counts the passes that followed each other
    /// without converging, so a create GitHub keeps refusing cannot loop.
    Reconcile {
        repo: RepoName,
        story: StoryId,
        #[serde(default)]
        round: u32,
    },
}

impl Effect {
    pub fn repo(&self) -> &RepoName {
        match self {
            Effect::PostComment { repo, .. }
            | Effect::UpsertComment { repo, .. }
            | Effect::ReactToComment { repo, .. }
            | Effect::EnsureLabel { repo, .. }
            | Effect::CreateIssue { repo, .. }
            | Effect::CommentOnMarker { repo, .. }
            | Effect::LabelMarked { repo, .. }
            | Effect::UnassignMarked { repo, .. }
            | Effect::UpdateIssue { repo, .. }
            | Effect::LinkSubIssue { repo, .. }
            | Effect::AddBlockedBy { repo, .. }
            | Effect::RemoveBlockedBy { repo, .. }
            | Effect::CreateBranch { repo, .. }
            | Effect::StartTaskBranch { repo, .. }
            | Effect::CreateCheckRun { repo, .. }
            | Effect::DispatchWorkflow { repo, .. }
            | Effect::CancelWorkflowRun { repo, .. }
            | Effect::OpenCheckRun { repo, .. }
            | Effect::UpdateCheckRun { repo, .. }
            | Effect::AwaitCheckRun { repo, .. }
            | Effect::CreatePullRequest { repo, .. }
            | Effect::MergePullRequest { repo, .. }
            | Effect::LabelIssue { repo, .. }
            | Effect::UpdatePullRequest { repo, .. }
            | Effect::MarkPullRequestReady { repo, .. }
            | Effect::PrepareShipCommit { repo, .. }
            | Effect::BuildShipCar { repo, .. }
            | Effect::LandShipCommit { repo, .. }
            | Effect::PrepareRevert { repo, .. }
            | Effect::AdvanceShipQueue { repo }
            | Effect::WakeShipQueue { repo, .. }
            | Effect::Reconcile { repo, .. } => repo,
            Effect::DispatchRun { job, .. } => &job.repo,
        }
    }

    /// Performing it may record an internal delivery for the processor (a
    /// reconcile pass, GitHub's answer to a ship, a refusal), which is
    /// then woken at once rather than at its next poll.
    pub fn may_record_delivery(&self) -> bool {
        matches!(
            self,
            Effect::Reconcile { .. }
                | Effect::StartTaskBranch { .. }
                | Effect::AdvanceShipQueue { .. }
                | Effect::WakeShipQueue { .. }
                | Effect::PrepareShipCommit { .. }
                | Effect::BuildShipCar { .. }
                | Effect::LandShipCommit { .. }
                | Effect::PrepareRevert { .. }
                | Effect::MergePullRequest { .. }
                | Effect::DispatchWorkflow { .. }
                | Effect::DispatchRun { .. }
                | Effect::AwaitCheckRun { .. }
        )
    }

    /// Performing it calls nothing on GitHub (a pass, a wait on the
    /// store): it takes no write slot.
    pub fn calls_nothing(&self) -> bool {
        matches!(
            self,
            Effect::Reconcile { .. } | Effect::AwaitCheckRun { .. }
        )
    }

    /// An update that changes nothing.
    pub fn is_noop(&self) -> bool {
        matches!(
            self,
            Effect::UpdateIssue {
                title: None,
                body: None,
                labels: None,
                state: None,
                ..
            }
        )
    }

    /// What this effect sets on GitHub, when it is a desired state that
    /// performing twice changes nothing more than performing once: a link,
    /// a label, an issue's fields, a branch. Two such effects with the same
    /// subject touch the same thing, the later one winning. The outbox
    /// does not queue an effect identical to the latest one still pending
    /// with its subject (`store::outbox`): the pending one will set the
    /// same state, and the second would cost a write slot, or a refused
    /// call (GitHub answers a second blocked-by link 422). `None` for
    /// effects that add something each time (an issue, a comment, a check
    /// run, a dispatched run) or act on what GitHub holds when they run
    /// (a merge, the ship train): those are queued as asked.
    pub fn desired_subject(&self) -> Option<String> {
        Some(match self {
            Effect::AddBlockedBy {
                repo,
                marker,
                blocker,
                blocker_repo,
            }
            | Effect::RemoveBlockedBy {
                repo,
                marker,
                blocker,
                blocker_repo,
            } => match blocker_repo {
                None => format!("blocked-by {repo} {marker} {blocker}"),
                Some(there) => format!("blocked-by {repo} {marker} {there} {blocker}"),
            },
            // The child's parent: the subject lives with the child.
            Effect::LinkSubIssue {
                repo,
                child,
                child_repo,
                ..
            } => format!("parent {} {child}", child_repo.as_ref().unwrap_or(repo)),
            Effect::EnsureLabel { repo, name, .. } => format!("label {repo} {name}"),
            Effect::CreateBranch { repo, name, .. }
            | Effect::StartTaskBranch { repo, name, .. } => format!("branch {repo} {name}"),
            Effect::UpdateIssue { repo, marker, .. } | Effect::LabelMarked { repo, marker, .. } => {
                format!("issue {repo} {marker}")
            }
            Effect::LabelIssue { repo, issue, .. } => format!("labels {repo} #{}", issue.get()),
            // The same wake asked by each look of a waiting train is one.
            Effect::WakeShipQueue { repo, .. } => format!("{WAKE_SUBJECT}{repo}"),
            _ => return None,
        })
    }

    /// When it falls due, if not at once: a wake at its time.
    pub fn due_at_ms(&self) -> Option<i64> {
        match self {
            Effect::WakeShipQueue { at_ms, .. } => Some(*at_ms),
            _ => None,
        }
    }

    /// A short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Effect::PostComment { .. } => "post_comment",
            Effect::UpsertComment { .. } => "upsert_comment",
            Effect::ReactToComment { .. } => "react_to_comment",
            Effect::EnsureLabel { .. } => "ensure_label",
            Effect::CreateIssue { .. } => "create_issue",
            Effect::CommentOnMarker { .. } => "comment_on_marker",
            Effect::LabelMarked { .. } => "label_marked",
            Effect::UnassignMarked { .. } => "unassign_marked",
            Effect::UpdateIssue { .. } => "update_issue",
            Effect::LinkSubIssue { .. } => "link_sub_issue",
            Effect::AddBlockedBy { .. } => "add_blocked_by",
            Effect::RemoveBlockedBy { .. } => "remove_blocked_by",
            Effect::CreateBranch { .. } => "create_branch",
            Effect::StartTaskBranch { .. } => "start_task_branch",
            Effect::CreateCheckRun { .. } => "create_check_run",
            Effect::DispatchWorkflow { .. } => "dispatch_workflow",
            Effect::DispatchRun { .. } => "dispatch_run",
            Effect::CancelWorkflowRun { .. } => "cancel_workflow_run",
            Effect::OpenCheckRun { .. } => "open_check_run",
            Effect::UpdateCheckRun { .. } => "update_check_run",
            Effect::AwaitCheckRun { .. } => "await_check_run",
            Effect::CreatePullRequest { .. } => "create_pull_request",
            Effect::MergePullRequest { .. } => "merge_pull_request",
            Effect::LabelIssue { .. } => "label_issue",
            Effect::UpdatePullRequest { .. } => "update_pull_request",
            Effect::MarkPullRequestReady { .. } => "mark_pull_request_ready",
            Effect::PrepareShipCommit { .. } => "prepare_ship_commit",
            Effect::BuildShipCar { .. } => "build_ship_car",
            Effect::LandShipCommit { .. } => "land_ship_commit",
            Effect::PrepareRevert { .. } => "prepare_revert",
            Effect::AdvanceShipQueue { .. } => "advance_ship_queue",
            Effect::WakeShipQueue { .. } => "wake_ship_queue",
            Effect::Reconcile { .. } => "reconcile",
        }
    }
}

/// The hidden line that marks a body as taskgate's, naming what it is for.
/// How the subject of a wake at a later time begins
/// ([`Effect::desired_subject`]): the store leaves a wake whose time has
/// not come out of the work still to do (a wait for time, not work).
pub const WAKE_SUBJECT: &str = "wake ";

pub fn hidden_marker(marker: &str) -> String {
    format!("<!-- taskgate:{marker} -->")
}
