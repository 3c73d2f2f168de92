//! The transitions of a task's runs.

use super::check::check_key;
pub use super::heads::HeadSource;
use super::heads::{late, move_head};
use super::ready::Doer;
use super::render;
use super::{Attempt, AttemptStatus, GateVerdict, PullRef, RunJob, RunSubject, TaskRecord};
use crate::config::{MergeMethod, ReviewMode, RunnerKind};
use crate::effect::{CheckStatus, CheckUpdate, Effect};
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName, StoryId, UserId};
use crate::plan::TaskState;
use crate::report::{annotation_batches, render_check_output, CheckOutput, GateResult, RunReport};
use crate::CheckConclusion;

/// What the transitions need to know about the task and its repository.
#[derive(Debug, Clone)]
pub struct TaskContext<'a> {
    pub repo: &'a RepoName,
    pub installation: InstallationId,
    /// The story key (`file:momentum`).
    pub story: &'a StoryId,
    pub task: &'a RunSubject,
    pub title: &'a str,
    /// The task issue's marker key and number.
    pub task_marker: &'a str,
    pub task_issue: IssueNumber,
    pub branch: &'a str,
    pub story_branch: &'a str,
    /// The task's gates from the plan on the default branch; empty when it
    /// needs no testing.
    pub gates: &'a [String],
    /// The issues of the dependencies not complete yet: while any is, the
    /// task is `pending` and is not run (SPEC §3).
    pub waiting_for: &'a [IssueNumber],
    pub review: ReviewMode,
    pub merge_method: MergeMethod,
    /// Where its attempts run (`runner`), and the workflow the Actions
    /// runner dispatches (`runner_workflow`), from the repo config.
    pub runner: RunnerKind,
    pub runner_workflow: &'a str,
    pub now: i64,
}

/// Something that asks for the task to be tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// The task branch's head is `sha` (a push, a pull request opened,
    /// synchronised or reopened, a check suite requested). A commit already
    /// tested or being tested is not run again.
    Head {
        sha: CommitSha,
        pr: Option<PullRef>,
        /// Who pushed it, when a push says (its `sender`): a pusher may
        /// not approve the task they worked on (`allow_self_approval`),
        /// and a person's push during a todo counts against the fix rate.
        pusher: Option<Pusher>,
        /// A webhook, which may be late (`heads`), or taskgate's own.
        source: HeadSource,
    },
    /// Run again at the head (or `sha`), all gates or one: check suite or
    /// check run re-requested, the Retry button, `/taskgate retry [gate]`.
    Retry {
        sha: Option<CommitSha>,
        gate: Option<String>,
        /// Who asked: a person's retry during a todo counts against the
        /// fix rate.
        by: Doer,
    },
}

/// Who pushed a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pusher {
    pub id: UserId,
    pub by: Doer,
}

/// What the runner reports about an attempt (stored in the inbox as JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunProgress {
    /// Waiting for a free runner, behind `ahead` runs.
    Waiting {
        attempt: u32,
        ahead: usize,
    },
    /// Not started although a runner may be free: the runner's host has
    /// less free disk than its floor (`core::host_disk`).
    Held {
        attempt: u32,
        low: crate::host_disk::LowDisk,
    },
    Started {
        attempt: u32,
    },
    /// `workspace` is where the commands ran, stripped from finding paths.
    Finished {
        attempt: u32,
        report: RunReport,
        workspace: String,
    },
    /// Could not run at all (the commit is gone); not a verdict on the code.
    Skipped {
        attempt: u32,
        why: String,
    },
}

impl RunProgress {
    pub fn attempt(&self) -> u32 {
        match self {
            RunProgress::Waiting { attempt, .. }
            | RunProgress::Held { attempt, .. }
            | RunProgress::Started { attempt }
            | RunProgress::Finished { attempt, .. }
            | RunProgress::Skipped { attempt, .. } => *attempt,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskDecision {
    pub record: TaskRecord,
    pub effects: Vec<Effect>,
    /// A run to queue.
    pub run: Option<RunJob>,
    /// An attempt superseded while queued or running: its processes stop.
    pub cancelled: Option<u32>,
    /// The run finished and every gate passed at the head (`Some(true)`),
    /// or some gate failed (`Some(false)`); the failure loop listens here.
    pub verdict: Option<bool>,
    pub outcome: String,
}

impl TaskDecision {
    pub(super) fn unchanged(record: &TaskRecord, outcome: impl Into<String>) -> TaskDecision {
        TaskDecision {
            record: record.clone(),
            effects: vec![],
            run: None,
            cancelled: None,
            verdict: None,
            outcome: outcome.into(),
        }
    }
}

pub(super) fn reconcile(ctx: &TaskContext) -> Effect {
    Effect::Reconcile {
        repo: ctx.repo.clone(),
        story: ctx.story.to_owned(),
        round: 0,
    }
}

/// Moves the check run under `key` on (see [`CheckUpdate`]).
pub(super) fn update_check(
    ctx: &TaskContext,
    key: String,
    status: CheckStatus,
    conclusion: Option<CheckConclusion>,
    output: Option<CheckOutput>,
    retry_button: bool,
) -> Effect {
    Effect::UpdateCheckRun {
        repo: ctx.repo.clone(),
        key,
        update: CheckUpdate {
            status,
            conclusion,
            output,
            retry_button,
            approve_button: false,
        },
    }
}

pub(super) fn short(sha: &CommitSha) -> &str {
    sha.short()
}

/// Pushers kept per task (the most recent), for the self-approval rule.
pub const KEPT_PUSHERS: usize = 20;

/// Something asks for the task to be tested ([`Trigger`]): the attempt it
/// queues, or why none runs.
pub fn on_trigger(record: &TaskRecord, trigger: &Trigger, ctx: &TaskContext) -> TaskDecision {
    let noted = note_doer(record, trigger);
    let record = noted.as_ref().unwrap_or(record);
    if let Some(late) = late(record, trigger) {
        return late;
    }
    if matches!(
        record.state,
        Some(TaskState::Completed | TaskState::Rejected | TaskState::Paused)
    ) {
        return not_run(record, trigger, ctx);
    }
    if !ctx.waiting_for.is_empty() {
        return pending(record, trigger, ctx);
    }
    let mut next = record.clone();
    let mut effects = Vec::new();
    let (sha, gates) = match trigger {
        Trigger::Head { sha, pr, .. } => {
            adopt_pull_request(record, &mut next, sha, *pr, ctx, &mut effects);
            move_head(&mut next, sha, trigger, ctx.now);
            if already_tested(record, sha, ctx) {
                return already_tested_head(record, next, sha, *pr, ctx, effects);
            }
            (sha.clone(), ctx.gates.to_vec())
        }
        Trigger::Retry { sha, gate, .. } => {
            match retry_target(record, sha.as_ref(), gate.as_deref(), ctx) {
                Ok((sha, gates)) => {
                    next.head = Some(sha.clone());
                    (sha, gates)
                }
                Err(why) => return TaskDecision::unchanged(record, why.to_string()),
            }
        }
    };

    if ctx.gates.is_empty() {
        // `requires_testing: false`: complete when the PR merges.
        next.state = Some(TaskState::InProgress);
        effects.push(reconcile(ctx));
        return TaskDecision {
            record: next,
            effects,
            outcome: "needs no testing: waits for its pull request to merge".into(),
            ..TaskDecision::unchanged(record, "")
        };
    }
    queue_attempt(record, next, effects, sha, gates, ctx)
}

/// The record with a push's pusher remembered (the most recent
/// [`KEPT_PUSHERS`]), and a person's push or retry during a todo noted
/// (`TaskRecord::note_person`); `None` when nothing changes.
fn note_doer(record: &TaskRecord, trigger: &Trigger) -> Option<TaskRecord> {
    let mut r = record.clone();
    match trigger {
        Trigger::Head {
            pusher: Some(p), ..
        } => note_pusher(&mut r, p),
        Trigger::Head { pusher: None, .. } => {}
        Trigger::Retry { by, .. } => note_by(&mut r, *by),
    };
    (r != *record).then_some(r)
}

/// `p` pushed work that lands on the task branch: remembered among its
/// pushers, and noted when a person's push comes during a todo.
pub(super) fn note_pusher(r: &mut TaskRecord, p: &Pusher) {
    if !r.pushed_by.contains(&p.id) {
        r.pushed_by.push(p.id);
        if r.pushed_by.len() > KEPT_PUSHERS {
            r.pushed_by.remove(0);
        }
    }
    note_by(r, p.by);
}

fn note_by(r: &mut TaskRecord, by: Doer) {
    if by == Doer::Person && r.fix_under_way() {
        r.note_person();
    }
}

/// A completed, rejected or paused task is not run.
fn not_run(record: &TaskRecord, trigger: &Trigger, ctx: &TaskContext) -> TaskDecision {
    let state = record.state.map(|s| s.name()).unwrap_or_default();
    let mut next = record.clone();
    if let (Some(TaskState::Paused), Trigger::Head { sha, pr, .. }) = (record.state, trigger) {
        // Remembered, so `/resume` tests what was pushed meanwhile.
        move_head(&mut next, sha, trigger, ctx.now);
        next.pr = pr.or(next.pr);
    }
    TaskDecision::unchanged(&next, format!("task is {state}: not run"))
}

/// Takes the head's pull request, if the trigger names one; else asks for
/// a draft one when the task has none.
fn adopt_pull_request(
    record: &TaskRecord,
    next: &mut TaskRecord,
    sha: &CommitSha,
    pr: Option<PullRef>,
    ctx: &TaskContext,
    effects: &mut Vec<Effect>,
) {
    if let Some(pr) = pr {
        next.pr = Some(pr);
        next.pr_requested = false;
    } else if ctx.branch == ctx.story_branch {
        // A milestone or a ship's proof runs on a branch of the story's
        // own, never reviewed through a pull request.
    } else if next.pr.is_none() && (!next.pr_requested || record.head.as_ref() != Some(sha)) {
        // A commit on a task branch without a PR: open a draft
        // (SPEC §3) so the work has a place to be reviewed. Asked
        // again at each new head until the PR's webhook arrives:
        // GitHub refuses a PR without commits, and answers
        // "already exists" to a second ask, which costs nothing.
        next.pr_requested = true;
        effects.push(Effect::CreatePullRequest {
            repo: ctx.repo.clone(),
            head: ctx.branch.to_owned(),
            base: ctx.story_branch.to_owned(),
            title: ctx.title.to_owned(),
            body: render::task_pull_body(ctx.task_issue),
            draft: true,
        });
    }
}

/// `sha` with all the task's gates is tested or being tested, or its
/// attempt could not run (skipped: a refused dispatch, a runner fault),
/// which waits for Retry: a webhook that names the head again (a
/// `pull_request` event delivered after the push's attempt ended, a label,
/// a redelivery) is no request to run it again. An attempt cancelled (by a
/// pause, a newer head) does not count.
fn already_tested(record: &TaskRecord, sha: &CommitSha, ctx: &TaskContext) -> bool {
    record.current.as_ref().is_some_and(|a| {
        a.sha == *sha && a.gates.len() == ctx.gates.len() && a.status != AttemptStatus::Cancelled
    })
}

/// A head already tested is not run again. A pull request adopted after
/// its head was proven (a person opened it, ready, once the run was green)
/// merges as `ready_for_review` would: the order of events must not
/// strand a proven task.
fn already_tested_head(
    record: &TaskRecord,
    next: TaskRecord,
    sha: &CommitSha,
    pr: Option<PullRef>,
    ctx: &TaskContext,
    mut effects: Vec<Effect>,
) -> TaskDecision {
    let merging = pr.and_then(|_| merge_if_ready(&next, ctx));
    let outcome = match merging {
        Some(_) => format!("{} is already proven: merging", short(sha)),
        None => format!("{} is already tested or being tested", short(sha)),
    };
    effects.extend(merging);
    TaskDecision {
        record: next,
        effects,
        outcome,
        ..TaskDecision::unchanged(record, "")
    }
}

/// Why a retry runs nothing; said to the person who asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoRetry {
    #[error("nothing pushed yet: nothing to retry")]
    NothingPushed,
    #[error("{} is not the branch's head any more: push or retry the head", short(.0))]
    NotTheHead(CommitSha),
    #[error("the task has no gate `{0}`")]
    NoSuchGate(String),
}

/// What a retry runs: the head (or `sha`, which must be the head) with
/// every gate or the one named.
fn retry_target(
    record: &TaskRecord,
    sha: Option<&CommitSha>,
    gate: Option<&str>,
    ctx: &TaskContext,
) -> Result<(CommitSha, Vec<String>), NoRetry> {
    // Only the head taskgate heard pushed to the task branch is retried:
    // a re-run naming a commit it never heard of (a fork's, one whose
    // push it missed) runs nothing, as `/taskgate retry` would not.
    let Some(head) = record.head.as_ref() else {
        return Err(NoRetry::NothingPushed);
    };
    let sha = sha.unwrap_or(head).clone();
    // Re-running an older commit's check run must not move the
    // task back to that commit: only the head is retried.
    if *head != sha {
        return Err(NoRetry::NotTheHead(sha));
    }
    let gates = match gate {
        Some(g) if ctx.gates.iter().any(|c| c == g) => vec![g.to_owned()],
        Some(g) => return Err(NoRetry::NoSuchGate(g.to_owned())),
        None => ctx.gates.to_vec(),
    };
    Ok((sha, gates))
}

/// Queues a new attempt at `sha` for `gates`: its check runs open as
/// queued, and the one it supersedes is cancelled.
fn queue_attempt(
    record: &TaskRecord,
    mut next: TaskRecord,
    mut effects: Vec<Effect>,
    sha: CommitSha,
    gates: Vec<String>,
    ctx: &TaskContext,
) -> TaskDecision {
    let cancelled = supersede(record, Some(&sha), ctx, &mut effects);
    let number = record.attempts + 1;
    for gate in &gates {
        effects.push(Effect::OpenCheckRun {
            repo: ctx.repo.clone(),
            key: check_key(ctx.story, ctx.task, number, gate),
            name: render::check_name(gate),
            head_sha: sha.clone(),
            title: "Queued".into(),
            summary: render::queued_summary(&ctx.task.key(), number),
        });
    }
    next.attempts = number;
    next.current = Some(Attempt {
        number,
        sha: sha.clone(),
        gates: gates.clone(),
        status: AttemptStatus::Queued,
        queued_at: ctx.now,
        started_at: None,
        finished_at: None,
        runner: Some(ctx.runner),
    });
    next.state = Some(TaskState::Testing);
    effects.push(reconcile(ctx));
    let job = RunJob {
        repo: ctx.repo.clone(),
        installation: ctx.installation,
        story: ctx.story.to_owned(),
        task: ctx.task.to_owned(),
        attempt: number,
        sha: sha.clone(),
        gates,
        base: None,
        runner: ctx.runner,
        // Chosen by `run_deps` once stories span repositories (issue 49
        // step 6's wiring): a story in one repository has none.
        deps: Vec::new(),
    };
    let mut outcome = format!("attempt {number} queued at {}", short(&sha));
    if let Some(start) = start_run(&job, ctx) {
        outcome = format!("{outcome}; dispatched to workflow {}", ctx.runner_workflow);
        effects.push(start);
    }
    TaskDecision {
        record: next,
        effects,
        run: Some(job),
        cancelled,
        verdict: None,
        outcome,
    }
}

/// The effect that hands `job` to its runner, where the runner is started
/// by one: the local runner takes its attempts from the store (the queued
/// attempt is all it needs), the Actions runner from a dispatch.
fn start_run(job: &RunJob, ctx: &TaskContext) -> Option<Effect> {
    match job.runner {
        RunnerKind::Local => None,
        RunnerKind::Actions => Some(Effect::DispatchRun {
            job: Box::new(job.clone()),
            workflow: ctx.runner_workflow.to_owned(),
        }),
    }
}

/// The effect that stops `attempt` on its runner beyond its check runs: the
/// local runner stops the processes of a cancelled attempt it reads from
/// the store, an Actions attempt's workflow run is cancelled on GitHub. An
/// attempt recorded before attempts named their runner may be either: its
/// cancel finds no workflow run for a local one.
pub(super) fn stop_run(attempt: &Attempt, ctx: &TaskContext) -> Option<Effect> {
    let cancel = || Effect::CancelWorkflowRun {
        repo: ctx.repo.clone(),
        attempt: crate::AttemptRef {
            story: ctx.story.to_owned(),
            task: ctx.task.to_owned(),
            attempt: attempt.number,
        },
    };
    match attempt.runner {
        Some(RunnerKind::Local) => None,
        Some(RunnerKind::Actions) | None => Some(cancel()),
    }
}

/// A trigger on a task whose dependencies are not complete: nothing runs,
/// its state does not move, no branch todo or agent hears of it (SPEC §3).
/// A pushed head is remembered, so the work is tested once the task is
/// ready ([`on_dependencies_complete`]), and the commit gets one neutral
/// check run saying what it waits for.
fn pending(record: &TaskRecord, trigger: &Trigger, ctx: &TaskContext) -> TaskDecision {
    let waiting = render::waiting_for(ctx.waiting_for);
    match trigger {
        Trigger::Head { sha, pr, .. } => {
            let mut next = record.clone();
            next.pr = pr.or(next.pr);
            if pr.is_some() {
                next.pr_requested = false;
            }
            let new_head = record.head.as_ref() != Some(sha);
            move_head(&mut next, sha, trigger, ctx.now);
            let effects = if new_head {
                vec![Effect::CreateCheckRun {
                    repo: ctx.repo.clone(),
                    check: crate::effect::CheckRunSpec {
                        name: render::PENDING_CHECK.into(),
                        head_sha: sha.clone(),
                        conclusion: CheckConclusion::Neutral,
                        title: format!("Not run: {waiting}"),
                        summary: render::pending_summary(ctx.waiting_for),
                        annotations: vec![],
                    },
                }]
            } else {
                vec![]
            };
            TaskDecision {
                record: next,
                effects,
                outcome: format!("pending, {waiting}: {} not run", short(sha)),
                ..TaskDecision::unchanged(record, "")
            }
        }
        Trigger::Retry { .. } => {
            TaskDecision::unchanged(record, format!("pending, {waiting}: not run"))
        }
    }
}

/// The task's last dependency completed: work pushed while it was pending
/// is tested, once its branch holds the dependencies' work. The branch is
/// started first (`Effect::StartTaskBranch`, reported through the inbox):
/// until then nothing runs here, and after it [`on_branch_started`] says
/// what does. Nothing happens when no work was pushed, or its head was
/// tested already.
pub fn on_dependencies_complete(record: &TaskRecord, ctx: &TaskContext) -> Option<TaskDecision> {
    record.branch.as_ref()?;
    test_recorded_head(record, ctx)
}

/// A ready task's branch was started (SPEC §3). Work pushed while it was
/// pending is tested once for that one update: when the story branch was
/// merged into it, at the merge, whose push starts the run like any work
/// pushed; when the branch already held the story head, or conflicts with
/// it (no push follows), at the recorded head, now. `record` is the task's
/// before the start was recorded: a start reported again does nothing.
pub fn on_branch_started(
    record: &TaskRecord,
    start: &crate::story::BranchStart,
    ctx: &TaskContext,
) -> Option<TaskDecision> {
    use crate::story::StartHow;
    if record.branch.is_some() || !matches!(start.how, StartHow::UpToDate | StartHow::Conflict) {
        return None;
    }
    let started = TaskRecord {
        branch: Some(start.clone()),
        ..record.clone()
    };
    test_recorded_head(&started, ctx)
}

fn test_recorded_head(record: &TaskRecord, ctx: &TaskContext) -> Option<TaskDecision> {
    let head = record.head.clone()?;
    let d = on_trigger(
        record,
        &Trigger::Head {
            sha: head,
            pr: record.pr,
            pusher: None,
            source: HeadSource::Taskgate,
        },
        ctx,
    );
    d.run.is_some().then_some(d)
}

/// Completes a queued or running attempt's check runs as cancelled.
pub(super) fn supersede(
    record: &TaskRecord,
    by: Option<&CommitSha>,
    ctx: &TaskContext,
    effects: &mut Vec<Effect>,
) -> Option<u32> {
    let current = record.current.as_ref().filter(|a| a.status.is_active())?;
    for gate in &current.gates {
        effects.push(update_check(
            ctx,
            check_key(ctx.story, ctx.task, current.number, gate),
            CheckStatus::Completed,
            Some(CheckConclusion::Cancelled),
            Some(render::superseded_output(current.number, by.map(short))),
            false,
        ));
    }
    effects.extend(stop_run(current, ctx));
    Some(current.number)
}

/// The task PR left draft. A head already proven merges (auto review);
/// otherwise it is tested like any new head. taskgate's own marking (`by`
/// taskgate, or at the head it marked ready) asked for its merge with it
/// (`task::ready`): nothing more.
pub fn on_ready_for_review(
    record: &TaskRecord,
    pr: PullRef,
    sha: &CommitSha,
    by: Doer,
    ctx: &TaskContext,
) -> TaskDecision {
    let mut next = record.clone();
    next.pr = Some(pr);
    next.pr_requested = false;
    if by == Doer::Taskgate || record.marked_ready.as_ref() == Some(sha) {
        return TaskDecision::unchanged(
            &next,
            "marked ready for review by taskgate: its merge was asked with it",
        );
    }
    if next.head.as_ref() == Some(sha) && proven_at(&next, sha, ctx) {
        let effects: Vec<Effect> = merge_if_ready(&next, ctx).into_iter().collect();
        let outcome = if effects.is_empty() {
            "ready for review; already proven: waits for approval".into()
        } else {
            "ready for review; already proven: merging".into()
        };
        return TaskDecision {
            record: next,
            effects,
            outcome,
            ..TaskDecision::unchanged(record, "")
        };
    }
    on_trigger(
        &next,
        &Trigger::Head {
            sha: sha.clone(),
            pr: Some(pr),
            pusher: None,
            source: HeadSource::Webhook {
                before: None,
                opened: false,
            },
        },
        ctx,
    )
}

/// How a task pull request closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullClosed<'a> {
    Unmerged,
    /// Merged into the story branch with `head` as the PR's head, by `by`
    /// (a login, when the payload names who merged).
    Merged {
        pr: IssueNumber,
        head: &'a CommitSha,
        by: Option<&'a str>,
    },
}

/// The task PR was closed. Merged at a proven head, the task is complete
/// (its issue is closed by taskgate, since closing keywords do not fire on
/// merges into a non-default branch); merged before its gates passed
/// there, it is not (`merged_past`); closed unmerged forgets the PR.
pub fn on_pull_closed(record: &TaskRecord, closed: PullClosed, ctx: &TaskContext) -> TaskDecision {
    let mut next = record.clone();
    let PullClosed::Merged { pr, head, by } = closed else {
        next.pr = None;
        next.pr_requested = false;
        return TaskDecision::unchanged(&next, "task pull request closed without merging");
    };
    if !ctx.gates.is_empty() && !proven_at(record, head, ctx) && !overridden_at(record, head) {
        return super::merged_past::merged_past_gates(record, pr, head, by, ctx);
    }
    if super::merged_past::awaits_review(record, head, ctx) {
        return super::merged_past::merged_past_review(record, pr, head, by, ctx);
    }
    next.merged_unproven = None;
    next.complete(ctx.now);
    let mut effects = vec![];
    // A run still going is moot once the work is merged.
    let cancelled = supersede(record, record.head.as_ref(), ctx, &mut effects);
    if cancelled.is_some() {
        next.current.as_mut().expect("exists").status = AttemptStatus::Cancelled;
    }
    // The reconciler closes the completed task's issue and relabels it.
    effects.push(reconcile(ctx));
    TaskDecision {
        record: next,
        effects,
        cancelled,
        outcome: "task pull request merged: task completed".into(),
        ..TaskDecision::unchanged(record, "")
    }
}

mod run_progress;
#[cfg(test)]
mod runner_tests;
#[cfg(test)]
mod tests;

pub use run_progress::on_run_progress;

/// Merges task PR `number` at `head`; `ready_first` when it is taskgate's
/// own draft, marked ready for review in the same effect (`task::ready`).
pub(super) fn merge_pull(
    number: IssueNumber,
    head: &CommitSha,
    ctx: &TaskContext,
    ready_first: bool,
) -> Effect {
    Effect::MergePullRequest {
        repo: ctx.repo.clone(),
        number,
        sha: head.clone(),
        method: ctx.merge_method,
        title: format!("{} (#{number})", ctx.title),
        report_to: ctx.task_marker.to_owned(),
        ready_first,
        fix_into: None,
    }
}
pub(super) use run_progress::proven_at;
use run_progress::{merge_if_ready, overridden_at};
