//! A run's progress into the task: the runners' progress events (the
//! local run queue's and the Actions runner's), the verdict a finished run
//! leads to (the failure loop's inputs read here), and the lifetime tick of
//! an open branch todo.
//!
//! Owns: reading what the core needs for a run's progress, and keeping a
//! finished run's report with its attempt. Must not: decide (the core
//! does) or store (the processor does).

use super::*;

impl Runs {
    async fn follow_verdict(
        &self,
        repo: &RepoName,
        located: &Located,
        d: TaskDecision,
        report: &taskgate_core::report::RunReport,
    ) -> Result<TaskDecision, StoreError> {
        let mut inputs = self.loop_inputs(repo, located).await?;
        if let Some(current) = &d.record.current {
            inputs.links.check_runs = self.check_run_links(repo, located, current.number).await?;
        }
        inputs.links.changed_since_green = self.changed_since_green(repo, located, &d).await?;
        Ok(task::follow_verdict(
            d,
            report,
            &located.context(repo, self.now()),
            &inputs,
        ))
    }

    /// A periodic look at one task's open branch todo (its lifetime bound).
    pub async fn on_tick(&self, event: TickEvent) -> Result<Decision, StoreError> {
        let loc = match event.task.task() {
            Some(task) => self.task_location(&event.repo, &event.story, task).await?,
            None => None,
        };
        let Some(loc) = loc else {
            return Ok(Decision::nothing("tick for an unknown task"));
        };
        let Some(located) = self.locate(&event.repo, loc).await? else {
            return Ok(Decision::nothing("tick for a task no longer in the plan"));
        };
        let inputs = self.loop_inputs(&event.repo, &located).await?;
        let ctx = located.context(&event.repo, self.now());
        let d = task::on_lifetime_tick(&located.record, &ctx, &inputs);
        Ok(into_decision(&event.repo, &located, d))
    }

    /// Progress of an attempt from either runner: the local run queue's
    /// internal run events and the Actions runner's `workflow_run`s
    /// (`app::actions_runs`) both end here.
    pub async fn on_progress(&self, event: RunEvent) -> Result<Decision, StoreError> {
        if event.task.milestone().is_some() {
            return self.milestone_progress(event).await;
        }
        if event.task.fix_pull().is_some() {
            return self.fix_pull_progress(event).await;
        }
        let located = match event.task.task() {
            Some(task) => self.task_location(&event.repo, &event.story, task).await?,
            None => None,
        };
        let Some(loc) = located else {
            return Ok(Decision::nothing("run of an unknown task"));
        };
        let Some(located) = self.locate(&event.repo, loc).await? else {
            return Ok(Decision::nothing("run of a task no longer in the plan"));
        };
        let ctx = located.context(&event.repo, self.now());
        let progress = event.progress;
        let report = finished_report(&progress);
        let d = on_run_progress(&located.record, &progress, &ctx);
        let d = match &report {
            Some(report) if d.verdict.is_some() => {
                self.follow_verdict(&event.repo, &located, d, report)
                    .await?
            }
            _ => d,
        };
        let completed = d.record.state == Some(TaskState::Completed)
            && located.record.state != Some(TaskState::Completed);
        let story_head = d.record.merged_as.clone();
        let mut decision = into_decision(&event.repo, &located, d);
        if completed {
            // Its gates passed at a head merged before they had
            // (`core::task::merged_past`).
            for more in self
                .after_completion(&event.repo, &located, story_head.as_ref())
                .await?
            {
                decision.merge(more);
            }
        }
        if let Some(report) = &report {
            let run = crate::app::flaky::FinishedRun {
                repo: &event.repo,
                story: &event.story,
                task: &event.task,
                attempt: progress.attempt(),
                report,
            };
            let flaky = self.flaky();
            let flaky = flaky.quarantine_after_run(&run, &located.config).await?;
            if !flaky.changes.is_empty() {
                decision.merge(flaky);
            }
        }
        // The report is kept with the attempt.
        attach_report(&mut decision, progress.attempt(), report);
        Ok(decision)
    }
}

/// A finished run's report; `None` for any other progress.
pub(super) fn finished_report(progress: &RunProgress) -> Option<RunReport> {
    match progress {
        RunProgress::Finished { report, .. } => Some(report.clone()),
        _ => None,
    }
}

/// Keeps a finished run's report with its attempt.
pub(super) fn attach_report(decision: &mut Decision, attempt: u32, report: Option<RunReport>) {
    for change in &mut decision.changes {
        if let Change::AttemptUpdated {
            attempt: a,
            report: r,
            ..
        } = change
        {
            if *a == attempt {
                *r = report.clone();
            }
        }
    }
}
