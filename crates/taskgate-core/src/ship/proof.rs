//! The proof of a story on the current base as a run: the pseudo task
//! `@ship`, whose gates are every leaf task's gates and every integration
//! milestone, renamed `ship/<task>/<gate>` so that one check run per gate
//! on the tested merge commit says what it proved.
//!
//! Owns: the pseudo task's id, its names and the lines a failed proof
//! shows. Must not: resolve commands (the runner does, with the plan's
//! files) or decide the ship (`queue` does, from [`ProofVerdict`]).

use crate::ids::{CommitSha, RepoName, StoryId};
use crate::plan::{Acceptance, Pos, Spanned, Task, TaskId};
use crate::report::{plain_text, RunReport};
use crate::task::RunSubject;

/// `ship/<task>/<gate>`: a task's gate as part of the proof.
pub fn proof_gate(task: &str, gate: &str) -> String {
    format!("ship/{task}/{gate}")
}

/// The proof as a task the failure loop understands: its branch todo is
/// the story's, routed by the failure's kind like any other.
pub fn proof_task(story_title: &str, subject: &RunSubject) -> Task {
    let (id, title) = if *subject == RunSubject::RollbackProof {
        ("rollback", format!("The revert of {story_title}"))
    } else {
        ("ship", format!("{story_title} on the current base"))
    };
    Task {
        id: Spanned {
            value: TaskId::new(id),
            pos: Pos::default(),
        },
        title,
        description: Some(
            "The story merged with the default branch's head, tested before it lands.".into(),
        ),
        role: None,
        depends_on: vec![],
        tasks: vec![],
        acceptance: Acceptance::default(),
        failure_routing: Default::default(),
        requires_testing: true,
        max_retries: Some(1),
        review: None,
    }
}

/// How a proof's run ended, for the ship queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofVerdict {
    pub repo: RepoName,
    pub story: StoryId,
    /// [`RunSubject::ShipProof`] or [`RunSubject::RollbackProof`].
    pub task: RunSubject,
    pub commit: CommitSha,
    pub passed: bool,
    /// One line per failing gate (empty when it passed).
    pub failures: Vec<String>,
    /// Beside each line of `failures`: the file of the gate's first
    /// failing test, when its results say (the ship train's attribution
    /// reads it).
    pub files: Vec<Option<String>>,
}

/// One line per failing gate: the gate, its kind and the classifier's
/// first line (the failing test, the missing module).
pub fn proof_failures(report: &RunReport) -> Vec<String> {
    report
        .gates
        .iter()
        .filter(|g| !g.passed)
        .map(|g| {
            let kind = g.kind.map_or("failed", |k| k.as_str());
            let summary = g
                .summary
                .as_deref()
                .and_then(|s| s.lines().next())
                .unwrap_or("no summary");
            let said = last_words(g)
                .filter(|line| !summary.contains(line.as_str()))
                .map(|line| format!(" (it printed: {})", plain_text(&line)))
                .unwrap_or_default();
            format!("`{}` ({kind}): {}{said}", g.gate, plain_text(summary))
        })
        .collect()
}

/// Beside each line of [`proof_failures`]: the file of the gate's first
/// failing test, when its test results name one.
pub fn proof_failing_files(report: &RunReport) -> Vec<Option<String>> {
    report
        .gates
        .iter()
        .filter(|g| !g.passed)
        .map(|g| {
            g.tests
                .iter()
                .flat_map(|t| &t.cases)
                .find(|c| {
                    !matches!(
                        c.outcome,
                        crate::results::Outcome::Passed | crate::results::Outcome::Skipped { .. }
                    )
                })
                .and_then(|c| c.file.clone())
        })
        .collect()
}

/// The last line the gate's failing command printed, capped: for a plain
/// script it is often the only name of the failing test there is.
fn last_words(gate: &crate::report::GateResult) -> Option<String> {
    let failed = gate.commands.iter().find(|c| !c.passed())?;
    let line = failed.output.lines().rev().find(|l| !l.trim().is_empty())?;
    let line = line.trim();
    Some(match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    })
}
