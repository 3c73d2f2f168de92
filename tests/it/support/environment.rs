//! What the suite's environment asks of every app: its database
//! (`TASKGATE_TEST_DATABASE`) and GitHub's webhooks shuffled
//! (`FAKEHUB_SHUFFLE`), and the configuration a test app starts from.
//!
//! Owns: reading those variables. Must not: start a server.

use fakehub::FakeGitHub;
use taskgate::app::ServeConfig;
use taskgate::clock::Clock;
use tempfile::TempDir;

use super::{hold, SECRET};

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
pub(super) fn choose_database(cfg: &mut ServeConfig) -> Option<pgtest::PgDatabase<'static>> {
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
