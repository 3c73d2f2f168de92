//! Webhooks and runner progress → task transitions: the IO half of
//! acceptance runs.
//!
//! Finds the task a pull request, push, check suite, check run or comment is
//! about (by branch name, check-run `external_id`, or issue number), reads
//! its plan as last synced from the default branch, and calls the pure
//! `core::task`. Its result is one [`Decision`]: the task record, the run to
//! queue or cancel and the effects, stored together by the processor.
//!
//! Owns: the events' entry points and a task decision as a processor
//! decision. Must not: decide (the core does), store (the processor does),
//! or locate tasks (`task/locate.rs`) and run pseudo tasks (milestones and
//! proofs: `task/pseudo.rs`) here.

use crate::app::Handled;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::clock::Clock;
use crate::store::{StoreError, TaskLocation};
use taskgate_core::config::{load_config, RepoConfig};
use taskgate_core::ids::{CommitSha, InstallationId, IssueNumber, RepoName, StoryId};
use taskgate_core::plan::{MemFiles, Task, TaskState};
use taskgate_core::report::RunReport;
use taskgate_core::story::{story_branch, task_branch, Marker};
use taskgate_core::task::{
    self, on_pull_closed, on_ready_for_review, on_run_progress, on_trigger, HeadSource, LoopInputs,
    PullClosed, PullRef, RunProgress, TaskContext, TaskDecision, TaskRecord, Trigger,
};
use taskgate_core::webhook::action::PullRequestAction;
use taskgate_core::webhook::{
    CheckRunEvent, CheckSuiteEvent, PullRequestEvent, PushEvent, TaskPull,
};
use taskgate_core::{Change, Decision};

pub use taskgate_core::task::{Progress, RunEvent};

mod clicks;
mod closed;
mod fix_pull;
mod links;
mod locate;
mod milestones;
mod progress;
mod proof;
mod pseudo;
mod review;
mod started;
mod store;

use clicks::{refuse_sender, Click};
use locate::Located;
use progress::{attach_report, finished_report};
pub use proof::ShipProofs;
pub use review::TaskCommands;
pub(crate) use store::TaskStore;

pub use taskgate_core::internal::TickEvent;

pub use taskgate_core::story::task_issue_of_branch;

#[derive(Clone)]
pub struct Runs {
    pub(crate) store: TaskStore,
    pub clock: Clock,
    /// Wakes the runner when an attempt was queued or cancelled.
    pub runs_changed: Arc<Notify>,
    /// The App's bot (`<slug>[bot]`), once GitHub named it: a task PR it
    /// merged was merged the configured way.
    pub bot_login: Option<String>,
    /// The GitHub web host (`https://github.com`), for the links a branch
    /// todo gives (`github::web_base`).
    pub web_base: String,
}

/// A task decision as a processor decision: the record, the run queued or
/// cancelled and the attempt's new status are stored with the effects.
/// The failure loop's budget decisions (`core::failure::budget`) go to the
/// audit log with it.
fn into_decision(repo: &RepoName, located: &Located, d: TaskDecision) -> Decision {
    let object = taskgate_core::audit::task_object(located.loc.issue, located.loc.task.as_str());
    let limits = located.config.effective_limits(&located.settings);
    let audits = taskgate_core::failure::budget_audit(
        &located.record.failure,
        &d.record.failure,
        &taskgate_core::failure::BudgetAudit {
            repo,
            object: &object,
            config: &located.config,
            max_attempts: taskgate_core::failure::max_attempts(&located.task, &limits),
            max_concurrent_branches: limits.max_concurrent_branches,
        },
    );
    let mut decision = record_decision(
        repo,
        &located.loc.story,
        &located.subject,
        &located.record,
        d,
    );
    decision
        .changes
        .extend(audits.into_iter().map(|e| e.change()));
    decision
}

/// [`into_decision`] for any task-like record (tasks and milestones).
fn record_decision(
    repo: &RepoName,
    story: &StoryId,
    task: &task::RunSubject,
    before_record: &TaskRecord,
    d: TaskDecision,
) -> Decision {
    let mut changes = Vec::new();
    if d.record != *before_record {
        if let Some(a) = &d.record.current {
            let before = before_record.current.as_ref();
            let moved = before.is_none_or(|b| b.number != a.number || b.status != a.status);
            if moved && before.is_some_and(|b| b.number == a.number) {
                changes.push(Change::AttemptUpdated {
                    repo: repo.clone(),
                    story: story.to_owned(),
                    task: task.to_owned(),
                    attempt: a.number,
                    status: a.status,
                    report: None,
                });
            }
        }
        changes.push(Change::TaskUpdated {
            repo: repo.clone(),
            story: story.to_owned(),
            task: task.to_owned(),
            record: Box::new(d.record.clone()),
        });
    }
    if let Some(n) = d.cancelled {
        changes.push(Change::AttemptUpdated {
            repo: repo.clone(),
            story: story.to_owned(),
            task: task.to_owned(),
            attempt: n,
            status: task::AttemptStatus::Cancelled,
            report: None,
        });
    }
    if let Some(job) = d.run {
        changes.push(Change::RunQueued(job));
    }
    Decision {
        changes,
        effects: d.effects,
        outcome: format!("task {task}: {}", d.outcome),
    }
}

impl Runs {
    /// The time decisions are taken at, in unix seconds.
    pub(super) fn now(&self) -> i64 {
        self.clock.now_s()
    }

    /// The flaky-test tracking, which each finished run's report feeds.
    pub fn flaky(&self) -> super::flaky::Flaky {
        super::flaky::Flaky {
            store: self.store.flaky(),
            clock: self.clock.clone(),
        }
    }

    /// The commits a merged task PR made on the story branch when more
    /// than one (`core::ship::rebased_commits`): whether the App's bot
    /// merged it is the shell's to say.
    fn rebased_commits(
        &self,
        pr: &PullRequestEvent,
        method: taskgate_core::config::MergeMethod,
    ) -> Option<u32> {
        let by_taskgate = match (&pr.merged_by, &self.bot_login) {
            (Some(by), Some(bot)) => by.login.eq_ignore_ascii_case(bot),
            _ => false,
        };
        taskgate_core::ship::rebased_commits(method, by_taskgate, pr.commits)
    }

    /// Who `actor` is to the fix rate and the task PR's readiness
    /// (`core::task::ready`): the shell knows the App's bot login.
    pub(super) fn doer(&self, actor: Option<&taskgate_core::Actor>) -> task::Doer {
        task::Doer::of(actor, self.bot_login.as_deref())
    }

    fn pusher(&self, actor: &taskgate_core::Actor) -> task::Pusher {
        task::Pusher {
            id: actor.id,
            by: self.doer(Some(actor)),
        }
    }

    /// Whether these changes queue or cancel a run: the run queue is woken
    /// once they are stored.
    pub fn affects_runs(changes: &[Change]) -> bool {
        changes.iter().any(|c| {
            matches!(
                c,
                Change::RunQueued(_)
                    | Change::AttemptUpdated {
                        status: task::AttemptStatus::Cancelled,
                        ..
                    }
            )
        })
    }

    fn finish(&self, repo: &RepoName, located: &Located, d: TaskDecision) -> Decision {
        into_decision(repo, located, d)
    }

    pub async fn on_pull_request(&self, e: &PullRequestEvent) -> Result<Decision, StoreError> {
        let repo = &e.repo;
        match e.for_runs() {
            TaskPull::Ignored => {
                return Ok(Decision::nothing(format!(
                    "pull_request.{}: nothing to do",
                    e.action
                )));
            }
            TaskPull::ForkForTask { new_head } => {
                return Ok(task::decide_fork_pull(repo, &e.head.sha, new_head));
            }
            TaskPull::Fork => {
                return Ok(Decision::nothing(
                    "pull request from a fork, not for a task",
                ));
            }
            TaskPull::Head => {}
        }
        let Some(located) = self.locate_branch(repo, &e.head.name).await? else {
            return self.on_other_pull(e).await;
        };
        let ctx = located.context(repo, self.now());
        let pull = PullRef {
            number: e.number,
            draft: e.draft,
        };
        let by = self.doer(e.sender.as_ref());
        let record = task::note_pull(&located.record, &e.action, pull, by);
        let d = match e.action {
            PullRequestAction::Closed => {
                return self.on_task_pull_closed(e, &located, &ctx).await;
            }
            PullRequestAction::ReadyForReview => {
                on_ready_for_review(&record, pull, &e.head.sha, by, &ctx)
            }
            PullRequestAction::ConvertedToDraft => task::on_converted_to_draft(&record, pull),
            PullRequestAction::Opened
            | PullRequestAction::Synchronize
            | PullRequestAction::Reopened
            | PullRequestAction::Labeled
            | PullRequestAction::Edited
            | PullRequestAction::Other(_) => on_trigger(
                &record,
                &Trigger::Head {
                    sha: e.head.sha.clone(),
                    pr: Some(pull),
                    pusher: e.pusher().map(|s| self.pusher(s)),
                    source: HeadSource::Webhook {
                        before: e.before.clone(),
                        opened: false,
                    },
                },
                &ctx,
            ),
        };
        Ok(self.finish(repo, &located, d))
    }

    /// `done` just completed (in this delivery, not stored yet): each task
    /// of its story that waited for it alone, and had work pushed while
    /// it was pending, is tested now.
    async fn start_unblocked_tasks(
        &self,
        repo: &RepoName,
        done: &Located,
    ) -> Result<Vec<Decision>, StoreError> {
        let records = self.store.task_records(repo, &done.loc.story).await?;
        let mut decisions = Vec::new();
        for (task, record) in &records {
            if *task == done.loc.task.as_str() || record.head.is_none() {
                continue;
            }
            let task = taskgate_core::plan::TaskId::new(task.as_str());
            let Some(loc) = self.task_location(repo, &done.loc.story, &task).await? else {
                continue;
            };
            let Some(mut located) = self.locate(repo, loc).await? else {
                continue;
            };
            if !located.waiting_for.contains(&done.loc.issue) {
                continue;
            }
            located.waiting_for.retain(|n| *n != done.loc.issue);
            let ctx = located.context(repo, self.now());
            if let Some(d) = task::on_dependencies_complete(&located.record, &ctx) {
                decisions.push(self.finish(repo, &located, d));
            }
        }
        Ok(decisions)
    }

    /// A push to a task branch, or to a story branch (its integration
    /// milestones); not its own for any other branch (the default branch
    /// is the plan sync's).
    pub async fn on_push(&self, p: &PushEvent) -> Result<Handled, StoreError> {
        if let Some(decision) = self.on_story_push(p).await?.taken() {
            return Ok(Handled::Decided(decision));
        }
        if p.task_branch().is_none() {
            return Ok(Handled::NotMine);
        }
        let repo = &p.repo;
        if p.deleted {
            return Ok(Handled::Decided(Decision::nothing("task branch deleted")));
        }
        if p.creates_branch_without_commits() {
            // taskgate's own branch creation, echoed: not work.
            return Ok(Handled::Decided(Decision::nothing(
                "task branch created without new commits: nothing to test",
            )));
        }
        if !p.brings_work() {
            // taskgate's fast-forward to the story branch, echoed: the
            // commits are the story branch's, none the task's own.
            return Ok(Handled::Decided(Decision::nothing(
                "task branch moved to commits already on another branch: nothing to test",
            )));
        }
        let Some(located) = self.locate_branch(repo, &p.git_ref).await? else {
            return Ok(Handled::Decided(Decision::nothing(
                "not a branch of a known task",
            )));
        };
        let ctx = located.context(repo, self.now());
        let trigger = Trigger::Head {
            sha: p.after.clone(),
            pr: None,
            pusher: p.sender.as_ref().map(|s| self.pusher(s)),
            source: HeadSource::Webhook {
                before: Some(p.before.clone()),
                opened: false,
            },
        };
        let d = on_trigger(&located.record, &trigger, &ctx);
        Ok(Handled::Decided(self.finish(repo, &located, d)))
    }

    /// Opens the branch todo that manual mode proposed (`/taskgate
    /// approve-branch` or the check run's button); `true` when it did.
    async fn approve_branch(
        &self,
        repo: &RepoName,
        located: &Located,
    ) -> Result<(Decision, bool), StoreError> {
        let inputs = self.loop_inputs(repo, located).await?;
        let ctx = located.context(repo, self.now());
        let lctx = task::loop_context(&ctx, &inputs, true);
        let ld = taskgate_core::failure::on_approve_branch(&located.record.failure, ctx.now, &lctx);
        let opened = ld.outcome != taskgate_core::failure::LoopOutcome::Nothing;
        let mut record = located.record.clone();
        record.failure = ld.state;
        record.note_person();
        let d = TaskDecision {
            record,
            effects: ld.effects,
            run: None,
            cancelled: None,
            verdict: None,
            outcome: if opened {
                "branch todo approved and opened".into()
            } else {
                "no branch todo is waiting for approval".into()
            },
        };
        Ok((into_decision(repo, located, d), opened))
    }
}
