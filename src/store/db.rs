//! One SQL surface over two databases: the store's statements run on
//! SQLite (the embedded default) or PostgreSQL (several replicas) through
//! [`Db`], so each statement is written once.
//!
//! Owns: executing a statement and reading its rows on either backend,
//! the statement caches, and the few dialect differences a statement can
//! ask about ([`Db::dialect`]).
//! Must not: know a table; the store's modules own their statements.
//!
//! Ideas a reader needs:
//! - **rusqlite's types are the lingua franca.** Parameters are bound with
//!   rusqlite's `params![…]` and rows read with its `FromSql`, so the ids'
//!   and statuses' conversions (`store::sql`'s `Sql`) serve both backends. On
//!   PostgreSQL each parameter becomes the type the prepared statement
//!   expects (an integer for `BIGINT`, text for `TEXT`, bytes for `BYTEA`),
//!   and each column comes back as the SQLite value it would have been.
//! - **Placeholders are SQLite's** (`?1`, `?2`): PostgreSQL's `$1` is
//!   written for it when a statement is first prepared.

use std::cell::RefCell;
use std::collections::HashMap;

use rusqlite::types::{FromSql, ToSql, ToSqlOutput, Value, ValueRef};

use super::sql::Sql;
use super::wakeups::{self, Mark};
use super::{CommitError, StoreError};

/// Which SQL dialect a statement runs in, for the few that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A connection the store's statements run on: inside the writer's
/// transaction for writes, on a reader for reads.
pub(crate) enum Db<'c> {
    Sqlite(&'c rusqlite::Connection),
    Postgres(&'c RefCell<PgConn>),
}

/// A row being read, on either backend.
pub(crate) enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r [Value]),
}

impl Row<'_> {
    /// Column `index`, read as `T` (rusqlite's conversions, on both backends).
    pub fn get<T: FromSql>(&self, index: usize) -> Result<T, StoreError> {
        match self {
            Row::Sqlite(row) => Ok(row.get(index)?),
            Row::Postgres(values) => {
                let value = values
                    .get(index)
                    .ok_or_else(|| StoreError::Corrupt(format!("no column {index} in the row")))?;
                // Worded as SQLite's conversion failures are (`StoreError`'s
                // `From<rusqlite::Error>`): the reason alone.
                T::column_result(ValueRef::from(value))
                    .map_err(|e| StoreError::Corrupt(e.to_string()))
            }
        }
    }

    /// Column `index`, read as a core type through [`Sql`] (an id, an
    /// attempt status). A value the type refuses is corrupt data naming
    /// the column.
    pub fn sql<T>(&self, index: usize) -> Result<T, StoreError>
    where
        Sql<T>: FromSql,
    {
        self.get::<Sql<T>>(index)
            .map(|v| v.0)
            .map_err(|e| self.in_column(index, e))
    }

    /// A nullable column of a core type.
    pub fn sql_opt<T>(&self, index: usize) -> Result<Option<T>, StoreError>
    where
        Sql<T>: FromSql,
    {
        let value = self.get::<Option<Sql<T>>>(index);
        Ok(value.map_err(|e| self.in_column(index, e))?.map(|v| v.0))
    }

    /// `error`, when it is corrupt data, prefixed with the column it was
    /// read from (its index in the statement: PostgreSQL's rows here
    /// carry no names, and both backends word it the same).
    fn in_column(&self, index: usize, error: StoreError) -> StoreError {
        match error {
            StoreError::Corrupt(why) => StoreError::Corrupt(format!("column {index}: {why}")),
            error => error,
        }
    }
}

impl<'c> Db<'c> {
    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement; returns the rows it changed.
    pub fn execute(&self, sql: &str, params: &[&dyn ToSql]) -> Result<usize, StoreError> {
        match self {
            Db::Sqlite(conn) => Ok(conn.prepare_cached(sql)?.execute(params)?),
            Db::Postgres(pg) => pg.borrow_mut().execute(sql, params),
        }
    }

    /// Every row of a query, each mapped by `map`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: &[&dyn ToSql],
        mut map: impl FnMut(&Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(params)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(map(&Row::Sqlite(row))?);
                }
                Ok(out)
            }
            Db::Postgres(pg) => {
                let rows = pg.borrow_mut().query(sql, params)?;
                rows.iter()
                    .map(|values| map(&Row::Postgres(values)))
                    .collect()
            }
        }
    }

    /// The first row of a query, if it has one.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: &[&dyn ToSql],
        map: impl FnOnce(&Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(params)?;
                match rows.next()? {
                    Some(row) => Ok(Some(map(&Row::Sqlite(row))?)),
                    None => Ok(None),
                }
            }
            Db::Postgres(pg) => {
                let rows = pg.borrow_mut().query(sql, params)?;
                rows.first()
                    .map(|values| map(&Row::Postgres(values)))
                    .transpose()
            }
        }
    }

    /// The one row a query must return (an aggregate, say).
    pub fn query_one<T>(
        &self,
        sql: &str,
        params: &[&dyn ToSql],
        map: impl FnOnce(&Row) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.query_opt(sql, params, map)?
            .ok_or_else(|| StoreError::Corrupt(format!("no row from `{}`", first_line(sql))))
    }

    /// Marks what this write concerns: on PostgreSQL the writer tells
    /// the other replicas when it commits (`store::wakeups`); SQLite has
    /// no other replica to tell.
    pub fn wake(&self, mark: Mark) {
        if let Db::Postgres(pg) = self {
            pg.borrow_mut().marks.push(mark);
        }
    }

    /// Runs several statements without parameters (tests set tables up).
    #[cfg(test)]
    pub fn batch(&self, sql: &str) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(pg) => pg.borrow_mut().batch(sql),
        }
    }
}

fn first_line(sql: &str) -> &str {
    sql.trim().lines().next().unwrap_or_default()
}

/// A PostgreSQL connection with its prepared statements, by their SQLite
/// text.
pub(crate) struct PgConn {
    client: postgres::Client,
    prepared: HashMap<String, postgres::Statement>,
    /// What the writes since the last commit concern ([`Db::wake`]).
    marks: Vec<Mark>,
}

impl PgConn {
    /// Connects as `url` says, its `sslmode` and `sslrootcert` included
    /// (`store::pg_tls`).
    pub fn connect(url: &str) -> Result<PgConn, StoreError> {
        let target = super::pg_tls::PgTarget::parse(url)?;
        let client = (target.connect()).map_err(|e| StoreError::Postgres(target.explain(&e)))?;
        Ok(PgConn {
            client,
            prepared: HashMap::new(),
            marks: Vec::new(),
        })
    }

    fn statement(&mut self, sql: &str) -> Result<postgres::Statement, StoreError> {
        if let Some(stmt) = self.prepared.get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.client.prepare(&dollar_placeholders(sql))?;
        self.prepared.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    fn bind(params: &[&dyn ToSql]) -> Result<Vec<PgValue>, StoreError> {
        params
            .iter()
            .map(|p| {
                Ok(PgValue(match p.to_sql()? {
                    ToSqlOutput::Borrowed(v) => v.into(),
                    ToSqlOutput::Owned(v) => v,
                    other => {
                        return Err(StoreError::Corrupt(format!(
                            "a parameter PostgreSQL cannot take: {other:?}"
                        )))
                    }
                }))
            })
            .collect()
    }

    fn execute(&mut self, sql: &str, params: &[&dyn ToSql]) -> Result<usize, StoreError> {
        let stmt = self.statement(sql)?;
        let values = Self::bind(params)?;
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v as _).collect();
        Ok(self.client.execute(&stmt, &refs)? as usize)
    }

    fn query(&mut self, sql: &str, params: &[&dyn ToSql]) -> Result<Vec<Vec<Value>>, StoreError> {
        let stmt = self.statement(sql)?;
        let values = Self::bind(params)?;
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v as _).collect();
        let rows = self.client.query(&stmt, &refs)?;
        rows.iter().map(row_values).collect()
    }

    pub fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        Ok(self.client.batch_execute(sql)?)
    }

    /// [`PgConn::batch`] for the writer's transaction control: its error
    /// says whether the commit may succeed if tried again.
    pub fn batch_commit(&mut self, sql: &str) -> Result<(), CommitError> {
        self.client
            .batch_execute(sql)
            .map_err(|e| CommitError::postgres(&e, StoreError::Postgres(described(&e)).to_string()))
    }

    /// A statement written for PostgreSQL alone, with its own parameter
    /// types (arrays, so that one statement covers many rows), prepared
    /// once; its rows as the client reads them.
    pub fn query_typed(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let stmt = self.statement(sql)?;
        Ok(self.client.query(&stmt, params)?)
    }

    /// Marks what a statement run through [`PgConn::query_typed`] concerns
    /// (see [`Db::wake`]).
    pub fn mark(&mut self, mark: Mark) {
        self.marks.push(mark);
    }

    /// How many marks the writes since the last commit left.
    pub fn marks(&self) -> usize {
        self.marks.len()
    }

    /// Takes back the marks after the first `kept` (a job undone).
    pub fn undo_marks(&mut self, kept: usize) {
        self.marks.truncate(kept);
    }

    /// The `NOTIFY` for the marks since the last commit (`store::wakeups`),
    /// which are cleared.
    pub fn take_notify_sql(&mut self) -> String {
        let sql = wakeups::notify_sql(&self.marks);
        self.marks.clear();
        sql
    }

    /// The one `BIGINT` a statement without parameters returns.
    pub fn scalar_i64(&mut self, sql: &str) -> Result<i64, StoreError> {
        Ok(self.client.query_one(sql, &[])?.try_get(0)?)
    }
}

/// `?1` → `$1`, outside string literals and quoted names.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '?') => {
                out.push('$');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// A PostgreSQL row as the SQLite values it would have held.
fn row_values(row: &postgres::Row) -> Result<Vec<Value>, StoreError> {
    use postgres::types::Type;
    (0..row.len())
        .map(|i| {
            let ty = row.columns()[i].type_();
            Ok(match *ty {
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Integer),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)?
                    .map(|v| Value::Integer(v.into())),
                Type::INT2 => row
                    .try_get::<_, Option<i16>>(i)?
                    .map(|v| Value::Integer(v.into())),
                Type::BOOL => row
                    .try_get::<_, Option<bool>>(i)?
                    .map(|v| Value::Integer(v.into())),
                Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::Real),
                Type::FLOAT4 => row
                    .try_get::<_, Option<f32>>(i)?
                    .map(|v| Value::Real(v.into())),
                Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob),
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                    row.try_get::<_, Option<String>>(i)?.map(Value::Text)
                }
                ref other => {
                    return Err(StoreError::Corrupt(format!(
                        "column `{}` is of type {other}, which the store does not read \
                         (cast it in the statement)",
                        row.columns()[i].name()
                    )))
                }
            }
            .unwrap_or(Value::Null))
        })
        .collect()
}

/// A SQLite value bound to a PostgreSQL parameter of whatever type the
/// statement expects there.
#[derive(Debug)]
struct PgValue(Value);

impl postgres::types::ToSql for PgValue {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::{ToSql as Pg, Type};
        match (&self.0, ty) {
            (Value::Null, _) => Ok(postgres::types::IsNull::Yes),
            (Value::Integer(i), &Type::INT8) => Pg::to_sql(i, ty, out),
            (Value::Integer(i), &Type::INT4) => Pg::to_sql(&i32::try_from(*i)?, ty, out),
            (Value::Integer(i), &Type::INT2) => Pg::to_sql(&i16::try_from(*i)?, ty, out),
            (Value::Integer(i), &Type::BOOL) => Pg::to_sql(&(*i != 0), ty, out),
            (Value::Integer(i), &Type::FLOAT8) => Pg::to_sql(&(*i as f64), ty, out),
            (Value::Integer(i), &Type::TEXT | &Type::VARCHAR) => {
                Pg::to_sql(&i.to_string(), ty, out)
            }
            (Value::Real(f), &Type::FLOAT8) => Pg::to_sql(f, ty, out),
            (Value::Text(s), &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME) => {
                Pg::to_sql(&s.as_str(), ty, out)
            }
            (Value::Blob(b), &Type::BYTEA) => Pg::to_sql(&b.as_slice(), ty, out),
            (value, ty) => Err(format!("cannot bind {value:?} to a {ty} parameter").into()),
        }
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> StoreError {
        // The client's own wording is only "db error": the server's message
        // (and its detail) is what an operator can act on.
        StoreError::Postgres(described(&e))
    }
}

fn described(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{}: {} ({detail})", db.code().code(), db.message()),
            None => format!("{}: {}", db.code().code(), db.message()),
        },
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND \"d?\" = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND \"d?\" = $12"
        );
    }

    #[test]
    fn sqlite_reads_and_writes_through_the_one_surface() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let db = Db::Sqlite(&conn);
        db.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
            .unwrap();
        assert_eq!(
            db.execute(
                "INSERT INTO t (id, name) VALUES (?1, ?2)",
                rusqlite::params![7, "x"]
            )
            .unwrap(),
            1
        );
        let names = db
            .query_map(
                "SELECT name FROM t WHERE id = ?1",
                rusqlite::params![7],
                |r| r.get::<String>(0),
            )
            .unwrap();
        assert_eq!(names, vec!["x".to_owned()]);
        assert_eq!(
            db.query_opt(
                "SELECT name FROM t WHERE id = ?1",
                rusqlite::params![8],
                |r| { r.get::<String>(0) }
            )
            .unwrap(),
            None
        );
    }
}
