//! The SQLite and PostgreSQL schemas agree, table by table and column by
//! column: the same tables, the same columns in the same order, each of
//! the same kind and nullability. Both schemas are written by hand
//! (`schema.rs`, `pg.rs`), and every statement of the store runs on both:
//! a column added to one only would fail on the other backend at the first
//! statement that names it, in production.
//!
//! Owns: reading each backend's catalogue and the comparison. Must not:
//! change either schema.

use std::collections::BTreeMap;

use super::db::{Db, Dialect};
use super::testing;
use super::{Store, StoreError};

/// A column as both backends can say it: its name, its kind (`integer`,
/// `text`, `blob`, `real`) and whether it may be NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    name: String,
    kind: String,
    nullable: bool,
}

/// Tables of one backend's bookkeeping only, with why.
const ONE_BACKEND_ONLY: &[(&str, &str)] = &[
    // SQLite keeps its schema version in `PRAGMA user_version`.
    (
        "taskgate_schema",
        "PostgreSQL's schema version (SQLite: user_version)",
    ),
];

/// SQLite's declared types and PostgreSQL's data types, as one kind.
fn kind(declared: &str) -> String {
    let t = declared.to_ascii_lowercase();
    let kind = match t.as_str() {
        "integer" | "int" | "bigint" | "smallint" | "boolean" => "integer",
        "text" | "character varying" => "text",
        "blob" | "bytea" => "blob",
        "real" | "double precision" => "real",
        other => return format!("unknown `{other}`"),
    };
    kind.to_owned()
}

fn catalogue(db: &Db) -> Result<BTreeMap<String, Vec<Column>>, StoreError> {
    let sql = match db.dialect() {
        Dialect::Sqlite => {
            "SELECT m.name, p.name, p.type, p.\"notnull\" = 0 AND p.pk = 0
             FROM sqlite_master m, pragma_table_info(m.name) p
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
             ORDER BY m.name, p.cid"
        }
        Dialect::Postgres => {
            "SELECT table_name::text, column_name::text, data_type::text,
                    (is_nullable = 'YES')::int
             FROM information_schema.columns
             WHERE table_schema = current_schema()
             ORDER BY table_name, ordinal_position"
        }
    };
    let rows = db.query_map(sql, &[], |r| {
        Ok((
            r.get::<String>(0)?,
            Column {
                name: r.get(1)?,
                kind: kind(&r.get::<String>(2)?),
                nullable: r.get::<i64>(3)? != 0,
            },
        ))
    })?;
    let mut tables: BTreeMap<String, Vec<Column>> = BTreeMap::new();
    for (table, column) in rows {
        if ONE_BACKEND_ONLY.iter().all(|(t, _)| *t != table) {
            tables.entry(table).or_default().push(column);
        }
    }
    Ok(tables)
}

async fn read(store: &Store) -> BTreeMap<String, Vec<Column>> {
    store.read(catalogue).await.unwrap()
}

/// Every difference, one line each.
fn differences(
    sqlite: &BTreeMap<String, Vec<Column>>,
    postgres: &BTreeMap<String, Vec<Column>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for table in sqlite.keys().chain(postgres.keys()) {
        match (sqlite.get(table), postgres.get(table)) {
            (Some(_), None) => out.push(format!("{table}: only in SQLite")),
            (None, Some(_)) => out.push(format!("{table}: only in PostgreSQL")),
            (Some(a), Some(b)) if a != b => {
                out.push(format!("{table}:\n  SQLite     {a:?}\n  PostgreSQL {b:?}"));
            }
            _ => {}
        }
    }
    out.dedup();
    out
}

#[tokio::test]
async fn the_sqlite_and_postgresql_schemas_agree_table_by_table_and_column_by_column() {
    let (sqlite, postgres) = (testing::sqlite(), testing::postgres());
    let (a, b) = (read(&sqlite.store).await, read(&postgres.store).await);
    assert!(a.len() > 20, "the SQLite catalogue was read: {a:?}");
    let found = differences(&a, &b);
    assert!(
        found.is_empty(),
        "the schemas differ:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_column_missing_or_of_another_kind_is_a_difference() {
    let col = |name: &str, kind: &str, nullable| Column {
        name: name.into(),
        kind: kind.into(),
        nullable,
    };
    let a = BTreeMap::from([
        (
            "t".to_owned(),
            vec![col("id", "integer", false), col("x", "text", true)],
        ),
        ("only_a".to_owned(), vec![]),
    ]);
    let b = BTreeMap::from([("t".to_owned(), vec![col("id", "integer", false)])]);
    let found = differences(&a, &b);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0], "only_a: only in SQLite");
    assert!(found[1].starts_with("t:"), "{found:#?}");
}
