//! A task pull request merged into the story branch before its gates
//! passed (issue 30, "the merge guard"): an account with write access (an
//! agent's, a person's) merged it past them, which GitHub allows unless
//! the owner's rules on `taskgate/story-*` require taskgate's checks.
//!
//! Owns: what such a merge does to the task ([`merged_past_gates`]), how
//! the task completes later ([`proven_after_merge`]), and the comment the
//! merged pull request gets.
//! Must not: do IO or judge who merged (the shell records the sender in
//! the audit log).
//!
//! The one idea a reader needs: **a merge is not a proof.** The task stays
//! where its runs left it, so the story is not shippable; it completes
//! when its gates pass at the merged head (a run still going there), or
//! when a later task pull request merges proven. The pull request is
//! forgotten, so the next push to the task branch opens a new one.

use super::decide::{reconcile, TaskContext, TaskDecision};
use super::render::check_name;
use super::{TaskRecord, TaskState};
use crate::effect::Effect;
use crate::ids::{CommitSha, IssueNumber};
use crate::report::plain_text;

/// The merge of `pr` at `head`, by `by` (a login), whose gates had not
/// all passed there.
pub(super) fn merged_past_gates(
    record: &TaskRecord,
    pr: IssueNumber,
    head: &CommitSha,
    by: Option<&str>,
    ctx: &TaskContext,
) -> TaskDecision {
    let mut next = record.clone();
    next.pr = None;
    next.pr_requested = false;
    next.merged_unproven = Some(head.clone());
    let gates = gate_states(record, head, ctx);
    let effects = vec![
        Effect::PostComment {
            repo: ctx.repo.clone(),
            issue: pr,
            body: merged_past_text(&gates, head, by, ctx),
            marker: format!("merged-past-gates task={} pr={pr}", ctx.task),
        },
        reconcile(ctx),
    ];
    TaskDecision {
        record: next,
        effects,
        outcome: "task pull request merged before its gates passed: the task is not complete"
            .into(),
        ..TaskDecision::unchanged(record, "")
    }
}

/// The attempt that just passed ran at the head a pull request was merged
/// at before its gates passed: the merged work is proven, and the task
/// completes.
pub(super) fn proven_after_merge(record: &TaskRecord, sha: &CommitSha) -> bool {
    record.merged_unproven.as_ref() == Some(sha)
}

/// Completes a task whose merged head was just proven.
pub(super) fn complete(next: &mut TaskRecord) {
    next.state = Some(TaskState::Completed);
    next.merged_unproven = None;
}

/// Each gate with what it was at `head` when the merge came.
fn gate_states<'g>(
    record: &TaskRecord,
    head: &CommitSha,
    ctx: &'g TaskContext,
) -> Vec<(&'g str, GateAtMerge)> {
    ctx.gates
        .iter()
        .map(|g| {
            let at = match record.verdicts.get(g) {
                Some(v) if v.sha == *head && v.passed => GateAtMerge::Passed,
                Some(v) if v.sha == *head => GateAtMerge::Failed,
                _ => GateAtMerge::NotFinished,
            };
            (g.as_str(), at)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GateAtMerge {
    Passed,
    Failed,
    NotFinished,
}

fn merged_past_text(
    gates: &[(&str, GateAtMerge)],
    head: &CommitSha,
    by: Option<&str>,
    ctx: &TaskContext,
) -> String {
    let short = head.short();
    let who = by.map_or_else(|| "Someone".to_owned(), |login| format!("@{login}"));
    let mut body = format!(
        "**Merged before its gates passed.** {who} merged this pull request into `{}` at `{short}`, where:\n\n",
        plain_text(ctx.story_branch)
    );
    for (gate, at) in gates {
        let state = match at {
            GateAtMerge::Passed => "passed",
            GateAtMerge::Failed => "failing",
            GateAtMerge::NotFinished => "not finished",
        };
        body.push_str(&format!("- `{}`: {state}\n", check_name(gate)));
    }
    let checks = gates
        .iter()
        .map(|(g, _)| format!("`{}`", check_name(g)))
        .collect::<Vec<_>>()
        .join(", ");
    body.push_str(&format!(
        "\nA merge is not a proof: task #{issue} is not complete, and the story does not ship until it is. \
It completes when its gates pass at `{short}`, or when a later task pull request merges proven: push a fix to `{branch}` and taskgate tests it and opens one.\n\n\
**To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires the status checks {checks} \
(Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.",
        issue = ctx.task_issue,
        branch = plain_text(ctx.branch),
    ));
    body
}
