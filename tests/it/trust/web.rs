//! Trust boundaries of the HTTP surfaces and the loops behind them
//! (issue 18, item 3): cross-site requests to the API, `/metrics` behind
//! the token and cheap to scrape, loops that restart after a panic, and a
//! store that fails without the processor spinning.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::Engine;

use crate::support::plan::{Plan, Task};
use crate::support::story::{Story, PLAN_PATH};
use crate::support::{eventually, metric, TestApp, REPO};

fn plan() -> String {
    Plan::story("Checked work").task(Task::check()).yaml()
}

fn basic(password: &str) -> String {
    let pair = format!("octocat:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

async fn post(s: &Story, path: &str, authorization: &str, body: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", s.app.url))
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_browsers_cached_basic_password_cannot_change_state_but_the_bearer_token_can() {
    let s = Story::of(&plan()).start().await;
    let reject = format!("/api/tasks/{}/reject", s.task_issue);
    let stories: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/api/stories", s.app.url))
        .bearer_auth("api-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let story = &stories["stories"][0]["issue"];
    assert!(story.is_u64(), "{stories}");
    let ship = format!("/api/stories/{story}/ship");
    let reason = r#"{"reason":"a page on another site says so"}"#;
    // What a cross-site form or fetch carries: the Basic credentials the
    // browser remembers for the dashboard, with the right password.
    for path in [reject.as_str(), ship.as_str()] {
        let (status, body) = post(&s, path, &basic("api-token"), reason).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("needs `Authorization: Bearer"), "{body}");
    }
    s.app.settle().await;
    assert_ne!(s.state(), "state:rejected");
    assert!(s.app.bot_comments(s.task_issue).is_empty());
    // Reading with Basic still works (the dashboard's browser).
    let listed = reqwest::Client::new()
        .get(format!("{}/api/stories", s.app.url))
        .header("authorization", basic("api-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);

    // An API client with the bearer token changes state as before.
    let (status, body) = post(&s, &reject, "Bearer api-token", reason).await;
    assert_eq!(status, 202, "{body}");
    s.app.settle().await;
    assert_eq!(s.state(), "state:rejected");
}

/// A clock whose seconds panic while `broken` is set. Decisions read the
/// clock in whole seconds (the processor's, about runs); the store's stamps
/// and the loops' due times read milliseconds. So deciding panics, and
/// recording a delivery or performing an effect does not.
fn breakable_clock(broken: Arc<AtomicBool>) -> taskgate::clock::Clock {
    struct Breakable(Arc<AtomicBool>);
    impl taskgate::clock::TimeSource for Breakable {
        fn now_ms(&self) -> i64 {
            taskgate::clock::Clock::system().now_ms()
        }
        fn now_s(&self) -> i64 {
            if self.0.load(Ordering::SeqCst) {
                panic!("the clock broke");
            }
            self.now_ms().div_euclid(1000)
        }
    }
    taskgate::clock::Clock::from_source(Breakable(broken))
}

async fn healthz(url: &str) -> (u16, String) {
    let response = reqwest::get(format!("{url}/healthz")).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// `/healthz` as an operator asks it, with the API token.
async fn healthz_with_token(url: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .bearer_auth("api-token")
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_processor_that_panics_is_restarted_counted_and_reported_down_meanwhile() {
    let broken = Arc::new(AtomicBool::new(false));
    let clock = breakable_clock(broken.clone());
    let s = Story::of(&plan())
        .runners(1)
        .adjust(move |c| c.clock = clock)
        .start()
        .await;
    s.app.expect_loop_panics();
    assert_eq!(healthz(&s.app.url).await, (200, "ok\n".to_owned()));
    let restarts = "taskgate_loop_restarts_total{loop=\"processor\"}";
    assert_eq!(metric(&s.app.metrics().await, restarts), 0.0);

    // Deciding the push panics, and again after each restart while the
    // clock stays broken: /healthz names the loop meanwhile.
    broken.store(true, Ordering::SeqCst);
    s.push(&[("check.sh", "exit 0\n")], "first try").await;
    // Down for 100 ms after the first panic: the answers are kept as seen.
    // A stranger learns that it is unhealthy, not why (a panic message or
    // a store error can name hosts and paths); the operator's token does.
    let seen = std::sync::Mutex::new(String::new());
    eventually("healthz reports the processor down", || async {
        let (status, text) = healthz_with_token(&s.app.url).await;
        *seen.lock().unwrap() = text;
        status == 503
    })
    .await;
    let down = seen.into_inner().unwrap();
    let seen = std::sync::Mutex::new(String::new());
    eventually("healthz tells a stranger it is unhealthy", || async {
        let (status, text) = healthz(&s.app.url).await;
        *seen.lock().unwrap() = text;
        status == 503
    })
    .await;
    let stranger = seen.into_inner().unwrap();
    assert_eq!(stranger, "unhealthy\n");
    assert!(
        down.starts_with("loop processor is down: it panicked: the clock broke; restarting in"),
        "{down}"
    );
    broken.store(false, Ordering::SeqCst);
    eventually("healthz ok again", || async {
        healthz(&s.app.url).await.0 == 200
    })
    .await;
    assert!(metric(&s.app.metrics().await, restarts) >= 1.0);

    // The deliveries it panicked on are marked failed, not taken again, and
    // the next push is decided and run.
    s.app.settle().await;
    let sha = s.push(&[("check.sh", "exit 0\n")], "second try").await;
    let runs = s.completed(&sha, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{runs:#?}");
}

/// The harness's own promise: a loop that panics fails the test at the
/// next wait, with the panic's message, and not after a 30 s timeout
/// (the supervisor restarts the loop, so nothing else would show it).
#[tokio::test]
async fn a_loop_that_panics_fails_the_waiting_test_at_once_with_its_message() {
    use taskgate::app::loops::supervisor::{panic_message, CatchUnwind};
    let broken = Arc::new(AtomicBool::new(false));
    let clock = breakable_clock(broken.clone());
    let s = Story::of(&plan())
        .runners(1)
        .adjust(move |c| c.clock = clock)
        .start()
        .await;
    broken.store(true, Ordering::SeqCst);
    s.push(&[("check.sh", "exit 0\n")], "first try").await;

    let started = std::time::Instant::now();
    let waited = CatchUnwind::new(eventually("a check run that never comes", || async {
        false
    }))
    .await;
    let failure = panic_message(&*waited.expect_err("the wait fails"));
    assert_eq!(
        failure,
        "taskgate's background loop `processor` stopped: it panicked: the clock broke"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Its end would fail it for the same reason.
    s.app.expect_loop_panics();
    broken.store(false, Ordering::SeqCst);
}

/// The harness's other promise: a test that sent GitHub a request its
/// contract rejects fails at its end, though it asserted nothing of it.
#[tokio::test]
async fn a_test_that_breaks_the_contract_fails_at_its_end() {
    let app = TestApp::start().await;
    let outside = reqwest::get(format!("{}/repos/{REPO}/no-such-route", app.fake.url()))
        .await
        .unwrap();
    assert_eq!(outside.status().as_u16(), 404);
    let end = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(app)));
    let failure =
        taskgate::app::loops::supervisor::panic_message(&*end.expect_err("the end fails"));
    assert!(
        failure.contains(
            "route not in the contract subset: GET /repos/octo-org/hello-world/no-such-route"
        ),
        "{failure}"
    );

    // Said on purpose, it ends quietly.
    let app = TestApp::start().await;
    app.expect_contract_violations();
    reqwest::get(format!("{}/repos/{REPO}/no-such-route", app.fake.url()))
        .await
        .unwrap();
}

/// Makes every decision fail to be stored, as a full disk or a broken
/// database would: the delivery stays pending.
fn fail_decisions(database: &Path, failing: bool) {
    let conn = rusqlite::Connection::open(database).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let sql = if failing {
        "CREATE TRIGGER fail_decisions BEFORE UPDATE OF status ON deliveries
         WHEN NEW.status IN ('processed', 'failed')
         BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;"
    } else {
        "DROP TRIGGER fail_decisions;"
    };
    conn.execute_batch(sql).unwrap();
}

#[tokio::test]
async fn when_the_store_fails_the_processor_backs_off_instead_of_rereading_github() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("taskgate.db");
    let url = format!("sqlite://{}", database.display());
    let app = TestApp::start_with(move |c| c.database_url = url).await;
    fail_decisions(&database, true);

    // A plan pushed to main: deciding it reads the plan from GitHub. Only
    // the push is delivered: its `check_suite`, which may come first (GitHub
    // does not promise an order), would be the decision retried instead.
    let repo = app.fake.repo(REPO);
    let main = repo.branch_sha("main");
    app.fake.without_echoes(|| {
        repo.push_files(
            "main",
            &[(PLAN_PATH, plan().as_str())],
            "Add a plan",
            "octocat",
        )
    });
    let push = fakehub::payloads::push(&repo, "main", main.as_deref(), "octocat");
    let before = app.fake.requests().len();
    let started = std::time::Instant::now();
    assert_eq!(app.deliver("push", &push).await.0, 202);
    let reads = || {
        app.fake.requests()[before..]
            .iter()
            .filter(|r| r.method == "GET" && r.path.contains(PLAN_PATH))
            .count()
    };
    eventually("the plan read four times", || async { reads() >= 4 }).await;
    // Tried at 0, 0.1, 0.3, 0.7 s, the wait doubling after each failure:
    // not four reads in a tight loop.
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(700),
        "four reads of the plan in {took:?}"
    );

    // The store recovers; the decision is taken.
    fail_decisions(&database, false);
    app.settle().await;
    assert!(app
        .fake
        .repo(REPO)
        .issues()
        .iter()
        .any(|i| i.title == "Make the check pass"));
}

#[tokio::test]
async fn metrics_can_require_the_api_token() {
    let app = TestApp::start_with(|c| c.metrics_auth = true).await;
    let scrape = |authorization: Option<&'static str>| {
        let mut request = reqwest::Client::new().get(format!("{}/metrics", app.url));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let (status, text) = scrape(None).await;
    assert_eq!(status, 401, "{text}");
    assert!(!text.contains("taskgate_"), "{text}");
    assert_eq!(scrape(Some("Bearer wrong")).await.0, 401);
    let (status, text) = scrape(Some("Bearer api-token")).await;
    assert_eq!(status, 200);
    assert!(text.contains("taskgate_outbox_depth"), "{text}");
    // Unset, /metrics stays open, as Prometheus scrapes it by default.
    let open = TestApp::start().await;
    assert!(open.metrics().await.contains("taskgate_outbox_depth"));
}
