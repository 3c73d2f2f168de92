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

use serde::{Deserialize, Serialize};

use crate::ids::IssueNumber;
use crate::plan::TaskId;

/// The stored text of a story's ship proof.
const SHIP: &str = "@ship";
/// The stored text of a rollback's proof.
const ROLLBACK: &str = "@rollback";
/// The prefix of a milestone's stored text.
const MILESTONE: &str = "@integration/";
/// The prefix of an agent's fix pull request's stored text:
/// `@fix/<pull>/<task>`.
const FIX_PULL: &str = "@fix/";

/// A text that names no run subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    #[error("a run's subject is empty")]
    Empty,
    #[error("`{0}` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)")]
    Unknown(String),
}

/// What a run tests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum RunSubject {
    /// A leaf task of the plan.
    Task(TaskId),
    /// An integration milestone (`integration:` in the plan), by its id.
    Milestone(TaskId),
    /// The story merged with the base's head, before it lands.
    ShipProof,
    /// A landed story's revert, before it lands.
    RollbackProof,
    /// An agent's own pull request `pull` fixing task `task`'s open todo
    /// (`task::fix_pull`): the task's gates on its head, before it is
    /// merged into the task branch.
    FixPull { task: TaskId, pull: IssueNumber },
}

impl RunSubject {
    /// The subject a stored key names; any text without a sigil is a task.
    pub fn parse(key: &str) -> Result<RunSubject, SubjectError> {
        match key {
            "" => Err(SubjectError::Empty),
            SHIP => Ok(RunSubject::ShipProof),
            ROLLBACK => Ok(RunSubject::RollbackProof),
            _ if key.starts_with(FIX_PULL) => parse_fix_pull(key),
            _ => match key.strip_prefix(MILESTONE) {
                Some(id) if !id.is_empty() && !id.starts_with('@') => {
                    Ok(RunSubject::Milestone(TaskId::new(id)))
                }
                None if !key.starts_with('@') => Ok(RunSubject::Task(TaskId::new(key))),
                _ => Err(SubjectError::Unknown(key.to_owned())),
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

    /// The plan task's id, for a leaf task.
    pub fn task(&self) -> Option<&TaskId> {
        match self {
            RunSubject::Task(id) => Some(id),
            _ => None,
        }
    }

    /// The task and the pull request, for an agent's fix pull request.
    pub fn fix_pull(&self) -> Option<(&TaskId, IssueNumber)> {
        match self {
            RunSubject::FixPull { task, pull } => Some((task, *pull)),
            _ => None,
        }
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
            RunSubject::FixPull { task, pull } => write!(f, "{FIX_PULL}{}/{task}", pull.get()),
        }
    }
}

/// `@fix/<pull>/<task>`: a task id has no `/`, nor starts with `@`.
fn parse_fix_pull(key: &str) -> Result<RunSubject, SubjectError> {
    let unknown = || SubjectError::Unknown(key.to_owned());
    let rest = key.strip_prefix(FIX_PULL).ok_or_else(unknown)?;
    let (pull, task) = rest.split_once('/').ok_or_else(unknown)?;
    let pull: u64 = pull.parse().map_err(|_| unknown())?;
    if task.is_empty() || task.starts_with('@') || task.contains('/') {
        return Err(unknown());
    }
    Ok(RunSubject::FixPull {
        task: TaskId::new(task),
        pull: IssueNumber::new(pull),
    })
}

impl From<TaskId> for RunSubject {
    fn from(id: TaskId) -> Self {
        RunSubject::Task(id)
    }
}

impl TryFrom<String> for RunSubject {
    type Error = SubjectError;

    fn try_from(key: String) -> Result<Self, Self::Error> {
        RunSubject::parse(&key)
    }
}

impl From<RunSubject> for String {
    fn from(subject: RunSubject) -> Self {
        subject.key()
    }
}

impl std::str::FromStr for RunSubject {
    type Err = SubjectError;

    fn from_str(key: &str) -> Result<Self, Self::Err> {
        RunSubject::parse(key)
    }
}

/// A subject equals the text it is stored as (`"data"`, `"@ship"`).
impl PartialEq<&str> for RunSubject {
    fn eq(&self, other: &&str) -> bool {
        RunSubject::parse(other).is_ok_and(|o| o == *self)
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
            RunSubject::FixPull {
                task: TaskId::new("data"),
                pull: IssueNumber::new(12),
            },
        ];
        let keys: Vec<String> = subjects.iter().map(RunSubject::key).collect();
        assert_eq!(
            keys,
            [
                "data",
                "@integration/backtest",
                "@ship",
                "@rollback",
                "@fix/12/data"
            ]
        );
        assert!(RunSubject::parse("@fix/x/data").is_err());
        assert!(RunSubject::parse("@fix/12/").is_err());
        for (subject, key) in subjects.iter().zip(&keys) {
            assert_eq!(&RunSubject::parse(key).unwrap(), subject);
        }
    }

    #[test]
    fn serde_writes_every_subject_as_its_stored_text() {
        let subjects = [
            RunSubject::Task(TaskId::new("data")),
            RunSubject::Milestone(TaskId::new("backtest")),
            RunSubject::ShipProof,
            RunSubject::RollbackProof,
        ];
        for subject in subjects {
            let json = serde_json::to_string(&subject).unwrap();
            assert_eq!(json, serde_json::to_string(&subject.key()).unwrap());
            assert_eq!(serde_json::from_str::<RunSubject>(&json).unwrap(), subject);
        }
        insta::assert_snapshot!(
            serde_json::to_string(&[
                RunSubject::Task(TaskId::new("data")),
                RunSubject::Milestone(TaskId::new("backtest")),
                RunSubject::ShipProof,
                RunSubject::RollbackProof,
            ])
            .unwrap(),
            @r#"["data","@integration/backtest","@ship","@rollback"]"#
        );
    }

    #[test]
    fn a_text_no_subject_is_stored_as_is_refused_with_its_reason() {
        let refused: Vec<String> = ["", "@deploy", "@integration/", "@integration/@ship"]
            .iter()
            .map(|key| RunSubject::parse(key).unwrap_err().to_string())
            .collect();
        insta::assert_snapshot!(refused.join("\n"), @r"
        a run's subject is empty
        `@deploy` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)
        `@integration/` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)
        `@integration/@ship` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)
        ");
        let from_json = serde_json::from_str::<RunSubject>("\"@deploy\"").unwrap_err();
        assert!(from_json
            .to_string()
            .contains("`@deploy` names no run subject"));
    }

    #[test]
    fn a_task_named_like_a_sigil_is_a_task() {
        for id in ["ship", "rollback", "integration", "integration-backtest"] {
            let subject = RunSubject::parse(id).unwrap();
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
        let milestone = RunSubject::parse("@integration/backtest").unwrap();
        assert!(!milestone.is_proof());
        assert_eq!(milestone.milestone(), Some(&TaskId::new("backtest")));
    }
}
