//! A task pull request merged into the story branch before its gates
//! passed (issue 30, "the merge guard"): an account with write access (an
//! agent's, a person's) merged it past them, which GitHub allows unless
//! the owner's rules on `taskgate/story-*` require taskgate's checks.
//!
//! Owns: what such a merge does to the task ([`merged_past_gates`]), how
//! the task completes later ([`proven_after_merge`]), and the comment the
//! merged pull request gets. Likewise a merge under `review: human` of a
//! head no one approved ([`merged_past_review`], issue 45): the task
//! completes when someone approves that head (`task::review`).
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
use super::TaskRecord;
use crate::config::ReviewMode;
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
            body: merged_past_text(&gates, head, by, awaits_review(record, head, ctx), ctx),
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

/// Completes a task whose merged head `sha` was just proven; under human
/// review without an approval there, it waits for `/approve` instead.
pub(super) fn complete(next: &mut TaskRecord, sha: &CommitSha, ctx: &TaskContext) {
    next.merged_unproven = None;
    if awaits_review(next, sha, ctx) {
        next.merged_unreviewed = Some(sha.clone());
    } else {
        next.complete(ctx.now);
    }
}

/// Under `review: human`, `head` has no approval: its merge does not
/// complete the task.
pub(super) fn awaits_review(record: &TaskRecord, head: &CommitSha, ctx: &TaskContext) -> bool {
    ctx.review == ReviewMode::Human && !record.approved_at(head)
}

/// The merge of `pr` at `head`, by `by` (a login), under `review: human`
/// with no approval of `head`: the gates passed, a person's review is
/// missing.
pub(super) fn merged_past_review(
    record: &TaskRecord,
    pr: IssueNumber,
    head: &CommitSha,
    by: Option<&str>,
    ctx: &TaskContext,
) -> TaskDecision {
    let mut next = record.clone();
    next.pr = None;
    next.pr_requested = false;
    next.merged_unreviewed = Some(head.clone());
    let effects = vec![
        Effect::PostComment {
            repo: ctx.repo.clone(),
            issue: pr,
            body: merged_past_review_text(head, by, ctx),
            marker: format!("merged-past-review task={} pr={pr}", ctx.task),
        },
        reconcile(ctx),
    ];
    TaskDecision {
        record: next,
        effects,
        outcome: "task pull request merged without an approval under human review: the task is not complete"
            .into(),
        ..TaskDecision::unchanged(record, "")
    }
}

fn merged_past_review_text(head: &CommitSha, by: Option<&str>, ctx: &TaskContext) -> String {
    let short = head.short();
    let who = by.map_or_else(|| "Someone".to_owned(), |login| format!("@{login}"));
    format!(
        "**Merged without an approval.** {who} merged this pull request into `{branch}` at `{short}`. \
Its gates passed there, but task #{issue} is under human review (`review: human`) and no one other than its pusher approved `{short}`.\n\n\
A merge is not a review: task #{issue} is not complete, and the story does not ship until it is. \
**To complete it**, someone with write permission who did not push its commits comments `/taskgate approve` on task #{issue}: \
that approves `{short}`, the head that was merged.\n\n\
**To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires a pull request with at least one approving review \
(Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.",
        branch = plain_text(ctx.story_branch),
        issue = ctx.task_issue,
    )
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
    needs_review: bool,
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
    if needs_review {
        body.push_str(&format!(
            "\n\nThe task is also under human review (`review: human`) and no one approved `{short}`: \
once its gates pass there, it completes when someone with write permission who did not push its commits comments `/taskgate approve` on task #{issue}.",
            issue = ctx.task_issue,
        ));
    }
    body
}
