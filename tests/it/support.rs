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
//!
//! The harness's parts, each a module here: [`app`] starts a [`TestApp`],
//! [`environment`] reads what the suite's environment asks of it (the
//! database, shuffled webhooks), [`watch`] fails fast on a stopped loop
//! and polls ([`eventually`]), [`github`] is the test's side of the fake
//! GitHub (deliveries, comments, fixtures, what the bot wrote), and
//! [`settle`] moves time and waits for quiet. The builders of stories,
//! plans and runs are the other modules below.

pub mod actions;
pub mod app;
pub mod environment;
pub mod github;
pub mod hold;
pub mod origin;
pub mod outbox;
pub mod plan;
pub mod settle;
pub mod ship_stream;
pub mod shipped;
pub mod story;
pub mod train_landed;
pub mod watch;

pub use app::{free_port, init_logs, metric, TestApp};
pub use environment::{on_postgres, shuffle};
pub use github::{check_titles, fixture, fixture_as_documented, CheckedFake};
pub use outbox::queue_effects;
pub use watch::eventually;

pub const SECRET: &str = "it's a secret to everybody";
pub const INSTALLATION: u64 = 31;
pub const REPO: &str = "octo-org/hello-world";
