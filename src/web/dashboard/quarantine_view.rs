//! The dashboard's "Quarantined tests" section: each repository's tests
//! quarantined as flaky now, as plain data.
//!
//! Owns: what a person reads of a quarantine (test, since, until, how many
//! flaky events). Must not: read the store or the clock (the handler loads
//! the quarantines in force at `now`), or decide what is in force
//! (`core::flaky::Quarantine::in_force` does).

use taskgate_core::flaky::Quarantine;
use taskgate_core::freeze::utc_minute;
use taskgate_core::ids::RepoName;

/// One quarantined test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineRow {
    pub test_id: String,
    pub since: String,
    pub until: String,
    pub events: usize,
}

/// One repository's quarantined tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineSection {
    pub repo: String,
    pub rows: Vec<QuarantineRow>,
}

/// Sections in repository order, rows in test order (as given).
pub fn quarantine_sections(items: &[(RepoName, Quarantine)]) -> Vec<QuarantineSection> {
    let mut out: Vec<QuarantineSection> = Vec::new();
    for (repo, q) in items {
        let row = QuarantineRow {
            test_id: q.test_id.to_string(),
            since: utc_minute(q.since_s),
            until: utc_minute(q.until_s),
            events: q.events.len(),
        };
        match out.last_mut() {
            Some(s) if s.repo == repo.as_str() => s.rows.push(row),
            _ => out.push(QuarantineSection {
                repo: repo.to_string(),
                rows: vec![row],
            }),
        }
    }
    out
}
