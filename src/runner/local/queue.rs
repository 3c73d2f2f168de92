//! The local runner's bound on concurrent runs, and the whole run of one
//! task at one commit.
//!
//! Owns: [`LocalRunner`] (at most N runs at once, later ones wait in FIFO
//! order and are told their place) and [`LocalRunner::run_commit`] (fetch
//! the dependencies from other repositories and the commit into their
//! mirrors, check out, run the gates, remove the checkout). Must not: run
//! a command itself; the gate loop does.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::super::deps::{check_out_all, fetch_all, DepSource};
use super::super::mirror::{GitError, Mirror};
use super::super::workspace::Workspace;
use super::{refused, run_gate_specs, GateSpec, RunOptions};
use taskgate_core::report::RunReport;

/// Where [`LocalRunner::run_commit`] gets the commit and checks it out.
pub struct Checkout<'a> {
    /// The repository's mirror, fetched into.
    pub mirror: &'a Mirror,
    /// The repository's clone URL, and a token to fetch with.
    pub url: String,
    pub token: Option<String>,
    /// Where the run's workspace is made (and removed after it).
    pub workspaces: PathBuf,
    /// Dependencies from other repositories, checked out read-only at
    /// `deps/<id>` (the job's `RunJob::deps`, with where to fetch them).
    pub deps: Vec<DepSource>,
}

/// Bounds how many runs go at once; later ones wait in FIFO order.
#[derive(Debug, Clone)]
pub struct LocalRunner {
    permits: Arc<Semaphore>,
    capacity: usize,
    waiting: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
}

/// A place among the running; the next waiter goes when it is dropped.
#[derive(Debug)]
pub struct RunSlot {
    _permit: OwnedSemaphorePermit,
    running: Arc<AtomicUsize>,
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl LocalRunner {
    pub fn new(max_concurrent_runs: usize) -> Self {
        LocalRunner {
            permits: Arc::new(Semaphore::new(max_concurrent_runs.max(1))),
            capacity: max_concurrent_runs.max(1),
            waiting: Arc::default(),
            running: Arc::default(),
        }
    }

    /// How many runs may go at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Waits for a slot. If it must wait, `on_queued(n)` is called first
    /// with the number of runs ahead (running and waiting): "queued behind n runs".
    pub async fn slot(&self, on_queued: impl FnOnce(usize)) -> RunSlot {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let ahead = self.running.load(Ordering::SeqCst)
                    + self.waiting.fetch_add(1, Ordering::SeqCst);
                on_queued(ahead);
                let permit = self
                    .permits
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                permit
            }
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        RunSlot {
            _permit: permit,
            running: self.running.clone(),
        }
    }

    /// The whole local run of one task at one commit: wait for a slot,
    /// fetch the dependencies' commits (one that cannot be fetched fails
    /// every gate as `tooling_error` naming its repository and sha, before
    /// anything else is fetched or made), fetch the commit into the mirror,
    /// check it out with the dependencies at `deps/<id>`, run the gates,
    /// clean up.
    pub async fn run_commit(
        &self,
        checkout: Checkout<'_>,
        task: taskgate_core::task::RunSubject,
        gates: Vec<GateSpec>,
        options: RunOptions,
        on_queued: impl FnOnce(usize),
    ) -> Result<RunReport, GitError> {
        let Checkout {
            mirror,
            url,
            token,
            workspaces,
            deps,
        } = checkout;
        let _slot = self.slot(on_queued).await;
        let sha = options
            .sha
            .clone()
            .ok_or_else(|| GitError::InvalidSha("(none given)".into()))?;
        let start = std::time::Instant::now();
        if let Err(why) = fetch_all(&deps).await {
            return Ok(refused(task, gates, &why.to_string(), &options, start));
        }
        mirror.fetch_commit_async(url, token, sha.clone()).await?;
        let cap = options.isolation.run_disk_bytes();
        let ws = Workspace::checkout_async(mirror.clone(), sha, workspaces, cap).await?;
        if let Err(why) = check_out_all(&deps, ws.path()).await {
            let _ = tokio::task::spawn_blocking(move || drop(ws)).await;
            return Ok(refused(task, gates, &why.to_string(), &options, start));
        }
        let options = RunOptions {
            disk: ws.disk().clone(),
            deps: deps.into_iter().map(|d| d.dep).collect(),
            ..options
        };
        let report = run_gate_specs(ws.path(), task, gates, options).await;
        let _ = tokio::task::spawn_blocking(move || drop(ws)).await;
        Ok(report)
    }
}
