//! How taskgate's own types cross SQLite: the id newtypes and the attempt
//! status as rusqlite `ToSql`/`FromSql`, so a statement binds `installation`
//! rather than `installation.0 as i64`, and a row reads back an
//! `InstallationId` rather than an `i64` to wrap.
//!
//! Owns: these conversions (the outbox's `EffectStatus` has its own beside
//! its type). Must not: know a table or a statement; those stay with their
//! module. The impls live here rather than in `ids` or `core` so that only
//! the store depends on rusqlite.
//!
//! One idea a reader needs: GitHub's ids are unsigned and SQLite's integers
//! signed, so an id is stored as the same 64 bits (`as i64`) and read back
//! the same way (`as u64`). Every `u64` round-trips unchanged, and GitHub's
//! ids, far below 2^63, are stored as the numbers they are.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::core::task::AttemptStatus;
use crate::ids::{CommentId, EffectId, InstallationId, IssueId, IssueNumber, UserId};

macro_rules! int_id_sql {
    ($($name:ident),*) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.0 as i64))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                i64::column_result(value).map(|v| $name(v as u64))
            }
        }
    )*};
}

int_id_sql!(
    IssueNumber,
    IssueId,
    CommentId,
    InstallationId,
    UserId,
    EffectId
);

/// Stored as its lower-case word, which the schema's queries compare
/// against (`status = 'running'`).
impl ToSql for AttemptStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

/// A word no status has is corrupt data, not a status to guess.
impl FromSql for AttemptStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let word = value.as_str()?;
        AttemptStatus::parse(word)
            .ok_or_else(|| FromSqlError::Other(format!("`{word}` is not an attempt status").into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn ids_round_trip_every_u64_and_store_githubs_ids_as_themselves() {
        let conn = Connection::open_in_memory().unwrap();
        for raw in [
            0,
            1,
            123_456_789,
            i64::MAX as u64,
            i64::MAX as u64 + 1,
            u64::MAX,
        ] {
            let id = InstallationId(raw);
            let (back, stored): (InstallationId, i64) = conn
                .query_row("SELECT ?1, ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert_eq!(back, id);
            assert_eq!(stored, raw as i64);
        }
        let stored: i64 = conn
            .query_row("SELECT ?1", [IssueNumber(12)], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 12);
    }

    #[test]
    fn attempt_status_is_stored_as_its_word() {
        let conn = Connection::open_in_memory().unwrap();
        let word: String = conn
            .query_row("SELECT ?1", [AttemptStatus::Cancelled], |r| r.get(0))
            .unwrap();
        assert_eq!(word, "cancelled");
    }
}
