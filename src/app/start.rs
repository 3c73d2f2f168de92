//! `start`: builds every part from a [`ServeConfig`] and runs it, in
//! phases: the shared handles, the processor, the loops, the listener,
//! and the background passes.
//!
//! Owns: the startup order. Must not: hold behaviour of its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::inbox_lease::InboxLeases;
use super::loops::{redeliver, retention, run_queue, supervisor};
use super::processor::Processor;
use super::{
    actions_runs, ship, sync, task, webhook_proxy, LoopFuture, LoopStart, Running, ServeConfig,
    StartError,
};
use crate::github::{AppCredentials, Executor, GitHubApp};
use crate::intake::IntakeState;
use crate::metrics::Metrics;
use crate::store::{Store, WakeTargets};
use crate::web;
use taskgate_core::commands::Syntax;
use taskgate_core::Context;

/// What every part shares.
#[derive(Clone)]
struct Shared {
    store: Store,
    github: Arc<GitHubApp>,
    metrics: Arc<Metrics>,
    /// Wakes the processor when a delivery is recorded.
    recorded: Arc<Notify>,
    /// Wakes the executor when effects are stored.
    effects_stored: Arc<Notify>,
    /// Wakes the run queue when attempts change.
    runs_changed: Arc<Notify>,
    /// The installations whose deliveries this replica decides.
    inboxes: Arc<InboxLeases>,
    /// Deliveries' parses, from the intake to the processor.
    kept: Arc<crate::intake::kept::KeptWebhooks>,
    loops: Arc<supervisor::Loops>,
}

pub async fn start(config: ServeConfig) -> Result<Running, StartError> {
    if config.webhook_secret.is_empty() {
        return Err(StartError::NoSecret);
    }
    if config.metrics_auth && config.api_token.as_deref().unwrap_or_default().is_empty() {
        return Err(StartError::MetricsAuthWithoutToken);
    }
    let shared = shared(&config)?;
    let bot_login = bot_login(&shared.github).await;
    let processor = processor(&config, &shared, bot_login);
    std::fs::create_dir_all(&config.work_dir).map_err(|source| StartError::WorkDir {
        path: config.work_dir.display().to_string(),
        source,
    })?;
    let (local, server) = listen(&config, &shared).await?;
    let mut tasks = supervised_loops(&config, &shared, processor);
    tasks.extend(background_passes(&config, &shared, local));
    Ok(Running {
        addr: local,
        store: shared.store,
        loops: shared.loops,
        tasks,
        server,
    })
}

fn shared(config: &ServeConfig) -> Result<Shared, StartError> {
    let store = Store::open_url(&config.database_url)?
        .with_clock(config.clock.clone())
        .with_lease(config.lease);
    let creds = AppCredentials::from_pem(config.app_id, &config.private_key_pem)?;
    let mut metrics = Metrics::new();
    metrics.register_store(store.writer_metrics());
    let shared = Shared {
        store,
        // A failed mint waits as a failed call does, at most a minute.
        github: Arc::new(
            GitHubApp::new(&config.github_api_url, creds).with_mint_retry(
                crate::github::MintRetry {
                    first: config.backoff.base,
                    max: config.backoff.max.min(std::time::Duration::from_secs(60)),
                },
                config.clock.clone(),
            ),
        ),
        metrics: Arc::new(metrics),
        recorded: Arc::new(Notify::new()),
        effects_stored: Arc::new(Notify::new()),
        runs_changed: Arc::new(Notify::new()),
        inboxes: Arc::new(InboxLeases::default()),
        kept: Arc::default(),
        loops: Arc::new(supervisor::Loops::default()),
    };
    // The same wakes, from the other replicas' commits (PostgreSQL).
    let inboxes = Arc::downgrade(&shared.inboxes);
    shared.store.wake_on_other_replicas(WakeTargets {
        deliveries: Arc::downgrade(&shared.recorded),
        decides: Box::new(move |installation| {
            inboxes.upgrade().is_some_and(|i| i.may_hold(installation))
        }),
        effects: Arc::downgrade(&shared.effects_stored),
        runs: Arc::downgrade(&shared.runs_changed),
    });
    Ok(shared)
}

/// The App's bot login, so its own comments are known by name too.
async fn bot_login(github: &GitHubApp) -> Option<String> {
    match tokio::time::timeout(Duration::from_secs(10), github.app_info()).await {
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
    }
}

fn processor(config: &ServeConfig, s: &Shared, bot_login: Option<String>) -> Processor {
    let permissions = Arc::new(crate::github::Permissions::new(s.github.clone()));
    let runs = task::Runs {
        store: task::TaskStore::of(s.store.clone()),
        clock: config.clock.clone(),
        runs_changed: s.runs_changed.clone(),
        bot_login: bot_login.clone(),
        web_base: crate::github::web_base(&config.github_api_url),
    };
    Processor {
        store: super::processor::ProcessorStore::of(s.store.clone()),
        metrics: s.metrics.clone(),
        context: Context {
            app_id: config.app_id,
            bot_login,
            syntax: Syntax::default(),
        },
        recorded: s.recorded.clone(),
        kept: s.kept.clone(),
        effects_stored: s.effects_stored.clone(),
        retry: config.backoff,
        idle_poll: config.idle_polls.deliveries,
        syncer: sync::Syncer {
            github: s.github.clone(),
            store: sync::SyncStore::of(s.store.clone()),
            pacing: config.pacing,
            failed_reads: sync::FailedReads::default(),
        },
        task_commands: runs.commands(),
        proofs: runs.proofs(),
        flaky: runs.flaky(),
        runs,
        actions: actions_runs::ActionsRuns {
            github: s.github.clone(),
            store: actions_runs::ActionsStore::of(s.store.clone()),
            limits: crate::runner::ArtifactLimits::default(),
            metrics: s.metrics.clone(),
            counted: Default::default(),
        },
        permissions: permissions.clone(),
        ship: ship::Ship {
            github: s.github.clone(),
            store: ship::ShipStore::of(s.store.clone()),
            permissions,
            rules: Default::default(),
            groups: Default::default(),
        },
        inboxes: s.inboxes.clone(),
        doctor: super::doctor::DoctorSetup {
            github: s.github.clone(),
            api_url: config.github_api_url.clone(),
            floor: disk_floor(config),
        },
    }
}

/// Binds the listener and serves the intake, the API and the dashboard
/// until a signal stops it.
async fn listen(
    config: &ServeConfig,
    s: &Shared,
) -> Result<(SocketAddr, JoinHandle<()>), StartError> {
    let intake = Arc::new(IntakeState {
        secret: config.webhook_secret.clone().into_bytes(),
        previous_secret: config
            .previous_webhook_secret
            .clone()
            .filter(|s| !s.is_empty())
            .map(String::into_bytes),
        store: s.store.clone(),
        metrics: s.metrics.clone(),
        recorded: s.recorded.clone(),
        bodies: crate::intake::BodyBudget::new(config.webhook_memory_mib)?,
        clock: config.clock.clone(),
        retention: config.retention,
        kept: s.kept.clone(),
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
            loops: s.loops.clone(),
            floor: disk_floor(config),
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
    Ok((local, server))
}

/// The processor, the executor and the run queue, each restarted after a
/// panic and counted; `/healthz` says while one is down.
fn supervised_loops(config: &ServeConfig, s: &Shared, processor: Processor) -> Vec<JoinHandle<()>> {
    let supervised = |name: &'static str, start: LoopStart| {
        let (loops, metrics) = (s.loops.clone(), s.metrics.clone());
        tokio::spawn(supervisor::supervise(name, loops, metrics, start))
    };
    let processor = Arc::new(processor);
    let mut executor = executor_loop(config, s);
    let mut run_queue = run_queue_loop(config, s);
    vec![
        supervised(
            "processor",
            Box::new(move || {
                let processor = processor.clone();
                Box::pin(async move { processor.run().await }) as LoopFuture
            }),
        ),
        supervised("executor", Box::new(move || executor())),
        supervised("run_queue", Box::new(move || run_queue())),
    ]
}

/// The executor, built again for each start of its loop.
fn executor_loop(config: &ServeConfig, s: &Shared) -> impl FnMut() -> LoopFuture + Send {
    let s = s.clone();
    let (backoff, pacing, clock) = (config.backoff, config.pacing, config.clock.clone());
    let idle_poll = config.idle_polls.effects;
    move || {
        let executor = Executor {
            store: crate::github::executor::ExecutorStore::of(s.store.clone()),
            github: s.github.clone(),
            metrics: s.metrics.clone(),
            backoff,
            pacing,
            clock: clock.clone(),
            wake: s.effects_stored.clone(),
            deliveries: s.recorded.clone(),
            idle_poll,
        };
        Box::pin(executor.run())
    }
}

/// The run queue, built again for each start of its loop; the runs it has
/// in hand outlive a restart.
fn run_queue_loop(config: &ServeConfig, s: &Shared) -> impl FnMut() -> LoopFuture + Send {
    let s = s.clone();
    let clock = config.clock.clone();
    let runner = crate::runner::LocalRunner::new(config.max_concurrent_runs.max(1));
    // Absolute whatever the caller gave: bubblewrap and git resolve a
    // relative path against their own working directory, not ours.
    let work_dir =
        std::path::absolute(&config.work_dir).unwrap_or_else(|_| config.work_dir.clone());
    let git = config
        .git
        .clone()
        .unwrap_or_else(|| run_queue::GitSource::for_api(&config.github_api_url));
    let (tick_every, actions_watch) = (config.tick_every, config.actions_watch);
    let runner_network = config.runner_network.clone();
    let isolation = config.isolation.clone();
    let floor = disk_floor(config);
    let in_hand = run_queue::InHand::default();
    move || {
        let queue = run_queue::RunQueue {
            store: run_queue::RunQueueStore::of(s.store.clone()),
            github: s.github.clone(),
            runner: runner.clone(),
            mirrors: crate::runner::MirrorStore::new(work_dir.join("mirrors")),
            workspaces: work_dir.join("workspaces"),
            git: git.clone(),
            options: crate::runner::RunOptions {
                isolation: isolation.clone(),
                ..crate::runner::RunOptions::default()
            },
            network: runner_network.clone(),
            floor: floor.clone(),
            runs_changed: s.runs_changed.clone(),
            recorded: s.recorded.clone(),
            tick_every,
            actions_watch,
            clock: clock.clone(),
            metrics: s.metrics.clone(),
            in_hand: in_hand.clone(),
        };
        Box::pin(queue.run())
    }
}

/// Retention, and when configured the webhook proxy and the redelivery
/// pass: watched (a stop is said on `/healthz`), not restarted.
fn background_passes(config: &ServeConfig, s: &Shared, local: SocketAddr) -> Vec<JoinHandle<()>> {
    let retention = retention::run(
        retention::RetentionStore::of(s.store.clone()),
        config.retention,
        Duration::from_secs(60 * 60),
    );
    let mut tasks = vec![tokio::spawn(supervisor::watched(
        "retention",
        s.loops.clone(),
        retention,
    ))];
    if let Some(channel) = config.webhook_proxy_url.clone() {
        tasks.push(tokio::spawn(supervisor::watched(
            "webhook_proxy",
            s.loops.clone(),
            webhook_proxy::run(
                channel,
                format!("http://{}{}", loopback(local), config.webhook_path),
            ),
        )));
    }
    if let Some(every) = config.redeliver_every {
        let pass = redeliver::Redeliver {
            github: s.github.clone(),
            store: redeliver::RedeliverStore::of(s.store.clone()),
            every,
            first_after: Duration::from_secs(30).min(every),
            clock: config.clock.clone(),
            metrics: s.metrics.clone(),
            asked: Default::default(),
        };
        tasks.push(tokio::spawn(supervisor::watched(
            "redeliver",
            s.loops.clone(),
            pass.run(),
        )));
    }
    tasks
}

/// This server's own listener, reached on loopback when it listens on
/// every address.
fn loopback(local: SocketAddr) -> SocketAddr {
    match local.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from(([127, 0, 0, 1], local.port()))
        }
        ip if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, local.port()))
        }
        _ => local,
    }
}

/// The free-space floor under the work directory (`TASKGATE_MIN_FREE_MIB`).
fn disk_floor(config: &ServeConfig) -> crate::runner::sandbox::disk::DiskFloor {
    let work_dir =
        std::path::absolute(&config.work_dir).unwrap_or_else(|_| config.work_dir.clone());
    crate::runner::sandbox::disk::DiskFloor {
        min_free_mib: config.min_free_mib,
        free: (config.free_space.clone())
            .unwrap_or(crate::runner::sandbox::disk::FreeSpace::Disk(work_dir)),
    }
}
