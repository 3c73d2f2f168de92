//! What an Actions run tested (SPEC §3): a task's head merged with its
//! story branch, as CI on a pull request tests it. The dispatch names the
//! story branch's head (`base`); the run's report says what it tested, and
//! is believed only as far as it matches the dispatch
//! (`core::story::start::check_tested`).
//!
//! Owns: ending an attempt from its run's report with what taskgate says
//! about the tested commit (a warning on the gates, or "not run" for a
//! conflict). Must not: word those texts (`core::story::start`), read the
//! artifact (`ActionsRuns::report`), or read the story head a dispatch
//! names (`github::perform::runner`).

use super::{
    report_for_missing_artifact, ActionsError, ActionsRuns, Marker, NotAccepted, Progress,
};
use crate::store::{AttemptRow, StoreError};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::story::start::{
    check_tested, render_conflict_not_run, tested_warning, TestedCheck,
};
use taskgate_core::webhook::WorkflowRun;

impl ActionsRuns {
    /// The story branch of a task's story (none for milestones and proofs,
    /// which test their commit as it is, or a story whose issue is not
    /// recorded).
    pub(super) async fn story_branch(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<Option<String>, StoreError> {
        let key = Marker::Story {
            story: story.to_owned(),
        }
        .key();
        let issue = self.store.issue_record(repo, &key).await?;
        Ok(issue.map(|i| taskgate_core::story::story_branch(i.number.get())))
    }

    /// How a completed run ends its attempt: with its checked report (or
    /// the `tooling_error` stand-in saying why there is none), or as not
    /// run when its head conflicts with the story branch it was to be
    /// tested merged with.
    pub(super) async fn finished(
        &self,
        repo: &RepoName,
        row: &AttemptRow,
        run: &WorkflowRun,
    ) -> Result<Progress, ActionsError> {
        let checked = match self.report(repo, row, run).await? {
            Ok(mut report) => {
                let story_branch = (self.story_branch(repo, &row.story).await?).unwrap_or_default();
                match check_tested(row.base.as_ref(), report.tested.as_ref()) {
                    Ok(TestedCheck::Conflict { base }) => {
                        return Ok(Progress::Skipped {
                            attempt: row.attempt,
                            why: render_conflict_not_run(&story_branch, &base),
                        })
                    }
                    Ok(check) => {
                        // Said by taskgate, from what it dispatched.
                        let warning = tested_warning(&check, &story_branch);
                        for gate in &mut report.gates {
                            gate.warnings.extend(warning.clone());
                        }
                        Ok(report)
                    }
                    Err(mismatch) => Err(NotAccepted::Tested(mismatch)),
                }
            }
            Err(why) => Err(why),
        };
        let report = checked.unwrap_or_else(|why| {
            report_for_missing_artifact(
                &row.task,
                &row.sha,
                &row.gates,
                &why.to_string(),
                run.html_url.as_deref(),
            )
        });
        Ok(Progress::Finished {
            attempt: row.attempt,
            report,
            workspace: String::new(),
        })
    }
}
