//! The test harness: a fake GitHub, a taskgate server wired to it, and
//! helpers to deliver webhooks and wait for observable state.
//!
//! It fails fast, as bors's `run_test` does: a background loop of a
//! [`TestApp`] that panics (the supervisor restarts it, so nothing else
//! would show it) fails the test at the next [`eventually`] poll, the next
//! [`TestApp::settle`], or the test's end, with the panic's message. And
//! every test ends with GitHub's OpenAPI contract checked: dropping a
//! [`TestApp`] asserts that every request taskgate sent kept it. A test
//! that breaks either on purpose says so ([`TestApp::expect_loop_panics`],
//! [`TestApp::expect_contract_violations`]).
//!
//! Time is moved on, never slept through: each app runs on a movable
//! clock ([`TestApp::clock`]), so a test that needs a period to pass
//! advances it, and a test waits on observable state (the fake's records,
//! the store, [`TestApp::settle`]), never for a while.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use fakehub::FakeGitHub;
use serde_json::Value;
use taskgate::app::loops::supervisor::Loops;
use taskgate::app::{self, Running, ServeConfig};
use taskgate::clock::Clock;
use tempfile::TempDir;

pub mod actions;
pub mod hold;
pub mod origin;
pub mod plan;
pub mod ship_stream;
pub mod shipped;
pub mod story;
pub mod train_landed;

pub const SECRET: &str = "it's a secret to everybody";
pub const INSTALLATION: u64 = 31;
pub const REPO: &str = "octo-org/hello-world";

pub struct TestApp {
    pub fake: FakeGitHub,
    /// The server's one clock, movable unless the test set its own:
    /// `app.clock.advance(..)` moves taskgate's time on, at once.
    pub clock: Clock,
    pub running: Option<Running>,
    /// Keeps the database directory alive as long as the app.
    _dir: TempDir,
    /// The PostgreSQL database, when the suite runs on PostgreSQL.
    _database: Option<pgtest::PgDatabase<'static>>,
    pub url: String,
    /// The write budget the server was started with.
    pub pacing: taskgate::github::Pacing,
    watch: Arc<Watch>,
    contract_broken_on_purpose: AtomicBool,
}

/// A started server's loops, looked at by every wait of the test that
/// started it.
struct Watch {
    loops: Arc<Loops>,
    panics_expected: AtomicBool,
}

impl Watch {
    /// Panics with the message of the first loop that stopped.
    fn check(&self) {
        if self.panics_expected.load(Ordering::SeqCst) {
            return;
        }
        let stopped = self.loops.ever_stopped();
        if let Some((name, why)) = stopped.first() {
            panic!("taskgate's background loop `{name}` stopped: {why}");
        }
    }
}

thread_local! {
    /// The apps this test thread started (a `#[tokio::test]` body runs on
    /// its own thread), for [`eventually`], which is given no app.
    static WATCHED: RefCell<Vec<Weak<Watch>>> = const { RefCell::new(Vec::new()) };
}

/// Fails the test if a background loop of one of its apps has stopped.
pub fn assert_loops_alive() {
    let watches: Vec<Arc<Watch>> = WATCHED.with(|w| {
        let mut w = w.borrow_mut();
        w.retain(|watch| watch.strong_count() > 0);
        w.iter().filter_map(Weak::upgrade).collect()
    });
    for watch in watches {
        watch.check();
    }
}

pub fn config(fake: &FakeGitHub, dir: &TempDir) -> ServeConfig {
    ServeConfig {
        api_token: Some("api-token".into()),
        clock: Clock::movable(),
        isolation: hold::isolation(),
        ..ServeConfig::against_fake(fake, SECRET, &dir.path().join("taskgate.db"))
    }
}

/// The suite runs on SQLite, or on PostgreSQL with
/// `TASKGATE_TEST_DATABASE=postgres` (`.ci/run` runs it both ways): then
/// each app gets a fresh database on the test binary's throwaway cluster.
pub fn on_postgres() -> bool {
    match std::env::var("TASKGATE_TEST_DATABASE").as_deref() {
        Err(_) | Ok("" | "sqlite") => false,
        Ok("postgres") => true,
        Ok(other) => panic!("TASKGATE_TEST_DATABASE={other}: use sqlite or postgres"),
    }
}

/// Points `cfg` at a fresh PostgreSQL database when the suite runs there.
fn choose_database(cfg: &mut ServeConfig) -> Option<pgtest::PgDatabase<'static>> {
    if !on_postgres() {
        return None;
    }
    let database = pgtest::fresh_database();
    cfg.database_url = database.url().to_owned();
    Some(database)
}

/// GitHub's webhooks out of order within 3 s and 5 % of them twice
/// (`FakeGitHub::shuffle_deliveries`): for every test with
/// `FAKEHUB_SHUFFLE=1`, with the seed of `FAKEHUB_SHUFFLE_SEED` (else a
/// random one, printed).
pub fn shuffle_if_asked(fake: &FakeGitHub) {
    if std::env::var("FAKEHUB_SHUFFLE").is_ok_and(|v| v == "1") {
        shuffle(fake);
    }
}

/// Shuffles `fake`'s webhooks as `FAKEHUB_SHUFFLE=1` does, whatever the
/// environment says.
pub fn shuffle(fake: &FakeGitHub) {
    let seed = std::env::var("FAKEHUB_SHUFFLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    fake.shuffle_deliveries(std::time::Duration::from_secs(3), 0.05, seed);
}

impl TestApp {
    pub async fn start() -> TestApp {
        TestApp::start_with(|_| {}).await
    }

    /// Like [`TestApp::start`], with the configuration adjusted first.
    pub async fn start_with(adjust: impl FnOnce(&mut ServeConfig)) -> TestApp {
        init_logs();
        let fake = FakeGitHub::start().await;
        fake.install(INSTALLATION, REPO);
        TestApp::with_config(fake, adjust).await
    }

    /// A server with an empty database in front of an existing fake GitHub.
    pub async fn with_fake(fake: FakeGitHub) -> TestApp {
        TestApp::with_config(fake, |_| {}).await
    }

    /// Like [`TestApp::with_fake`], with a write budget of 60 a minute and
    /// `per_hour` an hour (a plan over an hour's budget with few tasks).
    pub async fn paced(fake: FakeGitHub, per_hour: u32) -> TestApp {
        TestApp::with_config(fake, |c| {
            c.pacing = taskgate::github::Pacing {
                per_minute: 60,
                per_hour,
            };
        })
        .await
    }

    /// Like [`TestApp::with_fake`], with the configuration adjusted first.
    pub async fn with_config(fake: FakeGitHub, adjust: impl FnOnce(&mut ServeConfig)) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        // The tests' maintainer may change state; other users read.
        fake.set_permission("octocat", "write");
        let mut cfg = config(&fake, &dir);
        let database = choose_database(&mut cfg);
        adjust(&mut cfg);
        let (clock, pacing) = (cfg.clock.clone(), cfg.pacing);
        let running = app::start(cfg).await.expect("taskgate starts");
        let url = format!("http://{}", running.addr);
        // The App's webhook: from now on the fake sends every webhook
        // GitHub sends for each write, taskgate's own included.
        shuffle_if_asked(&fake);
        fake.set_app_webhook(&format!("{url}/webhook"), SECRET);
        let watch = Arc::new(Watch {
            loops: running.loops(),
            panics_expected: AtomicBool::new(false),
        });
        WATCHED.with(|w| w.borrow_mut().push(Arc::downgrade(&watch)));
        TestApp {
            fake,
            clock,
            running: Some(running),
            _dir: dir,
            _database: database,
            url,
            pacing,
            watch,
            contract_broken_on_purpose: AtomicBool::new(false),
        }
    }

    /// This test makes a background loop panic on purpose: the harness
    /// does not fail it for that.
    pub fn expect_loop_panics(&self) {
        self.watch.panics_expected.store(true, Ordering::SeqCst);
    }

    /// This test sends requests GitHub's contract rejects on purpose: its
    /// end does not check the contract.
    pub fn expect_contract_violations(&self) {
        self.contract_broken_on_purpose
            .store(true, Ordering::SeqCst);
    }

    /// Stops this server and its database, keeping the fake GitHub: what
    /// losing the machine looks like from GitHub's side.
    pub async fn lose_database(mut self) -> TestApp {
        self.running.take().unwrap().abort();
        TestApp::with_fake(self.fake.clone()).await
    }

    /// The bytes of the SQLite database's files (none on PostgreSQL).
    pub fn database_bytes(&self) -> u64 {
        let files = std::fs::read_dir(self._dir.path()).into_iter().flatten();
        files
            .flatten()
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum()
    }

    pub fn store(&self) -> &taskgate::store::Store {
        &self.running.as_ref().unwrap().store
    }

    /// Asserts that the outbox gave up no effect (naming those it did).
    pub async fn assert_no_effect_failed(&self) {
        let effects = self.store().effects().await.unwrap();
        let failed: Vec<_> = effects
            .iter()
            .filter(|e| e.status == taskgate::store::EffectStatus::Failed)
            .map(|e| (e.effect.name(), e.last_error.clone()))
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    /// Posts a signed delivery with a fresh delivery id.
    pub async fn deliver(&self, event: &str, payload: &Value) -> (u16, String) {
        let id = format!("{:032x}", fastrand::u128(..));
        self.deliver_as(event, &id, payload).await
    }

    pub async fn deliver_as(
        &self,
        event: &str,
        delivery_id: &str,
        payload: &Value,
    ) -> (u16, String) {
        self.fake
            .deliver(
                &format!("{}/webhook", self.url),
                SECRET,
                event,
                delivery_id,
                payload,
            )
            .await
    }

    /// A user's comment on issue `number`; GitHub delivers it. Returns
    /// once taskgate has answered the delivery.
    pub async fn comment(&self, number: u64, author: &str, body: &str) -> fakehub::Comment {
        let comment = self.fake.repo(REPO).add_comment(number, body, author);
        self.fake.echoes_settled().await;
        comment
    }

    /// The statuses GitHub answered to the requests on `route`
    /// (`"POST /repos/{owner}/{repo}/issues"`), in order.
    pub fn statuses(&self, route: &str) -> Vec<u16> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| {
                r.route
                    .as_deref()
                    .is_some_and(|t| route.strip_prefix(&r.method).map(str::trim_start) == Some(t))
            })
            .map(|r| r.status)
            .collect()
    }

    /// Every request body taskgate sent matched GitHub's OpenAPI description.
    pub fn assert_contract_kept(&self) {
        self.fake.assert_contract_kept();
    }

    /// The bot's estimate comments ("This plan needs about …") on the
    /// repository's story issue, oldest first.
    pub fn plan_estimates(&self) -> Vec<String> {
        let story = (self.fake.repo(REPO).issues().into_iter())
            .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
            .expect("a story issue");
        self.bot_comments(story.number)
            .into_iter()
            .filter(|b| b.starts_with("This plan needs about"))
            .collect()
    }

    /// Comments on `number` written by the bot (not by the test).
    pub fn bot_comments(&self, number: u64) -> Vec<String> {
        self.fake
            .repo(REPO)
            .comments(number)
            .into_iter()
            .filter(|c| c.author.ends_with("[bot]"))
            .map(|c| c.body)
            .collect()
    }

    /// The bot's replies on `number` (comments that answer someone:
    /// `@login …`), first line only: the rest is a marker naming ids.
    pub fn replies(&self, number: u64) -> Vec<String> {
        self.replies_to(number, "")
    }

    /// The bot's replies on `number` that answer `login`, first line only.
    pub fn replies_to(&self, number: u64, login: &str) -> Vec<String> {
        let to = format!("@{login}");
        self.bot_comments(number)
            .into_iter()
            .filter(|c| c.starts_with(&to))
            .map(|c| c.lines().next().unwrap_or_default().to_owned())
            .collect()
    }

    /// Pushes one commit of `files` (path, content) to main of [`REPO`],
    /// as a change on the default branch; waits until it is handled.
    pub async fn push_to_main(&self, files: &[(&str, &str)]) {
        let repo = self.fake.repo(REPO);
        repo.push_files("main", files, "Update the plan", "octocat");
        self.settle().await;
    }

    /// The task issue titled `title` that plan sync opened, and its branch
    /// (`taskgate/task-<issue>-<slug>`), which must exist.
    pub fn task_and_branch(&self, title: &str, slug: &str) -> (u64, String) {
        let repo = self.fake.repo(REPO);
        let task = repo
            .issues()
            .into_iter()
            .find(|i| i.title == title)
            .unwrap_or_else(|| panic!("no task issue titled {title:?}"));
        let branch = format!("taskgate/task-{}-{slug}", task.number);
        assert!(
            repo.branch_sha(&branch).is_some(),
            "task branch {branch} created"
        );
        (task.number, branch)
    }

    /// `GET /metrics`, as Prometheus would scrape it.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.url))
            .await
            .expect("the server answers")
            .text()
            .await
            .expect("a text body")
    }

    /// Moves taskgate's clock and GitHub's on together, at once.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.fake.advance(by);
    }

    /// Lets time pass until GitHub and taskgate are both quiet: whenever
    /// taskgate is waiting for time (a write slot, a retry, a rate-limit
    /// pause: [`TestApp::waiting_until`]), both clocks move straight on to
    /// the moment it waits for, until nothing is left; then
    /// [`TestApp::settle`]. Returns the time moved on: the time the work
    /// takes on GitHub's clock. Fails after `wall` of real time.
    pub async fn advance_until_settled_within(&self, wall: Duration) -> Duration {
        let moved_before = self.clock.moved_ms();
        let deadline = tokio::time::Instant::now() + wall;
        // What the test just did has reached taskgate (its deliveries are
        // recorded) before "nothing left" can be believed.
        self.fake.echoes_settled().await;
        loop {
            self.watch.check();
            let stats = self.fake.echo_stats();
            let left = self.store().unfinished_work().await.unwrap();
            if left == 0 && stats.delivered == stats.queued {
                self.settle().await;
                let moved = self.clock.moved_ms() - moved_before;
                return Duration::from_millis(moved.max(0) as u64);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not quiet after moving the clocks {:?} on: {left} left",
                Duration::from_millis((self.clock.moved_ms() - moved_before).max(0) as u64)
            );
            if let Some(at) = self.waiting_until().await {
                let by = at - self.clock.now_ms();
                if by > 0 {
                    self.advance(Duration::from_millis(by as u64));
                }
            }
        }
    }

    /// [`TestApp::advance_until_settled_within`] ten minutes.
    pub async fn advance_until_settled(&self) -> Duration {
        self.advance_until_settled_within(Duration::from_secs(600))
            .await
    }

    /// The moment taskgate waits for, when it is waiting for time; `None`
    /// while it works: the effect executor is not asleep on the clock
    /// (it is between effects, or calling GitHub), a request reached
    /// GitHub during a short poll (the poll of [`eventually`]), a webhook
    /// is on its way, a delivery is to be decided, or an installation has
    /// an effect it may perform now. An installation with writes due
    /// waits for its write slot (`Store::next_write_slot_ms`) or its
    /// rate-limit pause, whichever ends later; with none due, taskgate
    /// waits for its next effect or put-off delivery.
    async fn waiting_until(&self) -> Option<i64> {
        let store = self.store();
        let requests = self.fake.request_count();
        // allowed sleep: a 2 ms look inside the bounded poll of
        // `advance_until_settled_within`.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let executor_asleep = self
            .clock
            .sleeps()
            .iter()
            .any(|s| s.at.file().ends_with("github/executor.rs"));
        let stats = self.fake.echo_stats();
        let (received, put_off) = store.inbox_depth().await.unwrap();
        if !executor_asleep
            || self.fake.request_count() != requests
            || stats.delivered != stats.queued
            || received > put_off
        {
            return None;
        }
        let now = self.clock.now_ms();
        let due = store.due_by_installation(now, 1).await.unwrap();
        let pauses = store.installation_pauses().await.unwrap();
        let mut at = [due.next_due_ms, store.next_retry_at_ms().await.unwrap()];
        for (installation, first) in due.by_installation {
            // A pass is not paced: it goes now.
            if first
                .iter()
                .any(|e| matches!(e.effect, taskgate_core::Effect::Reconcile { .. }))
            {
                return None;
            }
            let slot = store
                .next_write_slot_ms(installation, now, self.pacing)
                .await
                .unwrap();
            let pause_end = pauses.get(&installation).map_or(now, |left| now + left);
            let go = slot.max(pause_end);
            if go <= now {
                return None;
            }
            at[0] = Some(at[0].map_or(go, |t| t.min(go)));
        }
        at.into_iter().flatten().min()
    }

    /// Waits until GitHub and taskgate are both quiet: every webhook the
    /// fake sent was answered, every recorded delivery processed, the
    /// outbox empty of due work, and no write made meanwhile (each write
    /// sends webhooks again, so the two are waited for in turn).
    pub async fn settle(&self) {
        self.settle_leaving(0).await;
    }

    /// [`TestApp::settle`], but for `waiting` effects whose retry falls
    /// due only when the test advances the clock.
    pub async fn settle_leaving(&self, waiting: i64) {
        let store = self.store().clone();
        loop {
            self.watch.check();
            self.fake.echoes_settled().await;
            let before = self.fake.echo_stats().queued;
            eventually("deliveries processed and outbox drained", || {
                let store = store.clone();
                async move { store.unfinished_work().await.unwrap() == waiting }
            })
            .await;
            let stats = self.fake.echo_stats();
            if stats.queued == before && stats.delivered == stats.queued {
                return;
            }
        }
    }
}

impl Drop for TestApp {
    /// The end of every test: no background loop stopped, and every
    /// request taskgate sent kept GitHub's contract. Not checked when the
    /// test already failed (a second panic would hide the first).
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        self.watch.check();
        if !self.contract_broken_on_purpose.load(Ordering::SeqCst) {
            self.fake.assert_contract_kept();
        }
    }
}

/// A fake GitHub for a test without a [`TestApp`] (a child process, the
/// setup flow): it derefs to [`FakeGitHub`] and, dropped at the test's
/// end, checks the contract as [`TestApp`] does.
pub struct CheckedFake(FakeGitHub);

impl CheckedFake {
    pub async fn start() -> CheckedFake {
        CheckedFake(FakeGitHub::start().await)
    }
}

impl std::ops::Deref for CheckedFake {
    type Target = FakeGitHub;

    fn deref(&self) -> &FakeGitHub {
        &self.0
    }
}

impl Drop for CheckedFake {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.0.assert_contract_kept();
        }
    }
}

/// Polls `check` until it holds, for at most 30 s (CI machines are slow);
/// fails at once if a background loop of the test's app stopped.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert_loops_alive();
        if check().await {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for: {what}");
        }
        // allowed sleep: the poll of `eventually`, bounded (30 s).
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// GitHub's documented example of a webhook, dated now: the examples are
/// from 2019, and taskgate refuses an event older than its retention as a
/// possible replay (`intake::age`). Only the times GitHub gives the event
/// are moved; [`fixture_as_documented`] keeps them.
/// The check runs on commit `sha` of `repo`, as (name, conclusion,
/// title): what a person sees on that commit.
pub fn check_titles(repo: &fakehub::RepoHandle, sha: &str) -> Vec<(String, String, String)> {
    repo.check_runs()
        .into_iter()
        .filter(|c| c.head_sha == sha)
        .map(|c| {
            (
                c.name,
                c.conclusion.unwrap_or_default(),
                c.title.unwrap_or_default(),
            )
        })
        .collect()
}

pub fn fixture(path: &str) -> Value {
    let mut payload = fixture_as_documented(path);
    let now = chrono::Utc::now();
    let text = serde_json::json!(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    for (object, field) in [
        ("comment", "created_at"),
        ("comment", "updated_at"),
        ("issue", "updated_at"),
        ("pull_request", "updated_at"),
        ("check_suite", "updated_at"),
        ("workflow_run", "updated_at"),
        ("review", "submitted_at"),
    ] {
        if payload[object][field].is_string() {
            payload[object][field] = text.clone();
        }
    }
    if payload["repository"]["pushed_at"].is_i64() {
        payload["repository"]["pushed_at"] = serde_json::json!(now.timestamp());
    }
    payload
}

/// GitHub's documented example of a webhook, exactly as documented.
pub fn fixture_as_documented(path: &str) -> Value {
    let full = format!("{}/fixtures/webhooks/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}")))
        .unwrap()
}

/// `RUST_LOG=debug cargo test` shows the app's logs for a failing test.
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
}

/// The value of the metric line that starts with `name` (labels included).
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
}

/// A port of 127.0.0.1 free now, for a server the test starts itself.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
