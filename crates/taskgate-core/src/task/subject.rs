//! What a run tests: a plan's task, an integration milestone, a story's
//! ship proof or its rollback's proof.
//!
//! Owns: [`RunSubject`] and its stored text. The store keys a run by that
//! text (`data`, `@integration/backtest`, `@ship`, `@rollback`), so rows
//! written before the type existed read unchanged: the shell formats a
//! subject with [`RunSubject::key`] and parses one with
//! [`RunSubject::parse`] at the store's edge. No plan id can start with
//! `@` (ids are letters, digits, `-` and `_`), so the sigils never
//! collide with a task.
//! Must not: decide anything about the run (the task, milestone and ship
//! modules do, given the subject).

use std::fmt;

use crate::plan::TaskId;

/// The stored text of a story's ship proof.
const SHIP: &str = "@ship";
/// The stored text of a rollback's proof.
const ROLLBACK: &str = "@rollback";
/// The prefix of a milestone's stored text.
const MILESTONE: &str = "@integration/";

/// What a run tests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunSubject {
    /// A leaf task of the plan.
    Task(TaskId),
    /// An integration milestone (`integration:` in the plan), by its id.
    Milestone(TaskId),
    /// The story merged with the base's head, before it lands.
    ShipProof,
    /// A landed story's revert, before it lands.
    RollbackProof,
}

impl RunSubject {
    /// The subject a stored key names; any text without a sigil is a task.
    pub fn parse(key: &str) -> RunSubject {
        match key {
            SHIP => RunSubject::ShipProof,
            ROLLBACK => RunSubject::RollbackProof,
            _ => match key.strip_prefix(MILESTONE) {
                Some(id) => RunSubject::Milestone(TaskId::new(id)),
                None => RunSubject::Task(TaskId::new(key)),
            },
        }
    }

    /// The text the store keys the run by.
    pub fn key(&self) -> String {
        self.to_string()
    }

    /// A ship's or a rollback's proof: its run ends in the ship queue,
    /// not in a task's state.
    pub fn is_proof(&self) -> bool {
        matches!(self, RunSubject::ShipProof | RunSubject::RollbackProof)
    }

    /// The milestone's id, for a milestone.
    pub fn milestone(&self) -> Option<&TaskId> {
        match self {
            RunSubject::Milestone(id) => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for RunSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunSubject::Task(id) => f.write_str(id.as_str()),
            RunSubject::Milestone(id) => write!(f, "{MILESTONE}{id}"),
            RunSubject::ShipProof => f.write_str(SHIP),
            RunSubject::RollbackProof => f.write_str(ROLLBACK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_reads_back_from_the_text_it_is_stored_as() {
        let subjects = [
            RunSubject::Task(TaskId::new("data")),
            RunSubject::Milestone(TaskId::new("backtest")),
            RunSubject::ShipProof,
            RunSubject::RollbackProof,
        ];
        let keys: Vec<String> = subjects.iter().map(RunSubject::key).collect();
        assert_eq!(
            keys,
            ["data", "@integration/backtest", "@ship", "@rollback"]
        );
        for (subject, key) in subjects.iter().zip(&keys) {
            assert_eq!(&RunSubject::parse(key), subject);
        }
    }

    #[test]
    fn a_task_named_like_a_sigil_is_a_task() {
        for id in ["ship", "rollback", "integration", "integration-backtest"] {
            let subject = RunSubject::parse(id);
            assert_eq!(subject, RunSubject::Task(TaskId::new(id)));
            assert!(!subject.is_proof());
            assert_eq!(subject.milestone(), None);
            assert_eq!(subject.key(), id);
        }
    }

    #[test]
    fn only_the_two_proofs_end_in_the_ship_queue() {
        assert!(RunSubject::ShipProof.is_proof());
        assert!(RunSubject::RollbackProof.is_proof());
        assert!(!RunSubject::parse("@integration/backtest").is_proof());
        assert_eq!(
            RunSubject::parse("@integration/backtest").milestone(),
            Some(&TaskId::new("backtest"))
        );
    }
}
