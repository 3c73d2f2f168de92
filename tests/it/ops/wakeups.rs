//! Wake-ups across replicas: a delivery recorded by one replica is decided
//! at once by the replica holding its installation, not at that replica's
//! next poll (5 s); so too after the listening connection was cut. Runs on
//! PostgreSQL whatever `TASKGATE_TEST_DATABASE` says: it is about replicas.
//!
//! Both replicas' own looks are put off for an hour (`IdlePolls`), so
//! only a wake-up can decide a delivery while a test waits: a missed one
//! fails it however fast or slow the machine is, with no time measured.

use std::time::Duration;

use taskgate::app::IdlePolls;
use taskgate::store::LISTENER_NAME;

use crate::support::{eventually, TestApp, INSTALLATION, REPO};

/// Idle loops that never look by themselves while a test runs.
pub const NO_POLLS: IdlePolls = IdlePolls {
    deliveries: Duration::from_secs(3_600),
    effects: Duration::from_secs(3_600),
};

/// Replica A, which GitHub's webhooks reach here, and replica B, which
/// holds the installation's deliveries, on one database.
struct Pair {
    a: TestApp,
    b: TestApp,
    issue: u64,
    url: String,
    _database: pgtest::PgDatabase<'static>,
}

async fn pair() -> Pair {
    let database = pgtest::fresh_database();
    let url = database.url().to_owned();
    let on_the_cluster = |c: &mut taskgate::app::ServeConfig| {
        c.database_url = url.clone();
        c.idle_polls = NO_POLLS;
    };
    let a = TestApp::start_with(on_the_cluster).await;
    let b = TestApp::with_config(a.fake.clone(), on_the_cluster).await;
    let lease = format!("inbox:{INSTALLATION}");
    assert!(b.store().take_lease(&lease, 60_000).await.unwrap());
    let issue = a.fake.repo(REPO).create_issue("Chat", "", "octocat");
    a.settle().await;
    let p = Pair {
        a,
        b,
        issue,
        url,
        _database: database,
    };
    // B decides a delivery of its own first (its intake wakes it), so its
    // processor knows it holds the installation, as it would have taken
    // the lease itself.
    let own = p.comment_to(&p.b, 0).await;
    p.decided(&own).await;
    p
}

impl Pair {
    /// A comment that is no command, posted by GitHub to replica A;
    /// returns its delivery id once A answered 202.
    async fn comment_to_a(&self, n: usize) -> String {
        self.comment_to(&self.a, n).await
    }

    /// [`Pair::comment_to_a`], posted to `app`.
    async fn comment_to(&self, app: &TestApp, n: usize) -> String {
        let repo = self.a.fake.repo(REPO);
        let comment =
            (self.a.fake).without_echoes(|| repo.add_comment(self.issue, "thanks", "octocat"));
        let payload = fakehub::payloads::issue_comment_created(&repo, self.issue, &comment);
        let id = format!("wake-{n}-{:016x}", fastrand::u64(..));
        let (status, body) = app.deliver_as("issue_comment", &id, &payload).await;
        assert_eq!(status, 202, "{body}");
        id
    }

    /// Waits until delivery `id` is decided (within `eventually`'s
    /// patience: with the polls off, only by a wake-up).
    async fn decided(&self, id: &str) {
        let store = self.b.store();
        eventually("the delivery decided", || async {
            let record = store.delivery(id).await.unwrap().unwrap();
            record.status != "received"
        })
        .await;
        let record = store.delivery(id).await.unwrap().unwrap();
        assert_eq!(record.status, "processed", "{record:?}");
    }

    /// How many replicas' listening connections the database has.
    fn listeners(&self) -> i64 {
        admin(&self.url, move |c| {
            let row = c
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE application_name = $1 AND datname = current_database()",
                    &[&LISTENER_NAME],
                )
                .unwrap();
            row.get(0)
        })
    }

    /// Which replica holds the installation's deliveries.
    fn holder(&self) -> String {
        admin(&self.url, move |c| {
            let lease = format!("inbox:{INSTALLATION}");
            let row = c
                .query_one("SELECT owner FROM leases WHERE name = $1", &[&lease])
                .unwrap();
            row.get(0)
        })
    }

    /// Cuts every replica's listening connection, as a failover or a
    /// network blip would.
    fn cut_listeners(&self) {
        admin(&self.url, move |c| {
            c.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE application_name = $1 AND datname = current_database()",
                &[&LISTENER_NAME],
            )
            .unwrap();
        })
    }
}

/// Runs `f` on a connection of its own, on a thread of its own (the
/// synchronous client must not run on the test's runtime).
fn admin<T: Send + 'static>(
    url: &str,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    let url = url.to_owned();
    std::thread::spawn(move || f(&mut postgres::Client::connect(&url, postgres::NoTls).unwrap()))
        .join()
        .unwrap()
}

#[tokio::test]
async fn a_delivery_recorded_by_one_replica_is_decided_at_once_by_the_holder_of_its_installation() {
    let p = pair().await;
    let first = p.comment_to_a(1).await;
    // B decides it, then goes idle: without a wake-up, for an hour.
    p.decided(&first).await;
    assert_eq!(p.holder(), p.b.store().replica());

    let second = p.comment_to_a(2).await;
    p.decided(&second).await;
    assert_eq!(p.holder(), p.b.store().replica());
}

#[tokio::test]
async fn a_replica_whose_listening_connection_was_cut_hears_wake_ups_again() {
    let p = pair().await;
    eventually("both replicas listen", || async { p.listeners() == 2 }).await;
    p.cut_listeners();
    eventually("both replicas listen again", || async {
        p.listeners() == 2
    })
    .await;

    let first = p.comment_to_a(1).await;
    p.decided(&first).await;
    let second = p.comment_to_a(2).await;
    p.decided(&second).await;
}

/// The figures in docs/benchmarks.md ("Wake-ups across replicas"): the
/// time from replica A's 202 to replica B's decision, over
/// `WAKEUP_DELIVERIES` deliveries (200 unless set) posted one after
/// another, each once the one before was decided and after a random
/// 0–20 ms, so B is idle each time as between real webhooks. The
/// decision's time is the one B stores with it (`processed_at_ms`).
///
/// `cargo test --locked --test it wakeup_latency -- --ignored --nocapture`
#[tokio::test]
#[ignore = "a measurement: run by hand for docs/benchmarks.md"]
async fn wakeup_latency_across_replicas() {
    let n: usize = std::env::var("WAKEUP_DELIVERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let p = pair().await;
    let mut took_ms = Vec::with_capacity(n);
    for i in 0..n {
        // allowed sleep: the measurement's own spacing of deliveries.
        tokio::time::sleep(Duration::from_millis(fastrand::u64(..=20))).await;
        let id = p.comment_to_a(i).await;
        let answered_ms = chrono::Utc::now().timestamp_millis();
        p.decided(&id).await;
        let decided_ms: i64 = admin(&p.url, move |c| {
            let row = c
                .query_one(
                    "SELECT processed_at_ms FROM deliveries WHERE delivery_id = $1",
                    &[&id],
                )
                .unwrap();
            row.get(0)
        });
        took_ms.push(decided_ms - answered_ms);
    }
    assert_eq!(p.holder(), p.b.store().replica());
    took_ms.sort_unstable();
    let at = |q: f64| took_ms[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    println!(
        "202 on A to decision on B, {n} deliveries: p50 {} ms, p95 {} ms, p99 {} ms, max {} ms",
        at(0.50),
        at(0.95),
        at(0.99),
        took_ms[n - 1]
    );
}
