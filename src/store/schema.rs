//! Connection settings and migrations (`PRAGMA user_version`).

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::StoreError;

/// Each entry moves the schema one version up; never edit a shipped one.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id     TEXT NOT NULL UNIQUE,
    event           TEXT NOT NULL,
    action          TEXT,
    installation_id INTEGER,
    received_at_ms  INTEGER NOT NULL,
    payload         BLOB NOT NULL,
    status          TEXT NOT NULL,          -- received | processed | ignored | failed
    outcome         TEXT,
    processed_at_ms INTEGER
);
CREATE INDEX deliveries_pending ON deliveries(status, seq) WHERE status = 'received';

CREATE TABLE effects (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_seq    INTEGER,
    installation_id INTEGER NOT NULL,
    effect          TEXT NOT NULL,          -- JSON of core::Effect
    status          TEXT NOT NULL,          -- pending | done | failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,
    last_error      TEXT,
    result          TEXT,
    created_at_ms   INTEGER NOT NULL,
    done_at_ms      INTEGER
);
CREATE INDEX effects_due ON effects(status, next_attempt_ms) WHERE status = 'pending';

CREATE TABLE installations (
    id          INTEGER PRIMARY KEY,
    account     TEXT,
    updated_ms  INTEGER NOT NULL
);

CREATE TABLE installation_repos (
    installation_id INTEGER NOT NULL,
    repo            TEXT NOT NULL,
    PRIMARY KEY (installation_id, repo)
);
"#,
    r#"
-- What taskgate last wrote to (or read back from) each issue it owns,
-- by hidden marker. The reconciler compares the plan with this.
CREATE TABLE issues (
    repo        TEXT NOT NULL,
    marker      TEXT NOT NULL,
    number      INTEGER NOT NULL,
    issue_id    INTEGER NOT NULL,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    labels      TEXT NOT NULL,          -- JSON array
    open        INTEGER NOT NULL,
    parent      TEXT,                   -- marker of the parent issue
    blocked_by  TEXT NOT NULL,          -- JSON array of markers
    PRIMARY KEY (repo, marker)
);
CREATE TABLE branches (repo TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (repo, name));
CREATE TABLE labels (repo TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (repo, name));
-- The last valid plan of each story, with what discovery saw.
CREATE TABLE stories (
    repo            TEXT NOT NULL,
    story           TEXT NOT NULL,
    installation_id INTEGER NOT NULL,
    source          TEXT NOT NULL,
    plan            TEXT NOT NULL,
    config          TEXT,
    files           TEXT NOT NULL,      -- JSON object path -> contents
    sha             TEXT NOT NULL,
    updated_ms      INTEGER NOT NULL,
    PRIMARY KEY (repo, story)
);
"#,
    r#"
-- Each leaf task's runtime record (core::task::TaskRecord as JSON).
CREATE TABLE tasks (
    repo    TEXT NOT NULL,
    story   TEXT NOT NULL,
    task    TEXT NOT NULL,
    record  TEXT NOT NULL,
    PRIMARY KEY (repo, story, task)
);
-- Every acceptance run: what it ran, when, and its report.
CREATE TABLE attempts (
    repo            TEXT NOT NULL,
    story           TEXT NOT NULL,
    task            TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    installation_id INTEGER NOT NULL,
    sha             TEXT NOT NULL,
    gates           TEXT NOT NULL,      -- JSON array
    status          TEXT NOT NULL,      -- queued | running | passed | failed | cancelled | skipped
    queued_ms       INTEGER NOT NULL,
    started_ms      INTEGER,
    finished_ms     INTEGER,
    report          TEXT,               -- JSON of core::report::RunReport
    PRIMARY KEY (repo, story, task, attempt)
);
CREATE INDEX attempts_active ON attempts(status) WHERE status IN ('queued', 'running');
-- Check runs taskgate opened, by their external_id.
CREATE TABLE check_runs (
    repo    TEXT NOT NULL,
    key     TEXT NOT NULL,
    id      INTEGER NOT NULL,
    PRIMARY KEY (repo, key)
);
"#,
    r#"
-- Which runner an attempt went to: the local run queue takes only `local`
-- ones; `actions` ones run in a dispatched workflow.
ALTER TABLE attempts ADD COLUMN runner TEXT NOT NULL DEFAULT 'local';
-- The workflow run GitHub started for an `actions` attempt, by run id.
CREATE TABLE workflow_runs (
    repo        TEXT NOT NULL,
    run_id      INTEGER NOT NULL,
    story       TEXT NOT NULL,
    task        TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    PRIMARY KEY (repo, run_id)
);
"#,
    r#"
-- Each story's way out (core::ship::StoryRecord as JSON): ship gate,
-- story PR, who shipped it, deploy and validation.
CREATE TABLE story_ships (
    repo    TEXT NOT NULL,
    story   TEXT NOT NULL,
    record  TEXT NOT NULL,
    PRIMARY KEY (repo, story)
);
-- The deploy and validation workflow runs GitHub started for a story.
CREATE TABLE story_runs (
    repo        TEXT NOT NULL,
    run_id      INTEGER NOT NULL,
    story       TEXT NOT NULL,
    workflow    TEXT NOT NULL,      -- deploy | validation
    PRIMARY KEY (repo, run_id)
);
"#,
    r#"
-- Payloads live apart from the delivery rows: a row's status changes when
-- it is processed, and SQLite rewrites a whole record (its overflow pages
-- included) on update, so a payload kept in the row was written twice.
-- A payload row is written once and never updated. New payloads are
-- stored LZ4-compressed (GitHub's JSON shrinks four- to sixfold), which
-- keeps a delivery inside one page instead of a chain of overflow pages.
CREATE TABLE delivery_payloads (
    seq     INTEGER PRIMARY KEY,    -- deliveries.seq
    codec   TEXT NOT NULL,          -- none | lz4 (an LZ4 block, its size prepended)
    payload BLOB NOT NULL
);
INSERT INTO delivery_payloads (seq, codec, payload) SELECT seq, 'none', payload FROM deliveries;
ALTER TABLE deliveries DROP COLUMN payload;
"#,
    r#"
-- Attempts GitHub answered with a server error, or not at all. Only these
-- count toward giving an effect up: a rate limit is GitHub asking us to
-- wait, and a long one must not use up an effect's retries.
ALTER TABLE effects ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
-- A delivery whose decision needed GitHub while GitHub failed is tried
-- again later instead of being given up: how often it was tried and when
-- it is due next (NULL: now). Later deliveries of its installation wait
-- behind it, so their order holds.
ALTER TABLE deliveries ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN retry_at_ms INTEGER;
"#,
    r#"
-- `seq` without AUTOINCREMENT: every insert had also rewritten the
-- `sqlite_sequence` row, one more page in each group commit's log (about
-- one in nine). A rowid alias still only grows here: retention never
-- deletes the newest delivery, so no `seq` is given out twice.
CREATE TABLE deliveries_new (
    seq             INTEGER PRIMARY KEY,
    delivery_id     TEXT NOT NULL UNIQUE,
    event           TEXT NOT NULL,
    action          TEXT,
    installation_id INTEGER,
    received_at_ms  INTEGER NOT NULL,
    status          TEXT NOT NULL,          -- received | processed | ignored | failed
    outcome         TEXT,
    processed_at_ms INTEGER,
    tries           INTEGER NOT NULL DEFAULT 0,
    retry_at_ms     INTEGER
);
INSERT INTO deliveries_new (seq, delivery_id, event, action, installation_id, received_at_ms,
                            status, outcome, processed_at_ms, tries, retry_at_ms)
    SELECT seq, delivery_id, event, action, installation_id, received_at_ms,
           status, outcome, processed_at_ms, tries, retry_at_ms FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_new RENAME TO deliveries;
CREATE INDEX deliveries_pending ON deliveries(status, seq) WHERE status = 'received';
DELETE FROM sqlite_sequence WHERE name = 'deliveries';
"#,
    // Counts over every task record for `/metrics` (`store::task_counts`);
    // rows written before are counted once when the store opens.
    r#"
ALTER TABLE tasks ADD COLUMN counts TEXT;
CREATE TABLE task_counts (
    metric  TEXT NOT NULL,
    label   TEXT NOT NULL,
    value   INTEGER NOT NULL,
    PRIMARY KEY (metric, label)
) WITHOUT ROWID;
"#,
    // Work shared by replicas (`store::leases`): who holds what until
    // when, the write pacing per installation, and which replica runs an
    // attempt. One process on a SQLite file holds everything, always.
    r#"
CREATE TABLE leases (
    name     TEXT PRIMARY KEY,
    owner    TEXT NOT NULL,
    until_ms INTEGER NOT NULL
);
CREATE TABLE write_pacing (
    installation_id INTEGER PRIMARY KEY,
    next_write_ms   INTEGER NOT NULL
);
ALTER TABLE attempts ADD COLUMN claimed_by TEXT;
ALTER TABLE attempts ADD COLUMN lease_until_ms INTEGER;
"#,
    // The audit log of human decisions (`store::audit`), kept without a
    // retention limit, and each repository's manual freeze
    // (`store::freeze`): a row while frozen.
    r#"
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    repo        TEXT NOT NULL,
    at_s        INTEGER NOT NULL,
    actor_id    INTEGER,                -- NULL: the HTTP API's token holder
    actor_login TEXT NOT NULL,
    action      TEXT NOT NULL,          -- core::audit::AuditAction::name
    object      TEXT NOT NULL,
    reason      TEXT,
    via         TEXT NOT NULL           -- command | label | api | button
);
CREATE INDEX audit_log_at ON audit_log(at_s, id);
CREATE INDEX audit_log_repo_at ON audit_log(repo, at_s, id);
CREATE TABLE repo_freezes (
    repo        TEXT PRIMARY KEY,
    reason      TEXT NOT NULL,
    by_login    TEXT NOT NULL,
    by_id       INTEGER,
    since_s     INTEGER NOT NULL
);
"#,
    // Per-test history (`store::tests_history`): one row per test a gate's
    // reports listed, per attempt, written with the attempt's report.
    r#"
CREATE TABLE test_results (
    repo        TEXT NOT NULL,
    story       TEXT NOT NULL,
    task        TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    sha         TEXT NOT NULL,
    gate        TEXT NOT NULL,
    test_id     TEXT NOT NULL,
    outcome     TEXT NOT NULL,          -- passed | failed | errored | skipped
    duration_ms INTEGER,
    PRIMARY KEY (repo, story, task, attempt, gate, test_id)
);
CREATE INDEX test_results_story ON test_results(repo, story, test_id);
"#,
    // Flaky-test quarantines (`store::quarantine`): one row per quarantine
    // started, kept after it is lifted or expires (its events count once).
    r#"
CREATE TABLE quarantine (
    repo        TEXT NOT NULL,
    test_id     TEXT NOT NULL,
    since_s     INTEGER NOT NULL,
    until_s     INTEGER NOT NULL,
    events      TEXT NOT NULL,          -- JSON of [core::flaky::FlakyEvent]
    lifted_by   TEXT,                   -- NULL until `/taskgate unquarantine`
    PRIMARY KEY (repo, test_id, since_s)
);
"#,
    // Flaky events across commits (`core::flaky`, kind b): each test's
    // file, and the files a task's tested commit changed since the one
    // tested before it (`store::commit_changes`).
    r#"
ALTER TABLE test_results ADD COLUMN file TEXT;
CREATE TABLE commit_changes (
    repo        TEXT NOT NULL,
    base_sha    TEXT NOT NULL,
    head_sha    TEXT NOT NULL,
    files       TEXT,                   -- JSON array; NULL: too many to list
    PRIMARY KEY (repo, base_sha, head_sha)
);
-- The flaky-event history is read by test, across stories.
CREATE INDEX test_results_test ON test_results(repo, test_id);
"#,
    // GitHub's limits: each installation's writes of the past
    // hour, for the hourly budget (`store::pacing`), and the repositories
    // that have no draft pull requests (`store::repo_traits`).
    r#"
CREATE TABLE write_slots (
    installation_id INTEGER NOT NULL,
    at_ms           INTEGER NOT NULL
);
CREATE INDEX write_slots_at ON write_slots(installation_id, at_ms);
CREATE TABLE repo_no_drafts (
    repo     TEXT PRIMARY KEY,
    since_ms INTEGER NOT NULL
);
"#,
    // The story branch head an Actions attempt was dispatched to merge
    // (`core::task::RunJob::base`), checked against its report.
    r#"
ALTER TABLE attempts ADD COLUMN base TEXT;
"#,
    // Each repository's current config (`store::repo_config`), read by
    // every decision in place of the copy saved with a story's plan.
    r#"
CREATE TABLE repo_configs (
    repo        TEXT PRIMARY KEY,
    config      TEXT,
    sha         TEXT NOT NULL,
    updated_ms  INTEGER NOT NULL
);
"#,
    // The newest update sent to each check run, by its effect id
    // (`Store::claim_check_run_update`): an older update retried after it
    // is not sent.
    r#"
ALTER TABLE check_runs ADD COLUMN last_update INTEGER;
"#,
    // Each repository's ship train (`core::ship::Train` as JSON,
    // `store::train`).
    r#"
CREATE TABLE ship_trains (
    repo    TEXT PRIMARY KEY,
    record  TEXT NOT NULL
);
"#,
    // Flaky events seen outside a task's history (the ship train's,
    // `store::quarantine`): counted with the history's toward a quarantine.
    r#"
CREATE TABLE flaky_events (
    repo     TEXT NOT NULL,
    test_id  TEXT NOT NULL,
    task     TEXT NOT NULL,
    sha      TEXT NOT NULL,
    attempt  INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    PRIMARY KEY (repo, test_id, task, sha, attempt, kind)
);
"#,
    // Each installation's pending effects in id order
    // (`Store::due_by_installation`): the executor's turn reads the head
    // of each installation's queue, not every due effect.
    r#"
CREATE INDEX effects_pending ON effects(status, installation_id, id) WHERE status = 'pending';
"#,
    // What a desired-state effect sets (`core::Effect::desired_subject`):
    // the outbox reads the latest pending effect of a subject before it
    // queues an identical one (`store::outbox::insert`).
    r#"
ALTER TABLE effects ADD COLUMN subject TEXT;
CREATE INDEX effects_pending_subject ON effects(installation_id, subject, id)
    WHERE status = 'pending' AND subject IS NOT NULL;
"#,
    // What `/metrics` sums over the stories' ship records and the trains,
    // kept beside each record as it is written (`store::ship`,
    // `store::train`), so a scrape decodes no record.
    r#"
ALTER TABLE story_ships ADD COLUMN landed_at_ms INTEGER;
ALTER TABLE story_ships ADD COLUMN queue_wait_ms INTEGER;
ALTER TABLE story_ships ADD COLUMN proof_runs INTEGER NOT NULL DEFAULT 0;
UPDATE story_ships SET
    landed_at_ms = json_extract(record, '$.landed_at_ms'),
    queue_wait_ms = json_extract(record, '$.queue_wait_ms'),
    proof_runs = COALESCE(json_extract(record, '$.proof_runs'), 0);
CREATE INDEX story_ships_landed ON story_ships(landed_at_ms) WHERE landed_at_ms IS NOT NULL;
ALTER TABLE ship_trains ADD COLUMN stats TEXT;
UPDATE ship_trains SET stats = json_extract(record, '$.stats');
CREATE TABLE ship_counts (
    metric  TEXT PRIMARY KEY,
    value   INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO ship_counts (metric, value)
    SELECT 'landed', COUNT(*) FROM story_ships WHERE landed_at_ms IS NOT NULL
UNION ALL SELECT 'wait_sum_s', COALESCE(SUM(COALESCE(queue_wait_ms, 0) / 1000), 0) FROM story_ships WHERE landed_at_ms IS NOT NULL
UNION ALL SELECT 'proof_runs', COALESCE(SUM(proof_runs), 0) FROM story_ships
UNION ALL SELECT 'wait_le_60', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 60
UNION ALL SELECT 'wait_le_300', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 300
UNION ALL SELECT 'wait_le_600', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 600
UNION ALL SELECT 'wait_le_1200', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 1200
UNION ALL SELECT 'wait_le_1800', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 1800
UNION ALL SELECT 'wait_le_3600', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 3600
UNION ALL SELECT 'wait_le_7200', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 7200
UNION ALL SELECT 'wait_le_14400', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 14400
UNION ALL SELECT 'wait_le_28800', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 28800
UNION ALL SELECT 'wait_le_86400', COUNT(*) FROM story_ships
    WHERE landed_at_ms IS NOT NULL AND COALESCE(queue_wait_ms, 0) / 1000 <= 86400;
"#,
    // A webhook's body digest (`store::inbox::BodyDigest`): a signed body
    // replayed under a new delivery id is a duplicate (issue 45). Kept in
    // the delivery's row, so as long as its id is.
    r#"
ALTER TABLE deliveries ADD COLUMN body_digest TEXT;
CREATE UNIQUE INDEX deliveries_body_digest ON deliveries(body_digest)
    WHERE body_digest IS NOT NULL;
"#,
];

pub(super) fn connect(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    // Room for every statement the hot paths prepare through the cache.
    conn.set_prepared_statement_cache_capacity(64);
    // WAL lets the reader run beside the writer; synchronous=FULL makes
    // every commit durable before anyone is told it happened.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // The writer checkpoints by itself once it runs (`writer::WalPages`);
    // until then (migrations), SQLite does, at the writer's threshold.
    conn.pragma_update(None, "wal_autocheckpoint", super::writer::CHECKPOINT_PAGES)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Savepoint journals in memory, not temp files: each group commit runs
    // every job in its own savepoint.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(conn)
}

/// Brings the file up to [`MIGRATIONS`]; returns the versions it went
/// from and to.
pub(super) fn migrate(conn: &Connection) -> Result<(usize, usize), StoreError> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > MIGRATIONS.len() {
        return Err(StoreError::NewerSchema {
            found: current,
            known: MIGRATIONS.len(),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        conn.execute_batch(&format!(
            "BEGIN; {sql}; PRAGMA user_version = {}; COMMIT;",
            i + 1
        ))?;
    }
    Ok((current, MIGRATIONS.len()))
}
