//! Stores for the store's own tests, on both backends: every statement is
//! written once for SQLite and PostgreSQL, so each test runs on each.
//!
//! [`on_both_backends!`] turns `async fn name(store: Store) { … }` into a
//! module `name` with a `sqlite` and a `postgres` test, so a failure names
//! its backend. PostgreSQL is a fresh database on the test binary's
//! throwaway cluster (`pgtest`); without PostgreSQL installed the
//! `postgres` tests fail, they never skip.

use super::Store;

/// A store and what keeps its database alive.
pub(crate) struct TestStore {
    pub store: Store,
    _dir: Option<tempfile::TempDir>,
    _database: Option<pgtest::PgDatabase<'static>>,
}

pub(crate) fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    TestStore {
        store,
        _dir: Some(dir),
        _database: None,
    }
}

pub(crate) fn postgres() -> TestStore {
    let db = pgtest::fresh_database();
    let store = Store::open_postgres(db.url()).unwrap();
    TestStore {
        store,
        _dir: None,
        _database: Some(db),
    }
}

/// `async fn name(store: Store) { … }` as a `sqlite` and a `postgres`
/// test in a module `name`.
macro_rules! on_both_backends {
    ($(async fn $name:ident($store:ident: Store) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn case($store: crate::store::Store) $body

            #[tokio::test]
            async fn sqlite() {
                let held = crate::store::testing::sqlite();
                case(held.store.clone()).await;
            }

            #[tokio::test]
            async fn postgres() {
                let held = crate::store::testing::postgres();
                case(held.store.clone()).await;
            }
        }
    )*};
}
pub(crate) use on_both_backends;
