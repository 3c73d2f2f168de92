//! The transitions of a story's ship gate.

use crate::CheckConclusion;
use std::collections::BTreeSet;

use super::refusal::{ship_refusal, ShipRefusal};
use super::render;
use super::{GateMark, ShipState, Shipper, StoryRecord};
use crate::config::RepoConfig;
use crate::effect::{CheckStatus, CheckUpdate, Effect};
use crate::ids::{CommitSha, IssueNumber, RepoName, StoryId};
use crate::plan::TaskState;
use crate::report::CheckOutput;
use crate::story::labels;

/// The check run on the story PR head.
pub const SHIP_GATE: &str = "taskgate/ship-gate";

/// What the transitions need to know about the story and its repository.
#[derive(Debug, Clone)]
pub struct ShipContext<'a> {
    pub repo: &'a RepoName,
    /// The story key (`file:momentum`).
    pub story: &'a StoryId,
    /// The story issue's marker key and number.
    pub story_marker: &'a str,
    pub story_issue: IssueNumber,
    /// The story's title (the plan's `story:`).
    pub title: &'a str,
    pub story_branch: &'a str,
    pub default_branch: &'a str,
    pub config: &'a RepoConfig,
    /// Labels known to exist in the repository.
    pub labels: &'a BTreeSet<String>,
    /// Why the repository is frozen, when it is: nothing lands.
    pub frozen: Option<&'a str>,
    /// The time of the event, unix ms (the queue's order).
    pub now_ms: i64,
    /// Stories of the repository queued, proving or landing now.
    pub queue_length: usize,
}

/// A task of the story as the ship gate sees it, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskProof {
    pub id: String,
    pub title: String,
    pub issue: Option<IssueNumber>,
    /// The id of its top-level task (itself at the top).
    pub top: String,
    pub is_parent: bool,
    /// A leaf's state as its runs left it; `None` before work started.
    pub state: Option<TaskState>,
    /// A leaf's passing gates and the commit each passed at.
    pub proven: Vec<(String, CommitSha)>,
    /// Who approved a leaf and at which commit; `None`: no person did
    /// (auto review merged it proven).
    pub approval: Option<crate::task::Approval>,
}

/// The story's tasks and milestones, and the story PR head when known.
#[derive(Debug, Clone)]
pub struct Evaluation<'a> {
    pub tasks: &'a [TaskProof],
    /// What the failure loop did for the story's tasks, for the PR body's
    /// fix-rate figures; `None`: not shown.
    pub loop_stats: Option<&'a crate::failure::LoopStats>,
    /// Integration milestones whose latest run has not passed: they block.
    pub milestones: &'a [String],
    pub head: Option<CommitSha>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShipDecision {
    pub record: StoryRecord,
    pub effects: Vec<Effect>,
    /// A ship request was taken (a merge was asked for).
    pub accepted: bool,
    /// A ship request was not taken, and why.
    pub refused: Option<ShipRefusal>,
    pub outcome: String,
}

impl ShipDecision {
    pub(super) fn unchanged(record: &StoryRecord, outcome: impl Into<String>) -> ShipDecision {
        ShipDecision {
            record: record.clone(),
            effects: vec![],
            accepted: false,
            refused: None,
            outcome: outcome.into(),
        }
    }
}

fn short(sha: &CommitSha) -> &str {
    sha.short()
}

/// `story=<key> ship-gate head=<sha>`: the gate's `external_id`.
fn gate_key(story: &StoryId, head: &CommitSha) -> String {
    format!(
        "story={} ship-gate head={}",
        crate::story::markers::encode_value(story.as_str()),
        head.as_str()
    )
}

/// Why the story is not shippable; empty when it is.
fn missing(ev: &Evaluation) -> Vec<String> {
    let mut out = Vec::new();
    for top in ev.tasks.iter().filter(|t| t.top == t.id) {
        if top.is_parent {
            let leaves: Vec<&TaskProof> = ev
                .tasks
                .iter()
                .filter(|t| t.top == top.id && !t.is_parent)
                .collect();
            let open = leaves
                .iter()
                .filter(|t| t.state != Some(TaskState::Completed))
                .count();
            if open > 0 {
                out.push(format!(
                    "task `{}` ({}): {open} of {} subtasks not complete",
                    top.id,
                    crate::report::plain_text(&top.title),
                    leaves.len()
                ));
            }
        } else if top.state != Some(TaskState::Completed) {
            out.push(format!(
                "task `{}` ({}) is {}",
                top.id,
                crate::report::plain_text(&top.title),
                top.state
                    .map(|s| format!("`{}`", s.name()))
                    .unwrap_or_else(|| "not started".into())
            ));
        }
    }
    for m in ev.milestones {
        out.push(format!("integration milestone `{m}` has not passed"));
    }
    out
}

/// Adds and removes labels on the story PR, creating missing ones first.
pub(super) fn label_pr(
    ctx: &ShipContext,
    pr: IssueNumber,
    add: &[&str],
    remove: &[&str],
) -> Vec<Effect> {
    let mut effects: Vec<Effect> = add
        .iter()
        .filter(|name| !ctx.labels.contains(**name))
        .filter_map(|name| labels::spec(name))
        .map(|spec| Effect::EnsureLabel {
            repo: ctx.repo.clone(),
            name: spec.name,
            color: spec.color,
            description: spec.description,
        })
        .collect();
    effects.push(Effect::LabelIssue {
        repo: ctx.repo.clone(),
        issue: pr,
        add: add.iter().map(|s| (*s).to_owned()).collect(),
        remove: remove.iter().map(|s| (*s).to_owned()).collect(),
    });
    effects
}

pub(super) fn comment(
    ctx: &ShipContext,
    issue: IssueNumber,
    body: String,
    marker: String,
) -> Effect {
    Effect::PostComment {
        repo: ctx.repo.clone(),
        issue,
        body,
        marker,
    }
}

/// The story PR appeared (opened, reopened, synchronised): taskgate keeps
/// it. Evaluate afterwards to bring its label and gate in line.
pub fn on_story_pr_seen(
    record: &StoryRecord,
    pr: IssueNumber,
    head: &CommitSha,
    draft: bool,
) -> StoryRecord {
    let mut next = record.clone();
    if next.pr.is_some_and(|known| known != pr) {
        // Another PR than the one labelled: its labels start from nothing.
        next.labelled_shippable = false;
        next.pr_body = None;
        next.pr_ready_asked = false;
    }
    next.pr = Some(pr);
    next.pr_draft = draft;
    next.head = Some(head.clone());
    next.pr_requested = false;
    next.pr_closed = false;
    next
}

/// The story's tasks changed (a reconcile pass) or its PR did: shippable
/// or not, the story PR opened or updated, its `shippable` label and the
/// ship gate on its head brought in line. Never merges.
pub fn evaluate(record: &StoryRecord, ev: &Evaluation, ctx: &ShipContext) -> ShipDecision {
    let mut missing = missing(ev);
    if let Some(head) = ev.head.as_ref().or(record.head.as_ref()) {
        missing.extend(super::vet::foreign_lines(
            record,
            head,
            &ctx.config.commands.prefix,
        ));
    }
    let shippable = missing.is_empty();
    let mut next = record.clone();
    let building = matches!(next.state, ShipState::Building | ShipState::Shippable);
    if !building {
        return ShipDecision::unchanged(
            record,
            format!("story is {}: the gate is settled", record.state.name()),
        );
    }
    next.missing = missing.clone();
    next.state = if shippable {
        ShipState::Shippable
    } else {
        ShipState::Building
    };
    let mut effects = Vec::new();
    let body = render::render_story_pr_body(ctx.story_issue, ev.tasks, &missing, ev.loop_stats);
    match next.pr {
        None if shippable && !next.pr_requested && !next.pr_closed => {
            next.pr_requested = true;
            next.pr_body = Some(body.clone());
            effects.push(Effect::CreatePullRequest {
                repo: ctx.repo.clone(),
                head: ctx.story_branch.to_owned(),
                base: ctx.default_branch.to_owned(),
                title: crate::report::plain_text(ctx.title),
                body,
                draft: false,
            });
        }
        Some(pr) if next.pr_body.as_ref() != Some(&body) => {
            next.pr_body = Some(body.clone());
            effects.push(Effect::UpdatePullRequest {
                repo: ctx.repo.clone(),
                number: pr,
                title: None,
                body: Some(body),
            });
        }
        _ => {}
    }
    if let Some(pr) = next.pr {
        if shippable && !next.labelled_shippable {
            next.labelled_shippable = true;
            effects.extend(label_pr(ctx, pr, &[labels::SHIPPABLE], &[]));
        } else if !shippable && next.labelled_shippable {
            next.labelled_shippable = false;
            effects.extend(label_pr(ctx, pr, &[], &[labels::SHIPPABLE]));
        }
        if shippable && next.pr_draft && !next.pr_ready_asked {
            // A draft cannot be merged: shippable means ready for a person
            // to ship (SPEC §7, "opened or marked ready").
            next.pr_ready_asked = true;
            effects.push(Effect::MarkPullRequestReady {
                repo: ctx.repo.clone(),
                number: pr,
            });
        }
        if let Some(head) = ev.head.clone().or_else(|| next.head.clone()) {
            next.head = Some(head.clone());
            if next.proof_failed.as_ref().is_some_and(|f| f.head != head) {
                // The story moved on since its proof failed: a new head
                // is proven afresh when shipped.
                next.proof_failed = None;
            }
            if next.land_refused.as_ref().is_some_and(|f| f.head != head) {
                next.land_refused = None;
            }
            if next.awaiting.as_ref().is_some_and(|w| w.head != head) {
                // A new head needs its own approvals and its own ship.
                next.awaiting = None;
            }
            let blockers = gate_blockers(&next, &missing);
            effects.extend(gate(&mut next, &head, &blockers, ctx));
        }
    }
    let outcome = if shippable {
        format!("story {} is shippable", ctx.story)
    } else {
        format!(
            "story {} is not shippable: {} missing",
            ctx.story,
            missing.len()
        )
    };
    ShipDecision {
        record: next,
        effects,
        accepted: false,
        refused: None,
        outcome,
    }
}

/// What keeps the gate red besides a freeze: what is missing, and the
/// last proof's failure on its base.
pub(super) fn gate_blockers(record: &StoryRecord, missing: &[String]) -> Vec<String> {
    let mut out = missing.to_vec();
    if let Some(failure) = &record.proof_failed {
        out.extend(super::render_queue::proof_failure_lines(failure));
    }
    if let Some(refused) = &record.land_refused {
        out.extend(refused.lines.iter().cloned());
    }
    out
}

/// The `taskgate/ship-gate` check run on `head`: opened once per head,
/// updated only when its verdict or reasons change.
pub(super) fn gate(
    next: &mut StoryRecord,
    head: &CommitSha,
    missing: &[String],
    ctx: &ShipContext,
) -> Vec<Effect> {
    let key = gate_key(ctx.story, head);
    let green = missing.is_empty() && ctx.frozen.is_none();
    // The freeze is part of what was written: lifting it rewrites the gate.
    let mut missing = missing.to_vec();
    if let Some(frozen) = ctx.frozen {
        missing.push(format!("frozen: {frozen}"));
    }
    let missing = missing.as_slice();
    let mut effects = Vec::new();
    match &next.gate {
        Some(g) if g.key == key && g.green == green && g.missing == missing => return effects,
        Some(g) if g.key == key => {}
        _ => effects.push(Effect::OpenCheckRun {
            repo: ctx.repo.clone(),
            key: key.clone(),
            name: SHIP_GATE.to_owned(),
            head_sha: head.clone(),
            title: "Checking".into(),
            summary: "taskgate is checking whether this story is shippable.".into(),
        }),
    }
    let blockers = &missing[..missing.len() - usize::from(ctx.frozen.is_some())];
    let (title, summary) = render::gate_output(blockers, ctx.frozen, &ctx.config.ship_label);
    effects.push(Effect::UpdateCheckRun {
        repo: ctx.repo.clone(),
        key: key.clone(),
        update: CheckUpdate {
            status: CheckStatus::Completed,
            conclusion: Some(CheckConclusion::of(green)),
            output: Some(CheckOutput {
                title,
                summary,
                text: String::new(),
                annotations: vec![],
            }),
            retry_button: false,
            approve_button: false,
        },
    });
    next.gate = Some(GateMark {
        key,
        green,
        missing: missing.to_vec(),
    });
    effects
}

/// A person asked to ship (label, command or API). Shippable: the story
/// joins the repository's ship queue (`queued`); it is proven on the
/// current base when its turn comes (`core::ship::queue`). Otherwise
/// refused with what is missing; the label route takes the label off.
pub fn on_ship_request(record: &StoryRecord, by: &Shipper, ctx: &ShipContext) -> ShipDecision {
    let refusal = ship_refusal(record).or_else(|| {
        ctx.frozen.map(|why| ShipRefusal::Frozen {
            because: why.to_owned(),
        })
    });
    let Some(refusal) = refusal else {
        return queue(record, by, ctx);
    };
    let mut effects = Vec::new();
    if let (false, super::ShipVia::Label, Some(pr)) = (refusal.is_ignored(), by.via, record.pr) {
        let why = refusal.reasons();
        effects.extend(label_pr(ctx, pr, &[], &[&ctx.config.ship_label]));
        effects.push(comment(
            ctx,
            pr,
            render::ship_refused(&by.login, &ctx.config.ship_label, &why),
            format!(
                "ship-refused head={} missing={}",
                record.head.as_ref().map(short).unwrap_or("none"),
                why.len()
            ),
        ));
    }
    ShipDecision {
        record: record.clone(),
        effects,
        accepted: false,
        outcome: refusal.outcome(),
        refused: Some(refusal),
    }
}

/// A shippable story joins the queue: `queued`, said on the story issue.
fn queue(record: &StoryRecord, by: &Shipper, ctx: &ShipContext) -> ShipDecision {
    let (Some(pr), Some(head)) = (record.pr, record.head.as_ref()) else {
        unreachable!("ship_refusal lets through only a story with its PR and head");
    };
    let mut next = record.clone();
    next.state = ShipState::Queued;
    next.shipped_by = Some(by.clone());
    // What was shipped: only this head is proven and lands (`pin`).
    next.pinned = Some(head.clone());
    next.queued_at_ms = Some(ctx.now_ms);
    next.proof = None;
    let effects = vec![
        comment(
            ctx,
            ctx.story_issue,
            super::render_queue::queued(by, pr, short(head), ctx.queue_length),
            format!("queued pr={pr} head={} at={}", short(head), ctx.now_ms),
        ),
        super::queue::advance(ctx),
    ];
    ShipDecision {
        record: next,
        effects,
        accepted: true,
        refused: None,
        outcome: format!(
            "ship accepted from {} via {}: #{pr} queued ({} ahead)",
            by.login,
            by.via.name(),
            ctx.queue_length
        ),
    }
}

/// GitHub refused the merge (the executor told the story issue why): the
/// story is shippable again, for another try once fixed.
pub fn on_merge_refused(record: &StoryRecord, why: &str, ctx: &ShipContext) -> ShipDecision {
    if record.state != ShipState::Shipping {
        return ShipDecision::unchanged(record, "merge refused while not shipping: nothing to do");
    }
    let mut next = record.clone();
    next.state = ShipState::Shippable;
    next.shipped_by = None;
    next.queued_at_ms = None;
    next.proof = None;
    ShipDecision {
        effects: vec![super::queue::advance(ctx)],
        outcome: format!("merge refused ({why}): the story is shippable again"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The story PR was closed without merging: taskgate forgets it and does
/// not open another by itself; a shipping story is shippable again.
pub fn on_story_pr_closed_unmerged(record: &StoryRecord, ctx: &ShipContext) -> ShipDecision {
    let Some(pr) = record.pr else {
        return ShipDecision::unchanged(record, "no story PR is known: nothing to do");
    };
    let mut next = record.clone();
    next.pr = None;
    next.pr_closed = true;
    next.labelled_shippable = false;
    next.gate = None;
    next.pr_body = None;
    let mut effects = vec![comment(
        ctx,
        ctx.story_issue,
        render::closed_unmerged(pr.get()),
        format!("closed-unmerged pr={pr}"),
    )];
    if matches!(
        next.state,
        ShipState::Queued | ShipState::Proving | ShipState::Shipping
    ) {
        next.state = ShipState::Shippable;
        next.shipped_by = None;
        next.queued_at_ms = None;
        next.proof = None;
        effects.push(super::queue::advance(ctx));
    }
    ShipDecision {
        effects,
        outcome: format!("story PR #{pr} closed without merging"),
        ..ShipDecision::unchanged(&next, "")
    }
}

#[cfg(test)]
pub(super) mod tests;
