//! The result of an acceptance run (SPEC §6) and the texts made from it: the
//! check-run output of one gate and the report `taskgate run` prints.
//!
//! Owns: [`RunReport`] and its parts, which are also the JSON artifact the
//! `actions` runner uploads (versioned by [`REPORT_VERSION`]). Must not: do
//! IO, await or read the clock; the runners fill the report, this module
//! and its children only show it.
//!
//! The children: `check_run` (one gate's check-run output), `annotations`
//! (findings as annotations, paths kept inside the repository), `terminal`
//! (what `taskgate run` prints), `text` (untrusted tool output made safe to
//! show, byte-limit cuts), `caps`, `evidence` (per-test results) and
//! `verdict` (a gate's pass or fail).
//! Every public item is re-exported here: callers use `core::report::X`.
//!
//! Two ideas a reader needs:
//! - Everything from tool output is untrusted text: it is stripped of
//!   terminal escapes, its `@user`/`#123` are neutralised, and runs of
//!   backticks are broken so it can never close the code fence it sits in.
//! - GitHub counts the check-run `text` limit in bytes: logs are cut in the
//!   middle (head and tail kept, on char boundaries) and the cut is said.

use serde::{Deserialize, Serialize};

use crate::classify::{Classification, FailureKind};

mod annotations;
mod caps;
mod check_run;
mod evidence;
#[cfg(test)]
mod fixtures;
mod terminal;
mod text;
mod verdict;

pub use annotations::{
    annotation_batches, relative_path, Annotation, AnnotationLevel, ANNOTATIONS_PER_REQUEST,
};
pub use caps::{
    cap_report, MAX_ANNOTATIONS_PER_GATE, MAX_COMMANDS_PER_GATE, MAX_FINDINGS_PER_COMMAND,
    MAX_GATES, MAX_LINE_BYTES, MAX_LIST_ITEMS, MAX_OUTPUT_BYTES, MAX_PATH_BYTES,
};
pub use check_run::{render_check_output, render_gate_title};
pub use evidence::{
    case_line, case_verdict, check_required_tests, CaseVerdict, GateTests, Unmet, UnmetRequired,
    MAX_CASES_KEPT, MAX_FAILING_LISTED,
};
pub use terminal::render_terminal_report;
pub use text::{clean_log, clip_middle, code_span, plain_text, render_duration};
use text::{one_line, plural};
pub use verdict::{apply_quarantine, decide_verdict, excused_by_quarantine};

/// Bumped when a field changes meaning or disappears; additions keep it.
pub const REPORT_VERSION: u32 = 1;
/// GitHub's limit on a check run's `output.text` and `output.summary`, in bytes.
pub const CHECK_TEXT_LIMIT: usize = 65_535;

/// One command of a gate, as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    pub cmd: String,
    pub gate: String,
    /// `None` when the command was killed by a signal or never started.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub timeout_seconds: u64,
    pub duration_ms: u64,
    /// Stdout and stderr merged, decoded lossily, capped by the runner.
    pub output: String,
    /// Bytes the command printed in total, including what the cap dropped.
    pub output_bytes: u64,
    pub truncated: bool,
    /// Failed, then passed on the immediate re-run. `output` and
    /// `classification` are those of the failed run.
    pub flaky: bool,
    /// Set for failures (and for flaky commands, from their failed run).
    pub classification: Option<Classification>,
}

impl CommandResult {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// `passed`, `flaky`, `timed out`, `killed (signal 9)`, `failed`.
    pub fn result_word(&self) -> String {
        match (self.passed(), self.flaky, self.timed_out, self.signal) {
            (true, true, ..) => "flaky".into(),
            (true, false, ..) => "passed".into(),
            (false, _, true, _) => "timed out".into(),
            (false, _, false, Some(sig)) => format!("killed (signal {sig})"),
            _ => "failed".into(),
        }
    }
}

/// One gate: the commands tagged with it, plus the task's artifact and
/// metric checks when they were attributed to this gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub gate: String,
    pub passed: bool,
    /// Why it failed: the first failing command's kind, or `spec_mismatch`.
    pub kind: Option<FailureKind>,
    /// The classifier's summary (1–3 lines), or what is missing.
    pub summary: Option<String>,
    pub commands: Vec<CommandResult>,
    pub missing_artifacts: Vec<String>,
    pub metric_failures: Vec<String>,
    pub warnings: Vec<String>,
    /// Stopped by a newer push; not a verdict on the code.
    #[serde(default)]
    pub cancelled: bool,
    /// Per-test results from the gate's report files; `None` when it wrote
    /// none (the log classifier's verdict stands alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<GateTests>,
}

/// Every gate of one task at one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub version: u32,
    pub task: crate::task::RunSubject,
    pub sha: Option<String>,
    pub gates: Vec<GateResult>,
    pub duration_ms: u64,
    #[serde(default)]
    pub cancelled: bool,
    /// The runner itself failed (its sandbox did not start, a workspace
    /// could not be made, the host cannot sandbox): nothing the gates say
    /// is a verdict on the code, and no branch todo follows. Set only by
    /// taskgate's own runner code, never read from a report task code
    /// could write (the Actions artifact's is dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_fault: Option<String>,
    /// What the gates ran on when the runner merged the story branch into
    /// `sha` (SPEC §3: a task's head is tested merged with its story
    /// branch, as CI on a pull request is); `None`: `sha` as it is. Read
    /// from an Actions artifact only as far as it matches what was
    /// dispatched (`core::story::start::check_tested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tested: Option<Tested>,
}

/// The commit a run's gates tested, relative to its head `sha` and the
/// story branch's head `base` it was asked to merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Tested {
    /// The head holds `base` already: it was tested as it is.
    Holds { base: String },
    /// `merge`, the head merged with `base`, was tested.
    Merged { base: String, merge: String },
    /// The head conflicts with `base`: no gate ran.
    Conflict { base: String },
}

impl Tested {
    /// The story branch head it was merged with (or conflicts with).
    pub fn base(&self) -> &str {
        match self {
            Tested::Holds { base } | Tested::Merged { base, .. } | Tested::Conflict { base } => {
                base
            }
        }
    }
}

impl RunReport {
    /// Seconds spent in the plan's commands themselves, all gates together.
    pub fn commands_seconds(&self) -> f64 {
        let ms: u64 = self
            .gates
            .iter()
            .flat_map(|g| &g.commands)
            .map(|c| c.duration_ms)
            .sum();
        ms as f64 / 1000.0
    }

    /// True when the run finished and every gate passed.
    pub fn passed(&self) -> bool {
        !self.cancelled && self.gates.iter().all(|g| g.passed)
    }
}

/// The `output` object of a check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOutput {
    pub title: String,
    pub summary: String,
    pub text: String,
    pub annotations: Vec<Annotation>,
}
