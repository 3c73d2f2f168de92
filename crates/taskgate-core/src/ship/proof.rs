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
use crate::results::Outcome;
use crate::ship::FailingTest;
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
        repo: None,
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
    /// The failing tests as the ship train reads them: each failing case
    /// of a failing gate (its id and file, with the gate's line), or the
    /// gate's line alone when it wrote no test results.
    pub tests: Vec<FailingTest>,
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

/// The failing tests of [`proof_failures`]' gates, each with its gate's
/// line: every failing case not quarantined (its id and file), or the
/// line alone for a gate whose results name none. A quarantined test
/// fails no gate (the runner's verdict), so it is no evidence here either.
pub fn proof_failing_tests(report: &RunReport) -> Vec<FailingTest> {
    let lines = proof_failures(report);
    let failed = report.gates.iter().filter(|g| !g.passed);
    let mut out = Vec::new();
    for (gate, line) in failed.zip(lines) {
        let cases: Vec<FailingTest> = (gate.tests.iter())
            .flat_map(|t| {
                t.cases
                    .iter()
                    .filter(|c| !t.quarantined_ids.contains(&c.id))
            })
            .filter(|c| !matches!(c.outcome, Outcome::Passed | Outcome::Skipped { .. }))
            .map(|c| FailingTest {
                name: line.clone(),
                file: c.file.clone(),
                case: Some(c.id.clone()),
            })
            .collect();
        if cases.is_empty() {
            out.push(FailingTest {
                name: line,
                file: None,
                case: None,
            });
        }
        out.extend(cases);
    }
    out
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
