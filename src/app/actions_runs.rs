//! The `actions` runner's shell (SPEC §6, `runner: actions` in the repo
//! config): attempts are handed to a dispatched workflow instead of the
//! local run queue, and that workflow run's `workflow_run` webhooks come back
//! here as runner progress.
//!
//! Owns: turning a queued run into a workflow dispatch in the same decision
//! ([`ActionsRuns::hand_over`]) and a superseded attempt into a cancel of its
//! run, finding the attempt a workflow run is for,
//! and reading its report artifact back (IO in the processor, like plan
//! reads: a transient GitHub error is retried by the processor).
//! Must not: decide a task's state — progress goes through
//! [`Runs::on_progress`], the path the local runner's progress takes — or
//! trust the artifact, which `runner::actions` checks before reading.
//!
//! Two ideas a reader needs:
//! - **Only runs taskgate dispatched.** A run is found by the id GitHub
//!   answered the dispatch with (recorded by the executor), else by the
//!   `run_id` input the template's `run-name` puts in the run's
//!   `display_title`, accepted only from the configured runner workflow. Any
//!   other `workflow_run` is ignored.
//! - **A run always ends its attempt.** A run that ended without a usable
//!   report (none uploaded, too large, not a zip, unsafe paths, another
//!   task's) fails every gate as `tooling_error`, saying why and linking the
//!   run, exactly as a local run that could not start.

use std::sync::Arc;

use serde_json::Value;

use super::runs::{Progress, RunEvent, Runs};
use crate::core::config::{load_config, RepoConfig, RunnerKind};
use crate::core::plan::TaskId;
use crate::core::report::RunReport;
use crate::core::story::Marker;
use crate::core::task::{AttemptStatus, RunJob};
use crate::core::{AttemptRef, Change, Decision};
use crate::github::{client::send, GitHubApp, GitHubError};
use crate::ids::RepoName;
use crate::intake::payload::{WorkflowRun, WorkflowRunPayload};
use crate::runner::actions::{
    attempt_of_display_title, attempt_run_id, dispatch_effect, dispatch_inputs, fetch_report,
    report_for_missing_artifact, ArtifactError, ArtifactLimits, REPORT_ARTIFACT,
};
use crate::store::{AttemptRow, Store, StoreError};

pub struct ActionsRuns {
    pub github: Arc<GitHubApp>,
    pub store: Store,
    pub limits: ArtifactLimits,
}

/// Why a workflow run or a hand-over could not be decided on.
#[derive(Debug, thiserror::Error)]
pub enum ActionsError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Payload(String),
    /// The task transition failed (a store read).
    #[error("{0}")]
    Progress(String),
}

impl ActionsError {
    /// Worth another try: GitHub answered 5xx or a rate limit or did not
    /// answer, or the store failed.
    pub fn is_transient(&self) -> bool {
        match self {
            ActionsError::GitHub(g) => g.is_transient(),
            ActionsError::Store(_) | ActionsError::Progress(_) => true,
            ActionsError::Payload(_) => false,
        }
    }
}

impl ActionsRuns {
    /// The repo config stored with a story's plan (defaults if unreadable,
    /// as `Runs` reads it).
    async fn config(&self, repo: &RepoName, story: &str) -> Result<RepoConfig, StoreError> {
        let plan = self.store.story(repo, story).await?;
        Ok(load_config(plan.as_ref().and_then(|p| p.config.as_deref())).unwrap_or_default())
    }

    /// Hands the runs `decision` queued in `runner: actions` repositories to
    /// the runner workflow: each such [`Change::RunQueued`] becomes a
    /// [`Change::RunDispatched`] and a dispatch on the default branch, read
    /// from the delivery's `payload` (or asked of GitHub when it has none).
    /// The workflow run of an Actions attempt the decision cancels is
    /// cancelled on GitHub too.
    pub async fn hand_over(
        &self,
        mut decision: Decision,
        payload: &[u8],
    ) -> Result<Decision, ActionsError> {
        let mut dispatched = Vec::new();
        for change in &mut decision.changes {
            if let Change::AttemptUpdated {
                repo,
                story,
                task,
                attempt,
                status: AttemptStatus::Cancelled,
                ..
            } = change
            {
                let cancel = crate::core::Effect::CancelWorkflowRun {
                    repo: repo.clone(),
                    attempt: AttemptRef {
                        story: story.clone(),
                        task: task.clone(),
                        attempt: *attempt,
                    },
                };
                let row = self.store.attempt(repo, story, task, *attempt).await?;
                if row.is_some_and(|r| r.runner == RunnerKind::Actions)
                    && !decision.effects.contains(&cancel)
                {
                    decision.effects.push(cancel);
                }
                continue;
            }
            let Change::RunQueued(job) = change else {
                continue;
            };
            let config = self.config(&job.repo, &job.story).await?;
            if config.runner != RunnerKind::Actions {
                continue;
            }
            let branch = self.default_branch(job, payload).await?;
            let attempt = AttemptRef {
                story: job.story.clone(),
                task: job.task.clone(),
                attempt: job.attempt,
            };
            let task_marker = Marker::Task {
                story: job.story.clone(),
                task: TaskId::new(job.task.as_str()),
            }
            .key();
            let inputs =
                dispatch_inputs(&job.task, &job.sha, &job.gates, &attempt_run_id(&attempt));
            dispatched.push(dispatch_effect(
                &job.repo,
                &config.runner_workflow,
                &branch,
                inputs,
                Some(task_marker),
                Some(attempt),
            ));
            *change = Change::RunDispatched(job.clone());
        }
        if let Some(first) = dispatched.first() {
            if let crate::core::Effect::DispatchWorkflow { workflow, .. } = first {
                decision.outcome =
                    format!("{}; dispatched to workflow {workflow}", decision.outcome);
            }
            decision.effects.extend(dispatched);
        }
        Ok(decision)
    }

    /// The repository's default branch: the webhook's `repository` says it;
    /// taskgate's own deliveries (runner progress) do not, so GitHub is asked.
    async fn default_branch(&self, job: &RunJob, payload: &[u8]) -> Result<String, ActionsError> {
        let from_payload = serde_json::from_slice::<Value>(payload)
            .ok()
            .filter(|v| {
                v["repository"]["full_name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(job.repo.as_str()))
            })
            .and_then(|v| {
                v["repository"]["default_branch"]
                    .as_str()
                    .map(str::to_owned)
            });
        if let Some(branch) = from_payload {
            return Ok(branch);
        }
        let client = self.github.installation_client(job.installation).await?;
        let path = format!("/repos/{}", job.repo);
        let repo: Value = send(&client, http::Method::GET, &path, None)
            .await?
            .json()?;
        repo["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                GitHubError::Unexpected(format!("{path} names no default branch")).into()
            })
    }

    /// `workflow_run` `in_progress` → the attempt started; `completed` → its
    /// report (or the stand-in when there is none) finishes it.
    pub async fn on_workflow_run(
        &self,
        p: &WorkflowRunPayload,
        runs: &Runs,
    ) -> Result<Decision, ActionsError> {
        if !matches!(p.action.as_str(), "in_progress" | "completed") {
            return Ok(Decision::nothing(format!(
                "workflow_run.{}: nothing to do",
                p.action
            )));
        }
        let repo = RepoName::parse(&p.repository.full_name).map_err(ActionsError::Payload)?;
        let run = &p.workflow_run;
        let default_branch = p.repository.default_branch.as_deref();
        let Some(row) = self.dispatched_attempt(&repo, run, default_branch).await? else {
            return Ok(Decision::nothing(format!(
                "workflow run {} was not dispatched by taskgate",
                run.id
            )));
        };
        let active = [AttemptStatus::Queued, AttemptStatus::Running]
            .iter()
            .any(|s| s.as_str() == row.status);
        if !active {
            // Superseded: the core cancelled its check runs already.
            return Ok(Decision::nothing(format!(
                "workflow run {}: attempt {} of task {} is {}",
                run.id, row.attempt, row.task, row.status
            )));
        }
        let progress = if p.action == "in_progress" {
            Progress::Started {
                attempt: row.attempt,
            }
        } else {
            Progress::Finished {
                attempt: row.attempt,
                report: self.report(&repo, &row, run).await?,
                workspace: String::new(),
            }
        };
        let event = RunEvent {
            repo,
            story: row.story,
            task: row.task,
            progress,
        };
        runs.on_progress(event)
            .await
            .map_err(ActionsError::Progress)
    }

    /// The attempt a run was dispatched for: by the run id the dispatch
    /// answered, else by the `run_id` in its display title if it comes from
    /// the configured runner workflow.
    async fn dispatched_attempt(
        &self,
        repo: &RepoName,
        run: &WorkflowRun,
        default_branch: Option<&str>,
    ) -> Result<Option<AttemptRow>, ActionsError> {
        if let Some(row) = self.store.workflow_run_attempt(repo, run.id).await? {
            return Ok(Some(row));
        }
        // A title alone is easy to forge (a fork's pull_request workflow may
        // take any `run-name`): only a dispatched run of this repository's
        // default branch may be matched by it.
        let dispatched = run.event.as_deref() == Some("workflow_dispatch")
            && default_branch.is_some()
            && run.head_branch.as_deref() == default_branch
            && run
                .head_repository
                .as_ref()
                .is_none_or(|r| r.full_name == repo.as_str());
        if !dispatched {
            return Ok(None);
        }
        let Some(named) = run
            .display_title
            .as_deref()
            .and_then(attempt_of_display_title)
        else {
            return Ok(None);
        };
        let Some(row) = self
            .store
            .attempt(repo, &named.story, &named.task, named.attempt)
            .await?
            .filter(|r| r.runner == RunnerKind::Actions)
        else {
            return Ok(None);
        };
        let config = self.config(repo, &row.story).await?;
        let file = run.path.as_deref().and_then(|p| p.rsplit('/').next());
        Ok((file == Some(config.runner_workflow.as_str())).then_some(row))
    }

    /// The run's checked report, or the `tooling_error` stand-in saying why
    /// there is none. Only a transient GitHub error is an error.
    async fn report(
        &self,
        repo: &RepoName,
        row: &AttemptRow,
        run: &WorkflowRun,
    ) -> Result<RunReport, ActionsError> {
        let client = self.github.installation_client(row.installation).await?;
        let why = match fetch_report(&client, repo, run.id, &row.task, &row.sha, self.limits).await
        {
            Ok(report) => return Ok(report),
            Err(ArtifactError::GitHub(e)) if e.is_transient() => return Err(e.into()),
            Err(ArtifactError::NoReport { .. }) => format!(
                "no `{REPORT_ARTIFACT}` artifact was uploaded (did the job reach its upload step?)"
            ),
            Err(e) => e.to_string(),
        };
        let why = match &run.conclusion {
            Some(conclusion) => format!("{why}; the run concluded `{conclusion}`"),
            None => why,
        };
        Ok(report_for_missing_artifact(
            &row.task,
            &row.sha,
            &row.gates,
            &why,
            run.html_url.as_deref(),
        ))
    }
}
