//! Prometheus metrics, via the `prometheus-client` crate: the registry
//! every part of the shell counts into, and its text for `GET /metrics`.
//!
//! Owns: the metric names, their help texts and labels, and rendering the
//! registry with a [`Snapshot`] of what the store knows.
//! Must not: serve HTTP (that is `web`) or read the store itself. It sits
//! below `intake`, `github`, `app` and `web`, so none of them imports the
//! HTTP layer to count something.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// The registry, with its metrics in three groups, registered (and so
/// listed by `/metrics`) in this order.
pub struct Metrics {
    registry: Registry,
    pipeline: Pipeline,
    work: WorkGauges,
    ops: Operations,
}

/// A delivery's way through the shell: intake, processor, outbox, GitHub.
struct Pipeline {
    deliveries: Family<Labels, Counter>,
    ack_seconds: Histogram,
    processing_seconds: Histogram,
    outbox_depth: Gauge,
    inbox_depth: Family<Labels, Gauge>,
    github_calls: Family<Labels, Counter>,
}

/// Tasks and the failure loop, as the store knows them at each scrape.
struct WorkGauges {
    tasks: Family<Labels, Gauge>,
    todos_opened: Family<Labels, Gauge>,
    todos_fixed: Gauge,
    fixed_seconds: Gauge,
    autonomous_fix_rate: Gauge<f64, std::sync::atomic::AtomicU64>,
    escalated: Gauge,
    overrides: Gauge,
}

/// How the shell itself runs: echoes of its own writes, test runs,
/// redeliveries, secret rotation, restarted loops.
struct Operations {
    own_webhooks: Family<Labels, Counter>,
    runner_overhead: Family<Labels, Histogram, fn() -> Histogram>,
    run_seconds: Family<Labels, Counter<f64, std::sync::atomic::AtomicU64>>,
    redeliveries: Counter,
    previous_secret: Counter,
    loop_restarts: Family<Labels, Counter>,
}

/// What the store knows, summed for a scrape.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub outbox_depth: i64,
    /// Deliveries not processed yet: all of them, and those put off
    /// because GitHub failed their decision.
    pub inbox_pending: i64,
    pub inbox_put_off: i64,
    /// Task records by their state (`blocked`, `testing`, …).
    pub tasks_by_state: std::collections::BTreeMap<String, i64>,
    pub loop_stats: taskgate_core::failure::LoopStats,
    /// Tasks approved with `/approve --override` despite their checker.
    pub overrides: i64,
}

impl Pipeline {
    fn register(registry: &mut Registry) -> Pipeline {
        let deliveries = Family::<Labels, Counter>::default();
        registry.register(
            "deliveries",
            "Webhook deliveries by event and outcome (accepted, no_action, duplicate, ignored, rejected, busy: no room in the webhook memory budget, error)",
            deliveries.clone(),
        );
        // Fine below 10 ms, where a healthy intake answers (a group commit
        // and its fsync); coarse above, where only stalls land.
        let ack_seconds = Histogram::new([
            0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.1, 0.5, 2.5,
        ]);
        registry.register(
            "webhook_ack_seconds",
            "Time from a webhook request's body being read to its answer: the signature, the shape check and, for a delivery recorded, its durable commit",
            ack_seconds.clone(),
        );
        let processing_seconds =
            Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0]);
        registry.register(
            "delivery_processing_seconds",
            "Time from a delivery being recorded to its decision being stored",
            processing_seconds.clone(),
        );
        let outbox_depth = Gauge::default();
        registry.register(
            "outbox_depth",
            "Effects waiting to be performed on GitHub",
            outbox_depth.clone(),
        );
        let inbox_depth = Family::<Labels, Gauge>::default();
        registry.register(
            "inbox_depth",
            "Deliveries recorded but not decided yet, by state: ready, or put_off (GitHub failed their decision; tried again later)",
            inbox_depth.clone(),
        );
        let github_calls = Family::<Labels, Counter>::default();
        registry.register(
            "github_calls",
            "GitHub API calls by effect and outcome: 2xx, the HTTP status of a failure, or none (no answer)",
            github_calls.clone(),
        );
        Pipeline {
            deliveries,
            ack_seconds,
            processing_seconds,
            outbox_depth,
            inbox_depth,
            github_calls,
        }
    }

    /// The outbox's and inbox's depths at this scrape.
    fn set_depths(&self, snapshot: &Snapshot) {
        self.outbox_depth.set(snapshot.outbox_depth);
        let ready = snapshot.inbox_pending - snapshot.inbox_put_off;
        for (state, n) in [("ready", ready), ("put_off", snapshot.inbox_put_off)] {
            self.inbox_depth
                .get_or_create(&vec![("state", state.to_owned())])
                .set(n);
        }
    }
}

impl WorkGauges {
    fn register(registry: &mut Registry) -> WorkGauges {
        let tasks = Family::<Labels, Gauge>::default();
        registry.register(
            "tasks",
            "Tasks that have started work, by state (blocked tasks: state=\"blocked\")",
            tasks.clone(),
        );
        let todos_opened = Family::<Labels, Gauge>::default();
        registry.register(
            "branch_todos_opened",
            "Branch todos ever opened, by failure kind and role",
            todos_opened.clone(),
        );
        let todos_fixed = Gauge::default();
        registry.register(
            "branch_todos_fixed",
            "Branch todos closed by a green run",
            todos_fixed.clone(),
        );
        let fixed_seconds = Gauge::default();
        registry.register(
            "branch_todo_resolution_seconds_total",
            "Summed lifetime of fixed branch todos (divide by branch_todos_fixed for the mean)",
            fixed_seconds.clone(),
        );
        let autonomous_fix_rate = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "autonomous_fix_rate",
            "Share of fixed branch todos no person touched (review below 0.5); -1 before any fix",
            autonomous_fix_rate.clone(),
        );
        let escalated = Gauge::default();
        registry.register(
            "escalated_tasks",
            "Tasks whose failure loop hit a bound and asked for a person",
            escalated.clone(),
        );
        let overrides = Gauge::default();
        registry.register(
            "review_overrides",
            "Approvals that overrode a failing checker (`/approve --override`), recorded on their tasks",
            overrides.clone(),
        );
        WorkGauges {
            tasks,
            todos_opened,
            todos_fixed,
            fixed_seconds,
            autonomous_fix_rate,
            escalated,
            overrides,
        }
    }

    /// Every gauge as the store knows it at this scrape (label sets no
    /// longer present are dropped).
    fn set(&self, snapshot: &Snapshot) {
        self.tasks.clear();
        for (state, n) in &snapshot.tasks_by_state {
            self.tasks
                .get_or_create(&vec![("state", state.clone())])
                .set(*n);
        }
        let stats = &snapshot.loop_stats;
        self.todos_opened.clear();
        for ((kind, role), n) in &stats.todos_opened {
            self.todos_opened
                .get_or_create(&vec![("kind", kind.clone()), ("role", role.clone())])
                .set(*n as i64);
        }
        self.todos_fixed.set(stats.todos_fixed as i64);
        self.fixed_seconds.set(stats.fixed_seconds_total as i64);
        self.autonomous_fix_rate
            .set(stats.autonomous_fix_rate().unwrap_or(-1.0));
        self.escalated.set(stats.escalated_tasks as i64);
        self.overrides.set(snapshot.overrides);
    }
}

impl Operations {
    fn register(registry: &mut Registry) -> Operations {
        let own_webhooks = Family::<Labels, Counter>::default();
        registry.register(
            "own_webhooks",
            "Deliveries decided whose sender is taskgate's own bot (GitHub echoing its writes), by event.action and by whether the decision asked for GitHub calls (caused=writes|none); only its merges (pull_request.closed) and the ends of runs it dispatched (workflow_run.completed) should cause any",
            own_webhooks.clone(),
        );
        let runner_overhead: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| {
                Histogram::new([0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0])
            });
        registry.register(
            "runner_overhead_seconds",
            "Per run, by runner: its wall time less its commands' own. local: installation token, fetch, checkout, workspace removal, the runner's work; actions: from the dispatch to the run's completion on GitHub (queue, runner start-up, the job's other steps, the artifact)",
            runner_overhead.clone(),
        );
        let run_seconds = Family::<Labels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "run_seconds",
            "Runs' wall time, by runner and part: commands (the plan's test commands) or overhead (everything else); overhead / (commands + overhead) is the runner's share",
            run_seconds.clone(),
        );
        let redeliveries = Counter::default();
        registry.register(
            "webhook_redeliveries",
            "Deliveries GitHub logged as failed (taskgate down) that taskgate asked GitHub to send again",
            redeliveries.clone(),
        );
        let previous_secret = Counter::default();
        registry.register(
            "webhook_previous_secret",
            "Deliveries verified with WEBHOOK_SECRET_PREVIOUS, the secret being rotated out; once this stops growing, it can be removed",
            previous_secret.clone(),
        );
        let loop_restarts = Family::<Labels, Counter>::default();
        registry.register(
            "loop_restarts",
            "Restarts of a long-running loop (processor, executor, run_queue) after it panicked; while one is down, /healthz answers 503 naming it",
            loop_restarts.clone(),
        );
        Operations {
            own_webhooks,
            runner_overhead,
            run_seconds,
            redeliveries,
            previous_secret,
            loop_restarts,
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("taskgate");
        let pipeline = Pipeline::register(&mut registry);
        let work = WorkGauges::register(&mut registry);
        let ops = Operations::register(&mut registry);
        Metrics {
            registry,
            pipeline,
            work,
            ops,
        }
    }

    /// Adds the store writer's commit and checkpoint histograms (shared
    /// with the writer, which observes into them).
    pub fn register_store(&mut self, writer: &crate::store::WriterMetrics) {
        self.registry.register(
            "store_commit_seconds",
            "Each group commit of the store, from its start to being durable (the fsync included); webhook answers wait for one",
            writer.commit_seconds.clone(),
        );
        self.registry.register(
            "store_commit_jobs",
            "Jobs (deliveries recorded, decisions stored, ...) per group commit",
            writer.jobs_per_commit.clone(),
        );
        self.registry.register(
            "store_checkpoint_seconds",
            "Each checkpoint of the store's write-ahead log into the database file (every 100 log pages, after a commit's callers were answered)",
            writer.checkpoint_seconds.clone(),
        );
    }

    pub fn delivery(&self, event: &str, outcome: &'static str) {
        self.pipeline
            .deliveries
            .get_or_create(&vec![
                ("event", event.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
    }

    /// A supervised loop started: its restarts are shown from 0.
    pub fn loop_restarts_start(&self, name: &str) {
        let _ = self
            .ops
            .loop_restarts
            .get_or_create(&vec![("loop", name.to_owned())]);
    }

    /// A supervised loop stopped and is being restarted.
    pub fn loop_restarted(&self, name: &str) {
        self.ops
            .loop_restarts
            .get_or_create(&vec![("loop", name.to_owned())])
            .inc();
    }

    /// A delivery was signed with the secret being rotated out.
    pub fn signed_with_previous_secret(&self) {
        self.ops.previous_secret.inc();
    }

    /// A webhook request was answered `seconds` after its body was read.
    pub fn acked(&self, seconds: f64) {
        self.pipeline.ack_seconds.observe(seconds);
    }

    pub fn processed(&self, seconds: f64) {
        self.pipeline.processing_seconds.observe(seconds);
    }

    /// One run on `runner` (`local`, `actions`) took `wall` seconds,
    /// `commands` of them in its commands.
    pub fn run_finished(&self, runner: &str, wall: f64, commands: f64) {
        let overhead = (wall - commands).max(0.0);
        self.ops
            .runner_overhead
            .get_or_create(&vec![("runner", runner.to_owned())])
            .observe(overhead);
        for (part, seconds) in [("commands", commands), ("overhead", overhead)] {
            self.ops
                .run_seconds
                .get_or_create(&vec![
                    ("runner", runner.to_owned()),
                    ("part", part.to_owned()),
                ])
                .inc_by(seconds);
        }
    }

    /// `n` redeliveries were asked of GitHub.
    pub fn redelivered(&self, n: usize) {
        self.ops.redeliveries.inc_by(n as u64);
    }

    /// A delivery sent by taskgate's own bot was decided, with `effects`
    /// GitHub calls asked for; `event` is `event.action`.
    pub fn own_webhook(&self, event: &str, effects: usize) {
        let caused = if effects == 0 { "none" } else { "writes" };
        self.ops
            .own_webhooks
            .get_or_create(&vec![
                ("event", event.to_owned()),
                ("caused", caused.to_owned()),
            ])
            .inc();
    }

    pub fn github_call(&self, effect: &'static str, status: String) {
        self.pipeline
            .github_calls
            .get_or_create(&vec![("effect", effect.to_owned()), ("status", status)])
            .inc();
    }

    pub fn render(&self, snapshot: &Snapshot) -> String {
        self.pipeline.set_depths(snapshot);
        self.work.set(snapshot);
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}
