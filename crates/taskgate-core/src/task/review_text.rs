//! Texts of review and of the read-only commands: the `/revise` and
//! `/reject` comments, the checker report kept on a task PR, and the
//! `/status` and `/explain` answers. Every one is an `insta` snapshot.
//!
//! What people typed (feedback, reasons) and what tools printed (summaries)
//! is quoted inert: mentions cannot ping and a hidden `<!-- taskgate: -->`
//! marker cannot be smuggled into a comment taskgate later trusts.

use super::review::{ReviewInputs, MAX_REVISIONS};
use super::{Attempt, TaskContext, TaskRecord};
use crate::classify::neutralize_mentions;
use crate::effect::Effect;
use crate::ids::CommitSha;
use crate::report::plain_text;

fn short(sha: &CommitSha) -> &str {
    sha.short()
}

/// Someone's text, inert: no mentions, no HTML comments, control characters
/// gone, capped.
fn inert(text: &str, max: usize) -> String {
    let clean = neutralize_mentions(&plain_text(text)).replace("<!--", "&lt;!--");
    let mut out: String = clean.chars().take(max).collect();
    if clean.chars().count() > max {
        out.push('…');
    }
    out
}

/// As a Markdown block quote.
fn quoted(text: &str) -> String {
    inert(text.trim(), 4000)
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One table cell: one line, no pipes.
fn cell(text: &str) -> String {
    inert(text, 200)
        .replace(['\n', '\r'], " ")
        .replace('|', "\\|")
}

pub(super) fn revise_comment(
    by: &str,
    feedback: &str,
    inputs: &ReviewInputs,
    revision: u32,
) -> String {
    let to = if inputs.assignees.is_empty() {
        format!("the `{}` role", inputs.role)
    } else {
        let people: Vec<String> = inputs.assignees.iter().map(|a| format!("@{a}")).collect();
        format!("{} (`{}`)", people.join(", "), inputs.role)
    };
    let mut out = format!(
        "### Revision requested\n\nFor {to}, from {}:\n\n{}\n\n",
        inert(by, 40),
        quoted(feedback)
    );
    if revision >= MAX_REVISIONS {
        out.push_str(&format!(
            "This is revision {revision} without an approval: the task is now **paused**. A `resume` command continues it."
        ));
    } else {
        out.push_str(&format!(
            "Revision {revision} of {MAX_REVISIONS} without an approval; at {MAX_REVISIONS} the task is paused. Push the changes to the task branch and the checker runs again."
        ));
    }
    out
}

pub(super) fn rejected_comment(
    by: &str,
    reason: &str,
    pr: Option<crate::ids::IssueNumber>,
) -> String {
    let pr = match pr {
        Some(n) => format!(" Its pull request #{n} is left open for reference."),
        None => String::new(),
    };
    format!(
        "### Task rejected\n\n{} rejected this task and returned it to planning:\n\n{}\n\nNo more runs start for it.{pr} Change the task in the plan to bring it back.",
        inert(by, 40),
        quoted(reason)
    )
}

/// The one PR comment with the gates' latest results, updated in place
/// after every run (SPEC §3: "one PR comment, updated, not repeated").
pub(super) fn checker_report(
    record: &TaskRecord,
    current: &Attempt,
    ctx: &TaskContext,
) -> Option<Effect> {
    let pr = record.pr?;
    let passed = ctx.gates.iter().all(|g| {
        record
            .verdicts
            .get(g)
            .is_some_and(|v| v.passed && v.sha == current.sha)
    });
    let mut body = format!(
        "### taskgate checker: {} at `{}` (attempt {})\n\n| gate | result | kind | summary |\n|---|---|---|---|\n",
        if passed { "passed" } else { "failed" },
        short(&current.sha),
        current.number
    );
    for gate in ctx.gates {
        let row = match record.verdicts.get(gate) {
            Some(v) if v.sha != current.sha => {
                format!("| `{gate}` | not run at this commit | | |")
            }
            Some(v) if v.passed => format!("| `{gate}` | passed | | |"),
            Some(v) => format!(
                "| `{gate}` | **failed** | {} | {} |",
                v.kind.map(|k| format!("`{k}`")).unwrap_or_default(),
                cell(v.summary.as_deref().unwrap_or_default())
            ),
            None => format!("| `{gate}` | not run yet | | |"),
        };
        body.push_str(&row);
        body.push('\n');
    }
    body.push_str("\nThis comment is updated after every run; the check runs hold the full logs.");
    Some(Effect::UpsertComment {
        repo: ctx.repo.clone(),
        issue: pr.number,
        marker: format!("checker-report story={} task={}", ctx.story, ctx.task),
        body,
    })
}

/// `/status` on a task: one compact block.
pub fn render_status(task: &str, record: &TaskRecord) -> String {
    let state = record.state.map(|s| s.name()).unwrap_or("pending");
    let mut out = format!("**Task `{}`**: `{state}`", inert(task, 80));
    if let Some(head) = &record.head {
        out.push_str(&format!(", head `{}`", short(head)));
    }
    if let Some(pr) = record.pr {
        let draft = if pr.draft { " (draft)" } else { "" };
        out.push_str(&format!(", pull request #{}{draft}", pr.number));
    }
    out.push('.');
    if let Some(a) = &record.current {
        let gates: Vec<String> = a
            .gates
            .iter()
            .map(|g| match record.verdicts.get(g) {
                Some(v) if v.attempt == a.number && v.passed => format!("`{g}` passed"),
                Some(v) if v.attempt == a.number => match v.kind {
                    Some(k) => format!("`{g}` failed ({k})"),
                    None => format!("`{g}` failed"),
                },
                _ => format!("`{g}` {}", a.status.as_str()),
            })
            .collect();
        out.push_str(&format!(
            "\n- last attempt: {} at `{}`, {}: {}",
            a.number,
            short(&a.sha),
            a.status.as_str(),
            gates.join(", ")
        ));
    }
    match &record.failure.open {
        Some(todo) => out.push_str(&format!(
            "\n- open branch todo: depth {}, {} failed run(s), `{}` routed to `{}`",
            todo.depth, todo.failed_runs, todo.kind, todo.role
        )),
        None => out.push_str("\n- no branch todo open"),
    }
    if record.failure.escalation.is_some() {
        out.push_str("\n- escalated: waiting for a person (`needs-human`)");
    }
    if record.revisions > 0 {
        out.push_str(&format!(
            "\n- revisions since the last approval: {}/{MAX_REVISIONS}",
            record.revisions
        ));
    }
    if record.override_count > 0 {
        out.push_str(&format!(
            "\n- approved by override: {} time(s)",
            record.override_count
        ));
    }
    out
}

/// `/status` on a story issue: the task tree's progress, `tasks` being
/// every leaf task of the plan with its state (`pending` before work).
pub fn render_story_status(story: &str, tasks: &[(String, String)]) -> String {
    let done = tasks.iter().filter(|(_, s)| s == "completed").count();
    let mut out = format!(
        "**Story `{}`**: {done}/{} tasks completed.",
        inert(story, 80),
        tasks.len()
    );
    for (task, state) in tasks {
        out.push_str(&format!("\n- `{}`: `{state}`", inert(task, 80)));
    }
    out
}

/// `/explain`: the latest failure diagnosis of the task.
pub fn render_explain(task: &str, record: &TaskRecord) -> String {
    let failing: Vec<_> = record
        .verdicts
        .iter()
        .filter(|(_, v)| !v.passed && Some(&v.sha) == record.head.as_ref())
        .collect();
    if !failing.is_empty() {
        let head = record.head.as_ref().expect("filtered on it");
        let mut out = format!("**Why `{}` fails** at `{}`:", inert(task, 80), short(head));
        for (gate, v) in failing {
            let kind = v.kind.map(|k| k.as_str()).unwrap_or("unknown");
            out.push_str(&format!(
                "\n- `{gate}` ({kind}): {}",
                cell(v.summary.as_deref().unwrap_or("no summary"))
            ));
        }
        return out;
    }
    match record.failure.failures.last() {
        Some(last) => {
            let mut out = format!(
                "No gate fails at the head. The last failure was attempt {} at `{}`:",
                last.attempt,
                short(&last.sha)
            );
            for g in &last.gates {
                out.push_str(&format!(
                    "\n- `{}` ({}): {}",
                    g.gate,
                    g.kind.as_str(),
                    cell(&g.summary)
                ));
            }
            out
        }
        None => format!(
            "`{}` has no failure to explain: no gate has failed yet.",
            inert(task, 80)
        ),
    }
}
