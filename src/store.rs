//! The store: taskgate's state, the inbox of webhook deliveries and the
//! outbox of effects, in a SQLite file (one process) or a PostgreSQL
//! database (one or more replicas, `pg.rs`); every statement is written
//! once for both (`db.rs`), and their schemas are tested to agree.
//!
//! Owns: the schemas, every SQL statement, and the single writer thread.
//! Must not: call GitHub, decide anything (the core decides), or block an
//! async task (all database work happens on the writer thread or in
//! `spawn_blocking`).
//!
//! Two ideas a reader needs:
//! - **Group commit.** All writes go through one thread that takes every job
//!   waiting in its queue, runs each in its own savepoint, and commits them
//!   together with one fsync. A job's caller hears back only after that
//!   commit, so "recorded" always means "on disk", and throughput grows with
//!   load instead of being capped by the disk's fsync rate. The writer also
//!   checkpoints the log into the database file, after answering a commit's
//!   callers rather than inside their commit.
//! - **Outbox.** A decision's state changes and the GitHub calls it implies
//!   are written in the same transaction, so a crash can lose neither alone.
//!
//! The shell's modules do not hold the whole store: each declares the
//! methods it uses as a view (`store_view!`, in `view.rs`) and holds that.
//!
//! Every time the store writes down (when a delivery arrived, when an effect
//! is due, when an attempt started) comes from its [`Clock`], read on the
//! caller's side before the job goes to the writer: the system's unless
//! [`Store::with_clock`] gives it the server's, which tests move on.

mod audit;
mod claims;
mod commit_changes;
mod commit_error;
mod db;
mod effect_claims;
mod freeze;
mod inbox;
mod leases;
mod objects;
mod outbox;
mod pacing;
mod pauses;
mod payloads;
mod pg;
pub mod pg_tls;
mod plans;
mod quarantine;
mod recorded;
mod repo_config;
mod repo_traits;
mod runs;
mod schema;
#[cfg(test)]
mod schema_agreement;
mod ship;
mod ship_counts;
pub(crate) mod sql;
mod story_tasks;
mod task_counts;
mod tasks;
#[cfg(test)]
pub(crate) mod testing;
mod tests_history;
mod train;
pub(crate) mod view;
mod wakeups;
mod writer;

pub use audit::{AuditQuery, MAX_AUDIT_LIMIT};
pub use commit_changes::MAX_CHANGED_FILES;
pub use commit_error::CommitError;
pub use effect_claims::{Claimed, Settlement};
pub use inbox::{BodyDigest, DeliveryRecord, Disposition, NewDelivery, PendingDelivery, Recorded};
pub use objects::IssueLink;
pub use outbox::{DueEffects, EffectRow, EffectStatus};
pub use pacing::WriteSlot;
pub use plans::ParsedPlans;
pub use repo_config::RepoConfigRecord;
pub use runs::{AttemptRow, AttemptSummary};
pub use ship::StoryRow;
pub use story_tasks::StoryTasks;
pub use task_counts::TaskCounts;
pub use tasks::TaskLocation;
pub use tests_history::{TestStat, STORY_TEST_ROWS};
pub(crate) use view::store_view;
pub use wakeups::{WakeTargets, LISTENER_NAME};

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;

use db::Db;
pub use writer::WriterMetrics;
use writer::{Job, TypedJob};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    #[error("PostgreSQL error: {0}")]
    Postgres(String),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("commit failed: {0}")]
    Commit(CommitError),
    #[error(
        "`{0}` is not a supported DATABASE_URL (use sqlite://PATH or postgres://USER@HOST:PORT/DB)"
    )]
    UnsupportedUrl(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error(transparent)]
    PgTls(#[from] pg_tls::PgTlsError),
    #[error(
        "the database is at schema version {found}, newer than this taskgate knows ({known}): \
         run the newer taskgate, or `taskgate migrate` with it"
    )]
    NewerSchema { found: usize, known: usize },
}

/// Every store error may go away by itself but a commit the database
/// would refuse again the same way (a constraint, a panicking job:
/// [`CommitError::is_transient`]).
impl crate::transient::Transient for StoreError {
    fn is_transient(&self) -> bool {
        match self {
            StoreError::Commit(c) => c.is_transient(),
            _ => true,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        match e {
            // A stored value one of our types refuses (an unknown status
            // word, say): the data is wrong, not SQLite.
            rusqlite::Error::FromSqlConversionFailure(_, _, why) => {
                StoreError::Corrupt(why.to_string())
            }
            e => StoreError::Sqlite(e),
        }
    }
}

/// A handle to the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    writer: mpsc::UnboundedSender<Box<dyn Job>>,
    writer_metrics: WriterMetrics,
    reader: Reader,
    clock: Clock,
    /// This process's name in leases and claims (`store::leases`).
    replica: String,
    /// Whether other processes share the database (PostgreSQL): then work
    /// is claimed for a lease's time; a SQLite file has one process.
    shared: bool,
    /// How long a claim on shared work lasts without renewal: how long the
    /// work of a replica that died waits before another takes it over.
    lease_ms: i64,
    /// Where other replicas' wake-ups are heard (PostgreSQL).
    listen: Option<Arc<wakeups::ListenTo>>,
    /// The stored plans as lately parsed, for every reader of this process.
    plans: ParsedPlans,
}

/// [`Store::lease_ms`] unless set: a replica that died (SIGKILL, a lost
/// machine) has its claimed work taken over half a minute later.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// The connection reads run on, beside the writer's. PostgreSQL's lives
/// on a thread of its own, which runs the reads sent to it: its client
/// blocks on a runtime of its own, which must not happen (nor its drop) on
/// a thread of tokio's, `spawn_blocking`'s included.
#[derive(Clone)]
enum Reader {
    Sqlite(Arc<Mutex<Connection>>),
    Postgres(mpsc::UnboundedSender<ReadJob>),
}

type ReadJob = Box<dyn FnOnce(&Db) + Send>;

/// The PostgreSQL reader's thread: runs reads until every sender is gone.
fn spawn_pg_reader(conn: db::PgConn) -> mpsc::UnboundedSender<ReadJob> {
    let (tx, mut rx) = mpsc::unbounded_channel::<ReadJob>();
    std::thread::Builder::new()
        .name("taskgate-reader".into())
        .spawn(move || {
            let conn = std::cell::RefCell::new(conn);
            while let Some(job) = rx.blocking_recv() {
                // A read that panics (a bug) drops its answer, so its caller
                // gets an error; the thread goes on serving the others.
                let read = std::panic::AssertUnwindSafe(|| job(&Db::Postgres(&conn)));
                if std::panic::catch_unwind(read).is_err() {
                    tracing::error!("a store read panicked");
                }
            }
        })
        .expect("spawn the store reader thread");
    tx
}

/// Which database a `DATABASE_URL` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl DatabaseUrl {
    /// `sqlite://PATH` (or `sqlite:PATH`) and `postgres://…`
    /// (`postgresql://…`); anything else is refused with what is accepted.
    pub fn parse(url: &str) -> Result<DatabaseUrl, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(url.to_owned()));
        }
        url.strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .filter(|p| !p.is_empty() && !p.starts_with(":memory:"))
            .map(|p| DatabaseUrl::Sqlite(p.into()))
            .ok_or_else(|| StoreError::UnsupportedUrl(redact_url(url)))
    }
}

/// A database URL fit to print: the password of `scheme://user:password@`
/// and any `password=` parameter replaced by `***`. An error or a log line
/// names the database, never its secret.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://").map(|i| i + 3) {
        let authority_end = out[scheme_end..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| scheme_end + i);
        if let Some(at) = out[scheme_end..authority_end].rfind('@') {
            let userinfo = scheme_end..scheme_end + at;
            if let Some(colon) = out[userinfo.clone()].find(':') {
                out.replace_range(userinfo.start + colon + 1..userinfo.end, "***");
            }
        }
    }
    let mut rest = 0;
    while let Some(found) = out[rest..].to_ascii_lowercase().find("password=") {
        let value_start = rest + found + "password=".len();
        let value_end = out[value_start..]
            .find(['&', ' ', '#'])
            .map_or(out.len(), |i| value_start + i);
        out.replace_range(value_start..value_end, "***");
        rest = value_start + 3;
    }
    out
}

impl Store {
    /// Opens (creating and migrating if needed) the database named by a
    /// `DATABASE_URL`: `sqlite://taskgate.db` or `postgres://user@host/db`.
    pub fn open_url(url: &str) -> Result<Store, StoreError> {
        match DatabaseUrl::parse(url)? {
            DatabaseUrl::Sqlite(path) => Store::open(&path),
            DatabaseUrl::Postgres(url) => Store::open_postgres(&url),
        }
    }

    /// Opens a PostgreSQL database, migrating it first (one replica at a
    /// time: `store::pg`). The synchronous client must not run on an async
    /// thread, so connecting happens on a thread of its own.
    pub fn open_postgres(url: &str) -> Result<Store, StoreError> {
        let url = url.to_owned();
        let (writer, reader, listen) = std::thread::spawn(move || {
            let mut writer = db::PgConn::connect(&url)?;
            pg::migrate(&mut writer)?;
            let reader = db::PgConn::connect(&url)?;
            let writer_pid = writer.scalar_i64("SELECT pg_backend_pid()::BIGINT")? as i32;
            let listen = wakeups::ListenTo { url, writer_pid };
            Ok::<_, StoreError>((writer, reader, listen))
        })
        .join()
        .map_err(|_| StoreError::Postgres("connecting panicked".into()))??;
        let (writer, writer_metrics) = writer::spawn_pg(writer);
        Ok(Store {
            writer,
            writer_metrics,
            reader: Reader::Postgres(spawn_pg_reader(reader)),
            clock: Clock::system(),
            replica: leases::replica_name(),
            shared: true,
            lease_ms: DEFAULT_LEASE.as_millis() as i64,
            listen: Some(Arc::new(listen)),
            plans: ParsedPlans::default(),
        })
    }

    /// Brings the database a `DATABASE_URL` names up to this taskgate's
    /// schema and returns from which version to which (`taskgate migrate`,
    /// for operators who migrate as a step of their own before a rollout).
    pub fn migrate_url(url: &str) -> Result<(usize, usize), StoreError> {
        match DatabaseUrl::parse(url)? {
            DatabaseUrl::Sqlite(path) => schema::migrate(&schema::connect(&path)?),
            DatabaseUrl::Postgres(url) => {
                std::thread::spawn(move || pg::migrate(&mut db::PgConn::connect(&url)?))
                    .join()
                    .map_err(|_| StoreError::Postgres("migrating panicked".into()))?
            }
        }
    }

    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = schema::connect(path)?;
        schema::migrate(&conn)?;
        task_counts::backfill(&conn)?;
        let reader = schema::connect(path)?;
        let (writer, writer_metrics) = writer::spawn(conn);
        Ok(Store {
            writer,
            writer_metrics,
            reader: Reader::Sqlite(Arc::new(Mutex::new(reader))),
            clock: Clock::system(),
            replica: leases::replica_name(),
            shared: false,
            lease_ms: DEFAULT_LEASE.as_millis() as i64,
            listen: None,
            plans: ParsedPlans::default(),
        })
    }

    /// This handle, stamping times from `clock` instead of the system's.
    pub fn with_clock(self, clock: Clock) -> Store {
        Store { clock, ..self }
    }

    /// This handle as another replica would see the same database (tests
    /// of what replicas share).
    #[cfg(test)]
    pub(crate) fn as_replica(&self, name: &str) -> Store {
        Store {
            replica: name.to_owned(),
            ..self.clone()
        }
    }

    /// Wakes `targets` when another replica commits what they wait on: a
    /// delivery, effects, a pause, an attempt (`store::wakeups`). On
    /// PostgreSQL this starts a listening connection of its own, which
    /// ends once the targets are gone; on a SQLite file there is no other
    /// replica, and nothing starts.
    pub fn wake_on_other_replicas(&self, targets: WakeTargets) {
        if let Some(listen) = &self.listen {
            wakeups::spawn_listener(listen.clone(), targets);
        }
    }

    /// The stored plans parsed once per text (`store::plans`): read a
    /// story's plan with [`Store::story`], then parse it here.
    pub fn plans(&self) -> &ParsedPlans {
        &self.plans
    }

    /// Whether other replicas may share this database (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// This handle, with claims on shared work lasting `lease`.
    pub fn with_lease(self, lease: std::time::Duration) -> Store {
        Store {
            lease_ms: (lease.as_millis() as i64).max(1),
            ..self
        }
    }

    /// How long a claim on shared work lasts without renewal (ms).
    pub fn lease_ms(&self) -> i64 {
        self.lease_ms
    }

    /// The clock the store stamps times from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The writer's commit and checkpoint times, for `/metrics`.
    pub fn writer_metrics(&self) -> &WriterMetrics {
        &self.writer_metrics
    }

    /// Runs `f` inside the next group commit and returns its result once
    /// that commit is durable. An `Err` from `f` rolls back only `f`'s work.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(false, f).await
    }

    /// Like [`Store::write`] for work of exactly one SQL statement, which
    /// SQLite keeps atomic without a savepoint.
    pub(crate) async fn write_one<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(true, f).await
    }

    async fn submit<T, F>(&self, single: bool, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(TypedJob::new(single, f, reply));
        self.writer.send(job).map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Hands the writer a job built by hand (one it treats specially, as
    /// `inbox::batched`'s deliveries on PostgreSQL).
    fn submit_job(&self, job: Box<dyn Job>) -> Result<(), StoreError> {
        self.writer.send(job).map_err(|_| StoreError::WriterGone)
    }

    /// Runs a read on the reader connection, off the async threads.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    {
        self.writer_metrics.reads.inc();
        match &self.reader {
            Reader::Sqlite(conn) => {
                let conn = conn.clone();
                tokio::task::spawn_blocking(move || {
                    let conn = conn.lock().unwrap_or_else(|poison| poison.into_inner());
                    f(&Db::Sqlite(&conn))
                })
                .await
                .map_err(|e| StoreError::Commit(CommitError::ReadTask(e.to_string())))?
            }
            Reader::Postgres(reader) => {
                let (reply, answer) = oneshot::channel();
                let job: ReadJob = Box::new(move |db| {
                    let _ = reply.send(f(db));
                });
                reader.send(job).map_err(|_| StoreError::WriterGone)?;
                answer.await.map_err(|_| StoreError::WriterGone)?
            }
        }
    }

    /// `SELECT 1` through the reader: what `/healthz` asks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.read(|db| db.query_one("SELECT 1", &[], |r| r.get::<i64>(0)))
            .await
            .map(|_| ())
    }
}

/// The markers taskgate recorded for issue `number` of `repo` (the story
/// or task it made there, if any).
pub(crate) fn issue_markers(
    db: &Db,
    repo: &taskgate_core::ids::RepoName,
    number: taskgate_core::ids::IssueNumber,
) -> Result<Vec<String>, StoreError> {
    db.query_map(
        "SELECT marker FROM issues WHERE repo = ?1 AND number = ?2",
        rusqlite::params![repo.as_str(), sql::Sql(number)],
        |r| r.get::<String>(0),
    )
}

/// Stored JSON that no longer reads back.
pub(crate) fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

/// The one JSON record `sql` selects, decoded, if there is one.
pub(crate) fn json_record<T: serde::de::DeserializeOwned>(
    db: &Db,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Option<T>, StoreError> {
    let json: Option<String> = db.query_opt(sql, params, |r| r.get(0))?;
    json.map(|j| serde_json::from_str(&j).map_err(corrupt))
        .transpose()
}

/// Rows of `(key, JSON record)` from `sql`, decoded, collected as `C`.
pub(crate) fn keyed_records<T, C>(
    db: &Db,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<C, StoreError>
where
    T: serde::de::DeserializeOwned,
    C: FromIterator<(String, T)>,
{
    let rows = db.query_map(sql, params, |r| {
        Ok((r.get::<String>(0)?, r.get::<String>(1)?))
    })?;
    rows.into_iter()
        .map(|(key, json)| Ok((key, serde_json::from_str(&json).map_err(corrupt)?)))
        .collect()
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn a_database_url_is_printed_without_its_password() {
        let shown = [
            "postgres://taskgate:s3cret@db.internal:5432/taskgate",
            "postgresql://taskgate@db/taskgate?sslmode=require&password=s3cret",
            "mysql://root:hunter2@localhost/db",
            "sqlite:///var/lib/taskgate/taskgate.db",
        ]
        .map(redact_url);
        insta::assert_snapshot!(shown.join("\n"), @r"
        postgres://taskgate:***@db.internal:5432/taskgate
        postgresql://taskgate@db/taskgate?sslmode=require&password=***
        mysql://root:***@localhost/db
        sqlite:///var/lib/taskgate/taskgate.db
        ");
    }

    #[test]
    fn an_unsupported_url_is_refused_without_echoing_its_password() {
        let e = DatabaseUrl::parse("mysql://root:hunter2@localhost/db").unwrap_err();
        insta::assert_snapshot!(e, @"`mysql://root:***@localhost/db` is not a supported DATABASE_URL (use sqlite://PATH or postgres://USER@HOST:PORT/DB)");
    }
}
