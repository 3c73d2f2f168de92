//! Fair shares between installations (issue 28, item 5): one
//! installation's backlog, or its write budget, never holds up another
//! installation's write by more than one turn of the executor.
//!
//! The backlog is queued in the database before the server starts, as a
//! plan of thousands of tasks would leave it (its writes first, then one
//! reply in another installation), so the test measures the executor and
//! nothing else: how many of the backlog's writes GitHub received before
//! the other installation's one.

use fakehub::{FakeGitHub, RecordedRequest};
use taskgate::store::{EffectStatus, Store};
use taskgate_core::ids::{InstallationId, IssueNumber, RepoName};
use taskgate_core::pace::Pacing;
use taskgate_core::Effect;

use crate::support::{eventually, on_postgres, queue_effects, TestApp, INSTALLATION, REPO};

const OTHER_INSTALLATION: u64 = 32;
const OTHER_REPO: &str = "octo-org/other";
/// About a 500-task plan's writes: enough that waiting behind them shows.
const BACKLOG: usize = 2_000;

/// A database of its own, kept alive as long as the test.
struct Database {
    url: String,
    _dir: tempfile::TempDir,
    _postgres: Option<pgtest::PgDatabase<'static>>,
}

fn database() -> Database {
    let dir = tempfile::tempdir().unwrap();
    if on_postgres() {
        let pg = pgtest::fresh_database();
        return Database {
            url: pg.url().to_owned(),
            _dir: dir,
            _postgres: Some(pg),
        };
    }
    Database {
        url: format!("sqlite://{}", dir.path().join("taskgate.db").display()),
        _dir: dir,
        _postgres: None,
    }
}

fn comments(repo: &str, issue: u64, range: std::ops::Range<usize>) -> Vec<Effect> {
    range
        .map(|n| Effect::PostComment {
            repo: RepoName::parse(repo).unwrap(),
            issue: IssueNumber::new(issue),
            body: format!("write {n}"),
            marker: format!("fair-{n}"),
        })
        .collect()
}

/// Queues `effects` for `installation` as the decision on one delivery.
/// The backlog in `REPO`'s installation, queued first, then one comment in
/// the other installation; the server started on it with `pacing`.
async fn backlog_then_one_other_write(pacing: Pacing) -> (TestApp, Database) {
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    fake.install(OTHER_INSTALLATION, OTHER_REPO);
    let busy = fake.repo(REPO).create_issue("A big plan", "", "octocat");
    let quiet = fake
        .repo(OTHER_REPO)
        .create_issue("A question", "", "octocat");
    let db = database();
    let store = Store::open_url(&db.url).unwrap();
    queue_effects(
        &store,
        INSTALLATION,
        "backlog",
        comments(REPO, busy, 0..BACKLOG),
    )
    .await;
    let reply = comments(OTHER_REPO, quiet, BACKLOG..BACKLOG + 1);
    queue_effects(&store, OTHER_INSTALLATION, "reply", reply).await;
    drop(store);
    let url = db.url.clone();
    let app = TestApp::with_config(fake, move |c| {
        c.database_url = url;
        c.pacing = pacing;
    })
    .await;
    (app, db)
}

/// The comments GitHub received, in order: (installation, body).
fn posted(app: &TestApp) -> Vec<(u64, String)> {
    app.fake
        .requests()
        .into_iter()
        .filter(|r: &RecordedRequest| r.method == "POST" && r.path.ends_with("/comments"))
        .filter(|r| r.status == 201)
        .map(|r| {
            (
                r.installation.unwrap(),
                r.body["body"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits for the other installation's write; returns how many of the
/// backlog's GitHub received before it, checking they went in the order
/// they were queued.
async fn writes_ahead_of_the_other_installations(app: &TestApp) -> usize {
    eventually("the other installation's write is made", || async {
        posted(app).iter().any(|(i, _)| *i == OTHER_INSTALLATION)
    })
    .await;
    let posted = posted(app);
    let ahead = posted
        .iter()
        .position(|(i, _)| *i == OTHER_INSTALLATION)
        .unwrap();
    let backlog: Vec<&str> = posted
        .iter()
        .filter(|(i, _)| *i == INSTALLATION)
        .map(|(_, body)| body.as_str())
        .collect();
    for (n, body) in backlog.iter().enumerate() {
        let want = format!("write {n}");
        let first_line = body.lines().next().unwrap_or_default();
        assert_eq!(first_line, want, "the backlog's writes in the order queued");
    }
    ahead
}

#[tokio::test]
async fn another_installations_write_waits_one_turn_behind_a_backlog_of_thousands() {
    let (app, _db) = backlog_then_one_other_write(Pacing::OFF).await;
    let ahead = writes_ahead_of_the_other_installations(&app).await;
    // One turn: at most one of the backlog's writes before it, where the
    // outbox taken in id order made it wait for all 2,000.
    assert!(ahead <= 1, "{ahead} of the backlog's writes went first");
    let reply = app.store().effects().await.unwrap().pop().unwrap();
    assert_eq!(reply.installation, InstallationId::new(OTHER_INSTALLATION));
    eventually("its effect is done", || async {
        let effects = app.store().effects().await.unwrap();
        effects.last().unwrap().status == EffectStatus::Done
    })
    .await;
}

#[tokio::test]
async fn one_installations_write_budget_never_holds_up_another_installations_write() {
    // A write a minute: the backlog's next slot is a minute after its
    // first, and a write that waited for its slot inline held every
    // installation up for that minute.
    let pacing = Pacing {
        per_minute: 1,
        per_hour: 0,
    };
    let (app, _db) = backlog_then_one_other_write(pacing).await;
    let ahead = writes_ahead_of_the_other_installations(&app).await;
    // Made in the first turn, without moving taskgate's clock: the
    // backlog's next slot is a minute away, and only the backlog waits.
    assert!(ahead <= 1, "{ahead} of the backlog's writes went first");
    let busy: usize = posted(&app)
        .iter()
        .filter(|(i, _)| *i == INSTALLATION)
        .count();
    assert_eq!(busy, 1, "the backlog keeps to its budget");
    // A minute later, the backlog's next write goes.
    app.advance(std::time::Duration::from_secs(60));
    eventually("the backlog's second write is made", || async {
        posted(&app)
            .iter()
            .filter(|(i, _)| *i == INSTALLATION)
            .count()
            == 2
    })
    .await;
}
