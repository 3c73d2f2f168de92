//! Prometheus metrics, via the `prometheus-client` crate: the registry
//! every part of the shell counts into, and its text for `GET /metrics`.
//!
//! Owns: the metric names, their help texts and labels, and rendering the
//! registry with a [`Snapshot`] of what the store knows.
//! Must not: serve HTTP (that is `web`) or read the store itself. It sits
//! below `intake`, `github`, `app` and `web`, so none of them imports the
//! HTTP layer to count something.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use taskgate_core::failure::MAX_AGENTS;

mod train;
pub use train::sum as train_stats;
mod ship_queue;

type Labels = Vec<(&'static str, String)>;

/// The registry, with its metrics in three groups, registered (and so
/// listed by `/metrics`) in this order.
pub struct Metrics {
    registry: Registry,
    pipeline: Pipeline,
    work: WorkGauges,
    ops: Operations,
    train: train::TrainMetrics,
    ship_queue: ship_queue::ShipQueueMetrics,
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
    fix: FixRateGauges,
}

/// The fix rate by agent and failure kind (`core::failure::stats`), the
/// agents capped at [`MAX_AGENTS`] (the rest are `agent="other"`).
struct FixRateGauges {
    opened: Family<Labels, Gauge>,
    closed: Family<Labels, Gauge>,
    attempts: Family<Labels, SumCount>,
    seconds: Family<Labels, Buckets>,
    waited: Family<Labels, Gauge>,
    waiting: Family<Labels, Buckets>,
}

/// A histogram of which only the sum and the count are known (summed from
/// the store at each scrape): `_sum`, `_count` and the one bucket `+Inf`.
#[derive(Debug, Default)]
struct SumCount(std::sync::Mutex<(f64, u64)>);

impl SumCount {
    fn set(&self, sum: u64, count: u64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = (sum as f64, count);
    }
}

impl TypedMetric for SumCount {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for SumCount {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count) = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        encoder.encode_histogram::<NoLabelSet>(sum, count, &[(f64::INFINITY, count)], None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// A histogram summed from the store at each scrape, with its buckets
/// (`core::failure::SecondsBuckets`): `_bucket{le=…}` for each bound of
/// `SECONDS_BUCKETS` and `+Inf`, `_sum`, `_count`. Durations counted
/// before buckets were kept are under `+Inf` only.
#[derive(Debug, Default)]
struct Buckets(std::sync::Mutex<Observed>);

/// What a [`Buckets`] shows: its sum, count and each bucket's own count.
#[derive(Debug, Default)]
struct Observed {
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl Buckets {
    fn set(&self, sum: u64, count: u64, buckets: &taskgate_core::failure::SecondsBuckets) {
        // The encoder sums the buckets up itself: each one's own count.
        let mut le: Vec<(f64, u64)> = buckets
            .per_bound()
            .into_iter()
            .map(|(bound, n)| (bound as f64, n))
            .collect();
        let counted: u64 = le.iter().map(|(_, n)| n).sum();
        le.push((f64::INFINITY, count.saturating_sub(counted)));
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Observed {
            sum: sum as f64,
            count,
            buckets: le,
        };
    }
}

impl TypedMetric for Buckets {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Buckets {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let o = &*self.0.lock().unwrap_or_else(|e| e.into_inner());
        encoder.encode_histogram::<NoLabelSet>(o.sum, o.count, &o.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

impl FixRateGauges {
    fn register(registry: &mut Registry) -> FixRateGauges {
        let opened = Family::<Labels, Gauge>::default();
        registry.register(
            "fix_todos_opened",
            "Branch todos ever opened, by the agent their role named when they opened (copilot, mention:@handle, label:name, workflow:file, none; the agents with the fewest todos beyond the tenth summed as other) and failure kind",
            opened.clone(),
        );
        let closed = Family::<Labels, Gauge>::default();
        registry.register(
            "fix_todos_closed",
            "Branch todos closed, by agent, failure kind and outcome: fixed_without_human (green, and the task completed with no person's action since the todo opened: a review command, a ready for review, a push or retry by a non-agent), fixed_with_human (green, the task completed after such an action), both counted at the task's completion; escalated (a bound was hit, a person called), superseded (attempts spent, a deeper todo took over)",
            closed.clone(),
        );
        let attempts = Family::<Labels, SumCount>::default();
        registry.register(
            "fix_attempts_to_green",
            "Failed runs of each fixed branch todo (each started its agent once), by agent and failure kind: sum and count",
            attempts.clone(),
        );
        let seconds = Family::<Labels, Buckets>::default();
        registry.register(
            "fix_seconds_to_green",
            "Lifetime of each branch todo a green run closed, from its opening to the green run, by agent and failure kind",
            seconds.clone(),
        );
        let waited = Family::<Labels, Gauge>::default();
        registry.register(
            "fix_todos_waited_for_person",
            "Branch todos whose gates went green with no person's action, whose task then completed only after a person's action (counted in fixed_with_human too), by agent and failure kind",
            waited.clone(),
        );
        let waiting = Family::<Labels, Buckets>::default();
        registry.register(
            "fix_seconds_waiting_for_person",
            "For those todos, the time from the green run to the task's completion, by agent and failure kind",
            waiting.clone(),
        );
        FixRateGauges {
            opened,
            closed,
            attempts,
            seconds,
            waited,
            waiting,
        }
    }

    fn set(&self, stats: &taskgate_core::failure::LoopStats) {
        self.opened.clear();
        self.closed.clear();
        self.attempts.clear();
        self.seconds.clear();
        self.waited.clear();
        self.waiting.clear();
        for ((agent, kind), f) in stats.fix_rates(MAX_AGENTS) {
            let labels: Labels = vec![("agent", agent), ("kind", kind)];
            self.opened.get_or_create(&labels).set(f.opened as i64);
            for (outcome, n) in [
                ("fixed_without_human", f.fixed_without_human),
                ("fixed_with_human", f.fixed_with_human),
                ("escalated", f.escalated),
                ("superseded", f.superseded),
            ] {
                let mut with_outcome = labels.clone();
                with_outcome.push(("outcome", outcome.to_owned()));
                self.closed.get_or_create(&with_outcome).set(n as i64);
            }
            self.attempts
                .get_or_create(&labels)
                .set(f.attempts_to_green, f.greened);
            self.seconds.get_or_create(&labels).set(
                f.seconds_to_green,
                f.greened,
                &f.seconds_to_green_buckets,
            );
            (self.waited.get_or_create(&labels)).set(f.waited_for_person as i64);
            self.waiting.get_or_create(&labels).set(
                f.seconds_waiting_for_person,
                f.waited_for_person,
                &f.waiting_buckets,
            );
        }
    }
}

/// How the shell itself runs: echoes of its own writes, test runs,
/// redeliveries, secret rotation, restarted loops.
struct Operations {
    own_webhooks: Family<Labels, Counter>,
    runner_overhead: Family<Labels, Histogram, fn() -> Histogram>,
    run_seconds: Family<Labels, Counter<f64, std::sync::atomic::AtomicU64>>,
    redeliveries: Counter,
    previous_secret: Counter,
    parsed_again: Counter,
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
    /// Every repository's ship train stats, summed (`train::sum`).
    pub trains: taskgate_core::ship::TrainStats,
    /// The ship queue's figures, from the sums kept beside the story
    /// records.
    pub ship_queue: taskgate_core::ship::figures::QueueTotals,
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
            "Branch todos ever opened, by failure kind and role (the ten roles with the most todos named, the rest summed as other)",
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
            "Share of fixed branch todos whose task completed with no person's action since the todo opened (review below 0.5); -1 before any task with one completed",
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
            fix: FixRateGauges::register(registry),
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
        for ((kind, role), n) in stats.todos_opened_by_role(MAX_AGENTS) {
            self.todos_opened
                .get_or_create(&vec![("kind", kind), ("role", role)])
                .set(n as i64);
        }
        self.todos_fixed.set(stats.todos_fixed as i64);
        self.fixed_seconds.set(stats.fixed_seconds_total as i64);
        self.autonomous_fix_rate
            .set(stats.autonomous_fix_rate().unwrap_or(-1.0));
        self.escalated.set(stats.escalated_tasks as i64);
        self.overrides.set(snapshot.overrides);
        self.fix.set(stats);
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
        let parsed_again = Counter::default();
        registry.register(
            "webhook_parsed_again",
            "Webhooks the processor parsed from their stored body, the intake's parse not being kept in memory (recorded by another replica, before a restart, or beyond the kept bound)",
            parsed_again.clone(),
        );
        registry.register(
            "workspaces_unremoved",
            "Run workspaces taskgate could not remove (task code made them so, or a process still held them); each is tried again every tick of the run queue",
            crate::runner::sandbox::disk::unremoved_gauge(),
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
            parsed_again,
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
        let train = train::TrainMetrics::register(&mut registry);
        let ship_queue = ship_queue::ShipQueueMetrics::register(&mut registry);
        Metrics {
            registry,
            pipeline,
            work,
            ops,
            train,
            ship_queue,
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
            "store_reads",
            "Reads of the store, each a hop to its reader's thread",
            writer.reads.clone(),
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

    /// The processor parsed a webhook from its stored body.
    pub fn parsed_again(&self) {
        self.ops.parsed_again.inc();
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
        self.train.set(&snapshot.trains);
        self.ship_queue.set(&snapshot.ship_queue);
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::failure::{FixTotals, LoopStats, SecondsBuckets};

    /// The lines of the fix-rate series, sorted (a family's label sets
    /// come out in no set order).
    fn fix_lines(stats: LoopStats) -> String {
        let text = Metrics::new().render(&Snapshot {
            loop_stats: stats,
            ..Snapshot::default()
        });
        let mut lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("taskgate_fix_"))
            .collect();
        lines.sort();
        lines.join("\n")
    }

    #[test]
    fn the_fix_rate_is_labelled_by_agent_and_kind_with_label_values_escaped() {
        let mut stats = LoopStats::default();
        let fixed = FixTotals {
            opened: 3,
            fixed_without_human: 1,
            fixed_with_human: 1,
            escalated: 1,
            greened: 2,
            attempts_to_green: 3,
            // Green after 2 and 8 minutes; the second then waited 20
            // minutes for a person.
            seconds_to_green: 600,
            seconds_to_green_buckets: SecondsBuckets([(300, 1), (900, 1)].into()),
            waited_for_person: 1,
            seconds_waiting_for_person: 1_200,
            waiting_buckets: SecondsBuckets([(1_800, 1)].into()),
            ..FixTotals::default()
        };
        stats.add_fixes("mention:@claude", "test_failure", &fixed);
        // A label may hold what the exposition format escapes.
        let odd = FixTotals {
            opened: 1,
            ..FixTotals::default()
        };
        stats.add_fixes("label:say \"fix\" \\ now", "timeout", &odd);
        insta::assert_snapshot!(fix_lines(stats), @r#"
        taskgate_fix_attempts_to_green_bucket{le="+Inf",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_attempts_to_green_bucket{le="+Inf",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_attempts_to_green_count{agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_attempts_to_green_count{agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_attempts_to_green_sum{agent="label:say \"fix\" \\ now",kind="timeout"} 0.0
        taskgate_fix_attempts_to_green_sum{agent="mention:@claude",kind="test_failure"} 3.0
        taskgate_fix_seconds_to_green_bucket{le="+Inf",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="+Inf",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="1800.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="1800.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="21600.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="21600.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="259200.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="259200.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="300.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="300.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_to_green_bucket{le="3600.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="3600.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="60.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="60.0",agent="mention:@claude",kind="test_failure"} 0
        taskgate_fix_seconds_to_green_bucket{le="604800.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="604800.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="7200.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="7200.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="86400.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="86400.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_bucket{le="900.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_bucket{le="900.0",agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_count{agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_to_green_count{agent="mention:@claude",kind="test_failure"} 2
        taskgate_fix_seconds_to_green_sum{agent="label:say \"fix\" \\ now",kind="timeout"} 0.0
        taskgate_fix_seconds_to_green_sum{agent="mention:@claude",kind="test_failure"} 600.0
        taskgate_fix_seconds_waiting_for_person_bucket{le="+Inf",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="+Inf",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="1800.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="1800.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="21600.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="21600.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="259200.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="259200.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="300.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="300.0",agent="mention:@claude",kind="test_failure"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="3600.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="3600.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="60.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="60.0",agent="mention:@claude",kind="test_failure"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="604800.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="604800.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="7200.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="7200.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="86400.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="86400.0",agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_bucket{le="900.0",agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_bucket{le="900.0",agent="mention:@claude",kind="test_failure"} 0
        taskgate_fix_seconds_waiting_for_person_count{agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_seconds_waiting_for_person_count{agent="mention:@claude",kind="test_failure"} 1
        taskgate_fix_seconds_waiting_for_person_sum{agent="label:say \"fix\" \\ now",kind="timeout"} 0.0
        taskgate_fix_seconds_waiting_for_person_sum{agent="mention:@claude",kind="test_failure"} 1200.0
        taskgate_fix_todos_closed{agent="label:say \"fix\" \\ now",kind="timeout",outcome="escalated"} 0
        taskgate_fix_todos_closed{agent="label:say \"fix\" \\ now",kind="timeout",outcome="fixed_with_human"} 0
        taskgate_fix_todos_closed{agent="label:say \"fix\" \\ now",kind="timeout",outcome="fixed_without_human"} 0
        taskgate_fix_todos_closed{agent="label:say \"fix\" \\ now",kind="timeout",outcome="superseded"} 0
        taskgate_fix_todos_closed{agent="mention:@claude",kind="test_failure",outcome="escalated"} 1
        taskgate_fix_todos_closed{agent="mention:@claude",kind="test_failure",outcome="fixed_with_human"} 1
        taskgate_fix_todos_closed{agent="mention:@claude",kind="test_failure",outcome="fixed_without_human"} 1
        taskgate_fix_todos_closed{agent="mention:@claude",kind="test_failure",outcome="superseded"} 0
        taskgate_fix_todos_opened{agent="label:say \"fix\" \\ now",kind="timeout"} 1
        taskgate_fix_todos_opened{agent="mention:@claude",kind="test_failure"} 3
        taskgate_fix_todos_waited_for_person{agent="label:say \"fix\" \\ now",kind="timeout"} 0
        taskgate_fix_todos_waited_for_person{agent="mention:@claude",kind="test_failure"} 1
        "#);
    }

    #[test]
    fn roles_beyond_the_cap_are_one_label_value() {
        let mut stats = LoopStats::default();
        for n in 0..(MAX_AGENTS + 5) {
            // Role r00 opened the most; the five with the fewest are summed.
            let opened = (MAX_AGENTS + 5 - n) as u64;
            (stats.todos_opened).insert(("timeout".into(), format!("r{n:02}")), opened);
        }
        let text = Metrics::new().render(&Snapshot {
            loop_stats: stats,
            ..Snapshot::default()
        });
        let opened: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("taskgate_branch_todos_opened{"))
            .collect();
        assert_eq!(opened.len(), MAX_AGENTS + 1, "{text}");
        assert!(opened.iter().any(|l| l.contains("role=\"r00\"")), "{text}");
        assert!(!opened.iter().any(|l| l.contains("role=\"r14\"")), "{text}");
        // r10..r14 opened 5, 4, 3, 2 and 1.
        assert!(
            text.contains("taskgate_branch_todos_opened{kind=\"timeout\",role=\"other\"} 15"),
            "{text}"
        );
    }

    #[test]
    fn agents_beyond_the_cap_are_one_label_value() {
        let mut stats = LoopStats::default();
        for n in 0..(MAX_AGENTS + 5) {
            let fix = FixTotals {
                opened: 1,
                ..FixTotals::default()
            };
            stats.add_fixes(&format!("label:l{n:02}"), "timeout", &fix);
        }
        let lines = fix_lines(stats);
        let opened: Vec<&str> = lines
            .lines()
            .filter(|l| l.starts_with("taskgate_fix_todos_opened{"))
            .collect();
        assert_eq!(opened.len(), MAX_AGENTS + 1, "{lines}");
        assert!(
            lines.contains("taskgate_fix_todos_opened{agent=\"other\",kind=\"timeout\"} 5"),
            "{lines}"
        );
    }
}
