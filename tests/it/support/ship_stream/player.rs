//! Owns: GitHub Actions and the repository's test suite, as the ship
//! stream plays them ([`ActionsPlayer`]): every workflow run taskgate
//! dispatches is started at once and completed when its time on GitHub's
//! clock has come (a ship proof after [`ActionsPlayer::proof`], a task's
//! run at once), with the report artifact `taskgate run` uploads. The
//! report says what the suite says of the tree the run checked out.
//! Must not: move a clock or touch taskgate (the stream's loop does both),
//! or decide anything from what taskgate stored: outcomes come from the
//! commit's files only, so they are the same whatever queue runs.
//!
//! The suite is a model, stated once: the tree of a commit holds a story
//! when it holds the story's `src/<key>.rs`. A broken story's test fails
//! on any tree that holds it *and* the default branch's later change
//! (`src/shared.rs` at [`SHARED_MOVED`]): it passed on its own branch, it
//! fails on the merge. A flaky story's test fails in the first ship proof
//! that holds it (its re-run in the same job failing too), and passes from
//! then on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fakehub::RepoHandle;
use taskgate_core::report::{decide_verdict, CommandResult, GateResult, GateTests, RunReport};
use taskgate_core::results::{Outcome, TestCase, TestId};
use taskgate_core::task::RunSubject;

use crate::support::actions::zipped;

use super::StreamStory;

/// `src/shared.rs` after the default branch moved on, once every story
/// was built: the change the broken stories do not survive.
pub const SHARED_MOVED: &str = "pub const SHARED: u32 = 2;\n";

/// One run the player completed.
#[derive(Debug, Clone)]
pub struct Played {
    pub subject: RunSubject,
    pub sha: String,
    pub passed: bool,
}

/// GitHub Actions for one repository, on GitHub's clock.
pub struct ActionsPlayer {
    repo: RepoHandle,
    /// How long a ship proof's job takes.
    pub proof: Duration,
    stories: BTreeMap<String, StreamStory>,
    flaky_left: BTreeSet<String>,
    started: BTreeSet<u64>,
    pub played: Vec<Played>,
}

impl ActionsPlayer {
    pub fn new(repo: RepoHandle, proof: Duration, stories: &[StreamStory]) -> ActionsPlayer {
        ActionsPlayer {
            repo,
            proof,
            flaky_left: stories
                .iter()
                .filter(|s| s.flaky)
                .map(|s| s.key.clone())
                .collect(),
            stories: stories.iter().map(|s| (s.key.clone(), s.clone())).collect(),
            started: BTreeSet::new(),
            played: Vec::new(),
        }
    }

    /// The runs dispatched and not completed: (run id, its inputs, when it
    /// was created on GitHub's clock, in ms).
    fn open_runs(&self) -> Vec<(u64, serde_json::Value, i64)> {
        let runs = self.repo.runs();
        self.repo
            .dispatches()
            .into_iter()
            .filter_map(|d| {
                let run = runs.iter().find(|r| r.id == d.run_id)?;
                (run.status != "completed").then(|| {
                    (
                        d.run_id,
                        d.inputs.clone(),
                        run.created_at.timestamp_millis(),
                    )
                })
            })
            .collect()
    }

    fn duration_of(&self, inputs: &serde_json::Value) -> i64 {
        match inputs["task"].as_str().map(RunSubject::parse) {
            Some(Ok(RunSubject::ShipProof)) => self.proof.as_millis() as i64,
            _ => 0,
        }
    }

    /// When the next open run completes (ms on GitHub's clock), if any.
    pub fn next_due_ms(&self) -> Option<i64> {
        self.open_runs()
            .iter()
            .map(|(_, inputs, created)| created + self.duration_of(inputs))
            .min()
    }

    /// Runs dispatched and not completed.
    pub fn open(&self) -> usize {
        self.open_runs().len()
    }

    /// Starts the runs not started yet and completes those due at `now_ms`;
    /// how many it completed.
    pub fn play(&mut self, now_ms: i64) -> usize {
        let mut completed = 0;
        for (run_id, inputs, created) in self.open_runs() {
            if self.started.insert(run_id) {
                self.repo.start_run(run_id);
            }
            if created + self.duration_of(&inputs) > now_ms {
                continue;
            }
            let played = self.complete(run_id, &inputs, created, now_ms);
            self.played.push(played);
            completed += 1;
        }
        completed
    }

    fn complete(
        &mut self,
        run_id: u64,
        inputs: &serde_json::Value,
        created: i64,
        now: i64,
    ) -> Played {
        let text = |k: &str| inputs[k].as_str().unwrap_or_default().to_owned();
        let subject = RunSubject::parse(&text("task")).expect("taskgate dispatched a run subject");
        let sha = text("sha");
        let (held, failing) = self.failing_on(&sha, subject == RunSubject::ShipProof);
        let gates: Vec<String> = text("gates")
            .split(',')
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect();
        let report = RunReport {
            version: taskgate_core::report::REPORT_VERSION,
            task: subject.clone(),
            sha: Some(sha.clone()),
            gates: gates.iter().map(|g| self.gate(g, held, &failing)).collect(),
            duration_ms: (now - created).max(0) as u64,
            cancelled: false,
            runner_fault: None,
            tested: None,
        };
        let passed = report.gates.iter().all(|g| g.passed);
        let conclusion = if passed { "success" } else { "failure" };
        let zip = zipped(&report);
        self.repo
            .complete_run(run_id, conclusion, &[("taskgate-report", &zip)]);
        Played {
            subject,
            sha,
            passed,
        }
    }

    /// How many stories commit `sha` holds, and those whose test fails
    /// on it (a flaky one only in a ship proof, and only its first).
    fn failing_on(&mut self, sha: &str, proof: bool) -> (usize, Vec<String>) {
        let Some(commit) = self.repo.commit(sha) else {
            return (0, Vec::new());
        };
        let mut held = 0;
        let moved = commit.files.get("src/shared.rs").map(String::as_str) == Some(SHARED_MOVED);
        let mut failing = Vec::new();
        for (key, story) in &self.stories {
            if !commit.files.contains_key(&format!("src/{key}.rs")) {
                continue;
            }
            held += 1;
            if (story.broken && moved) || (proof && story.flaky && self.flaky_left.remove(key)) {
                failing.push(key.clone());
            }
        }
        (held, failing)
    }

    /// The gate `gate` of `cargo test` on a tree holding `held` stories,
    /// these stories' tests failing, judged as taskgate judges every gate
    /// (`decide_verdict`).
    fn gate(&self, gate: &str, held: usize, failing: &[String]) -> GateResult {
        let cases: Vec<TestCase> = failing
            .iter()
            .map(|key| {
                let file = self.stories[key].test_file.clone();
                TestCase {
                    id: TestId::new(format!("{key}::works")),
                    name: "works".into(),
                    suite: Some(key.clone()),
                    file: Some(file),
                    line: Some(3),
                    outcome: Outcome::Failed {
                        message: format!("assertion failed: {key} works with the shared code"),
                        details: String::new(),
                    },
                    duration_ms: Some(5),
                }
            })
            .collect();
        let output: String = failing
            .iter()
            .map(|key| format!("test {key}::works ... FAILED\n"))
            .collect();
        let exit = if failing.is_empty() { 0 } else { 101 };
        let mut result = GateResult {
            gate: gate.to_owned(),
            passed: false,
            kind: None,
            summary: None,
            commands: vec![CommandResult {
                cmd: "cargo test".into(),
                gate: gate.to_owned(),
                exit_code: Some(exit),
                signal: None,
                timed_out: false,
                timeout_seconds: 600,
                duration_ms: self.proof.as_millis() as u64,
                output_bytes: output.len() as u64,
                output,
                truncated: false,
                flaky: false,
                classification: None,
            }],
            missing_artifacts: vec![],
            metric_failures: vec![],
            warnings: vec![],
            cancelled: false,
            tests: Some(GateTests {
                failed: cases.len(),
                passed: held - cases.len(),
                cases,
                ..GateTests::default()
            }),
        };
        decide_verdict(&mut result, None);
        result
    }
}
