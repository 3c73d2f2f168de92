//! pgtest against a real PostgreSQL: a cluster starts, hands out isolated
//! databases reachable by both connection forms, and leaves nothing behind.

use postgres::{Client, NoTls};

fn connect(conn: &str) -> Client {
    Client::connect(conn, NoTls).unwrap_or_else(|e| panic!("connecting with {conn}: {e}"))
}

fn one_value(client: &mut Client, sql: &str) -> String {
    client.query_one(sql, &[]).unwrap().get(0)
}

#[test]
fn two_databases_are_isolated_and_reachable_by_url_and_conninfo() {
    let cluster = pgtest::PgCluster::start().expect("PostgreSQL is needed for these tests");
    let a = cluster.create_database("alpha");
    let b = cluster.create_database("beta");
    assert!(
        a.url().starts_with("postgres://taskgate@%2F"),
        "{}",
        a.url()
    );

    let mut on_a = connect(a.url());
    let mut on_b = connect(&b.conninfo());
    let one: i32 = on_a.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
    assert_eq!(
        one_value(&mut on_a, "SELECT current_database()::text"),
        "alpha"
    );
    assert_eq!(
        one_value(&mut on_b, "SELECT current_database()::text"),
        "beta"
    );
    assert_eq!(one_value(&mut on_b, "SHOW TimeZone"), "UTC");

    on_a.batch_execute("CREATE TABLE seen (n BIGINT); INSERT INTO seen VALUES (7)")
        .unwrap();
    let in_b: Option<String> = on_b
        .query_one("SELECT to_regclass('public.seen')::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(in_b, None, "a table made in alpha is visible in beta");
    on_b.batch_execute("CREATE TABLE seen (n BIGINT)").unwrap();
    let rows: i64 = on_b
        .query_one("SELECT count(*) FROM seen", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}

#[test]
fn no_tcp_listener_only_the_socket() {
    let cluster = pgtest::shared();
    let db = cluster.fresh_database();
    let mut client = connect(db.url());
    assert_eq!(one_value(&mut client, "SHOW listen_addresses"), "");
    assert!(cluster.socket_dir().join(".s.PGSQL.5432").exists());
}

#[test]
fn dropping_a_database_guard_drops_the_database_and_its_connections() {
    let cluster = pgtest::shared();
    let watcher = cluster.fresh_database();
    let mut watching = connect(watcher.url());
    let db = cluster.fresh_database();
    let name = db.name().to_owned();
    let mut left_open = connect(db.url());
    let exists = |client: &mut Client| -> bool {
        let sql = "SELECT count(*) FROM pg_database WHERE datname = $1";
        client.query_one(sql, &[&name]).unwrap().get::<_, i64>(0) == 1
    };
    assert!(exists(&mut watching));

    drop(db);
    assert!(!exists(&mut watching));
    assert!(
        left_open.simple_query("SELECT 1").is_err(),
        "FORCE ends open connections"
    );
}

#[test]
fn dropping_a_cluster_stops_the_server_and_removes_its_directory() {
    let cluster = pgtest::PgCluster::start().expect("PostgreSQL is needed for these tests");
    let dir = cluster.socket_dir().to_owned();
    let url = cluster.url("postgres");
    connect(&url);
    let pid_file = std::fs::read_to_string(dir.join("data/postmaster.pid")).unwrap();
    let postmaster = pid_file.lines().next().unwrap().to_owned();

    drop(cluster);
    assert!(!dir.exists(), "{} is left behind", dir.display());
    assert!(Client::connect(&url, NoTls).is_err());
    // Gone, or a zombie its new parent has not reaped yet.
    let stat = std::fs::read_to_string(format!("/proc/{postmaster}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "postmaster still running: {stat}"
    );
}

#[tokio::test]
async fn shared_cluster_serves_async_tests_without_blocking_their_runtime() {
    // Called straight from the runtime: pgtest runs its own blocking calls
    // on a thread of its own.
    let first = pgtest::fresh_database();
    let second = pgtest::fresh_database();
    assert_ne!(first.name(), second.name());
    assert_eq!(first.url(), pgtest::shared().url(first.name()));

    // The synchronous client itself belongs on a blocking thread, as in the
    // store.
    let url = first.url().to_owned();
    let name = tokio::task::spawn_blocking(move || {
        one_value(&mut connect(&url), "SELECT current_database()::text")
    })
    .await
    .unwrap();
    assert_eq!(name, first.name());
}

#[test]
fn many_threads_take_fresh_databases_at_once() {
    let cluster = pgtest::shared();
    let names: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|_| {
                scope.spawn(|| {
                    (0..5)
                        .map(|_| {
                            let db = cluster.fresh_database();
                            let mut client = connect(db.url());
                            assert_eq!(
                                one_value(&mut client, "SELECT current_database()::text"),
                                db.name()
                            );
                            db.name().to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), 30);
}
