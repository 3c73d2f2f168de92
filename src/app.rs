//! Wiring: builds the store, the GitHub app client, the intake, the
//! processor and the executor from a [`ServeConfig`] and runs them.
//!
//! Owns: the process's long-running tasks and their startup order.
//! Must not: hold behaviour of its own; each part lives in its module.

pub mod actions_runs;
mod commands;
mod commit_changes;
pub mod doctor;
mod flaky;
pub mod handled;
mod inbox_lease;
pub mod loops;
mod processor;
pub mod resync;
pub mod ship;
mod start;
pub mod sync;
pub mod task;
pub mod webhook_proxy;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::github::{Backoff, GitHubError, Pacing};
use crate::store::{Store, StoreError};
pub use handled::Handled;
use loops::{run_queue, supervisor};
pub use processor::Processor;
pub use start::start;

/// [`ServeConfig::actions_watch`] unless set: a few GETs an hour for each
/// open Actions attempt, and a lost webhook costs at most this long.
pub const DEFAULT_ACTIONS_WATCH: Duration = Duration::from_secs(5 * 60);

/// How long an idle loop sleeps before it looks again by itself: the
/// fallback for a wake-up that did not come (a commit of this replica
/// wakes its loops in process, another replica's by `LISTEN`/`NOTIFY`,
/// `store::wakeups`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePolls {
    /// The processor's look for new deliveries.
    pub deliveries: Duration,
    /// The executor's look for due effects.
    pub effects: Duration,
}

impl IdlePolls {
    pub const DEFAULT: IdlePolls = IdlePolls {
        deliveries: Duration::from_secs(5),
        effects: Duration::from_secs(30),
    };
}

/// Everything `taskgate serve` needs (SPEC §9: env vars, flags, `.env`).
#[derive(Clone)]
pub struct ServeConfig {
    pub app_id: u64,
    pub private_key_pem: String,
    pub webhook_secret: String,
    /// The secret being rotated out, still accepted meanwhile
    /// (`WEBHOOK_SECRET_PREVIOUS`).
    pub previous_webhook_secret: Option<String>,
    pub github_api_url: String,
    pub host: String,
    pub port: u16,
    pub database_url: String,
    pub api_token: Option<String>,
    /// `/metrics` needs the API token too (`TASKGATE_METRICS_AUTH`).
    pub metrics_auth: bool,
    pub backoff: Backoff,
    pub pacing: Pacing,
    /// Mirrors and run workspaces live here (`TASKGATE_WORK_DIR`).
    pub work_dir: std::path::PathBuf,
    /// Acceptance runs at once on the local runner; more wait in a queue.
    pub max_concurrent_runs: usize,
    /// Where the runner fetches commits; derived from the API URL if unset.
    pub git: Option<run_queue::GitSource>,
    /// How often open branch todos are checked against their lifetime.
    pub tick_every: Duration,
    /// How long decided deliveries and ended effects are kept
    /// (`TASKGATE_RETENTION_DAYS`).
    pub retention: Duration,
    /// How long an Actions attempt may go unheard of before taskgate asks
    /// GitHub for its run (then again every as long): webhooks get lost.
    pub actions_watch: Duration,
    /// How often GitHub's delivery log is read for webhooks that failed to
    /// arrive, to ask for them again (`TASKGATE_REDELIVER_MINUTES`); `None`
    /// turns it off. The first pass runs half a minute after the start.
    pub redeliver_every: Option<Duration>,
    /// A smee.io channel to take webhooks from (`WEBHOOK_PROXY_URL`), for
    /// development on a machine GitHub cannot reach.
    pub webhook_proxy_url: Option<String>,
    /// Where GitHub posts webhooks (`WEBHOOK_PATH`).
    pub webhook_path: String,
    /// The memory webhook bodies in hand may hold at once, in MiB
    /// (`TASKGATE_WEBHOOK_MEMORY_MIB`; at least 25, GitHub's largest body).
    pub webhook_memory_mib: usize,
    /// How long a request's headers may take to arrive, and a kept-alive
    /// connection may sit idle ([`crate::web::HEADER_READ_TIMEOUT`]).
    pub header_read_timeout: Duration,
    /// The one clock every part reads "now" from: the store's stamps,
    /// due times, periods and decisions (tests move it on).
    pub clock: crate::clock::Clock,
    /// How long a claim on work shared by replicas lasts unrenewed
    /// (`TASKGATE_LEASE_SECONDS`; PostgreSQL only).
    pub lease: Duration,
    /// Which repositories' task code may reach the network
    /// (`TASKGATE_RUNNER_NETWORK`; none by default).
    pub runner_network: taskgate_core::network::RunnerNetwork,
    /// How the local runner isolates task code: the sandbox and its
    /// settings, read once from the environment at start
    /// ([`crate::runner::Isolation::from_env`]); tests add read-only paths.
    pub isolation: crate::runner::Isolation,
    /// Below this many MiB free under the work directory no run starts
    /// (`TASKGATE_MIN_FREE_MIB`; 0: no floor).
    pub min_free_mib: u64,
    /// Where the free space is read: `None`, the work directory's disk;
    /// tests set a reading by hand.
    pub free_space: Option<crate::runner::sandbox::disk::FreeSpace>,
    /// The idle loops' own looks ([`IdlePolls::DEFAULT`]; tests that
    /// prove a wake-up make them long, so only the wake-up can decide).
    pub idle_polls: IdlePolls,
}

impl ServeConfig {
    /// A server on 127.0.0.1 (any free port) in front of an in-process fake
    /// GitHub, as `taskgate demo` and the tests run it: fast retries, no
    /// pacing (tests with many writes raise the fake's secondary limit).
    #[cfg(feature = "demo")]
    pub fn against_fake(
        fake: &fakehub::FakeGitHub,
        webhook_secret: &str,
        database: &std::path::Path,
    ) -> ServeConfig {
        ServeConfig {
            app_id: fake.app_id(),
            private_key_pem: fakehub::FakeGitHub::private_key_pem().to_owned(),
            webhook_secret: webhook_secret.to_owned(),
            previous_webhook_secret: None,
            github_api_url: fake.url(),
            host: "127.0.0.1".into(),
            port: 0,
            database_url: format!("sqlite://{}", database.display()),
            api_token: None,
            metrics_auth: false,
            backoff: Backoff {
                base: Duration::from_millis(20),
                max: Duration::from_millis(200),
                max_attempts: 5,
                // The fake's lists lag only when a test says so.
                read_lag: Duration::ZERO,
            },
            pacing: Pacing::OFF,
            work_dir: database
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join("taskgate-work"),
            max_concurrent_runs: 2,
            git: None,
            tick_every: Duration::from_secs(60),
            actions_watch: DEFAULT_ACTIONS_WATCH,
            retention: loops::retention::DEFAULT_RETENTION,
            // Tests that want it turn it on: the fake's log is their own.
            redeliver_every: None,
            webhook_proxy_url: None,
            webhook_path: crate::web::DEFAULT_WEBHOOK_PATH.to_owned(),
            webhook_memory_mib: crate::intake::DEFAULT_MEMORY_MIB,
            header_read_timeout: crate::web::HEADER_READ_TIMEOUT,
            clock: crate::clock::Clock::system(),
            lease: crate::store::DEFAULT_LEASE,
            runner_network: taskgate_core::network::RunnerNetwork::Never,
            isolation: crate::runner::Isolation::from_env(),
            // A nearly full CI disk must not hold the tests' runs; the
            // floor's own tests set a reading by hand.
            min_free_mib: 0,
            free_space: None,
            idle_polls: IdlePolls::DEFAULT,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("WEBHOOK_SECRET must not be empty: without it anyone could post webhooks")]
    NoSecret,
    #[error(
        "TASKGATE_METRICS_AUTH asks /metrics for TASKGATE_API_TOKEN, which is not set: \
         set it, or leave /metrics open"
    )]
    MetricsAuthWithoutToken,
    #[error(transparent)]
    WebhookMemory(#[from] crate::intake::BudgetTooSmall),
    #[error("cannot create the work directory {path}: {source}")]
    WorkDir {
        path: String,
        source: std::io::Error,
    },
}

/// A supervised loop's body, and what starts it again after a panic.
type LoopFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
type LoopStart = Box<dyn FnMut() -> LoopFuture + Send>;

/// A started server: its address and its tasks.
pub struct Running {
    pub addr: SocketAddr,
    pub store: Store,
    loops: Arc<supervisor::Loops>,
    tasks: Vec<JoinHandle<()>>,
    server: JoinHandle<()>,
}

impl Running {
    /// The background loops' state: which are down now, and which ever
    /// stopped and why (the test harness fails a test on the first).
    pub fn loops(&self) -> Arc<supervisor::Loops> {
        self.loops.clone()
    }

    /// Waits for the HTTP server to stop.
    pub async fn wait(self) {
        let _ = self.server.await;
        for task in self.tasks {
            task.abort();
        }
    }

    /// Stops everything at once (tests use this to simulate a crash of the
    /// in-process server; a real crash is tested with a child process).
    pub fn abort(self) {
        self.server.abort();
        for task in self.tasks {
            task.abort();
        }
    }
}
