//! The run queue: starts the attempts the processor queued on the local
//! runner and reports their progress back through the inbox. Attempts
//! handed to the Actions runner are not its business (`app::actions_runs`)
//! beyond one thing: its periodic tick, which records a tick for each open
//! branch todo, also records a watch for each Actions attempt not heard of
//! for a while — recorded only; the processor looks and decides.
//!
//! Owns: which attempts are running in this process and their cancel
//! handles. Must not: decide anything about a task — it records what
//! happened (`waiting`, `started`, `finished`, `skipped`) as a
//! internal run delivery (`InternalEvent::Run`) and the processor decides, one event at a time.
//!
//! The tick keeps time by the injected clock: it falls due every
//! `tick_every` of clock time, and a test that advances the clock past it
//! wakes the loop at once.
//!
//! Attempts are read from the store, so a restart picks up queued ones and
//! re-runs those a crash interrupted. An attempt that leaves the active set
//! (the processor cancelled it: a newer push, a merge) is stopped: its
//! process groups get SIGTERM, then SIGKILL.
//!
//! Runners are shared fairly between installations (`run_queue::fair`):
//! queued attempts are claimed only as runners come free, one
//! installation's at a time in rounds, so one installation's backlog
//! never holds up another's run by more than one turn.
//!
//! With several replicas on one PostgreSQL database, each attempt is run
//! by one of them: the replica that claimed it (`Store::claim_attempt`)
//! runs it on its own runner and renews the claim every third of a lease;
//! a run whose claim is lost is abandoned (stopped, nothing more
//! reported). A replica that dies leaves its claims to run out, and
//! another runs those attempts again from the start. Progress is recorded
//! under one delivery id per attempt and step, so the inbox keeps the
//! first `finished` of an attempt and drops any other: an attempt never
//! ends twice. The tick and the Actions watch run on the replica holding
//! their lease (`pass:ticks`, `pass:actions-watch`). On a SQLite file there
//! is one process, which holds every claim and lease.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{info, info_span, warn, Instrument};

use crate::app::task::{Progress, RunEvent};
use crate::github::GitHubApp;
use crate::runner::{
    cancel_pair, run_gate_specs, CancelHandle, GitError, LocalRunner, MirrorStore, RunOptions,
    Workspace,
};
use crate::store::{AttemptRow, NewDelivery};
use taskgate_core::ids::{DeliveryId, StoryId};
use taskgate_core::internal::InternalEvent;
use taskgate_core::report::{GateResult, RunReport, REPORT_VERSION};
use taskgate_core::task::AttemptStatus;
use taskgate_core::AttemptRef;

mod fair;
mod gates;
mod passes;
mod store;
mod tested;

pub(crate) use store::RunQueueStore;

/// Where the runner gets a repository's commits.
#[derive(Debug, Clone)]
pub struct GitSource {
    /// `https://github.com/{repo}.git`; `{repo}` is replaced by `owner/name`.
    pub url_template: String,
    /// Send the installation token (HTTPS); off for `file://` test remotes.
    pub with_token: bool,
}

impl GitSource {
    /// The git host that goes with an API URL: github.com for
    /// api.github.com, `https://host/` for GitHub Enterprise's `/api/v3`.
    pub fn for_api(api_url: &str) -> GitSource {
        GitSource {
            url_template: format!("{}/{{repo}}.git", crate::github::web_base(api_url)),
            with_token: true,
        }
    }

    fn url(&self, repo: &str) -> String {
        self.url_template.replace("{repo}", repo)
    }
}

type AttemptKey = (String, StoryId, String, u32);

/// One run this process started.
struct Run {
    cancel: CancelHandle,
    /// Set once this process may no longer report the run: its claim was
    /// lost, or the server that started it stopped. Its processes are
    /// stopped and what it still learns is dropped.
    abandoned: Arc<AtomicBool>,
    /// Whether it has reported its end.
    finished: bool,
}

impl Run {
    fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }
}

type Runs = Arc<Mutex<HashMap<AttemptKey, Run>>>;

/// Attempts started by this process, and whether each has reported its
/// end. Shared by every start of the loop: a run queue restarted after a
/// panic finds the attempts the one before it left running, and does not
/// start them a second time.
///
/// The runs belong to the server that started them: when the last handle
/// that starts its loop is gone (the server stopped, or was aborted as a
/// test's crash), every run still going is abandoned, so a stopped server
/// neither renews its claims nor reports a result.
#[derive(Clone)]
pub struct InHand {
    runs: Runs,
    /// Queued attempts already told how many runs are ahead of them.
    told_waiting: Arc<Mutex<std::collections::HashSet<AttemptKey>>>,
    /// Queued attempts already told that the host's disk holds them.
    told_held: Arc<Mutex<std::collections::HashSet<AttemptKey>>>,
    /// Held by whoever starts the loop and by the loop running now, never
    /// by the runs themselves.
    owner: Option<Arc<Owner>>,
}

impl Default for InHand {
    fn default() -> InHand {
        let runs = Runs::default();
        InHand {
            owner: Some(Arc::new(Owner(runs.clone()))),
            runs,
            told_waiting: Arc::default(),
            told_held: Arc::default(),
        }
    }
}

impl InHand {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<AttemptKey, Run>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Abandons every run in hand when dropped ([`InHand`]).
struct Owner(Runs);

impl Drop for Owner {
    fn drop(&mut self) {
        let runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for run in runs.values() {
            run.abandon();
        }
    }
}

fn key(row: &AttemptRow) -> AttemptKey {
    (
        row.repo.as_str().to_owned(),
        row.story.clone(),
        row.task.key(),
        row.attempt,
    )
}

fn attempt_ref(row: &AttemptRow) -> AttemptRef {
    AttemptRef {
        story: row.story.clone(),
        task: row.task.clone(),
        attempt: row.attempt,
    }
}

pub struct RunQueue {
    /// What it reads and records ([`RunQueueStore`]).
    pub(crate) store: RunQueueStore,
    pub github: Arc<GitHubApp>,
    pub runner: LocalRunner,
    pub mirrors: MirrorStore,
    pub workspaces: PathBuf,
    pub git: GitSource,
    pub options: RunOptions,
    /// Which repositories' task code may reach the network
    /// (`TASKGATE_RUNNER_NETWORK`); a repository's config only asks.
    pub network: taskgate_core::network::RunnerNetwork,
    /// Below it no run starts; the queued ones say why (`core::host_disk`).
    pub floor: crate::runner::sandbox::disk::DiskFloor,
    /// Woken by the processor when attempts were queued or cancelled.
    pub runs_changed: Arc<Notify>,
    /// Wakes the processor when progress was recorded.
    pub recorded: Arc<Notify>,
    /// How often open branch todos are checked against their lifetime.
    pub tick_every: Duration,
    /// How long an Actions attempt may go unheard of before its run is
    /// looked up on GitHub (and again every as long).
    pub actions_watch: Duration,
    /// When ticks fall due, and the time watches are measured by (tests
    /// move it on).
    pub clock: crate::clock::Clock,
    /// Where the runner's overhead is counted.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The attempts running in this process ([`InHand`]).
    pub in_hand: InHand,
}

impl RunQueue {
    pub async fn run(mut self) {
        // Held by this loop, not by the runs it starts (they hold the
        // queue): see [`InHand`].
        let _owner = self.in_hand.owner.take();
        let this = Arc::new(self);
        let every_ms = (this.tick_every.as_millis() as i64).max(1);
        let mut next_tick_ms = this.clock.now_ms();
        loop {
            let now_ms = this.clock.now_ms();
            if now_ms >= next_tick_ms {
                // On the same beat; beats missed (a stall, a clock moved
                // on) are not made up one by one.
                next_tick_ms += every_ms * ((now_ms - next_tick_ms) / every_ms + 1);
                this.periodic_passes().await;
            }
            this.take_up_runs().await;
            tokio::select! {
                _ = this.runs_changed.notified() => {}
                _ = this.clock.sleep_until_ms(next_tick_ms) => {}
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
        }
    }

    /// Runs a claimed attempt, keeping its claim while it is in hand.
    fn start_run(self: &Arc<Self>, row: AttemptRow) {
        let k = key(&row);
        let (cancel, token) = cancel_pair();
        let abandoned = Arc::new(AtomicBool::new(false));
        let run = Run {
            cancel,
            abandoned: abandoned.clone(),
            finished: false,
        };
        self.in_hand.lock().insert(k.clone(), run);
        let this = self.clone();
        let span = info_span!("run", repo = %row.repo, task = %row.task, attempt = row.attempt);
        tokio::spawn(
            async move {
                let run = async {
                    this.run_attempt(&row, token, &abandoned).await;
                    let mut runs = this.in_hand.lock();
                    if abandoned.load(Ordering::SeqCst) {
                        // Let go: claimed again once free, if still queued.
                        runs.remove(&k);
                    } else if let Some(run) = runs.get_mut(&k) {
                        run.finished = true;
                    }
                    drop(runs);
                    // A runner is free: the next queued attempt may start.
                    this.runs_changed.notify_one();
                };
                tokio::join!(run, this.keep_claim(&row));
            }
            .instrument(span),
        );
    }

    /// Renews the claim on `row`'s attempt every third of a lease while it
    /// is in hand. A claim lost (another replica took the attempt over
    /// after this one went unheard for a lease, or the attempt ended) or
    /// not renewed for a whole lease abandons a run still going.
    async fn keep_claim(&self, row: &AttemptRow) {
        if !self.store.is_shared() {
            return; // one process: nobody to keep the attempt from
        }
        let k = key(row);
        let lease_ms = self.store.lease_ms();
        let mut held_until = self.clock.now_ms() + lease_ms;
        loop {
            self.clock
                .sleep_until_ms(self.clock.now_ms() + (lease_ms / 3).max(1))
                .await;
            let finished = match self.in_hand.lock().get(&k) {
                Some(run) if !run.abandoned.load(Ordering::SeqCst) => run.finished,
                _ => return, // its end recorded, cancelled, or abandoned
            };
            let now_ms = self.clock.now_ms();
            let held = match self.store.claim_attempt(&row.repo, &attempt_ref(row)).await {
                Ok(held) => held,
                Err(e) => {
                    warn!(error = %e, "renewing the claim on a run failed");
                    now_ms < held_until
                }
            };
            if held {
                held_until = now_ms + lease_ms;
                continue;
            }
            if !finished {
                warn!("the claim on this attempt is lost: its run is abandoned");
                if let Some(run) = self.in_hand.lock().get(&k) {
                    run.abandon();
                }
            }
            return;
        }
    }

    /// Records `progress` of a run, unless the run was abandoned.
    async fn record(&self, row: &AttemptRow, progress: Progress, abandoned: &AtomicBool) {
        let name = match &progress {
            Progress::Waiting { .. } => "waiting",
            Progress::Held { .. } => "held",
            Progress::Started { .. } => "started",
            Progress::Finished { .. } => "finished",
            Progress::Skipped { .. } => "skipped",
        };
        let event = RunEvent {
            repo: row.repo.clone(),
            story: row.story.clone(),
            task: row.task.clone(),
            progress,
        };
        let delivery = NewDelivery::internal(
            DeliveryId::new(format!(
                "taskgate-run {} {} {} {} {name}",
                row.repo, row.story, row.task, row.attempt
            )),
            row.installation,
            &InternalEvent::Run(event),
        )
        .with_action(name);
        // A store failure here is retried: progress must not be lost, or
        // the check runs would stay in progress forever.
        for attempt in 0.. {
            if abandoned.load(Ordering::SeqCst) {
                info!(
                    progress = name,
                    "the run was abandoned: its progress is not recorded"
                );
                return;
            }
            match self.store.record_delivery(delivery.clone()).await {
                Ok(_) => break,
                Err(e) if attempt < 20 => {
                    warn!(error = %e, "recording run progress failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => {
                    warn!(error = %e, "recording run progress failed; giving up");
                    return;
                }
            }
        }
        self.recorded.notify_one();
    }

    async fn run_attempt(
        self: &Arc<Self>,
        row: &AttemptRow,
        cancel: crate::runner::CancelToken,
        abandoned: &Arc<AtomicBool>,
    ) {
        // When every runner is busy, the queued check runs say how many
        // runs are ahead; recorded before `started`, so shown in order.
        let (tx, rx) = tokio::sync::oneshot::channel::<usize>();
        let notice = {
            let (this, row, abandoned) = (self.clone(), row.clone(), abandoned.clone());
            // A run taken over from a replica that died has had its
            // check runs say "running": they are not set back to queued.
            let taken_over = row.status != AttemptStatus::Queued;
            tokio::spawn(async move {
                if let (Ok(ahead), false) = (rx.await, taken_over) {
                    let attempt = row.attempt;
                    this.record(&row, Progress::Waiting { attempt, ahead }, &abandoned)
                        .await;
                }
            })
        };
        let slot = self
            .runner
            .slot(move |ahead| {
                let _ = tx.send(ahead);
            })
            .await;
        let _ = notice.await;
        if cancel.is_cancelled() {
            return;
        }
        // A run taken over from a replica that died records `started`
        // again: the inbox drops it (same id) and the check runs stay in
        // progress; its `finished` is the attempt's first, and counts.
        let started = Progress::Started {
            attempt: row.attempt,
        };
        self.record(row, started, abandoned).await;
        let began = std::time::Instant::now();
        let progress = match self.execute(row, cancel).await {
            Ok((report, workspace)) => {
                self.metrics.run_finished(
                    "local",
                    began.elapsed().as_secs_f64(),
                    report.commands_seconds(),
                );
                Progress::Finished {
                    attempt: row.attempt,
                    report,
                    workspace,
                }
            }
            Err(RunError::Gone(why)) => Progress::Skipped {
                attempt: row.attempt,
                why,
            },
            Err(RunError::Git(GitError::CommitNotFound(sha))) => Progress::Skipped {
                attempt: row.attempt,
                why: format!(
                    "commit {sha} no longer exists on the branch's repository (force-pushed away?)"
                ),
            },
            Err(e) => Progress::Finished {
                attempt: row.attempt,
                report: tooling_failure(row, &e.to_string()),
                workspace: String::new(),
            },
        };
        drop(slot);
        self.record(row, progress, abandoned).await;
    }

    async fn execute(
        &self,
        row: &AttemptRow,
        cancel: crate::runner::CancelToken,
    ) -> Result<(RunReport, String), RunError> {
        let plan = self
            .store
            .story(&row.repo, &row.story)
            .await
            .map_err(|e| RunError::Setup(format!("store: {e}")))?
            .ok_or_else(|| RunError::Setup(format!("story {} is not known", row.story)))?;
        let gates = self.row_gates(row, &plan).await?;
        let token = if self.git.with_token {
            Some(
                self.github
                    .installation_token(row.installation)
                    .await
                    .map_err(|e| RunError::Setup(format!("installation token: {e}")))?,
            )
        } else {
            None
        };
        let mirror = self.mirrors.mirror(row.repo.as_str())?;
        mirror
            .fetch_commit_async(
                self.git.url(row.repo.as_str()),
                token.clone(),
                row.sha.as_str().to_owned(),
            )
            .await?;
        let (tested, notes) = self.tested_commit(row, &mirror, token.clone()).await?;
        let gates: Vec<_> = gates
            .into_iter()
            .map(|mut g| {
                g.notes.extend(notes.iter().cloned());
                g
            })
            .collect();
        let cap = self.options.isolation.run_disk_bytes();
        let ws =
            Workspace::checkout_async(mirror.clone(), tested, self.workspaces.clone(), cap).await?;
        let workspace = ws.path().display().to_string();
        // The repository asks for the network in its config on the default
        // branch (never the commit under test); the operator decides.
        let asked = taskgate_core::config::load_config(plan.config.as_deref())
            .map(|c| c.runner_network)
            .unwrap_or(false);
        let network = self.network.decide(&row.repo, asked);
        // Quarantined tests come from the store's recorded history only.
        let quarantined = (self.store)
            .quarantined_tests(&row.repo, self.store.clock().now_s())
            .await
            .map_err(|e| RunError::Setup(format!("store: {e}")))?;
        let options = RunOptions {
            cancel,
            sha: Some(row.sha.as_str().to_owned()),
            network,
            quarantined: std::sync::Arc::new(quarantined.into_iter().collect()),
            disk: ws.disk().clone(),
            ..self.options.clone()
        };
        let report = run_gate_specs(ws.path(), row.task.clone(), gates, options).await;
        // Removing a big checkout is blocking work.
        let _ = tokio::task::spawn_blocking(move || drop(ws)).await;
        // Before the report is recorded: deciding on it reads them.
        let url = self.git.url(row.repo.as_str());
        crate::app::commit_changes::record_from_mirror(
            &self.store.changes(),
            row,
            &mirror,
            url,
            token,
        )
        .await;
        Ok((report, workspace))
    }
}

/// Why a run did not run its gates.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Git(#[from] GitError),
    /// The runner could not set it up: every gate fails as its fault.
    #[error("{0}")]
    Setup(String),
    /// What it was to prove is gone (a ship train car dissolved): not
    /// a verdict on the code, and nothing runs.
    #[error("{0}")]
    Gone(String),
}

/// A run that could not start (no mirror, no token, no plan) fails every
/// gate as `tooling_error`: a fault of the runner, said as such.
fn tooling_failure(row: &AttemptRow, why: &str) -> RunReport {
    let kind = taskgate_core::classify::FailureKind::ToolingError;
    RunReport {
        version: REPORT_VERSION,
        task: row.task.clone(),
        sha: Some(row.sha.as_str().to_owned()),
        gates: row
            .gates
            .iter()
            .map(|g| GateResult {
                gate: g.clone(),
                passed: false,
                kind: Some(kind),
                summary: Some(format!("the runner could not run this gate: {why}")),
                commands: vec![],
                missing_artifacts: vec![],
                metric_failures: vec![],
                warnings: vec![],
                cancelled: false,
                tests: None,
            })
            .collect(),
        duration_ms: 0,
        cancelled: false,
        runner_fault: Some(why.to_string()),
        tested: None,
    }
}
