//! How taskgate's own types cross SQL: the core's id newtypes and the
//! attempt status, bound and read through [`Sql`], so a statement binds
//! `Sql(installation)` rather than `installation.0 as i64`, and a row reads
//! back an `InstallationId` rather than an `i64` to wrap.
//!
//! Owns: these conversions (the outbox's `EffectStatus`, a store type, has
//! its own beside it). Must not: know a table or a statement; those stay
//! with their module. The types belong to `taskgate-core`, which has no
//! database crate, and Rust lets only their crate or rusqlite's implement
//! rusqlite's traits for them: hence the wrapper, local to the store.
//!
//! One idea a reader needs: GitHub's ids are unsigned and SQLite's integers
//! signed, so an id is stored as the same 64 bits (`as i64`) and read back
//! the same way (`as u64`). Every `u64` round-trips unchanged, and GitHub's
//! ids, far below 2^63, are stored as the numbers they are.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use taskgate_core::ids::{
    CommentId, CommitSha, EffectId, InstallationId, IssueId, IssueNumber, StoryId, TaskId, UserId,
};
use taskgate_core::task::{AttemptStatus, RunSubject};

/// A core type as a SQL value: `Sql(issue)` in `params!`, and
/// `row.get::<Sql<IssueNumber>>(i)?.0` to read one back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sql<T>(pub T);

macro_rules! int_id_sql {
    ($($name:ident),*) => {$(
        impl ToSql for Sql<$name> {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.0.get() as i64))
            }
        }

        impl FromSql for Sql<$name> {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                i64::column_result(value).map(|v| Sql($name::new(v as u64)))
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

/// Text ids are stored as their text (a story key, a task id, a sha), so
/// rows written before the types existed read unchanged. A text read back
/// goes through the id's constructor: one that checks (`CommitSha::parse`,
/// `StoryId::parse`) makes a bad stored value an error naming the column
/// (rusqlite's conversion error carries its index), never a value taken
/// on trust.
macro_rules! str_id_sql {
    ($($name:ident => $read:expr),*) => {$(
        impl ToSql for Sql<$name> {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.0.as_str()))
            }
        }

        impl FromSql for Sql<$name> {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let text = String::column_result(value)?;
                $read(text).map(Sql).map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }
    )*};
}

str_id_sql!(
    StoryId => |text: String| StoryId::parse(&text),
    TaskId => |text: String| Ok::<_, std::convert::Infallible>(TaskId::new(text)),
    CommitSha => |text: String| CommitSha::parse(&text)
);

/// Stored as its lower-case word, which the schema's queries compare
/// against (`status = 'running'`).
impl ToSql for Sql<AttemptStatus> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.as_str()))
    }
}

/// A word no status has is corrupt data, not a status to guess.
impl FromSql for Sql<AttemptStatus> {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let word = value.as_str()?;
        AttemptStatus::parse(word)
            .map(Sql)
            .ok_or_else(|| FromSqlError::Other(format!("`{word}` is not an attempt status").into()))
    }
}

/// Stored as its key (`data`, `@integration/backtest`, `@ship`), the text
/// rows held before the type existed.
impl ToSql for Sql<RunSubject> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.key()))
    }
}

/// A text no subject is stored as is corrupt data, not a task to guess.
impl FromSql for Sql<RunSubject> {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        RunSubject::parse(value.as_str()?)
            .map(Sql)
            .map_err(|e| FromSqlError::Other(e.into()))
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
            let id = Sql(InstallationId::new(raw));
            let (back, stored): (Sql<InstallationId>, i64) = conn
                .query_row("SELECT ?1, ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert_eq!(back, id);
            assert_eq!(stored, raw as i64);
        }
        let stored: i64 = conn
            .query_row("SELECT ?1", [Sql(IssueNumber::new(12))], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 12);
    }

    #[test]
    fn attempt_status_is_stored_as_its_word() {
        let conn = Connection::open_in_memory().unwrap();
        let word: String = conn
            .query_row("SELECT ?1", [Sql(AttemptStatus::Cancelled)], |r| r.get(0))
            .unwrap();
        assert_eq!(word, "cancelled");
    }

    #[test]
    fn run_subjects_are_stored_as_their_keys_and_a_bad_key_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        for key in ["data", "@integration/backtest", "@ship", "@rollback"] {
            let subject = RunSubject::parse(key).unwrap();
            let (stored, back): (String, Sql<RunSubject>) = conn
                .query_row("SELECT ?1, ?1", [Sql(subject.clone())], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            assert_eq!((stored.as_str(), back.0), (key, subject));
        }
        let refused = conn
            .query_row("SELECT '@deploy'", [], |r| r.get::<_, Sql<RunSubject>>(0))
            .unwrap_err();
        insta::assert_snapshot!(
            crate::store::StoreError::from(refused).to_string(),
            @"stored data is corrupt: `@deploy` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)"
        );
    }
}
