//! A person's decisions on a task (SPEC §3): `/approve [--override]`,
//! `/revise`, `/reject`, `/pause` and `/resume`, as pure transitions of the
//! [`TaskRecord`].
//!
//! Each returns the [`TaskDecision`], or the typed [`ReviewRefusal`] that
//! says why it did nothing (rendered by `core::refusal`).
//! Permission was checked by the shell before any of this runs. A state
//! change always ends with a reconcile pass so the `state:*` label follows.

use std::collections::BTreeMap;

use super::decide::{proven_at, reconcile, supersede};
use super::review_text as text;
use super::{
    Approval, AttemptStatus, HeadSource, Override, TaskContext, TaskDecision, TaskRecord, Trigger,
};
use crate::config::ReviewMode;
use crate::effect::Effect;
use crate::ids::{CommitSha, UserId};
use crate::plan::TaskState;
use crate::story::labels;

/// Revisions without an approval after which the task is paused (seed 003).
pub const MAX_REVISIONS: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewCommand {
    Approve { override_reason: Option<String> },
    Revise { feedback: String },
    Reject { reason: String },
    Pause,
    Resume,
}

impl ReviewCommand {
    /// The comment command that asks for it.
    pub fn name(&self) -> &'static str {
        match self {
            ReviewCommand::Approve { .. } => "approve",
            ReviewCommand::Revise { .. } => "revise",
            ReviewCommand::Reject { .. } => "reject",
            ReviewCommand::Pause => "pause",
            ReviewCommand::Resume => "resume",
        }
    }
}

/// The payload of `InternalEvent::Review`: `POST
/// /api/tasks/{id}/accept|reject`, recorded by the API so the processor
/// decides it like the comment commands.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ApiReview {
    pub repo: crate::ids::RepoName,
    pub issue: crate::ids::IssueNumber,
    /// `None` accepts; `Some(reason)` rejects.
    pub reject: Option<String>,
}

/// Why a review command did nothing; `Display` is the commenter's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewRefusal {
    #[error("the task is completed already")]
    Completed,
    #[error("the task was rejected; it comes back through a change to the plan")]
    Rejected,
    #[error("the task is paused already")]
    PausedAlready,
    #[error("the task is paused; `resume` it first")]
    PausedResumeFirst,
    #[error("you pushed this task's commits, and a task is approved by someone else (`allow_self_approval: true` in .github/taskgate.yml allows it)")]
    SelfApproval,
    #[error("the task has no pull request yet")]
    NoPullRequest,
    #[error("its pull request #{pr} is still a draft; mark it ready for review first")]
    Draft { pr: crate::ids::IssueNumber },
    #[error("the task is {state}, not in review with a passing checker at `{head}`; `approve --override <reason>` accepts it anyway")]
    NotProven { state: &'static str, head: String },
    #[error("commit `{head}` was pushed to the task after your comment was written, and an approval is for the commit you saw: look at `{head}`, then approve again")]
    HeadPushedAfter { head: String },
    #[error("it reviewed `{}`, and the task's head is `{}` now: a review approves the commit it saw; review `{}` to approve it", .0.reviewed, .0.head, .0.head)]
    ReviewOfAnotherHead(Box<AnotherHead>),
    /// A dismissed review that had not approved the task: nothing to take
    /// back (not answered: a log line).
    #[error("the dismissed review had not approved the task")]
    DismissedNotCounted,
    #[error("the task is {state}, not paused")]
    NotPaused { state: &'static str },
    /// The API's accept, which carries no override, on a task not in review.
    #[error("the task is {state}; only a task in review can be accepted")]
    NotInReview { state: &'static str },
}

/// A review of another commit than the task's head: the two, short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnotherHead {
    pub reviewed: String,
    pub head: String,
}

/// Who runs the command: recorded by id, shown by login; and when they
/// wrote it (a comment's `created_at`, unix seconds): an approval is for
/// the head the task had then. `None` where nothing was written (the API).
#[derive(Debug, Clone, Copy)]
pub struct Reviewer<'a> {
    pub id: UserId,
    pub login: &'a str,
    pub written_at: Option<i64>,
}

/// Who implements the task: the role the feedback of `/revise` goes to;
/// and whether its pushers may approve it (`allow_self_approval`).
#[derive(Debug, Clone, Copy)]
pub struct ReviewInputs<'a> {
    pub role: &'a str,
    pub assignees: &'a [String],
    pub agent_workflow: Option<&'a str>,
    pub allow_self_approval: bool,
}

pub fn on_review_command(
    record: &TaskRecord,
    command: &ReviewCommand,
    by: Reviewer,
    ctx: &TaskContext,
    inputs: &ReviewInputs,
) -> Result<TaskDecision, ReviewRefusal> {
    if let Some(refusal) = refusal_by_state(record.state, command) {
        return Err(refusal);
    }
    match (record.state, command) {
        (_, ReviewCommand::Approve { .. })
            if !inputs.allow_self_approval && record.pushed_by.contains(&by.id) =>
        {
            Err(ReviewRefusal::SelfApproval)
        }
        (_, ReviewCommand::Approve { override_reason }) => {
            approve(record, override_reason.as_deref(), by, ctx)
        }
        (_, ReviewCommand::Revise { feedback }) => Ok(revise(record, feedback, by, ctx, inputs)),
        (_, ReviewCommand::Reject { reason }) => Ok(reject(record, reason, by, ctx)),
        (_, ReviewCommand::Pause) => Ok(pause(record, ctx, "paused".into())),
        (_, ReviewCommand::Resume) => resume(record, ctx),
    }
}

/// What the task's state alone says against a review command: the first
/// check of [`on_review_command`].
fn refusal_by_state(state: Option<TaskState>, command: &ReviewCommand) -> Option<ReviewRefusal> {
    match (state, command) {
        (Some(TaskState::Completed), _) => Some(ReviewRefusal::Completed),
        (Some(TaskState::Rejected), _) => Some(ReviewRefusal::Rejected),
        (Some(TaskState::Paused), ReviewCommand::Pause) => Some(ReviewRefusal::PausedAlready),
        (Some(TaskState::Paused), ReviewCommand::Approve { .. } | ReviewCommand::Revise { .. }) => {
            Some(ReviewRefusal::PausedResumeFirst)
        }
        _ => None,
    }
}

/// The HTTP API's accept (`Approve` without an override) or reject, checked
/// on the stored state before the request is queued (answered 409): the
/// command's state rules, and an accept needs the task in review, as
/// `approve` without `--override` does. The processor then decides the
/// request with [`on_review_command`] itself.
pub fn api_review_refusal(
    state: Option<TaskState>,
    command: &ReviewCommand,
) -> Option<ReviewRefusal> {
    match command {
        ReviewCommand::Approve {
            override_reason: None,
        } if state != Some(TaskState::Review) => Some(ReviewRefusal::NotInReview {
            state: state.map(|s| s.name()).unwrap_or("not started"),
        }),
        _ => refusal_by_state(state, command),
    }
}

fn unchanged(record: &TaskRecord, outcome: String) -> TaskDecision {
    TaskDecision {
        record: record.clone(),
        effects: vec![],
        run: None,
        cancelled: None,
        verdict: None,
        outcome,
    }
}

fn state_name(record: &TaskRecord) -> &'static str {
    record.state.map(|s| s.name()).unwrap_or("pending")
}

fn approve(
    record: &TaskRecord,
    override_reason: Option<&str>,
    by: Reviewer,
    ctx: &TaskContext,
) -> Result<TaskDecision, ReviewRefusal> {
    if let Some(refusal) = pushed_after(record, by) {
        return Err(refusal);
    }
    if let Some(merged) = &record.merged_unreviewed {
        return Ok(approve_merged(record, merged, override_reason, by, ctx));
    }
    let (Some(pr), Some(head)) = (record.pr, record.head.clone()) else {
        return Err(ReviewRefusal::NoPullRequest);
    };
    if pr.draft {
        return Err(ReviewRefusal::Draft { pr: pr.number });
    }
    let proven = record.state == Some(TaskState::Review) && proven_at(record, &head, ctx);
    if override_reason.is_none() && !proven {
        return Err(ReviewRefusal::NotProven {
            state: state_name(record),
            head: super::decide::short(&head).to_owned(),
        });
    }
    let next = approved(record, &head, override_reason, by, ctx);
    // Auto review merges a proven task by itself (`merge_if_ready`); a
    // human review, or an override of a red checker, merges here.
    let merge = ctx.review == ReviewMode::Human || !proven;
    let mut effects = vec![];
    if merge {
        effects.push(merge_effect(pr.number, &head, ctx));
    }
    let outcome = match (override_reason.is_some(), merge) {
        (true, _) => format!("approved by override; merging #{}", pr.number),
        (false, true) => format!("approved; merging #{}", pr.number),
        (false, false) => "approved; auto review merges it".into(),
    };
    Ok(TaskDecision {
        record: next,
        effects,
        outcome,
        ..unchanged(record, String::new())
    })
}

/// The task's head arrived after `by` wrote the approval: it approves
/// what they saw, which is no longer what would merge. (A head merged past
/// review is approved as merged, whatever the branch holds since.)
fn pushed_after(record: &TaskRecord, by: Reviewer) -> Option<ReviewRefusal> {
    let (Some(written), Some(seen), Some(head)) =
        (by.written_at, record.head_seen_at, record.head.as_ref())
    else {
        return None;
    };
    if record.merged_unreviewed.as_ref().is_some_and(|m| m != head) {
        return None;
    }
    (written < seen).then(|| ReviewRefusal::HeadPushedAfter {
        head: head.short().to_owned(),
    })
}

/// The record once `by` approved it at `head` (counting an override).
fn approved(
    record: &TaskRecord,
    head: &CommitSha,
    override_reason: Option<&str>,
    by: Reviewer,
    ctx: &TaskContext,
) -> TaskRecord {
    let mut next = record.clone();
    next.revisions = 0;
    next.note_person();
    next.approval = Some(Approval {
        by: by.id,
        login: by.login.to_owned(),
        sha: head.clone(),
        at: ctx.now,
        review: None,
    });
    if let Some(reason) = override_reason {
        next.overrides.push(Override {
            actor: by.id,
            reason: reason.to_owned(),
            at: ctx.now,
            sha: Some(head.clone()),
        });
        let excess = next.overrides.len().saturating_sub(super::KEPT_OVERRIDES);
        next.overrides.drain(..excess);
        next.override_count += 1;
    }
    next
}

/// Approves a task whose pull request was merged at `merged` without an
/// approval (`task::merged_past`): the merged work is the approved work,
/// and the task completes.
fn approve_merged(
    record: &TaskRecord,
    merged: &CommitSha,
    override_reason: Option<&str>,
    by: Reviewer,
    ctx: &TaskContext,
) -> TaskDecision {
    let mut next = approved(record, merged, override_reason, by, ctx);
    next.merged_unreviewed = None;
    next.complete(ctx.now);
    TaskDecision {
        record: next,
        effects: vec![reconcile(ctx)],
        outcome: format!(
            "approved at the merged head {}: task completed",
            merged.short()
        ),
        ..unchanged(record, String::new())
    }
}

fn merge_effect(number: crate::ids::IssueNumber, head: &CommitSha, ctx: &TaskContext) -> Effect {
    super::decide::merge_pull(number, head, ctx, false)
}

fn revise(
    record: &TaskRecord,
    feedback: &str,
    by: Reviewer,
    ctx: &TaskContext,
    inputs: &ReviewInputs,
) -> TaskDecision {
    let mut next = record.clone();
    next.revisions += 1;
    next.note_person();
    let issue = record.pr.map(|p| p.number).unwrap_or(ctx.task_issue);
    let mut effects = vec![Effect::PostComment {
        repo: ctx.repo.clone(),
        issue,
        body: text::revise_comment(by.login, feedback, inputs, next.revisions),
        marker: format!(
            "revise task={} n={} at={}",
            ctx.task, next.revisions, ctx.now
        ),
    }];
    if let Some(workflow) = inputs.agent_workflow {
        effects.push(Effect::DispatchWorkflow {
            repo: ctx.repo.clone(),
            workflow: workflow.to_owned(),
            git_ref: ctx.branch.to_owned(),
            inputs: BTreeMap::from([
                ("task".to_owned(), ctx.task.key()),
                ("branch".to_owned(), ctx.branch.to_owned()),
                ("role".to_owned(), inputs.role.to_owned()),
                ("feedback".to_owned(), feedback.to_owned()),
            ]),
            report_to: Some(ctx.task_marker.to_owned()),
            attempt: None,
            story_run: None,
        });
    }
    if next.revisions >= MAX_REVISIONS {
        let mut paused = pause(&next, ctx, String::new());
        effects.append(&mut paused.effects);
        paused.effects = effects;
        paused.outcome = format!("revision {} requested; task paused", next.revisions);
        return paused;
    }
    if next.state == Some(TaskState::Review) {
        // The work goes back to its implementor.
        next.state = Some(TaskState::InProgress);
        effects.push(reconcile(ctx));
    }
    TaskDecision {
        outcome: format!("revision {} requested", next.revisions),
        record: next,
        effects,
        ..unchanged(record, String::new())
    }
}

fn reject(record: &TaskRecord, reason: &str, by: Reviewer, ctx: &TaskContext) -> TaskDecision {
    let mut d = stop(record, ctx, TaskState::Rejected);
    d.record.paused_from = None;
    d.effects.insert(
        0,
        Effect::PostComment {
            repo: ctx.repo.clone(),
            issue: ctx.task_issue,
            body: text::rejected_comment(by.login, reason, record.pr.map(|p| p.number)),
            marker: format!("rejected task={} at={}", ctx.task, ctx.now),
        },
    );
    d.outcome = "rejected: returned to planning".into();
    d
}

fn pause(record: &TaskRecord, ctx: &TaskContext, outcome: String) -> TaskDecision {
    let mut d = stop(record, ctx, TaskState::Paused);
    d.record.paused_from = record.state;
    d.outcome = outcome;
    d
}

/// Moves the task to `state`, cancelling its active attempt.
fn stop(record: &TaskRecord, ctx: &TaskContext, state: TaskState) -> TaskDecision {
    let mut next = record.clone();
    next.state = Some(state);
    let mut effects = vec![];
    let cancelled = supersede(record, record.head.as_ref(), ctx, &mut effects);
    if cancelled.is_some() {
        if let Some(current) = next.current.as_mut() {
            current.status = AttemptStatus::Cancelled;
        }
    }
    effects.push(reconcile(ctx));
    TaskDecision {
        record: next,
        effects,
        cancelled,
        ..unchanged(record, String::new())
    }
}

fn resume(record: &TaskRecord, ctx: &TaskContext) -> Result<TaskDecision, ReviewRefusal> {
    let escalated = record.failure.escalation.is_some();
    if record.state != Some(TaskState::Paused) && !escalated {
        return Err(ReviewRefusal::NotPaused {
            state: state_name(record),
        });
    }
    let mut next = record.clone();
    next.revisions = 0;
    next.note_person();
    let mut effects = vec![];
    if escalated {
        next.failure = crate::failure::clear_escalation(&record.failure);
        effects.push(Effect::LabelMarked {
            repo: ctx.repo.clone(),
            marker: ctx.task_marker.to_owned(),
            add: vec![],
            remove: vec![labels::NEEDS_HUMAN.to_owned()],
        });
    }
    let head_failed = next
        .head
        .as_ref()
        .is_some_and(|head| next.verdicts.values().any(|v| !v.passed && v.sha == *head));
    next.state = match next.state {
        Some(TaskState::Paused) => next.paused_from.take(),
        other => other,
    };
    if next.state == Some(TaskState::Blocked)
        || (escalated && next.state == Some(TaskState::Paused))
    {
        next.state = Some(if head_failed {
            TaskState::TestFailed
        } else {
            TaskState::InProgress
        });
    }
    // What was pushed while paused, or the attempt the pause cancelled, is
    // tested now; a commit already tested is not run again.
    if let Some(head) = next.head.clone() {
        let mut d = super::on_trigger(
            &next,
            &Trigger::Head {
                sha: head,
                pr: None,
                pusher: None,
                source: HeadSource::Taskgate,
            },
            ctx,
        );
        if d.run.is_some() {
            effects.append(&mut d.effects);
            d.effects = effects;
            d.outcome = format!("resumed; {}", d.outcome);
            return Ok(d);
        }
        next = d.record;
        effects.append(&mut d.effects);
    }
    if next.state == Some(TaskState::Testing) {
        // Testing with nothing running: the run was cancelled by the pause.
        next.state = Some(TaskState::InProgress);
    }
    effects.push(reconcile(ctx));
    Ok(TaskDecision {
        record: next,
        effects,
        outcome: "resumed".into(),
        ..unchanged(record, String::new())
    })
}

mod github;
pub use github::{
    answer_review, on_github_review, render_review_not_permitted, render_review_refused,
    GitHubReview,
};

#[cfg(test)]
mod tests;
