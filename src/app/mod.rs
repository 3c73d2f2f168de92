//! Wiring: builds the store, the GitHub app client, the intake, the
//! processor and the executor from a [`ServeConfig`] and runs them.
//!
//! Owns: the process's long-running tasks and their startup order.
//! Must not: hold behaviour of its own; each part lives in its module.

pub mod actions_runs;
mod commands;
mod processor;
pub mod redeliver;
pub mod resync;
pub mod retention;
pub mod run_queue;
pub mod runs;
pub mod ship;
pub mod supervisor;
pub mod sync;
pub mod webhook_proxy;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::commands::Syntax;
use crate::core::Context;
use crate::github::{AppCredentials, Backoff, Executor, GitHubApp, GitHubError, Pacing};
use crate::intake::IntakeState;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};
use crate::web;
pub use processor::Processor;

/// [`ServeConfig::actions_watch`] unless set: a few GETs an hour for each
/// open Actions attempt, and a lost webhook costs at most this long.
pub const DEFAULT_ACTIONS_WATCH: Duration = Duration::from_secs(5 * 60);

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
    /// connection may sit idle ([`web::HEADER_READ_TIMEOUT`]).
    pub header_read_timeout: Duration,
    /// Time for decisions (tests move it on).
    pub clock: crate::clock::Clock,
}

impl ServeConfig {
    /// A server on 127.0.0.1 (any free port) in front of an in-process fake
    /// GitHub, as `taskgate demo` and the tests run it: fast retries, no
    /// pacing (tests with many writes raise the fake's secondary limit).
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
            },
            pacing: Pacing {
                writes: 0,
                per: Duration::from_secs(60),
            },
            work_dir: database
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join("taskgate-work"),
            max_concurrent_runs: 2,
            git: None,
            tick_every: Duration::from_secs(60),
            actions_watch: DEFAULT_ACTIONS_WATCH,
            retention: retention::DEFAULT_RETENTION,
            // Tests that want it turn it on: the fake's log is their own.
            redeliver_every: None,
            webhook_proxy_url: None,
            webhook_path: web::DEFAULT_WEBHOOK_PATH.to_owned(),
            webhook_memory_mib: crate::intake::DEFAULT_MEMORY_MIB,
            header_read_timeout: web::HEADER_READ_TIMEOUT,
            clock: crate::clock::system_clock(),
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

pub async fn start(config: ServeConfig) -> Result<Running, StartError> {
    if config.webhook_secret.is_empty() {
        return Err(StartError::NoSecret);
    }
    if config.metrics_auth && config.api_token.as_deref().unwrap_or_default().is_empty() {
        return Err(StartError::MetricsAuthWithoutToken);
    }
    let store = Store::open_url(&config.database_url)?;
    let creds = AppCredentials::from_pem(config.app_id, &config.private_key_pem)?;
    let github = Arc::new(GitHubApp::new(&config.github_api_url, creds));
    let mut metrics = Metrics::new();
    metrics.register_store(store.writer_metrics());
    let metrics = Arc::new(metrics);
    let recorded = Arc::new(Notify::new());
    let effects_stored = Arc::new(Notify::new());
    let runs_changed = Arc::new(Notify::new());

    let bot_login = match tokio::time::timeout(Duration::from_secs(10), github.app_info()).await {
        Ok(Ok(app)) => {
            info!(slug = %app.slug, "authenticated as the GitHub App");
            Some(format!("{}[bot]", app.slug))
        }
        Ok(Err(e)) => {
            warn!(error = %e, "GET /app failed; own comments are recognised by app id and marker only");
            None
        }
        Err(_) => {
            warn!("GET /app timed out; own comments are recognised by app id and marker only");
            None
        }
    };

    let permissions = Arc::new(crate::github::Permissions::new(github.clone()));
    let processor = Processor {
        store: store.clone(),
        metrics: metrics.clone(),
        context: Context {
            app_id: config.app_id,
            bot_login,
            syntax: Syntax::default(),
        },
        recorded: recorded.clone(),
        effects_stored: effects_stored.clone(),
        retry: config.backoff,
        syncer: sync::Syncer {
            github: github.clone(),
            store: store.clone(),
        },
        runs: runs::Runs {
            store: store.clone(),
            clock: config.clock.clone(),
            runs_changed: runs_changed.clone(),
        },
        actions: actions_runs::ActionsRuns {
            github: github.clone(),
            store: store.clone(),
            limits: crate::runner::ArtifactLimits::default(),
            metrics: metrics.clone(),
            counted: Default::default(),
        },
        permissions: permissions.clone(),
        ship: ship::Ship {
            github: github.clone(),
            store: store.clone(),
            permissions,
        },
    };
    std::fs::create_dir_all(&config.work_dir).map_err(|source| StartError::WorkDir {
        path: config.work_dir.display().to_string(),
        source,
    })?;
    // Built again for each start of the loop (see `supervisor`).
    let run_queue = {
        let (store, github, recorded, metrics, clock) = (
            store.clone(),
            github.clone(),
            recorded.clone(),
            metrics.clone(),
            config.clock.clone(),
        );
        let runner = crate::runner::LocalRunner::new(config.max_concurrent_runs.max(1));
        let work_dir = config.work_dir.clone();
        let git = config
            .git
            .clone()
            .unwrap_or_else(|| run_queue::GitSource::for_api(&config.github_api_url));
        let (tick_every, actions_watch) = (config.tick_every, config.actions_watch);
        let in_hand = run_queue::InHand::default();
        move || {
            run_queue::RunQueue {
                store: store.clone(),
                github: github.clone(),
                runner: runner.clone(),
                mirrors: crate::runner::MirrorStore::new(work_dir.join("mirrors")),
                workspaces: work_dir.join("workspaces"),
                git: git.clone(),
                options: crate::runner::RunOptions::default(),
                runs_changed: runs_changed.clone(),
                recorded: recorded.clone(),
                tick_every,
                actions_watch,
                clock: clock.clone(),
                metrics: metrics.clone(),
                in_hand: in_hand.clone(),
            }
            .run()
        }
    };
    let redeliver_github = github.clone();
    let redeliver_metrics = metrics.clone();
    let executor = {
        let (store, metrics, deliveries) = (store.clone(), metrics.clone(), recorded.clone());
        let (backoff, pacing) = (config.backoff, config.pacing);
        move || {
            Executor {
                store: store.clone(),
                github: github.clone(),
                metrics: metrics.clone(),
                backoff,
                pacing,
                wake: effects_stored.clone(),
                deliveries: deliveries.clone(),
            }
            .run()
        }
    };
    let loops = Arc::new(supervisor::Loops::default());
    let supervised_metrics = metrics.clone();
    let intake = Arc::new(IntakeState {
        secret: config.webhook_secret.into_bytes(),
        previous_secret: config
            .previous_webhook_secret
            .filter(|s| !s.is_empty())
            .map(String::into_bytes),
        store: store.clone(),
        metrics,
        recorded,
        bodies: crate::intake::BodyBudget::new(config.webhook_memory_mib)?,
    });

    let addr = format!("{}:{}", config.host, config.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    let router = web::router(
        intake,
        web::WebConfig {
            api_token: config.api_token.clone(),
            metrics_auth: config.metrics_auth,
            github_api_url: config.github_api_url.clone(),
            clock: config.clock.clone(),
            webhook_path: config.webhook_path.clone(),
            loops: loops.clone(),
        },
    );
    let header_read_timeout = config.header_read_timeout;
    // Installed before "listening" is said: a SIGTERM right after it (a
    // deploy replacing this process at once) must stop the server
    // gracefully, not kill it by default.
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("install the SIGTERM handler");
    let server = tokio::spawn(async move {
        let shutdown = async {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
            #[cfg(not(unix))]
            let _ = ctrl_c.await;
            info!("shutting down");
        };
        web::serve(listener, router, header_read_timeout, shutdown).await;
    });
    info!(%local, "listening");
    let retention = retention::run(
        store.clone(),
        config.retention,
        Duration::from_secs(60 * 60),
    );
    // Each restarted after a panic, and counted; `/healthz` says while
    // one is down.
    let supervised = |name: &'static str, start: LoopStart| {
        let (loops, metrics) = (loops.clone(), supervised_metrics.clone());
        tokio::spawn(supervisor::supervise(name, loops, metrics, start))
    };
    let processor = Arc::new(processor);
    let mut tasks = vec![
        supervised(
            "processor",
            Box::new(move || {
                let processor = processor.clone();
                Box::pin(async move { processor.run().await }) as LoopFuture
            }),
        ),
        supervised(
            "executor",
            Box::new(move || Box::pin(executor()) as LoopFuture),
        ),
        supervised(
            "run_queue",
            Box::new(move || Box::pin(run_queue()) as LoopFuture),
        ),
        tokio::spawn(supervisor::watched("retention", loops.clone(), retention)),
    ];
    if let Some(channel) = config.webhook_proxy_url {
        // This server's own listener, reached on loopback when it listens
        // on every address.
        let own = match local.ip() {
            ip if ip.is_unspecified() && ip.is_ipv4() => {
                SocketAddr::from(([127, 0, 0, 1], local.port()))
            }
            ip if ip.is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, local.port()))
            }
            _ => local,
        };
        tasks.push(tokio::spawn(supervisor::watched(
            "webhook_proxy",
            loops.clone(),
            webhook_proxy::run(channel, format!("http://{own}{}", config.webhook_path)),
        )));
    }
    if let Some(every) = config.redeliver_every {
        let pass = redeliver::Redeliver {
            github: redeliver_github,
            store: store.clone(),
            every,
            first_after: Duration::from_secs(30).min(every),
            clock: config.clock.clone(),
            metrics: redeliver_metrics,
            asked: Default::default(),
        };
        tasks.push(tokio::spawn(supervisor::watched(
            "redeliver",
            loops.clone(),
            pass.run(),
        )));
    }
    Ok(Running {
        addr: local,
        store,
        loops,
        tasks,
        server,
    })
}
