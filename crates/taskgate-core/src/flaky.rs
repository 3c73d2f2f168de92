//! Flaky tests kept apart from broken ones: which
//! results of a test's history are *flaky events*, when enough of them
//! quarantine the test, when a quarantine is in force, and the texts of the
//! repository's one "Flaky tests" tracking issue and of `unquarantine`.
//!
//! Owns: [`flaky_events`], [`new_quarantines`], [`Quarantine`] and
//! [`Quarantine::in_force`], the tracking issue's effects
//! ([`tracking_issue_effects`]) and the `unquarantine` decision
//! ([`on_unquarantine`]). Must not: do IO, await or read the clock (time
//! comes in as `now_s`), or read reports: the shell hands over the
//! recorded history ([`TestRun`]s), never anything a task printed.
//!
//! Ideas a reader needs:
//! - **An event is history, not a claim.** (a) A test that failed on an
//!   attempt and passed on a later attempt of the same commit (a retry of
//!   the same sha) is one event, at the passing attempt. (b) A result that
//!   changed between two consecutive tested commits of one task, when the
//!   second commit touched none of the test's files, is one event, at the
//!   second commit's first attempt. Which sources a test reads is not
//!   known, so only a commit that changed nothing but paths that cannot
//!   change a result (`flaky.unrelated_paths`: documentation, images…), or
//!   nothing at all, leaves a test untouched; without the commit's changed
//!   files nothing is concluded.
//! - **Always failing is broken, not flaky.** A test with no passing run in
//!   the history given has no event at all.
//! - **Events count once.** A quarantine keeps the events it was based on;
//!   after it is lifted or expires, only newer events count toward the next.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::audit::{AuditAction, AuditActor, AuditEntry, AuditVia};
use super::config::FlakyConfig;
use super::effect::{hidden_marker, Effect};
use super::event::Change;
use super::freeze::utc_minute;
use super::Decision;
use crate::ids::RepoName;
use crate::results::TestId;

/// The tracking issue's marker (one per repository).
pub const TRACKING_MARKER: &str = "flaky-tests";
/// The tracking issue's title.
pub const TRACKING_TITLE: &str = "Flaky tests";
/// Quarantined tests named in a refusal as the closest to a wrong id.
const CLOSEST_SHOWN: usize = 3;
const DAY_S: i64 = 86_400;

/// What one run of a test came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    Pass,
    /// Failed or errored.
    Fail,
    Skip,
}

/// One recorded run of one test: a row of the per-test history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The story and task (`story/task`): runs of one task branch.
    pub task: String,
    pub attempt: u32,
    pub sha: String,
    pub test_id: TestId,
    pub result: RunResult,
    /// The test's file, when its report gave one.
    pub file: Option<String>,
}

/// How a flaky event showed itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Failed, then passed on a retry of the same commit.
    Retry,
    /// Changed result across commits that did not touch its file.
    Untouched,
}

/// One flaky event: where the test's result flipped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FlakyEvent {
    pub task: String,
    pub sha: String,
    /// The attempt whose result showed the flip.
    pub attempt: u32,
    pub kind: EventKind,
}

/// A test quarantined as flaky in one repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    pub test_id: TestId,
    pub since_s: i64,
    pub until_s: i64,
    pub events: Vec<FlakyEvent>,
    /// Who lifted it (`/taskgate unquarantine`), if someone did.
    pub lifted_by: Option<String>,
}

impl Quarantine {
    /// Not lifted and not expired at `now_s`.
    pub fn in_force(&self, now_s: i64) -> bool {
        self.lifted_by.is_none() && now_s < self.until_s
    }
}

/// One test's attempts of one task: attempt → (a run of it, its result).
type Attempts<'r> = BTreeMap<u32, (&'r TestRun, RunResult)>;

/// The commits a task tested one after the other: `head` was tested next
/// after `base`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommitPair {
    pub base: String,
    pub head: String,
}

/// What the shell knows of the changes between a task's tested commits.
#[derive(Clone, Copy)]
pub struct Changes<'a> {
    /// The files `pair.head` changed since `pair.base`; `None` when not
    /// known (or too many to list), which leaves kind (b) undecided.
    pub files: &'a dyn Fn(&CommitPair) -> Option<Vec<String>>,
    /// Whether a path's change cannot change a test's result
    /// (`flaky.unrelated_paths`: documentation, images…).
    pub unrelated: &'a dyn Fn(&str) -> bool,
}

fn no_files(_: &CommitPair) -> Option<Vec<String>> {
    None
}

fn nothing_unrelated(_: &str) -> bool {
    false
}

impl Changes<'static> {
    /// Nothing known: only events of kind (a) are found.
    pub const UNKNOWN: Changes<'static> = Changes {
        files: &no_files,
        unrelated: &nothing_unrelated,
    };
}

/// One test's results on one task: (a run of it, the attempt's result)
/// per attempt that ran it, in attempt order, skips left out.
type Sequence<'r> = Vec<(&'r TestRun, RunResult)>;

/// `runs` as test → task → [`Sequence`]. An attempt's result is a failure
/// when any gate of it failed the test.
fn sequences(runs: &[TestRun]) -> BTreeMap<&TestId, BTreeMap<&str, Sequence<'_>>> {
    let mut by_test: BTreeMap<&TestId, BTreeMap<&str, Attempts<'_>>> = BTreeMap::new();
    for run in runs {
        let slot = by_test
            .entry(&run.test_id)
            .or_default()
            .entry(&run.task)
            .or_default()
            .entry(run.attempt)
            .or_insert((run, run.result));
        if run.result == RunResult::Fail || slot.1 == RunResult::Skip {
            slot.1 = run.result;
        }
    }
    by_test
        .into_iter()
        .map(|(test, tasks)| {
            let tasks = tasks
                .into_iter()
                .map(|(task, attempts)| {
                    let seq = attempts
                        .into_values()
                        .filter(|(_, r)| *r != RunResult::Skip)
                        .collect();
                    (task, seq)
                })
                .collect();
            (test, tasks)
        })
        .collect()
}

/// The flaky events of each test in `runs`, with what `changes` knows of
/// the commits between a task's tested commits.
pub fn flaky_events(runs: &[TestRun], changes: Changes<'_>) -> BTreeMap<TestId, Vec<FlakyEvent>> {
    let mut out = BTreeMap::new();
    for (test, tasks) in sequences(runs) {
        let ever_passed = tasks.values().flatten().any(|(_, r)| *r == RunResult::Pass);
        if !ever_passed {
            continue;
        }
        let mut events = Vec::new();
        for (task, seq) in tasks {
            retry_events(task, &seq, &mut events);
            untouched_events(task, &seq, changes, &mut events);
        }
        if !events.is_empty() {
            events.sort();
            out.insert(test.clone(), events);
        }
    }
    out
}

/// (a): a failure followed by a pass on the same commit, one per pair.
fn retry_events(task: &str, seq: &[(&TestRun, RunResult)], events: &mut Vec<FlakyEvent>) {
    let mut failed_on: BTreeMap<&str, bool> = BTreeMap::new();
    for (run, result) in seq {
        let failed = failed_on.entry(&run.sha).or_default();
        match result {
            RunResult::Fail => *failed = true,
            RunResult::Pass if *failed => {
                *failed = false;
                events.push(FlakyEvent {
                    task: task.to_string(),
                    sha: run.sha.clone(),
                    attempt: run.attempt,
                    kind: EventKind::Retry,
                });
            }
            _ => {}
        }
    }
}

/// (b): a flip between consecutive tested commits when the later one
/// touched none of the test's files: it changed only paths that cannot
/// change a test's result (or nothing at all), and not the test's own file.
/// taskgate cannot know which sources a test reads, so every other path
/// counts as one of them: a change to code is never called flakiness.
fn untouched_events(
    task: &str,
    seq: &[(&TestRun, RunResult)],
    changes: Changes<'_>,
    events: &mut Vec<FlakyEvent>,
) {
    for pair in seq.windows(2) {
        let ((before, was), (after, now)) = (pair[0], pair[1]);
        if before.sha == after.sha || was == now {
            continue;
        }
        let commits = CommitPair {
            base: before.sha.clone(),
            head: after.sha.clone(),
        };
        let Some(changed) = (changes.files)(&commits) else {
            continue;
        };
        let own_file = after.file.as_ref().or(before.file.as_ref());
        let touched = changed
            .iter()
            .any(|f| Some(f) == own_file || !(changes.unrelated)(f));
        if !touched {
            events.push(FlakyEvent {
                task: task.to_string(),
                sha: after.sha.clone(),
                attempt: after.attempt,
                kind: EventKind::Untouched,
            });
        }
    }
}

/// The pairs of consecutive tested commits across which a test of `runs`
/// changed result: the ones whose changes kind (b) needs to know.
pub fn flips_across_commits(runs: &[TestRun]) -> Vec<CommitPair> {
    let mut pairs: Vec<CommitPair> = sequences(runs)
        .into_values()
        .flat_map(BTreeMap::into_values)
        .flat_map(|seq| {
            seq.windows(2)
                .filter(|w| w[0].0.sha != w[1].0.sha && w[0].1 != w[1].1)
                .map(|w| CommitPair {
                    base: w[0].0.sha.clone(),
                    head: w[1].0.sha.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
}

/// The quarantines to start at `now_s`: each test not already in
/// quarantine with at least `quarantine_after` events not counted by an
/// earlier quarantine of it.
pub fn new_quarantines(
    events: &BTreeMap<TestId, Vec<FlakyEvent>>,
    existing: &[Quarantine],
    policy: &FlakyConfig,
    now_s: i64,
) -> Vec<Quarantine> {
    let mut out = Vec::new();
    for (test, events) in events {
        let earlier: Vec<&Quarantine> = existing.iter().filter(|q| &q.test_id == test).collect();
        if earlier.iter().any(|q| q.in_force(now_s)) {
            continue;
        }
        let fresh: Vec<FlakyEvent> = events
            .iter()
            .filter(|e| !earlier.iter().any(|q| q.events.contains(e)))
            .cloned()
            .collect();
        if fresh.len() >= policy.quarantine_after as usize {
            out.push(Quarantine {
                test_id: test.clone(),
                since_s: now_s,
                until_s: now_s + i64::from(policy.quarantine_days) * DAY_S,
                events: fresh,
                lifted_by: None,
            });
        }
    }
    out
}

/// The ids of the quarantines in force at `now_s`.
pub fn in_force_ids(quarantines: &[Quarantine], now_s: i64) -> Vec<TestId> {
    let mut ids: Vec<TestId> = quarantines
        .iter()
        .filter(|q| q.in_force(now_s))
        .map(|q| q.test_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The decision for quarantines that start: their changes and the
/// tracking issue, created if the repository never had one (`before` holds
/// every earlier quarantine, lifted and expired ones too), else updated.
pub fn on_new_quarantines(
    repo: &RepoName,
    before: &[Quarantine],
    started: Vec<Quarantine>,
    prefix: &str,
    now_s: i64,
) -> Decision {
    if started.is_empty() {
        return Decision::default();
    }
    let mut all = before.to_vec();
    all.extend(started.iter().cloned());
    let names: Vec<String> = started.iter().map(|q| q.test_id.to_string()).collect();
    let mut d = Decision::nothing(format!("quarantined as flaky: {}", names.join(", ")));
    d.effects = tracking_issue_effects(repo, &all, !before.is_empty(), prefix, now_s);
    d.changes = started
        .into_iter()
        .map(|quarantine| Change::QuarantineStarted {
            repo: repo.clone(),
            quarantine,
        })
        .collect();
    d
}

/// The decision when quarantines ran out: the tracking issue rewritten
/// without them (it exists: a quarantine was started). Nothing when one of
/// the same test is in force again (re-quarantined since).
pub fn on_quarantine_ended(
    repo: &RepoName,
    quarantines: &[Quarantine],
    test: &TestId,
    prefix: &str,
    now_s: i64,
) -> Decision {
    if quarantines
        .iter()
        .any(|q| &q.test_id == test && q.in_force(now_s))
    {
        return Decision::nothing(format!("`{test}` is quarantined again"));
    }
    let mut d = Decision::nothing(format!("the quarantine of `{test}` ended"));
    d.effects = tracking_issue_effects(repo, quarantines, true, prefix, now_s);
    d
}

/// The tracking issue's effect: created once (`exists` false: the
/// repository never had a quarantine), then its body replaced in place.
pub fn tracking_issue_effects(
    repo: &RepoName,
    quarantines: &[Quarantine],
    exists: bool,
    prefix: &str,
    now_s: i64,
) -> Vec<Effect> {
    let body = render_tracking_body(quarantines, prefix, now_s);
    if exists {
        vec![Effect::UpdateIssue {
            repo: repo.clone(),
            marker: TRACKING_MARKER.into(),
            title: None,
            body: Some(body),
            labels: None,
            state: None,
        }]
    } else {
        vec![Effect::CreateIssue {
            repo: repo.clone(),
            marker: TRACKING_MARKER.into(),
            title: TRACKING_TITLE.into(),
            body,
            labels: Vec::new(),
            assignees: Vec::new(),
        }]
    }
}

/// The tracking issue's body: each quarantine in force, since and until
/// when, its events, and how to lift it.
pub fn render_tracking_body(quarantines: &[Quarantine], prefix: &str, now_s: i64) -> String {
    let mut out = String::from(
        "taskgate quarantines a test after it fails and then passes on the same commit, \
         or changes result across commits that touched none of its files, often enough: \
         its failures no longer fail a gate (each check run shows them as warnings) \
         until the quarantine ends.\n\n",
    );
    let mut active: Vec<&Quarantine> = quarantines.iter().filter(|q| q.in_force(now_s)).collect();
    active.sort_by(|a, b| a.test_id.cmp(&b.test_id));
    if active.is_empty() {
        out.push_str("No test is quarantined now.\n");
    } else {
        out.push_str("| test | since | until | flaky events |\n|---|---|---|---|\n");
        for q in active {
            let events: Vec<String> = q.events.iter().map(render_event).collect();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                q.test_id.as_str().replace('|', "\\|").replace('`', "'"),
                utc_minute(q.since_s),
                utc_minute(q.until_s),
                events.join(", ")
            ));
        }
        out.push_str(&format!(
            "\nTo lift a quarantine now, comment `{prefix} unquarantine <test id>` on any \
             issue or pull request of this repository.\n"
        ));
    }
    out.push_str(&format!("\n{}", hidden_marker(TRACKING_MARKER)));
    out
}

/// ``abc1234 attempt 2`` (a retry), ``abc1234 attempt 1 (untouched)``.
fn render_event(e: &FlakyEvent) -> String {
    let short = e.sha.get(..7).unwrap_or(&e.sha);
    match e.kind {
        EventKind::Retry => format!("`{short}` attempt {}", e.attempt),
        EventKind::Untouched => format!("`{short}` attempt {} (its files untouched)", e.attempt),
    }
}

/// `/taskgate unquarantine <test>`: lifts the quarantine in force of
/// `test`, updates the tracking issue and audits it; `Err` is the reply
/// when no quarantine of that id is in force (naming the closest ones).
pub fn on_unquarantine(
    repo: &RepoName,
    quarantines: &[Quarantine],
    test: &str,
    by: AuditActor<'_>,
    prefix: &str,
    now_s: i64,
) -> Result<Decision, NotQuarantined> {
    let Some(found) = quarantines
        .iter()
        .find(|q| q.in_force(now_s) && q.test_id.as_str() == test)
    else {
        return Err(NotQuarantined::new(test, quarantines, prefix, now_s));
    };
    let login = by.login.to_string();
    let after: Vec<Quarantine> = quarantines
        .iter()
        .cloned()
        .map(|mut q| {
            if q == *found {
                q.lifted_by = Some(login.clone());
            }
            q
        })
        .collect();
    let mut d = Decision::nothing(format!("unquarantined `{test}`"));
    d.changes.push(Change::QuarantineLifted {
        repo: repo.clone(),
        test_id: found.test_id.clone(),
        since_s: found.since_s,
        by: login,
    });
    d.changes.push(
        AuditEntry::new(
            repo,
            now_s,
            by,
            AuditAction::Unquarantine,
            format!("test {test}"),
            AuditVia::Command,
        )
        .change(),
    );
    d.effects = tracking_issue_effects(repo, &after, true, prefix, now_s);
    Ok(d)
}

/// The refusal of an `unquarantine` whose test has no quarantine in force:
/// the test asked for, and the closest ids that are quarantined now (none
/// when no test is). Its Display is the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotQuarantined {
    pub test: String,
    /// The command's prefix, `/taskgate` say.
    pub prefix: String,
    /// Up to three, closest first.
    pub closest: Vec<TestId>,
}

impl NotQuarantined {
    fn new(test: &str, quarantines: &[Quarantine], prefix: &str, now_s: i64) -> NotQuarantined {
        let ids = in_force_ids(quarantines, now_s);
        let mut ranked: Vec<(usize, &TestId)> = ids
            .iter()
            .map(|id| (strsim::levenshtein(id.as_str(), test), id))
            .collect();
        ranked.sort();
        NotQuarantined {
            test: test.to_owned(),
            prefix: prefix.to_owned(),
            closest: ranked
                .into_iter()
                .take(CLOSEST_SHOWN)
                .map(|(_, id)| id.clone())
                .collect(),
        }
    }
}

impl std::fmt::Display for NotQuarantined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{} unquarantine` did nothing: `{}` is not quarantined.",
            self.prefix,
            self.test.replace('`', "'")
        )?;
        if self.closest.is_empty() {
            return f.write_str(" No test of this repository is quarantined now.");
        }
        let closest: Vec<String> = self.closest.iter().map(|id| format!("`{id}`")).collect();
        write!(f, " Quarantined now: {}.", closest.join(", "))
    }
}

impl std::error::Error for NotQuarantined {}

#[cfg(test)]
mod tests;
