//! The store: one SQLite file holding taskgate's state, the inbox of
//! webhook deliveries and the outbox of effects.
//!
//! Owns: the schema, every SQL statement, and the single writer thread.
//! Must not: call GitHub, decide anything (the core decides), or block an
//! async task (all SQLite work happens on the writer thread or in
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
//! Every time the store writes down (when a delivery arrived, when an effect
//! is due, when an attempt started) comes from its [`Clock`], read on the
//! caller's side before the job goes to the writer: the system's unless
//! [`Store::with_clock`] gives it the server's, which tests move on.

mod inbox;
mod lz4_dict;
mod objects;
mod outbox;
mod payloads;
mod recorded;
mod runs;
mod schema;
mod ship;
mod sql;
mod task_counts;
mod writer;

pub use inbox::{DeliveryRecord, Disposition, NewDelivery, PendingDelivery, Recorded};
pub use outbox::{EffectRow, EffectStatus};
pub use runs::{AttemptRow, AttemptSummary, TaskLocation};
pub use ship::StoryRow;
pub use task_counts::TaskCounts;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;

pub use writer::WriterMetrics;
use writer::{Job, TypedJob};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("commit failed: {0}")]
    Commit(String),
    #[error("`{0}` is not a supported DATABASE_URL (use sqlite://PATH)")]
    UnsupportedUrl(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
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
    reader: Arc<Mutex<Connection>>,
    clock: Clock,
}

impl Store {
    /// Opens (creating and migrating if needed) the database named by a
    /// `DATABASE_URL` such as `sqlite://taskgate.db` or `sqlite::memory:`-free
    /// file paths; PostgreSQL is not supported yet.
    pub fn open_url(url: &str) -> Result<Store, StoreError> {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .filter(|p| !p.is_empty() && !p.starts_with(":memory:"))
            .ok_or_else(|| StoreError::UnsupportedUrl(url.to_owned()))?;
        Store::open(Path::new(path))
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
            reader: Arc::new(Mutex::new(reader)),
            clock: Clock::system(),
        })
    }

    /// This handle, stamping times from `clock` instead of the system's.
    pub fn with_clock(self, clock: Clock) -> Store {
        Store { clock, ..self }
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
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(false, f).await
    }

    /// Like [`Store::write`] for work of exactly one SQL statement, which
    /// SQLite keeps atomic without a savepoint.
    pub(crate) async fn write_one<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.submit(true, f).await
    }

    async fn submit<T, F>(&self, single: bool, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(TypedJob::new(single, f, reply));
        self.writer.send(job).map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Runs a read on the reader connection, off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let conn = reader.lock().unwrap_or_else(|poison| poison.into_inner());
            f(&conn)
        })
        .await
        .map_err(|e| StoreError::Commit(format!("read task failed: {e}")))?
    }

    /// `SELECT 1` through the reader: what `/healthz` asks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.read(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?))
            .await
            .map(|_| ())
    }
}

/// Stored JSON that no longer reads back.
pub(crate) fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

/// The one JSON record `sql` selects, decoded, if there is one.
pub(crate) fn json_record<T: serde::de::DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Option<T>, StoreError> {
    use rusqlite::OptionalExtension;
    let json: Option<String> = conn.query_row(sql, params, |r| r.get(0)).optional()?;
    json.map(|j| serde_json::from_str(&j).map_err(corrupt))
        .transpose()
}

/// Rows of `(key, JSON record)` from `sql`, decoded, collected as `C`.
pub(crate) fn keyed_records<T, C>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<C, StoreError>
where
    T: serde::de::DeserializeOwned,
    C: FromIterator<(String, T)>,
{
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    rows.map(|row| {
        let (key, json) = row?;
        Ok((key, serde_json::from_str(&json).map_err(corrupt)?))
    })
    .collect()
}
