//! A [`TestApp`]: a taskgate server started against a fake GitHub, what
//! it is made of, and its end (the contract and the loops checked).
//!
//! Owns: starting, restarting and stopping an app, and reading its store
//! and `/metrics`. Must not: wait for state (`watch`, `settle`) or speak
//! for GitHub (`github`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fakehub::FakeGitHub;
use taskgate::app::{self, Running, ServeConfig};
use taskgate::clock::Clock;
use tempfile::TempDir;

use super::environment::{choose_database, config, shuffle_if_asked};
use super::watch::{Watch, WATCHED};
use super::{INSTALLATION, REPO, SECRET};

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
    pub(super) watch: Arc<Watch>,
    contract_broken_on_purpose: AtomicBool,
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
    /// `GET /metrics`, as Prometheus would scrape it.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.url))
            .await
            .expect("the server answers")
            .text()
            .await
            .expect("a text body")
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
