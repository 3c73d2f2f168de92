//! Deliveries recorded on PostgreSQL with one statement per group commit
//! (issue 32, item 1).
//!
//! Owns: [`DeliveryJob`], the writer's job of recording one delivery, and
//! [`record_together`], the statement that records every delivery of a
//! writer batch at once.
//! Must not: decide what a delivery is (intake does) or commit (the writer
//! does: the statement runs inside its transaction, under its savepoint).
//!
//! Why one statement: on PostgreSQL a delivery costs round trips, not work.
//! As a job of its own, each delivery costs its statement and the release
//! of its savepoint, two round trips on the writer's one connection. Under
//! load a batch holds tens of deliveries (one per connection waiting), and
//! recording them as arrays in one statement makes the batch's deliveries
//! cost one round trip in all. Alone in its batch, a delivery is recorded
//! with the single-row statement, as before.

use rusqlite::params;
use tokio::sync::oneshot;

use taskgate_core::ids::InstallationId;

use super::super::db::{Db, PgConn};
use super::super::sql::Sql;
use super::super::wakeups::Mark;
use super::super::writer::Job;
use super::super::{CommitError, StoreError};
use super::Recorded;

/// One delivery's rows, as they are written.
pub(in crate::store) struct DeliveryRow {
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub installation: Option<InstallationId>,
    pub received_at_ms: i64,
    pub status: &'static str,
    pub outcome: Option<String>,
    pub processed_at_ms: Option<i64>,
    pub codec: &'static str,
    pub payload: bytes::Bytes,
    /// [`super::BodyDigest`], when a webhook's.
    pub body_digest: Option<String>,
}

/// The writer's job of recording one delivery. The PostgreSQL writer asks
/// each job of a batch for [`Job::delivery`] and records those it gets
/// with [`record_together`]; otherwise the job records itself with
/// [`Job::run`].
pub(in crate::store) struct DeliveryJob {
    row: DeliveryRow,
    result: Option<Result<Recorded, StoreError>>,
    reply: oneshot::Sender<Result<Recorded, StoreError>>,
}

impl DeliveryJob {
    pub(in crate::store) fn new(
        row: DeliveryRow,
        reply: oneshot::Sender<Result<Recorded, StoreError>>,
    ) -> DeliveryJob {
        DeliveryJob {
            row,
            result: None,
            reply,
        }
    }
}

impl Job for DeliveryJob {
    fn single_statement(&self) -> bool {
        true
    }

    fn run(&mut self, db: &Db) -> bool {
        let result = record_one(db, &self.row);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn delivery(&mut self) -> Option<&mut DeliveryJob> {
        Some(self)
    }

    fn finish(self: Box<Self>, committed: Result<(), CommitError>) {
        let result = match committed {
            Ok(()) => self.result.expect("finish follows recording"),
            Err(e) => Err(StoreError::Commit(e)),
        };
        // The caller may have gone away (its client hung up); that is fine.
        let _ = self.reply.send(result);
    }
}

/// One delivery and its payload in one statement: a delivery id recorded
/// before inserts nothing and is a duplicate.
fn record_one(db: &Db, d: &DeliveryRow) -> Result<Recorded, StoreError> {
    let inserted = db.query_opt(
        "WITH d AS (
           INSERT INTO deliveries (delivery_id, event, action, installation_id,
                                   received_at_ms, status, outcome, processed_at_ms, body_digest)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?11)
           ON CONFLICT DO NOTHING
           RETURNING seq)
         INSERT INTO delivery_payloads (seq, codec, payload)
         SELECT seq, ?9, ?10 FROM d
         RETURNING seq",
        params![
            d.delivery_id,
            d.event,
            d.action,
            d.installation.map(Sql),
            d.received_at_ms,
            d.status,
            d.outcome,
            d.processed_at_ms,
            d.codec,
            &d.payload[..],
            d.body_digest
        ],
        |r| r.get::<i64>(0),
    )?;
    if inserted.is_some() {
        wake_decider(d, |mark| db.wake(mark));
    }
    Ok(match inserted {
        Some(seq) => Recorded::New { seq },
        None => Recorded::Duplicate,
    })
}

/// A delivery left to the processor wakes the replica deciding its
/// installation's deliveries, which may be another (`store::wakeups`); one
/// settled at intake has nothing to decide.
fn wake_decider(d: &DeliveryRow, mut wake: impl FnMut(Mark)) {
    if d.status == "received" {
        wake(Mark::Delivery(d.installation));
    }
}

/// Every delivery of `jobs` and their payloads, in one statement, each
/// job told what became of its own: a delivery id recorded before, or
/// earlier in the same batch, is a duplicate (the first copy in the batch
/// is the one recorded). On an error the statement changed nothing, and
/// the caller undoes its savepoint; each job is told the error.
pub(in crate::store) fn record_together(
    conn: &mut PgConn,
    jobs: &mut [&mut DeliveryJob],
) -> Result<(), StoreError> {
    let rows: Vec<&DeliveryRow> = jobs.iter().map(|j| &j.row).collect();
    match insert_rows(conn, &rows) {
        Ok(seq_by_position) => {
            for (job, seq) in jobs.iter_mut().zip(seq_by_position) {
                job.result = Some(Ok(match seq {
                    Some(seq) => {
                        wake_decider(&job.row, |mark| conn.mark(mark));
                        Recorded::New { seq }
                    }
                    None => Recorded::Duplicate,
                }));
            }
            Ok(())
        }
        Err(e) => {
            let why = e.to_string();
            for job in jobs.iter_mut() {
                job.result = Some(Err(StoreError::Postgres(why.clone())));
            }
            Err(e)
        }
    }
}

/// The statement: the rows as parallel arrays, numbered by position; the
/// first row of each delivery id (and of each body digest: the index
/// skips a later one) inserted (`DISTINCT ON`: a second copy in
/// the same statement would otherwise give its payload a second row for
/// the same seq); each inserted row's seq returned with its position.
const INSERT_ROWS: &str = "
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[],
                         $6::text[], $7::text[], $8::int8[], $9::text[], $10::bytea[], $11::text[])
        WITH ORDINALITY AS i(delivery_id, event, action, installation_id, received_at_ms,
                             status, outcome, processed_at_ms, codec, payload, body_digest,
                             position)
), firsts AS (
    SELECT DISTINCT ON (delivery_id) * FROM input ORDER BY delivery_id, position
), d AS (
    INSERT INTO deliveries (delivery_id, event, action, installation_id, received_at_ms,
                            status, outcome, processed_at_ms, body_digest)
    SELECT delivery_id, event, action, installation_id, received_at_ms,
           status, outcome, processed_at_ms, body_digest
    FROM firsts ORDER BY position
    ON CONFLICT DO NOTHING
    RETURNING seq, delivery_id
), p AS (
    INSERT INTO delivery_payloads (seq, codec, payload)
    SELECT d.seq, f.codec, f.payload FROM d JOIN firsts f USING (delivery_id)
)
SELECT d.seq, f.position FROM d JOIN firsts f USING (delivery_id)";

/// Runs [`INSERT_ROWS`]; the seq each row was recorded under, by position
/// (`None`: a duplicate).
fn insert_rows(conn: &mut PgConn, rows: &[&DeliveryRow]) -> Result<Vec<Option<i64>>, StoreError> {
    let ids: Vec<&str> = rows.iter().map(|r| r.delivery_id.as_str()).collect();
    let events: Vec<&str> = rows.iter().map(|r| r.event.as_str()).collect();
    let actions: Vec<Option<&str>> = rows.iter().map(|r| r.action.as_deref()).collect();
    let installations: Vec<Option<i64>> = rows
        .iter()
        .map(|r| r.installation.map(|i| i.get() as i64))
        .collect();
    let received: Vec<i64> = rows.iter().map(|r| r.received_at_ms).collect();
    let statuses: Vec<&str> = rows.iter().map(|r| r.status).collect();
    let outcomes: Vec<Option<&str>> = rows.iter().map(|r| r.outcome.as_deref()).collect();
    let processed: Vec<Option<i64>> = rows.iter().map(|r| r.processed_at_ms).collect();
    let codecs: Vec<&str> = rows.iter().map(|r| r.codec).collect();
    let payloads: Vec<&[u8]> = rows.iter().map(|r| &r.payload[..]).collect();
    let digests: Vec<Option<&str>> = rows.iter().map(|r| r.body_digest.as_deref()).collect();
    let answer = conn.query_typed(
        INSERT_ROWS,
        &[
            &ids,
            &events,
            &actions,
            &installations,
            &received,
            &statuses,
            &outcomes,
            &processed,
            &codecs,
            &payloads,
            &digests,
        ],
    )?;
    let mut seqs = vec![None; rows.len()];
    for row in answer {
        let seq: i64 = row.try_get(0)?;
        let position: i64 = row.try_get(1)?;
        let at = usize::try_from(position - 1)
            .ok()
            .filter(|&at| at < seqs.len())
            .ok_or_else(|| StoreError::Corrupt(format!("no delivery at position {position}")))?;
        seqs[at] = Some(seq);
    }
    Ok(seqs)
}
