//! Caps on a [`RunReport`]: what task code controls (its output, and the
//! whole JSON report the `actions` runner uploads) cannot make taskgate do
//! unbounded work or GitHub calls.
//!
//! Every list is cut to a documented size in one pass (a cut list ends
//! with an item saying how many more there were), every string to a
//! documented length. [`cap_report`] is applied where a report enters
//! taskgate: at the end of a local run and when an artifact is read back.
//! Rendering caps again what it shows (annotations per gate), so a report
//! built any other way is safe to render too.

use super::{clip_middle, CommandResult, GateResult, RunReport};
use crate::task::RunSubject;

/// Gates kept in one report.
pub const MAX_GATES: usize = 64;
/// Commands kept per gate.
pub const MAX_COMMANDS_PER_GATE: usize = 256;
/// Findings kept per command (the classifier makes at most 50 itself).
pub const MAX_FINDINGS_PER_COMMAND: usize = 50;
/// Annotations one gate's check run gets: three of GitHub's 50-annotation
/// requests. The rest are counted in the summary, not sent.
pub const MAX_ANNOTATIONS_PER_GATE: usize = 150;
/// Warnings, missing artifacts and metric failures kept per gate, each
/// (warnings get one more line when commands were dropped).
pub const MAX_LIST_ITEMS: usize = 100;
/// A command's output kept, in bytes (what the local runner keeps too).
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// A command line, a summary, a list item, a finding's message, in bytes.
pub const MAX_LINE_BYTES: usize = 2_000;
/// A finding's path, in bytes.
pub const MAX_PATH_BYTES: usize = 512;

/// `report` within every cap above. Linear in the report's size.
pub fn cap_report(mut report: RunReport) -> RunReport {
    let task = report.task.key();
    if task.len() > MAX_LINE_BYTES {
        // The clipped text keeps its head, so it names the same kind of
        // subject.
        if let Ok(clipped) = RunSubject::parse(&clip_middle(&task, MAX_LINE_BYTES)) {
            report.task = clipped;
        }
    }
    if let Some(sha) = &mut report.sha {
        sha.truncate(sha.floor_char_boundary_compat(64));
    }
    report.gates.truncate(MAX_GATES);
    report.gates = report.gates.into_iter().map(cap_gate).collect();
    report
}

fn cap_gate(mut gate: GateResult) -> GateResult {
    gate.gate = clip_middle(&gate.gate, MAX_LINE_BYTES);
    gate.summary = gate.summary.map(|s| clip_middle(&s, MAX_LINE_BYTES));
    let dropped = gate.commands.len().saturating_sub(MAX_COMMANDS_PER_GATE);
    gate.commands.truncate(MAX_COMMANDS_PER_GATE);
    gate.commands = gate.commands.into_iter().map(cap_command).collect();
    cap_list(&mut gate.missing_artifacts);
    cap_list(&mut gate.metric_failures);
    cap_list(&mut gate.warnings);
    gate.tests = gate.tests.map(super::evidence::capped);
    if dropped > 0 {
        gate.warnings.push(format!(
            "{dropped} more command(s) not shown: a gate keeps at most {MAX_COMMANDS_PER_GATE}"
        ));
    }
    gate
}

fn cap_command(mut c: CommandResult) -> CommandResult {
    c.cmd = clip_middle(&c.cmd, MAX_LINE_BYTES);
    c.gate = clip_middle(&c.gate, MAX_LINE_BYTES);
    if c.output.len() > MAX_OUTPUT_BYTES {
        c.output = clip_middle(&c.output, MAX_OUTPUT_BYTES);
        c.truncated = true;
    }
    if let Some(class) = &mut c.classification {
        class.summary = clip_middle(&class.summary, MAX_LINE_BYTES);
        class.findings.truncate(MAX_FINDINGS_PER_COMMAND);
        for f in &mut class.findings {
            f.path = clip_middle(&f.path, MAX_PATH_BYTES);
            f.message = clip_middle(&f.message, MAX_LINE_BYTES);
        }
    }
    c
}

/// At most [`MAX_LIST_ITEMS`] items, each at most [`MAX_LINE_BYTES`]; a cut
/// list's last item says how many were left out.
fn cap_list(items: &mut Vec<String>) {
    if items.len() > MAX_LIST_ITEMS {
        let more = items.len() - (MAX_LIST_ITEMS - 1);
        items.truncate(MAX_LIST_ITEMS - 1);
        items.push(format!("… and {more} more"));
    }
    for item in items.iter_mut() {
        if item.len() > MAX_LINE_BYTES {
            *item = clip_middle(item, MAX_LINE_BYTES);
        }
    }
}

/// `str::floor_char_boundary` for the stable toolchain.
trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, index: usize) -> usize;
}

impl FloorCharBoundary for String {
    fn floor_char_boundary_compat(&self, index: usize) -> usize {
        let mut i = index.min(self.len());
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}
