//! The single writer thread, its group commit and its checkpoints.
//!
//! The writer learns how full the log is from SQLite's WAL hook, installed
//! with rusqlite's safe `Connection::wal_hook` (the `hooks` feature: no
//! dependency, a few seconds of rusqlite's build) rather than the raw
//! `sqlite3_wal_hook`, which needed a pointer to a boxed cell kept alive by
//! hand and unregistered on drop. The safe hook is a plain `fn`, so the
//! count lives in a thread-local of the writer thread, where SQLite calls
//! the hook. Its cost is the same as before to within what can be seen: one
//! call per group commit, now behind rusqlite's `catch_unwind` and a
//! thread-local store, tens of nanoseconds against a commit that waits for
//! an fsync. It was not measured with `bench/intake.sh` when it changed (the
//! benchmark wants a release build and wrk, and the comparison two release
//! builds): the benchmark's run-to-run spread, about 5% in
//! docs/benchmarks.md, is thousands of times that cost.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::db::{Db, PgConn};
use super::inbox::batched::{record_together, DeliveryJob};
use super::{CommitError, StoreError};

/// Most jobs folded into one commit; bounds the latency of the first one.
const MAX_BATCH: usize = 512;

/// Log pages after which the writer checkpoints (SQLite's default is 1000).
/// Small checkpoints: each one stalls the writer (it copies the pages and
/// fsyncs the database file), and at 1000 pages the intake benchmark's p99
/// was 9–11 ms; at 100, 5–7 ms at a few percent of throughput
/// (docs/benchmarks.md).
pub(super) const CHECKPOINT_PAGES: i32 = 100;

/// What the writer measures, for `/metrics`. The histograms share their
/// counts with their clones, so the web layer registers clones.
#[derive(Clone)]
pub struct WriterMetrics {
    /// From `BEGIN` to the commit being durable (its fsync included).
    pub commit_seconds: Histogram,
    /// Jobs (a delivery recorded, a decision stored, …) per group commit.
    pub jobs_per_commit: Histogram,
    /// Each checkpoint: log pages copied into the database file, and its
    /// fsync.
    pub checkpoint_seconds: Histogram,
    /// Reads, each a hop to the reader's thread (the writer's neighbour:
    /// a delivery's cost is its commits and its reads).
    pub reads: Counter,
}

impl WriterMetrics {
    fn new() -> WriterMetrics {
        // Fine below 10 ms, where a healthy disk commits; coarse above.
        let seconds = || {
            Histogram::new([
                0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.1, 1.0,
            ])
        };
        WriterMetrics {
            commit_seconds: seconds(),
            jobs_per_commit: Histogram::new([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 512.0]),
            checkpoint_seconds: seconds(),
            reads: Counter::default(),
        }
    }
}

/// A unit of work for the writer: run inside a savepoint, then told how the
/// enclosing commit went.
pub(super) trait Job: Send {
    /// Whether the job needs its own savepoint. A job of one statement does
    /// not: SQLite makes each statement atomic by itself, and skipping the
    /// savepoint spares copying its pages into a sub-journal.
    fn single_statement(&self) -> bool {
        false
    }
    /// Returns false when the job failed and its savepoint must be undone.
    fn run(&mut self, db: &Db) -> bool;
    /// A delivery to record: the PostgreSQL writer records the deliveries
    /// of a batch together, in one statement (`inbox::batched`), instead
    /// of running each.
    fn delivery(&mut self) -> Option<&mut DeliveryJob> {
        None
    }
    fn finish(self: Box<Self>, committed: Result<(), CommitError>);
}

pub(super) struct TypedJob<T, F> {
    single: bool,
    work: Option<F>,
    result: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> TypedJob<T, F> {
    pub(super) fn new(
        single: bool,
        work: F,
        reply: oneshot::Sender<Result<T, StoreError>>,
    ) -> Self {
        TypedJob {
            single,
            work: Some(work),
            result: None,
            reply,
        }
    }
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnOnce(&Db) -> Result<T, StoreError> + Send,
{
    fn single_statement(&self) -> bool {
        self.single
    }

    fn run(&mut self, db: &Db) -> bool {
        let work = self.work.take().expect("a job runs once");
        let result = work(db);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), CommitError>) {
        let result = match committed {
            Ok(()) => self.result.expect("finish follows run"),
            Err(e) => Err(StoreError::Commit(e)),
        };
        // The caller may have gone away (e.g. a client hung up); that is fine.
        let _ = self.reply.send(result);
    }
}

pub(super) fn spawn(conn: Connection) -> (mpsc::UnboundedSender<Box<dyn Job>>, WriterMetrics) {
    let (tx, rx) = mpsc::unbounded_channel();
    let metrics = WriterMetrics::new();
    let writer = Writer {
        log: WalPages::watch(conn),
        metrics: metrics.clone(),
    };
    std::thread::Builder::new()
        .name("taskgate-writer".into())
        .spawn(move || writer.run(rx))
        .expect("spawn the store writer thread");
    (tx, metrics)
}

/// The writer of a PostgreSQL store: the same group commit on one
/// connection (PostgreSQL has its own log and checkpoints).
pub(super) fn spawn_pg(conn: PgConn) -> (mpsc::UnboundedSender<Box<dyn Job>>, WriterMetrics) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Box<dyn Job>>();
    let metrics = WriterMetrics::new();
    let seen = metrics.clone();
    std::thread::Builder::new()
        .name("taskgate-writer".into())
        .spawn(move || {
            let conn = RefCell::new(conn);
            let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
            while next_batch(&mut rx, &mut batch) {
                let started = Instant::now();
                let committed = guarded(
                    || commit_batch_pg(&conn, &mut batch),
                    || {
                        let _ = conn.borrow_mut().batch("ROLLBACK");
                    },
                );
                seen.commit_seconds.observe(started.elapsed().as_secs_f64());
                seen.jobs_per_commit.observe(batch.len() as f64);
                for job in batch.drain(..) {
                    job.finish(committed.clone());
                }
            }
        })
        .expect("spawn the store writer thread");
    (tx, metrics)
}

/// Waits for a job, then takes every job waiting behind it, up to
/// [`MAX_BATCH`]; false once every sender is gone.
fn next_batch(
    rx: &mut mpsc::UnboundedReceiver<Box<dyn Job>>,
    batch: &mut Vec<Box<dyn Job>>,
) -> bool {
    let Some(first) = rx.blocking_recv() else {
        return false;
    };
    batch.push(first);
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    true
}

/// One transaction for the batch, a savepoint per job. Each round trip to
/// the server costs about as much as a statement, so the savepoint's
/// commands ride with the ones around them: the next job's savepoint is
/// set in the same round trip that releases the last one's, and a job
/// undone keeps its savepoint for the next. A job is then its own
/// statements and one round trip more; the batch's deliveries, when there
/// are several, are one statement together. The `NOTIFY` that wakes the
/// other replicas (`store::wakeups`) rides with the `COMMIT`: one per
/// batch, naming what its kept jobs wrote.
fn commit_batch_pg(conn: &RefCell<PgConn>, batch: &mut [Box<dyn Job>]) -> Result<(), CommitError> {
    let run = |sql: &str| conn.borrow_mut().batch_commit(sql);
    // Marks left by a batch that failed before its commit.
    conn.borrow_mut().undo_marks(0);
    run("BEGIN; SAVEPOINT job")?;
    let is_delivery: Vec<bool> = batch.iter_mut().map(|j| j.delivery().is_some()).collect();
    let together = is_delivery.iter().filter(|&&d| d).count() >= 2;
    let others: Vec<usize> = (0..batch.len())
        .filter(|&i| !(together && is_delivery[i]))
        .collect();
    if together {
        let mut deliveries: Vec<&mut DeliveryJob> =
            batch.iter_mut().filter_map(|j| j.delivery()).collect();
        // Bound first: the connection's borrow must end before `run`.
        let recorded = record_together(&mut conn.borrow_mut(), &mut deliveries);
        let step = match recorded {
            Ok(()) if others.is_empty() => Ok(()),
            Ok(()) => run("RELEASE job; SAVEPOINT job"),
            Err(e) => {
                tracing::warn!(error = %e, "recording a batch of deliveries failed");
                run("ROLLBACK TO job")
            }
        };
        if let Err(e) = step {
            let _ = run("ROLLBACK");
            return Err(e);
        }
    }
    let last = others.len().saturating_sub(1);
    for (n, &i) in others.iter().enumerate() {
        let before = conn.borrow().marks();
        let step = if batch[i].run(&Db::Postgres(conn)) {
            if n == last {
                Ok(())
            } else {
                run("RELEASE job; SAVEPOINT job")
            }
        } else {
            conn.borrow_mut().undo_marks(before);
            run("ROLLBACK TO job")
        };
        if let Err(e) = step {
            let _ = run("ROLLBACK");
            return Err(e);
        }
    }
    let notify = conn.borrow_mut().take_notify_sql();
    run(&format!("RELEASE job; {notify}COMMIT")).inspect_err(|_| {
        let _ = run("ROLLBACK");
    })
}

struct Writer {
    log: WalPages,
    metrics: WriterMetrics,
}

impl Writer {
    fn run(self, mut rx: mpsc::UnboundedReceiver<Box<dyn Job>>) {
        let conn = self.log.conn();
        let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
        while next_batch(&mut rx, &mut batch) {
            let started = Instant::now();
            let committed = commit_guarded(conn, &mut batch);
            self.metrics
                .commit_seconds
                .observe(started.elapsed().as_secs_f64());
            self.metrics.jobs_per_commit.observe(batch.len() as f64);
            for job in batch.drain(..) {
                job.finish(committed.clone());
            }
            // After the callers are answered, not inside their commit (where
            // SQLite's own auto-checkpoint runs): only the next commit waits.
            if self.log.pages() >= CHECKPOINT_PAGES {
                self.checkpoint();
            }
        }
    }

    fn checkpoint(&self) {
        let started = Instant::now();
        // PASSIVE: copies what no reader still needs, never waits for one.
        let done = self
            .log
            .conn()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        self.metrics
            .checkpoint_seconds
            .observe(started.elapsed().as_secs_f64());
        if let Err(e) = done {
            tracing::warn!(error = %e, "checkpoint failed; trying again after the next commits");
        }
        self.log.reset();
    }
}

/// A group commit that survives a panicking job. A job that panics (a bug)
/// must not take the writer with it: every later delivery would get a 503
/// until a restart. Its commit is undone and answered as failed instead,
/// like a commit that failed.
fn commit_guarded(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), CommitError> {
    guarded(
        || commit_batch(conn, batch),
        || {
            let _ = conn.execute_batch("ROLLBACK");
        },
    )
}

/// Runs `commit`; a panic inside it is caught, `rollback` runs, and the
/// commit is answered as failed with the panic's message.
fn guarded(
    commit: impl FnOnce() -> Result<(), CommitError>,
    rollback: impl FnOnce(),
) -> Result<(), CommitError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(commit)).unwrap_or_else(|panic| {
        rollback();
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        tracing::error!(%why, "a store job panicked; its group commit was rolled back");
        Err(CommitError::Panicked { why })
    })
}

/// The writer's connection with SQLite's WAL hook counting the pages in the
/// log after each commit. Installing the hook turns SQLite's auto-checkpoint
/// off for this connection: the writer checkpoints itself.
struct WalPages {
    conn: Connection,
}

thread_local! {
    /// Pages in the log after the last commit, as [`count_pages`] last saw
    /// them. rusqlite's safe hook is a plain `fn`, with no state of its own,
    /// and SQLite calls it on the thread running the commit: the writer's,
    /// whose connection is the only one with the hook. So the count is the
    /// writer thread's own, and each store (tests open many) has its own
    /// writer thread.
    static LOG_PAGES: Cell<i32> = const { Cell::new(0) };
}

fn count_pages(_log: &rusqlite::hooks::Wal, in_log: std::ffi::c_int) -> rusqlite::Result<()> {
    LOG_PAGES.set(in_log);
    Ok(())
}

impl WalPages {
    fn watch(conn: Connection) -> WalPages {
        conn.wal_hook(Some(count_pages));
        WalPages { conn }
    }

    fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Pages in the log after the last commit, since the last checkpoint.
    /// Read on the writer thread, where the commits run.
    fn pages(&self) -> i32 {
        LOG_PAGES.get()
    }

    fn reset(&self) {
        LOG_PAGES.set(0);
    }
}

/// Runs one of the writer's fixed statements through the statement cache:
/// they run several times per commit, and parsing them each time showed up
/// as a visible share of the intake's CPU.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

fn commit_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), CommitError> {
    exec(conn, "BEGIN IMMEDIATE")?;
    for job in batch.iter_mut() {
        if job.single_statement() {
            job.run(&Db::Sqlite(conn));
            continue;
        }
        let step = (|| -> rusqlite::Result<()> {
            exec(conn, "SAVEPOINT job")?;
            if job.run(&Db::Sqlite(conn)) {
                exec(conn, "RELEASE job")
            } else {
                exec(conn, "ROLLBACK TO job")?;
                exec(conn, "RELEASE job")
            }
        })();
        if let Err(e) = step {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e.into());
        }
    }
    exec(conn, "COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        e.into()
    })
}

#[cfg(test)]
mod tests {
    use crate::store::db::Db;
    use crate::store::testing::on_both_backends;
    use crate::store::{Store, StoreError};

    on_both_backends! {
        async fn a_job_that_panics_fails_its_commit_and_the_writer_goes_on(store: Store) {
            execute(&store, "CREATE TABLE t (x BIGINT)").await;
            let panicked = store
                .write(|db| -> Result<(), StoreError> {
                    db.execute("INSERT INTO t VALUES (1)", &[])?;
                    panic!("a bug in a job");
                })
                .await;
            match panicked {
                Err(StoreError::Commit(why)) => {
                    assert!(why.to_string().contains("a bug in a job"), "{why}")
                }
                other => panic!("expected a failed commit, got {other:?}"),
            }
            // Nothing of it was kept, and the writer still takes work.
            let rows = |db: &Db| -> Result<i64, StoreError> {
                db.query_one("SELECT count(*) FROM t", &[], |r| r.get(0))
            };
            assert_eq!(store.write(rows).await.unwrap(), 0);
            execute(&store, "INSERT INTO t VALUES (2)").await;
            assert_eq!(store.write(rows).await.unwrap(), 1);
        }
    }

    on_both_backends! {
        async fn a_job_that_fails_undoes_only_its_own_work(store: Store) {
            execute(&store, "CREATE TABLE t (x BIGINT)").await;
            let insert = |x: i64, fail: bool| {
                let store = store.clone();
                async move {
                    store
                        .write(move |db| -> Result<(), StoreError> {
                            db.execute("INSERT INTO t VALUES (?1)", rusqlite::params![x])?;
                            if fail {
                                return Err(StoreError::Corrupt("this job fails".into()));
                            }
                            Ok(())
                        })
                        .await
                }
            };
            // Sent together, so that they share group commits.
            let results =
                futures::future::join_all((1..=9).map(|x| insert(x, x % 3 == 0))).await;
            let failed = results.iter().filter(|r| r.is_err()).count();
            assert_eq!(failed, 3, "{results:?}");
            let kept = store
                .write(|db| db.query_map("SELECT x FROM t ORDER BY x", &[], |r| r.get::<i64>(0)))
                .await
                .unwrap();
            assert_eq!(kept, [1, 2, 4, 5, 7, 8]);
        }
    }

    /// Runs one statement through the writer, in a commit of its own.
    async fn execute(store: &Store, sql: &'static str) {
        store.write_one(move |db| db.batch(sql)).await.unwrap();
    }

    /// A histogram's `_count` or `_sum`, read through its text encoding.
    fn read(histogram: &prometheus_client::metrics::histogram::Histogram, field: &str) -> f64 {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("h", "", histogram.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("h_{field} ")))
            .unwrap_or_else(|| panic!("no h_{field} in {text}"));
        line.split(' ').nth(1).unwrap().parse().unwrap()
    }

    #[tokio::test]
    async fn the_writer_checkpoints_the_log_and_times_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let store = Store::open(&db).unwrap();
        execute(&store, "CREATE TABLE t (x BLOB)").await;
        // 300 commits of about four log pages each (the row's leaf and its
        // overflow pages): ~1,200 pages through the log.
        for _ in 0..300 {
            execute(&store, "INSERT INTO t VALUES (zeroblob(8000))").await;
        }
        let metrics = store.writer_metrics();
        assert_eq!(read(&metrics.commit_seconds, "count"), 301.0);
        assert_eq!(read(&metrics.jobs_per_commit, "sum"), 301.0);
        let checkpoints = read(&metrics.checkpoint_seconds, "count");
        assert!(
            (8.0..=20.0).contains(&checkpoints),
            "{checkpoints} checkpoints"
        );
        // SQLite's own auto-checkpoint is off on the writer's connection, so
        // without the writer's checkpoints the log would hold all ~3 MB.
        let log = std::fs::metadata(dir.path().join("t.db-wal"))
            .unwrap()
            .len();
        let page = 4096 + 24;
        assert!(
            log <= (super::CHECKPOINT_PAGES as u64 + 10) * page,
            "the log grew to {log} bytes"
        );
    }
}
