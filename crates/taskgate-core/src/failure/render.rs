//! The texts of the failure loop: branch-todo titles and bodies, attempt
//! comments, proposals and the escalation report. Tool output (summaries,
//! changes) is untrusted: it goes into fenced blocks through
//! [`clean_log`], commands into code spans, so nothing pings a person or
//! links an issue; every text is clipped to fit GitHub.

use std::fmt::Write;

use super::evidence::{render_changes_since_green, render_gate_evidence, render_since_previous};
use super::{
    max_attempts, Bound, FailureRecord, GateFailure, LoopContext, LoopState, OpenTodo, Proposal,
};
use crate::classify::FailureKind;
use crate::ids::CommitSha;
use crate::plan::Task;
use crate::report::{clean_log, clip_middle, code_span};
use crate::story::body::{inline, markdown_block};
use crate::story::{Marker, MAX_BODY_CHARS};

/// What a todo's body and attempt comment show.
#[derive(Debug, Clone, Copy)]
pub struct TodoView<'a> {
    pub task: &'a Task,
    pub todo: &'a OpenTodo,
    /// The latest failed run.
    pub failure: Option<&'a FailureRecord>,
    /// The failed run before it, if any (what changed, what still fails).
    pub previous: Option<&'a FailureRecord>,
    pub branch: &'a str,
    /// The repository's command prefix (`/taskgate`).
    pub prefix: &'a str,
    pub max_attempts: u32,
    pub max_depth: u32,
    pub timeout_seconds: u64,
    pub now: i64,
}

/// GitHub refuses longer issue titles.
const MAX_TITLE_CHARS: usize = 256;
/// Per-gate summary room in the escalation report, in bytes.
const REPORT_SUMMARY_BYTES: usize = 800;
const REPORT_GATES: usize = 3;
const REPORT_RUNS: usize = 3;
const DESCRIPTION_BYTES: usize = 3_000;

pub(super) fn render_bound(b: Bound) -> &'static str {
    match b {
        Bound::Attempts => "every branch todo used its attempts and the task still fails",
        Bound::Depth => "a deeper branch todo would exceed `max_branch_depth`",
        Bound::Timeout => "the branch todo outlived `branch_timeout_seconds`",
    }
}

/// `Debug <task title> — <kind>`, on one line, within GitHub's limit.
pub fn render_todo_title(task: &Task, kind: FailureKind) -> String {
    let title = task.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let suffix = format!(" — {kind}");
    let room = MAX_TITLE_CHARS - "Debug ".len() - suffix.chars().count();
    let title: String = if title.chars().count() > room {
        title.chars().take(room - 1).chain(['…']).collect()
    } else {
        title
    };
    format!("Debug {title}{suffix}")
}

/// The branch todo's body: the diagnosis, attempt and depth, time left,
/// what changed, what happens next, and the hidden marker.
pub fn render_todo_body(v: &TodoView) -> String {
    let t = v.todo;
    let mut out = format!(
        "The acceptance run of task **{}** failed with **{}**; this todo is routed to the \
         **{}** role. Push the fix to {}: the next green run closes it.{}{}\n\n",
        title(v.task),
        t.kind,
        inline(&t.role),
        code_span(v.branch),
        accept_note(v.branch, v.prefix),
        copilot_note(&t.agent, v.branch),
    );
    let left = (t.opened_at + v.timeout_seconds as i64 - v.now).max(0);
    let _ = write!(
        out,
        "| attempt | depth | time left |\n|---|---|---|\n| {}/{} | {}/{} | {} of {} |\n\n",
        t.failed_runs,
        v.max_attempts,
        t.depth,
        v.max_depth,
        render_seconds(left),
        render_seconds(v.timeout_seconds as i64),
    );
    let next = if t.depth < v.max_depth {
        format!(
            "a deeper branch todo (depth {}/{})",
            t.depth + 1,
            v.max_depth
        )
    } else {
        "an escalation to a person".to_owned()
    };
    let next = format!(
        "### What happens next\n\nEach failed run on the task branch counts as one attempt. \
         A failure after attempt {n}/{n} closes this todo and leads to {next}.\n\n",
        n = v.max_attempts,
    );
    let marker = marker_line(&t.marker);
    let room = MAX_BODY_CHARS.saturating_sub(out.len() + next.len() + marker.len() + 1);
    out.push_str(&render_evidence(v.failure, v.previous, room));
    out.push_str(&next);
    finish(out, &marker)
}

/// The evidence of the latest failed run within `room` bytes: each gate's
/// diagnosis (summary, failing tests, log excerpt, reproducing command,
/// check run) while they fit, the rest named and said to be clipped, after
/// what changed since the previous attempt; the changes since the last
/// green run.
pub(super) fn render_evidence(
    failure: Option<&FailureRecord>,
    previous: Option<&FailureRecord>,
    room: usize,
) -> String {
    let Some(f) = failure else {
        return "No failure details were recorded.\n\n".to_owned();
    };
    let since = render_since_previous(previous, f).unwrap_or_default();
    let changes = render_changes_since_green(f);
    // A later attempt opens with what changed and what still fails.
    let mut out = since;
    let _ = write!(
        out,
        "### Diagnosis (run {} at {})\n\n",
        f.attempt,
        short_sha(&f.sha)
    );
    let room = room.saturating_sub(changes.len());
    let mut clipped = Vec::new();
    for g in &f.gates {
        let section = format!(
            "{}{}",
            gate_head(g, usize::MAX),
            render_gate_evidence(g, &f.sha)
        );
        // Room is kept for the note naming the gates left out.
        if clipped.is_empty() && out.len() + section.len() + CLIPPED_NOTE_ROOM <= room {
            out.push_str(&section);
        } else {
            clipped.push(code_span(&g.gate));
        }
    }
    if !clipped.is_empty() {
        let _ = writeln!(
            out,
            "**Clipped** to fit GitHub's size limit: the evidence of gate{} {}; each one's \
             check run has it.\n",
            if clipped.len() == 1 { "" } else { "s" },
            clipped.join(", ")
        );
    }
    out.push_str(&changes);
    clip_middle(&out, room.max(1))
}

/// Bytes kept free for the note naming clipped gates.
const CLIPPED_NOTE_ROOM: usize = 2_000;

/// The comment posted on the todo for each later failed attempt.
pub fn render_attempt_comment(v: &TodoView) -> String {
    let t = v.todo;
    let mut out = match v.failure {
        Some(f) => format!(
            "Attempt {}/{} failed at {}:\n\n",
            t.failed_runs,
            v.max_attempts,
            short_sha(&f.sha)
        ),
        None => format!("Attempt {}/{} failed.\n\n", t.failed_runs, v.max_attempts),
    };
    for g in v.failure.map(|f| f.gates.as_slice()).unwrap_or_default() {
        let first = g
            .summary
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let _ = writeln!(
            out,
            "- gate {}: **{}** — {}",
            code_span(&g.gate),
            g.kind,
            code_span(&clip_middle(first, 300))
        );
    }
    if let Some(since) = v.failure.and_then(|f| render_since_previous(v.previous, f)) {
        out.push('\n');
        out.push_str(since.trim_end());
        out.push('\n');
    }
    let left = t.failed_runs >= v.max_attempts;
    out.push_str(if left {
        "\nThat was the last attempt of this todo; the body has the full diagnosis.\n"
    } else {
        "\nThe body has the full diagnosis.\n"
    });
    clip_middle(&out, MAX_BODY_CHARS)
}

/// On a spent todo, when a deeper one takes over.
pub fn render_superseded_comment(todo: &OpenTodo, next_depth: u32, max_depth: u32) -> String {
    format!(
        "Attempts used up ({} failed runs) and the task failed again: this todo is closed and \
         a deeper branch todo (depth {next_depth}/{max_depth}) takes over.",
        todo.failed_runs
    )
}

/// On the todo a green run closes.
pub fn render_fixed_comment(sha: &CommitSha, failed_runs: u32, seconds: i64) -> String {
    format!(
        "Fixed: the acceptance run passed at {} after {failed_runs} failed run{}. \
         Resolved in {}.",
        short_sha(sha),
        if failed_runs == 1 { "" } else { "s" },
        render_seconds(seconds)
    )
}

/// On the todo an escalation closes.
pub fn render_escalated_todo_comment(reason: Bound) -> String {
    format!(
        "Closed: {}. taskgate stopped retrying and asked a person on the task issue.",
        render_bound(reason)
    )
}

/// On the task, once per episode, when the story has no room for a todo.
pub fn render_deferred_comment(limit: u32) -> String {
    format!(
        "The acceptance run failed, but this story already has {limit} open branch todo{} \
         (`max_concurrent_branches`). taskgate waits: the branch todo opens on the next failed \
         run once one of them is closed.",
        if limit == 1 { "" } else { "s" }
    )
}

/// Manual mode: what would be opened, and how to open it.
pub fn render_proposal_comment(
    task: &Task,
    p: &Proposal,
    failure: Option<&FailureRecord>,
    max_depth: u32,
    prefix: &str,
) -> String {
    let mut out = format!(
        "The acceptance run failed. This repository proposes branch todos instead of opening \
         them (`auto_fix: false`); taskgate would open:\n\n\
         - **{}**, depth {}/{}, routed to the **{}** role\n\n\
         Reply {} to open it.\n\n",
        inline(&render_todo_title(task, p.kind)),
        p.depth,
        max_depth,
        inline(&p.role),
        code_span(&format!("{prefix} approve-branch")),
    );
    if let Some(f) = failure {
        let _ = writeln!(
            out,
            "### Diagnosis (run {} at {})\n",
            f.attempt,
            short_sha(&f.sha)
        );
        for g in f.gates.iter().take(REPORT_GATES) {
            out.push_str(&gate_section(g, REPORT_SUMMARY_BYTES));
        }
    }
    clip_middle(out.trim_end(), MAX_BODY_CHARS)
}

/// The escalation report posted on the task issue (seed 001): the goal,
/// the attempts made, the last failures and a suggested next step.
pub fn render_escalation_report(ctx: &LoopContext, s: &LoopState, reason: Bound) -> String {
    let task = ctx.task;
    let mut out = format!(
        "### taskgate needs a person\n\n{}. The task is blocked and labelled `needs-human`.\n\n\
         **Goal**: {}\n\n",
        capitalise(render_bound(reason)),
        title(task)
    );
    if let Some(d) = task.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let d = markdown_block(&clip_middle(d, DESCRIPTION_BYTES));
        let quoted: Vec<String> = d.lines().map(|l| format!("> {l}")).collect();
        let _ = write!(out, "{}\n\n", quoted.join("\n"));
    }
    let todos: Vec<_> = s
        .history
        .iter()
        .filter(|c| Marker::from_key(&c.marker).is_some_and(|m| round_of(&m) == s.round.max(1)))
        .collect();
    let runs: u32 = todos.iter().map(|c| c.failed_runs).sum();
    let _ = write!(
        out,
        "**Attempts**: {runs} failed run{} over {} branch todo{} (up to {} attempt{} each, \
         depth up to {}).\n\n",
        if runs == 1 { "" } else { "s" },
        todos.len(),
        if todos.len() == 1 { "" } else { "s" },
        max_attempts(task, ctx.limits),
        if max_attempts(task, ctx.limits) == 1 {
            ""
        } else {
            "s"
        },
        ctx.limits.max_branch_depth,
    );
    let roles: Vec<&str> = todos.iter().map(|c| c.role.as_str()).collect();
    out.extend(super::agent::render_agents_spent(ctx, &roles));
    if !todos.is_empty() {
        out.push_str("| todo | depth | kind | role |\n|---|---|---|---|\n");
        for (i, c) in todos.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                i + 1,
                c.depth,
                c.kind,
                inline(&c.role)
            );
        }
        out.push('\n');
    }
    out.push_str("**Last failures**\n\n");
    for f in s.failures.iter().rev().take(REPORT_RUNS) {
        let _ = writeln!(out, "Run {} at {}:\n", f.attempt, short_sha(&f.sha));
        for g in f.gates.iter().take(REPORT_GATES) {
            out.push_str(&gate_section(g, REPORT_SUMMARY_BYTES));
        }
    }
    let kind = dominant_kind(&s.failures);
    let _ = write!(
        out,
        "**Suggested next step** ({kind}): {}\n\nPush a fix to {}; a green run closes the loop.{} \
         Remove `needs-human` once it is handled.",
        suggestion(kind),
        code_span(ctx.task_branch),
        accept_note(ctx.task_branch, &ctx.config.commands.prefix),
    );
    clip_middle(&out, MAX_BODY_CHARS)
}

fn round_of(m: &Marker) -> u32 {
    match m {
        Marker::BranchTodo { round, .. } => *round,
        _ => 0,
    }
}

/// For a fix pushed straight onto a story branch (an integration
/// milestone's): it comes from no task PR, so a maintainer accepts it
/// before the story ships (`core::ship::vet`).
fn accept_note(branch: &str, prefix: &str) -> String {
    if crate::story::story_issue_of_branch(branch).is_none() {
        return String::new();
    }
    format!(
        " A fix pushed there comes from no task PR: before the story ships, a maintainer \
         accepts it by naming the newest commit (`{prefix} accept-commits <sha>`)."
    )
}

/// For a todo routed to Copilot: the base branch to pick when assigning
/// it (Copilot branches off the base picked in GitHub's assignment dialog,
/// the default branch unless told), and what happens to its pull request.
fn copilot_note(agent: &str, branch: &str) -> String {
    if super::AgentRoute::from_name(agent) != Some(super::AgentRoute::Copilot) {
        return String::new();
    }
    format!(
        " To have Copilot fix it, assign this issue to Copilot and choose {} as the base \
         branch in the assignment dialog: Copilot opens its own pull request into that \
         branch, which taskgate tests with the task's gates (and merges when they pass, \
         under `review: auto`). A pull request into another branch is not taken.",
        code_span(branch)
    )
}

/// The kind seen most across the kept failures; ties go to the latest.
fn dominant_kind(failures: &[FailureRecord]) -> FailureKind {
    let mut best: Option<(usize, usize, FailureKind)> = None;
    let kinds: Vec<FailureKind> = failures
        .iter()
        .flat_map(|f| f.gates.iter().map(|g| g.kind))
        .collect();
    for (last, k) in kinds.iter().enumerate() {
        let count = kinds.iter().filter(|x| *x == k).count();
        if best.is_none_or(|(c, l, _)| (count, last) > (c, l)) {
            best = Some((count, last, *k));
        }
    }
    best.map_or(FailureKind::Unknown, |(_, _, k)| k)
}

fn suggestion(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::TestFailure => {
            "read the failing assertion against the task's goal: the code, the test or the \
             plan's acceptance may be wrong. Fix it by hand or adjust the test."
        }
        FailureKind::BuildFailure => {
            "fix the compiler error at the place it names; if fixes keep failing, the approach \
             itself may need to change."
        }
        FailureKind::LintFailure => {
            "run the linter locally with its fix option, or relax the rule in the project's \
             lint config if it does not apply."
        }
        FailureKind::RuntimeError => {
            "run the failing command locally and read the traceback: check the inputs, files \
             and environment the code assumes."
        }
        FailureKind::MissingDependency => {
            "add the missing package to the project's dependencies (or install it on the \
             runner) and push again."
        }
        FailureKind::Timeout => {
            "find out whether the command hangs or is only slow: make it faster, or raise its \
             `timeout_seconds` in the plan."
        }
        FailureKind::SpecMismatch => {
            "compare the output with the plan's acceptance (artifacts, metrics, contracts) and \
             decide which is wrong; `reject` returns the task to planning."
        }
        FailureKind::ToolingError => {
            "the runner or a tool failed, not the code: check that the command exists on the \
             runner and the runner is healthy, then `retry`."
        }
        FailureKind::FlakyTest => {
            "the test passes and fails on the same code: fix its dependence on order, time or \
             network, or quarantine it, before retrying."
        }
        FailureKind::Unknown => {
            "read the full log in the check run; fix the failure by hand if it is real, or \
             `retry` if it is not."
        }
    }
}

/// One failing gate: its kind, its summary in a fence, its commands.
fn gate_section(g: &GateFailure, summary_bytes: usize) -> String {
    let mut out = gate_head(g, summary_bytes);
    if !g.commands.is_empty() {
        let commands: Vec<String> = g.commands.iter().map(|c| code_span(c)).collect();
        let _ = writeln!(out, "Failing commands: {}\n", commands.join(", "));
    }
    out
}

/// A gate's heading (its name and kind) and its summary in a fence.
fn gate_head(g: &GateFailure, summary_bytes: usize) -> String {
    let mut out = format!("#### Gate {}: {}\n\n", code_span(&g.gate), g.kind);
    if !g.summary.trim().is_empty() {
        out.push_str(&fence(&clip_middle(&g.summary, summary_bytes)));
        out.push('\n');
    }
    out
}

fn fence(s: &str) -> String {
    format!("```text\n{}\n```\n", clean_log(s).trim_end())
}

fn title(task: &Task) -> String {
    inline(&clip_middle(&task.title, 300))
}

pub(super) fn short_sha(sha: &CommitSha) -> String {
    let s = sha.as_str();
    code_span(s.get(..12).unwrap_or(s))
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn marker_line(marker: &str) -> String {
    Marker::from_key(marker)
        .map(|m| m.render())
        .unwrap_or_else(|| crate::effect::hidden_marker(marker))
}

/// `body` and the marker line, the body clipped so the whole fits GitHub.
fn finish(body: String, marker: &str) -> String {
    let room = MAX_BODY_CHARS - marker.len() - 1;
    format!("{}{marker}\n", clip_middle(&body, room))
}

/// `45 s`, `12 min`, `3 h`, `3 h 05 min`, `1 d`, `2 d 4 h`.
pub(super) fn render_seconds(s: i64) -> String {
    let s = s.max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3_599 => format!("{} min", s / 60),
        3_600..=86_399 if s % 3_600 < 60 => format!("{} h", s / 3_600),
        3_600..=86_399 => format!("{} h {:02} min", s / 3_600, (s / 60) % 60),
        _ if s % 86_400 < 3_600 => format!("{} d", s / 86_400),
        _ => format!("{} d {} h", s / 86_400, (s / 3_600) % 24),
    }
}
