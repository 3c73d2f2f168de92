//! Pseudo tasks in the shell: runs that are not a plan leaf, the story's
//! integration milestones (`task/milestones.rs`) and its ship and rollback
//! proofs, `@ship` and `@rollback` (`task/proof.rs`).
//!
//! Owns: the one shape a pseudo task is located into ([`PseudoTask`]), its
//! start (the task transitions for a trigger) and its run progress: the
//! task transitions, the failure loop at milestone limits with the story as
//! the parent of its todos, and the finished run's report kept with its
//! attempt. Must not: find which pseudo task an event is about, or say what
//! a verdict means beyond the failure loop; the callers do (a proof's
//! verdict also goes to the ship queue).

use super::*;
use taskgate_core::ids::StoryId;
use taskgate_core::plan::{Plan, Settings};
use taskgate_core::sync::StoryPlan;
use taskgate_core::task::milestone::milestone_limits;

/// A story's pseudo task with everything its transitions need.
pub(super) struct PseudoTask {
    pub(super) story: StoryId,
    /// `@<milestone>`, `@ship` or `@rollback`.
    pub(super) id: taskgate_core::task::RunSubject,
    pub(super) task: Task,
    pub(super) gates: Vec<String>,
    installation: InstallationId,
    story_marker: String,
    story_issue: IssueNumber,
    /// Where it runs: the story branch (a milestone), the ship branch or
    /// the revert branch. Not a task's branch: no pull request is opened.
    branch: String,
    pub(super) config: RepoConfig,
    settings: Settings,
    record: TaskRecord,
    /// A failed verdict files a todo, a green one closes them. Off for a
    /// ship train car's run until the train blames its story on it.
    failure_loop: bool,
}

/// What differs between pseudo tasks, for [`Runs::pseudo_task`].
pub(super) struct PseudoSpec {
    pub(super) id: taskgate_core::task::RunSubject,
    pub(super) task: Task,
    pub(super) gates: Vec<String>,
    pub(super) branch: String,
    pub(super) config: RepoConfig,
}

/// A pseudo task's run progress, decided.
pub(super) struct PseudoProgress {
    /// The record, the attempt (with the finished run's report) and the
    /// effects, failure loop included.
    pub(super) decision: Decision,
    /// `Some(passed)` once every gate has answered, as the transitions
    /// gave it.
    pub(super) verdict: Option<bool>,
    /// The commit of the current attempt, if there is one.
    pub(super) commit: Option<CommitSha>,
}

impl PseudoTask {
    /// Its last attempt ran (or runs) at `sha` and was not cancelled: a
    /// head trigger there would run nothing, so another run is a retry.
    pub(super) fn tested_at(&self, sha: &CommitSha) -> bool {
        self.record.current.as_ref().is_some_and(|a| {
            a.sha == *sha && a.status != taskgate_core::task::AttemptStatus::Cancelled
        })
    }

    /// Its gates as its current attempt started with them (if it has
    /// one): a run is judged on the gates it ran, which for a ship train
    /// car are not the story's own.
    pub(super) fn with_attempt_gates(mut self) -> Self {
        if let Some(current) = &self.record.current {
            self.gates = current.gates.clone();
        }
        self
    }

    /// The commit of its current attempt.
    pub(super) fn attempt_commit(&self) -> Option<&CommitSha> {
        self.record.current.as_ref().map(|a| &a.sha)
    }

    /// Its run's verdict files no todo and closes none.
    pub(super) fn without_failure_loop(mut self) -> Self {
        self.failure_loop = false;
        self
    }

    fn context<'a>(&'a self, repo: &'a RepoName, now: i64) -> TaskContext<'a> {
        TaskContext {
            repo,
            installation: self.installation,
            story: &self.story,
            task: &self.id,
            title: &self.task.title,
            task_marker: &self.story_marker,
            task_issue: self.story_issue,
            branch: &self.branch,
            story_branch: &self.branch,
            gates: &self.gates,
            waiting_for: &[],
            review: taskgate_core::config::ReviewMode::Human,
            merge_method: self.config.merge_method,
            runner: self.config.runner,
            runner_workflow: &self.config.runner_workflow,
            now,
        }
    }

    fn decision(&self, repo: &RepoName, d: TaskDecision) -> Decision {
        record_decision(repo, &self.story, &self.id, &self.record, d)
    }
}

impl Runs {
    /// The pseudo task `spec` of the story `stored`, with its record as
    /// stored (or a fresh one).
    pub(super) async fn pseudo_task(
        &self,
        repo: &RepoName,
        stored: &StoryPlan,
        plan: &Plan,
        story_issue: IssueNumber,
        spec: PseudoSpec,
    ) -> Result<PseudoTask, StoreError> {
        let record = self
            .store
            .task_record(repo, &stored.story, &spec.id)
            .await?
            .unwrap_or(TaskRecord {
                // A pseudo task never opens a pull request.
                pr_requested: true,
                ..TaskRecord::default()
            });
        Ok(PseudoTask {
            story: stored.story.clone(),
            id: spec.id,
            task: spec.task,
            gates: spec.gates,
            installation: stored.installation,
            story_marker: Marker::Story {
                story: stored.story.clone(),
            }
            .key(),
            story_issue,
            branch: spec.branch,
            config: spec.config,
            settings: plan.settings.clone(),
            record,
            failure_loop: true,
        })
    }

    /// Starts (or runs again) a pseudo task: the task transitions for
    /// `trigger`.
    pub(super) fn start_pseudo(
        &self,
        repo: &RepoName,
        at: &PseudoTask,
        trigger: &Trigger,
    ) -> Decision {
        let ctx = at.context(repo, self.now());
        at.decision(repo, on_trigger(&at.record, trigger, &ctx))
    }

    /// Stops a pseudo task's run at `sha`, if it is going: what it proves
    /// is gone (`why`).
    pub(super) fn stop_pseudo(
        &self,
        repo: &RepoName,
        at: &PseudoTask,
        sha: &CommitSha,
        why: &str,
    ) -> Decision {
        let ctx = at.context(repo, self.now());
        at.decision(
            repo,
            taskgate_core::task::on_moot(&at.record, sha, why, &ctx),
        )
    }

    /// A pseudo task's run progress: the task transitions, then, on a
    /// verdict, the failure loop at milestone limits with the story as the
    /// parent of its todos; a finished run's report is kept with its
    /// attempt.
    pub(super) fn pseudo_progress(
        &self,
        repo: &RepoName,
        at: &PseudoTask,
        progress: &RunProgress,
    ) -> PseudoProgress {
        let ctx = at.context(repo, self.now());
        let report = finished_report(progress);
        let mut d = on_run_progress(&at.record, progress, &ctx);
        let verdict = d.verdict;
        let commit = d.record.current.as_ref().map(|a| a.sha.clone());
        if let (Some(report), Some(_), true) = (&report, verdict, at.failure_loop) {
            let inputs = LoopInputs {
                task: &at.task,
                config: &at.config,
                limits: milestone_limits(&at.config.effective_limits(&at.settings)),
                auto_fix: true,
                open_todos_in_story: 0,
                links: taskgate_core::failure::RunLinks {
                    repo_url: Some(format!("{}/{repo}", self.web_base)),
                    ..Default::default()
                },
            };
            d = task::follow_verdict(d, report, &ctx, &inputs);
        }
        let mut decision = at.decision(repo, d);
        attach_report(&mut decision, progress.attempt(), report);
        PseudoProgress {
            decision,
            verdict,
            commit,
        }
    }
}
