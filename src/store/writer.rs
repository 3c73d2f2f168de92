//! The single writer thread and its group commit.

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::StoreError;

/// Most jobs folded into one commit; bounds the latency of the first one.
const MAX_BATCH: usize = 512;

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
    fn run(&mut self, conn: &Connection) -> bool;
    fn finish(self: Box<Self>, committed: Result<(), String>);
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
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn single_statement(&self) -> bool {
        self.single
    }

    fn run(&mut self, conn: &Connection) -> bool {
        let work = self.work.take().expect("a job runs once");
        let result = work(conn);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), String>) {
        let result = match committed {
            Ok(()) => self.result.expect("finish follows run"),
            Err(e) => Err(StoreError::Commit(e)),
        };
        // The caller may have gone away (e.g. a client hung up); that is fine.
        let _ = self.reply.send(result);
    }
}

pub(super) fn spawn(conn: Connection) -> mpsc::UnboundedSender<Box<dyn Job>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("taskgate-writer".into())
        .spawn(move || run(conn, rx))
        .expect("spawn the store writer thread");
    tx
}

fn run(conn: Connection, mut rx: mpsc::UnboundedReceiver<Box<dyn Job>>) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        // A job that panics (a bug) must not take the writer with it: every
        // later delivery would get a 503 until a restart. Its commit is
        // undone and answered as failed instead, like a commit that failed.
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_batch(&conn, &mut batch)
        }))
        .unwrap_or_else(|panic| {
            let _ = conn.execute_batch("ROLLBACK");
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            tracing::error!(%why, "a store job panicked; its group commit was rolled back");
            Err(format!(
                "a store job panicked ({why}); nothing of its commit was kept"
            ))
        });
        for job in batch.drain(..) {
            job.finish(committed.clone());
        }
    }
}

/// Runs one of the writer's fixed statements through the statement cache:
/// they run several times per commit, and parsing them each time showed up
/// as a visible share of the intake's CPU.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

fn commit_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), String> {
    exec(conn, "BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
    for job in batch.iter_mut() {
        if job.single_statement() {
            job.run(conn);
            continue;
        }
        let step = (|| -> rusqlite::Result<()> {
            exec(conn, "SAVEPOINT job")?;
            if job.run(conn) {
                exec(conn, "RELEASE job")
            } else {
                exec(conn, "ROLLBACK TO job")?;
                exec(conn, "RELEASE job")
            }
        })();
        if let Err(e) = step {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e.to_string());
        }
    }
    exec(conn, "COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        e.to_string()
    })
}

#[cfg(test)]
mod tests {
    use crate::store::{Store, StoreError};

    #[tokio::test]
    async fn a_job_that_panics_fails_its_commit_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let setup = |c: &rusqlite::Connection| -> Result<(), StoreError> {
            c.execute_batch("CREATE TABLE t (x INTEGER)")?;
            Ok(())
        };
        store.write(setup).await.unwrap();
        let panicked = store
            .write(|c| -> Result<(), StoreError> {
                c.execute("INSERT INTO t VALUES (1)", [])?;
                panic!("a bug in a job");
            })
            .await;
        match panicked {
            Err(StoreError::Commit(why)) => assert!(why.contains("a bug in a job"), "{why}"),
            other => panic!("expected a failed commit, got {other:?}"),
        }
        // Nothing of it was kept, and the writer still takes work.
        let rows = |c: &rusqlite::Connection| -> Result<i64, StoreError> {
            Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?)
        };
        assert_eq!(store.write(rows).await.unwrap(), 0);
        store
            .write(|c| -> Result<(), StoreError> {
                c.execute("INSERT INTO t VALUES (2)", [])?;
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(store.write(rows).await.unwrap(), 1);
    }
}
