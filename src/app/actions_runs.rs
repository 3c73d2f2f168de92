//! The `actions` runner's shell (SPEC §6, `runner: actions` in the repo
//! config): attempts are handed to a dispatched workflow instead of the
//! local run queue, and that workflow run's `workflow_run` webhooks come back
//! here as runner progress.
//!
//! Owns: finding the attempt a workflow run is for,
//! and reading its report artifact back (IO in the processor, like plan
//! reads: a transient GitHub error is retried by the processor), with the
//! repository's flaky-test quarantine in force now applied to each gate
//! (`core::report::apply_quarantine`: the job does not know it, and what
//! the artifact says of it is not believed).
//! What a run tested (its head merged with the story branch, checked
//! against the dispatch) is `actions_runs/tested.rs`.
//! Must not: choose the runner, dispatch or cancel a run (the core does,
//! `core::task::decide`; `github::perform::runner` performs the dispatch),
//! decide a task's state — progress goes through
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
//! - **Webhooks get lost; the watch does not rely on them.** GitHub does not
//!   redeliver a webhook that failed, so an attempt still open a while
//!   after it was last heard of gets an Actions watch (`InternalEvent::ActionsWatch`) from the run queue,
//!   and the watch asks GitHub for its run: one that completed is finished
//!   as its `completed` webhook would have finished it, one that started
//!   starts the attempt, one that was deleted fails it as `tooling_error`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::task::{Progress, RunEvent, Runs};
use crate::github::{client::send, GitHubApp, GitHubError};
use crate::metrics::Metrics;
use crate::runner::actions::{
    attempt_of_display_title, fetch_report, report_for_missing_artifact, ArtifactError,
    ArtifactLimits,
};
use crate::store::{AttemptRow, StoreError};
use crate::transient::Transient;
use taskgate_core::config::{load_config, RepoConfig, RunnerKind};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::report::{apply_quarantine, RunReport};
use taskgate_core::story::Marker;
use taskgate_core::task::AttemptStatus;
use taskgate_core::webhook::action::WorkflowRunAction;
use taskgate_core::webhook::{WorkflowRun, WorkflowRunEvent};
use taskgate_core::{AttemptRef, Decision};

pub use taskgate_core::internal::WatchEvent;

/// How long an attempt whose run GitHub never named is waited for: a
/// queued job waits at most 24 hours for a runner on GitHub, so by then a
/// run that was going to report has reported.
pub const UNSEEN_RUN_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// What GitHub says of an attempt's workflow run.
#[derive(Debug)]
pub enum RunSeen {
    /// No run id is recorded for the attempt (the dispatch is still in the
    /// outbox, or the host did not answer it with the run's id).
    Unknown,
    /// GitHub answers 404 for the recorded run: it was deleted.
    Gone(u64),
    /// Requested, queued, waiting: not started on a runner yet.
    Waiting(String),
    InProgress,
    Completed(Box<WorkflowRun>),
}

/// What the watch does about an open attempt.
#[derive(Debug)]
pub enum WatchStep {
    Nothing(String),
    /// The run started (its `in_progress` webhook was lost).
    Start,
    /// The run completed (its `completed` webhook was lost): read its report.
    FinishFromRun(Box<WorkflowRun>),
    /// The run will never report: fail the attempt's gates, saying why.
    GiveUp(String),
}

/// The watch's policy, from what GitHub says of the run of an attempt that
/// is `queued` (not started yet) or running, queued `age` ago.
pub fn watch_step(queued: bool, seen: RunSeen, age: Duration) -> WatchStep {
    match seen {
        RunSeen::Completed(run) => WatchStep::FinishFromRun(run),
        RunSeen::InProgress if queued => WatchStep::Start,
        RunSeen::InProgress => WatchStep::Nothing("its workflow run is still in progress".into()),
        RunSeen::Waiting(status) => {
            WatchStep::Nothing(format!("its workflow run is still {status} on GitHub"))
        }
        RunSeen::Gone(id) => WatchStep::GiveUp(format!(
            "workflow run {id} no longer exists on GitHub (deleted before it reported)"
        )),
        RunSeen::Unknown if age >= UNSEEN_RUN_LIMIT => WatchStep::GiveUp(format!(
            "GitHub never named a workflow run for this attempt in the {} hours since it was \
             queued (the dispatch was refused, or no `workflow_run` webhook arrived for it)",
            UNSEEN_RUN_LIMIT.as_secs() / 3600
        )),
        RunSeen::Unknown => WatchStep::Nothing("no workflow run is known for it yet".into()),
    }
}

pub struct ActionsRuns {
    pub github: Arc<GitHubApp>,
    pub(crate) store: ActionsStore,
    pub limits: ArtifactLimits,
    /// Where a run's overhead (dispatch to completion, less its commands) goes.
    pub metrics: Arc<Metrics>,
    /// Runs whose overhead was counted lately (see [`CountedRuns`]).
    pub counted: CountedRuns,
}

/// The attempts whose run was last counted in the metrics. A delivery that
/// hits a transient error after its report was fetched is decided again,
/// and fetches the same report again: without this, its run would be
/// counted twice. Metrics live as long as the process, so remembering in
/// memory is enough; the last [`CountedRuns::KEPT`] suffice, since a
/// delivery is tried again within minutes.
#[derive(Default)]
pub struct CountedRuns(std::sync::Mutex<std::collections::VecDeque<String>>);

impl CountedRuns {
    const KEPT: usize = 256;

    /// Counts the run of `row` in `metrics`, from the attempt's queueing
    /// (with its dispatch, in one commit; the outbox sends it) to GitHub's
    /// completion of the run, less the report's commands, unless it was
    /// counted lately. A run without `updated_at` says nothing of it.
    fn count(&self, metrics: &Metrics, row: &AttemptRow, run: &WorkflowRun, report: &RunReport) {
        let Some(done) = run.updated_at else {
            return;
        };
        let key = format!("{}/{}/{}/{}", row.repo, row.story, row.task, row.attempt);
        if self.first(key) {
            let wall = (done.timestamp_millis() - row.queued_ms).max(0) as f64 / 1000.0;
            metrics.run_finished("actions", wall, report.commands_seconds());
        }
    }

    /// True the first time `key` is offered (lately), false after.
    fn first(&self, key: String) -> bool {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.contains(&key) {
            return false;
        }
        if kept.len() == Self::KEPT {
            kept.pop_front();
        }
        kept.push_back(key);
        true
    }
}

/// Why a workflow run or a hand-over could not be decided on.
#[derive(Debug, thiserror::Error)]
pub enum ActionsError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The ship queue failed on a proof's verdict.
    #[error(transparent)]
    Ship(#[from] crate::app::ship::ShipError),
    #[error("{0}")]
    Payload(String),
}

impl Transient for ActionsError {
    fn is_transient(&self) -> bool {
        match self {
            ActionsError::GitHub(g) => g.is_transient(),
            ActionsError::Store(s) => s.is_transient(),
            ActionsError::Ship(e) => e.is_transient(),
            ActionsError::Payload(_) => false,
        }
    }
}

impl ActionsRuns {
    /// The repo config stored with a story's plan (defaults if unreadable,
    /// as `Runs` reads it).
    async fn config(&self, repo: &RepoName, story: &StoryId) -> Result<RepoConfig, StoreError> {
        let plan = self.store.story(repo, story).await?;
        Ok(load_config(plan.as_ref().and_then(|p| p.config.as_deref())).unwrap_or_default())
    }

    /// `workflow_run` `in_progress` → the attempt started; `completed` → its
    /// report (or the stand-in when there is none) finishes it.
    pub(crate) async fn on_workflow_run(
        &self,
        p: &WorkflowRunEvent,
        runs: &impl AttemptProgress,
    ) -> Result<Decision, ActionsError> {
        let completed = match &p.action {
            WorkflowRunAction::InProgress => false,
            WorkflowRunAction::Completed => true,
            WorkflowRunAction::Other(action) => {
                return Ok(Decision::nothing(format!(
                    "workflow_run.{action}: nothing to do"
                )))
            }
        };
        let repo = p.repo.clone();
        let run = &p.run;
        let default_branch = p.default_branch.as_deref();
        let Some(row) = self.dispatched_attempt(&repo, run, default_branch).await? else {
            return Ok(Decision::nothing(format!(
                "workflow run {} was not dispatched by taskgate",
                run.id
            )));
        };
        if !row.status.is_active() {
            // Superseded: the core cancelled its check runs already.
            return Ok(Decision::nothing(format!(
                "workflow run {}: attempt {} of task {} is {}",
                run.id,
                row.attempt,
                row.task,
                row.status.as_str()
            )));
        }
        let progress = if completed {
            self.finished(&repo, &row, run).await?
        } else {
            Progress::Started {
                attempt: row.attempt,
            }
        };
        on_progress(runs, repo, row, progress).await
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
        // A title alone is easy to forge: only a dispatched run of this
        // repository's default branch may be matched by it.
        if !run.dispatched_here(repo, default_branch) {
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
        Ok((run.file() == Some(config.runner_workflow.as_str())).then_some(row))
    }

    /// An Actions watch: asks GitHub for the attempt's run and carries on
    /// as the webhook that was not heard of would have (see [`watch_step`]).
    pub(crate) async fn on_watch(
        &self,
        watch: WatchEvent,
        runs: &impl AttemptProgress,
    ) -> Result<Decision, ActionsError> {
        let (repo, a) = (watch.repo, watch.attempt);
        let what = format!("attempt {} of task {}", a.attempt, a.task);
        let row = self
            .store
            .attempt(&repo, &a.story, &a.task, a.attempt)
            .await?
            .filter(|r| r.runner == RunnerKind::Actions);
        let Some(row) = row else {
            return Ok(Decision::nothing(format!("watch: no Actions {what}")));
        };
        let queued = row.status == AttemptStatus::Queued;
        if !row.status.is_active() {
            return Ok(Decision::nothing(format!(
                "watch: {what} is {}",
                row.status.as_str()
            )));
        }
        let seen = self.run_seen(&repo, &row, &a).await?;
        let age_ms = (runs.now() * 1000 - row.queued_ms).max(0) as u64;
        let progress = match watch_step(queued, seen, Duration::from_millis(age_ms)) {
            WatchStep::Nothing(why) => {
                return Ok(Decision::nothing(format!("watch: {what}: {why}")))
            }
            WatchStep::Start => Progress::Started {
                attempt: row.attempt,
            },
            WatchStep::FinishFromRun(run) => self.finished(&repo, &row, &run).await?,
            WatchStep::GiveUp(why) => Progress::Finished {
                attempt: row.attempt,
                report: report_for_missing_artifact(&row.task, &row.sha, &row.gates, &why, None),
                workspace: String::new(),
            },
        };
        let mut decision = on_progress(runs, repo, row, progress).await?;
        decision.outcome = format!("watch: {}", decision.outcome);
        Ok(decision)
    }

    /// The attempt's run as GitHub has it now, by the id its dispatch was
    /// answered with (or its first webhook told), else by its title.
    async fn run_seen(
        &self,
        repo: &RepoName,
        row: &AttemptRow,
        attempt: &AttemptRef,
    ) -> Result<RunSeen, ActionsError> {
        let ids = self.store.workflow_runs_of_attempt(repo, attempt).await?;
        let client = self.github.installation_client(row.installation).await?;
        let run = match ids.last() {
            Some(&run_id) => {
                let path = format!("/repos/{repo}/actions/runs/{run_id}");
                match send(&client, http::Method::GET, &path, None).await {
                    Ok(answer) => answer.json::<WorkflowRun>()?,
                    Err(e) if e.status() == Some(404) => return Ok(RunSeen::Gone(run_id)),
                    Err(e) => return Err(e.into()),
                }
            }
            None => {
                let Some(run) = self.run_by_title(&client, repo, row, attempt).await? else {
                    return Ok(RunSeen::Unknown);
                };
                // Found once, looked up by id from now on.
                self.store.put_workflow_run(repo, run.id, attempt).await?;
                run
            }
        };
        Ok(match run.status.as_deref() {
            Some("completed") => RunSeen::Completed(Box::new(run)),
            Some("in_progress") => RunSeen::InProgress,
            other => RunSeen::Waiting(other.unwrap_or("unknown").to_owned()),
        })
    }

    /// The dispatched run of the configured runner workflow, on the default
    /// branch, whose `display_title` names `attempt` (the template's
    /// `run-name`): how the watch finds a run on hosts that do not answer a
    /// dispatch with its id. Only people with write access can dispatch, and
    /// only from the default branch is the workflow taskgate's own.
    async fn run_by_title(
        &self,
        client: &octocrab::Octocrab,
        repo: &RepoName,
        row: &AttemptRow,
        attempt: &AttemptRef,
    ) -> Result<Option<WorkflowRun>, ActionsError> {
        #[derive(Deserialize)]
        struct Listing {
            workflow_runs: Vec<WorkflowRun>,
        }
        let config = self.config(repo, &row.story).await?;
        let about: Value = send(client, http::Method::GET, &format!("/repos/{repo}"), None)
            .await?
            .json()?;
        let default_branch = about["default_branch"].as_str();
        let path = format!(
            "/repos/{repo}/actions/workflows/{}/runs?event=workflow_dispatch&per_page=100",
            config.runner_workflow
        );
        let listing: Listing = send(client, http::Method::GET, &path, None).await?.json()?;
        Ok(listing.workflow_runs.into_iter().find(|run| {
            run.head_branch.as_deref() == default_branch
                && run
                    .display_title
                    .as_deref()
                    .and_then(attempt_of_display_title)
                    .as_ref()
                    == Some(attempt)
        }))
    }

    /// The run's checked report, or why there is none. Only a transient
    /// GitHub error is an error.
    async fn report(
        &self,
        repo: &RepoName,
        row: &AttemptRow,
        run: &WorkflowRun,
    ) -> Result<Result<RunReport, NotAccepted>, ActionsError> {
        let client = self.github.installation_client(row.installation).await?;
        let cause =
            match fetch_report(&client, repo, run.id, &row.task, &row.sha, self.limits).await {
                Ok(mut report) => {
                    // The job knows no quarantine, and the artifact is not
                    // believed about one: the server's is applied, as to a
                    // local run's.
                    let now = self.store.clock().now_s();
                    let quarantined = self.store.quarantined_tests(repo, now).await?;
                    let quarantined = quarantined.into_iter().collect();
                    for gate in &mut report.gates {
                        apply_quarantine(gate, &quarantined);
                    }
                    super::commit_changes::record_from_github(&self.store.changes(), &client, row)
                        .await;
                    // A run without a report says nothing of the overhead.
                    self.counted.count(&self.metrics, row, run, &report);
                    return Ok(Ok(report));
                }
                Err(ArtifactError::GitHub(e)) if e.is_transient() => return Err(e.into()),
                Err(e) => e,
            };
        Ok(Err(NotAccepted::Artifact {
            cause,
            conclusion: run.conclusion.clone(),
        }))
    }
}

/// An Actions attempt's progress, decided on the path the local runner's
/// progress takes.
async fn on_progress(
    runs: &impl AttemptProgress,
    repo: RepoName,
    row: AttemptRow,
    progress: Progress,
) -> Result<Decision, ActionsError> {
    let event = RunEvent {
        repo,
        story: row.story,
        task: row.task,
        progress,
    };
    runs.on_progress(event).await
}

/// What the Actions runner needs of the task runs: the time decisions
/// are taken at, and where an attempt's progress goes. Declared here, as
/// Prow's plugins declare the client they use. The processor is the one
/// the server uses (a proof's progress goes on to the ship queue, as the
/// local runner's does); [`Runs`] alone serves a task's attempts.
pub(crate) trait AttemptProgress {
    /// The time, in unix seconds.
    fn now(&self) -> i64;
    /// An attempt's progress, decided as the local runner's is.
    async fn on_progress(&self, event: RunEvent) -> Result<Decision, ActionsError>;
}

impl AttemptProgress for Runs {
    fn now(&self) -> i64 {
        self.clock.now_s()
    }

    async fn on_progress(&self, event: RunEvent) -> Result<Decision, ActionsError> {
        Ok(Runs::on_progress(self, event).await?)
    }
}

mod not_accepted;
mod store;
mod tested;

pub use not_accepted::NotAccepted;

pub(crate) use store::ActionsStore;

#[cfg(test)]
mod tests;
