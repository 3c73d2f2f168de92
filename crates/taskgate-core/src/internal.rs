//! taskgate's own events: what the shell records through the inbox so that
//! every decision about a story is made by the processor, one at a time,
//! and survives a crash like any webhook.
//!
//! Owns: the internal events as one type, their names in the inbox and
//! their payloads' shapes, in both directions (recording and reading).
//! Must not: do IO. Intake never accepts these names from outside: a
//! webhook called `taskgate.run` is an event taskgate does not handle.

use serde::{Deserialize, Serialize};

use super::ship::ShipEvent;
use super::task::{ApiReview, RunEvent};
use super::AttemptRef;
use crate::ids::{RepoName, StoryId, TaskId};

/// One of taskgate's own events, with its payload.
#[derive(Debug, Clone)]
pub enum InternalEvent {
    /// The next reconciliation pass of a story, queued by the executor.
    Reconcile(Reconcile),
    /// `POST /api/tasks/{id}/accept|reject`, recorded by the API.
    Review(ApiReview),
    /// A ship request from the API, or GitHub refusing a story's merge or
    /// workflow (recorded by the executor).
    Ship(ShipEvent),
    /// Time to check one task's branch-todo lifetime (the run queue's timer).
    Tick(TickEvent),
    /// Look at an open Actions attempt's run on GitHub (the run queue's timer).
    ActionsWatch(WatchEvent),
    /// Progress of a run, from the local run queue or a refused dispatch.
    Run(RunEvent),
    /// A flaky test's quarantine ran out (the run queue's timer): the
    /// repository's "Flaky tests" issue no longer lists it.
    QuarantineEnded(QuarantineEnded),
    /// A check run of a task's attempt has its id now (the executor, after
    /// `Effect::AwaitCheckRun`): evidence written before may link it.
    CheckRunKnown(CheckRunKnown),
}

/// The payload of a check run known: whose attempt it belongs to. The
/// processor reads the attempt's check runs from the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRunKnown {
    pub repo: RepoName,
    pub attempt: AttemptRef,
}

/// The payload of a quarantine's end: which one (by test and start).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuarantineEnded {
    pub repo: RepoName,
    pub test_id: crate::results::TestId,
    pub since_s: i64,
}

/// The payload of a reconciliation pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reconcile {
    pub repo: RepoName,
    pub story: StoryId,
    /// Passes so far; bounds a reconciliation that never settles.
    #[serde(default)]
    pub round: u32,
    /// A task branch the executor just started (`Effect::StartTaskBranch`),
    /// to record on its task before the pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<BranchStarted>,
}

/// What the executor did to a ready task's branch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BranchStarted {
    pub task: TaskId,
    pub start: crate::story::BranchStart,
}

/// The payload of a lifetime tick.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TickEvent {
    pub repo: RepoName,
    pub story: StoryId,
    pub task: crate::task::RunSubject,
}

/// The payload of an Actions watch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchEvent {
    pub repo: RepoName,
    pub attempt: AttemptRef,
}

/// The inbox's names for internal events; nothing else spells them.
const NAMES: [(&str, InternalKind); 8] = [
    ("taskgate.reconcile", InternalKind::Reconcile),
    ("taskgate.review", InternalKind::Review),
    ("taskgate.ship", InternalKind::Ship),
    ("taskgate.tick", InternalKind::Tick),
    ("taskgate.actions-watch", InternalKind::ActionsWatch),
    ("taskgate.run", InternalKind::Run),
    ("taskgate.quarantine-ended", InternalKind::QuarantineEnded),
    ("taskgate.check-run-known", InternalKind::CheckRunKnown),
];

/// Which internal event a name stands for, known before the payload is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InternalKind {
    Reconcile,
    Review,
    Ship,
    Tick,
    ActionsWatch,
    Run,
    QuarantineEnded,
    CheckRunKnown,
}

impl InternalKind {
    /// The kind an inbox event name stands for; `None` for any other name.
    pub fn of(name: &str) -> Option<InternalKind> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(n, _)| *n)
            .expect("every kind has a name")
    }
}

/// A recorded internal event whose payload this taskgate cannot read (one
/// an older or newer taskgate recorded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable {name} payload: {why}")]
pub struct InternalPayloadError {
    pub name: &'static str,
    pub why: String,
}

impl InternalEvent {
    pub fn kind(&self) -> InternalKind {
        match self {
            InternalEvent::Reconcile(_) => InternalKind::Reconcile,
            InternalEvent::Review(_) => InternalKind::Review,
            InternalEvent::Ship(_) => InternalKind::Ship,
            InternalEvent::Tick(_) => InternalKind::Tick,
            InternalEvent::ActionsWatch(_) => InternalKind::ActionsWatch,
            InternalEvent::Run(_) => InternalKind::Run,
            InternalEvent::QuarantineEnded(_) => InternalKind::QuarantineEnded,
            InternalEvent::CheckRunKnown(_) => InternalKind::CheckRunKnown,
        }
    }

    /// The name the inbox records it under.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The payload the inbox records.
    pub fn payload(&self) -> Vec<u8> {
        let json = match self {
            InternalEvent::Reconcile(p) => serde_json::to_vec(p),
            InternalEvent::Review(p) => serde_json::to_vec(p),
            InternalEvent::Ship(p) => serde_json::to_vec(p),
            InternalEvent::Tick(p) => serde_json::to_vec(p),
            InternalEvent::ActionsWatch(p) => serde_json::to_vec(p),
            InternalEvent::Run(p) => serde_json::to_vec(p),
            InternalEvent::QuarantineEnded(p) => serde_json::to_vec(p),
            InternalEvent::CheckRunKnown(p) => serde_json::to_vec(p),
        };
        json.expect("plain data serialises")
    }

    /// Reads a recorded payload of `kind` back.
    pub fn parse(
        kind: InternalKind,
        payload: &[u8],
    ) -> Result<InternalEvent, InternalPayloadError> {
        fn read<T: serde::de::DeserializeOwned>(
            kind: InternalKind,
            payload: &[u8],
        ) -> Result<T, InternalPayloadError> {
            serde_json::from_slice(payload).map_err(|e| InternalPayloadError {
                name: kind.name(),
                why: e.to_string(),
            })
        }
        Ok(match kind {
            InternalKind::Reconcile => InternalEvent::Reconcile(read(kind, payload)?),
            InternalKind::Review => InternalEvent::Review(read(kind, payload)?),
            InternalKind::Ship => InternalEvent::Ship(read(kind, payload)?),
            InternalKind::Tick => InternalEvent::Tick(read(kind, payload)?),
            InternalKind::ActionsWatch => InternalEvent::ActionsWatch(read(kind, payload)?),
            InternalKind::Run => InternalEvent::Run(read(kind, payload)?),
            InternalKind::QuarantineEnded => InternalEvent::QuarantineEnded(read(kind, payload)?),
            InternalKind::CheckRunKnown => InternalEvent::CheckRunKnown(read(kind, payload)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_name_and_reads_back() {
        for (name, kind) in NAMES {
            assert_eq!(InternalKind::of(name), Some(kind));
            assert_eq!(kind.name(), name);
        }
        assert_eq!(InternalKind::of("push"), None);
    }

    #[test]
    fn an_event_round_trips_through_its_name_and_payload() {
        let tick = InternalEvent::Tick(TickEvent {
            repo: RepoName::parse("o/r").unwrap(),
            story: "file:s".into(),
            task: crate::task::RunSubject::Task("t".into()),
        });
        let kind = InternalKind::of(tick.name()).unwrap();
        let back = InternalEvent::parse(kind, &tick.payload()).unwrap();
        assert!(
            matches!(back, InternalEvent::Tick(t) if t.task == crate::task::RunSubject::Task("t".into()))
        );
    }

    #[test]
    fn an_unreadable_payload_names_the_event() {
        let err = InternalEvent::parse(InternalKind::Run, b"{}").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unreadable taskgate.run payload: missing field"),
            "{err}"
        );
    }

    #[test]
    fn an_older_reconcile_payload_without_a_round_still_reads() {
        let old = br#"{"repo":"o/r","story":"file:s","installation":3}"#;
        let InternalEvent::Reconcile(r) =
            InternalEvent::parse(InternalKind::Reconcile, old).unwrap()
        else {
            panic!("a reconcile")
        };
        assert_eq!(r.round, 0);
    }
}
