//! Why a commit of the store failed, and whether trying again may succeed.
//!
//! Owns: [`CommitError`], the failure every job of a group commit is
//! answered with (it is cloned to each), and its transient-or-permanent
//! classification of SQLite's and PostgreSQL's errors.
//! Must not: retry; the callers decide what a failed write means to them.
//!
//! Transient: another connection holds the database (SQLITE_BUSY,
//! SQLITE_LOCKED), PostgreSQL gave up on a transaction that would run
//! again unchanged (a serialization failure, a deadlock), or the
//! connection went away (SQLSTATE class 08, an administrator's shutdown,
//! an io error). Permanent: everything else (a constraint, a statement the
//! server refuses, a panicking job): the same commit would fail again.

use std::error::Error as _;

use postgres::error::SqlState;
use rusqlite::ErrorCode;

/// Why a group commit (or a read on the SQLite reader) failed. Its Display
/// follows `commit failed: ` in [`super::StoreError::Commit`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// The database refused or lost the commit, in its own words.
    #[error("{message}")]
    Database { message: String, transient: bool },
    /// A job panicked (a bug): the whole commit was rolled back.
    #[error("a store job panicked ({why}); nothing of its commit was kept")]
    Panicked { why: String },
    /// A read's blocking task did not finish: it panicked or was cancelled.
    #[error("read task failed: {0}")]
    ReadTask(String),
}

impl CommitError {
    /// Whether the same commit may succeed if tried again.
    pub fn is_transient(&self) -> bool {
        match self {
            CommitError::Database { transient, .. } => *transient,
            CommitError::Panicked { .. } | CommitError::ReadTask(_) => false,
        }
    }

    /// A PostgreSQL error, worded as the store words it (`message`, from
    /// [`super::StoreError`]'s Display).
    pub(super) fn postgres(e: &postgres::Error, message: String) -> CommitError {
        let transient = match e.code() {
            Some(code) => transient_sqlstate(code),
            None => {
                e.is_closed()
                    || e.source()
                        .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
            }
        };
        CommitError::Database { message, transient }
    }
}

impl From<rusqlite::Error> for CommitError {
    fn from(e: rusqlite::Error) -> CommitError {
        let transient = matches!(
            e.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        );
        CommitError::Database {
            message: e.to_string(),
            transient,
        }
    }
}

/// PostgreSQL's codes for a transaction that may succeed run again: a
/// serialization failure or a deadlock (class 40), a connection lost or
/// refused (class 08), the server shutting down or starting (57P0x).
fn transient_sqlstate(code: &SqlState) -> bool {
    let code = code.code();
    matches!(code, "40001" | "40P01" | "57P01" | "57P02" | "57P03") || code.starts_with("08")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::ffi::c_int) -> CommitError {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None).into()
    }

    #[test]
    fn a_busy_or_locked_sqlite_is_transient_a_constraint_is_not() {
        let busy = sqlite(rusqlite::ffi::SQLITE_BUSY);
        insta::assert_snapshot!(busy, @"Error code 5: The database file is locked");
        assert!(busy.is_transient());
        assert!(sqlite(rusqlite::ffi::SQLITE_LOCKED).is_transient());
        let constraint = sqlite(rusqlite::ffi::SQLITE_CONSTRAINT);
        insta::assert_snapshot!(constraint, @"Error code 19: Abort due to constraint violation");
        assert!(!constraint.is_transient());
    }

    #[test]
    fn postgres_serialization_deadlock_and_lost_connections_are_transient() {
        for transient in [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::CONNECTION_FAILURE,
            SqlState::ADMIN_SHUTDOWN,
        ] {
            assert!(transient_sqlstate(&transient), "{transient:?}");
        }
        for permanent in [
            SqlState::UNIQUE_VIOLATION,
            SqlState::SYNTAX_ERROR,
            SqlState::UNDEFINED_TABLE,
        ] {
            assert!(!transient_sqlstate(&permanent), "{permanent:?}");
        }
    }

    #[test]
    fn a_panic_or_a_lost_read_is_permanent_and_says_so() {
        let panicked = CommitError::Panicked {
            why: "a bug in a job".into(),
        };
        insta::assert_snapshot!(panicked, @"a store job panicked (a bug in a job); nothing of its commit was kept");
        assert!(!panicked.is_transient());
        let read = CommitError::ReadTask("task 7 panicked".into());
        insta::assert_snapshot!(
            crate::store::StoreError::Commit(read.clone()),
            @"commit failed: read task failed: task 7 panicked"
        );
        assert!(!read.is_transient());
    }
}
