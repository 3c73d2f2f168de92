//! The transitions of a story's ship gate.

use std::collections::{BTreeMap, BTreeSet};

use super::refusal::{ship_refusal, ShipRefusal};
use super::render;
use super::{GateMark, ShipState, Shipper, StoryRecord, StoryRunRef, StoryWorkflow};
use crate::core::config::RepoConfig;
use crate::core::effect::{CheckStatus, CheckUpdate, Effect};
use crate::core::plan::TaskState;
use crate::core::report::CheckOutput;
use crate::core::story::labels;
use crate::ids::{CommitSha, IssueNumber, RepoName};

/// The check run on the story PR head.
pub const SHIP_GATE: &str = "taskgate/ship-gate";

/// What the transitions need to know about the story and its repository.
#[derive(Debug, Clone)]
pub struct ShipContext<'a> {
    pub repo: &'a RepoName,
    /// The story key (`file:momentum`).
    pub story: &'a str,
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
}

/// The story's tasks and milestones, and the story PR head when known.
#[derive(Debug, Clone)]
pub struct Evaluation<'a> {
    pub tasks: &'a [TaskProof],
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
    fn unchanged(record: &StoryRecord, outcome: impl Into<String>) -> ShipDecision {
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
fn gate_key(story: &str, head: &CommitSha) -> String {
    format!(
        "story={} ship-gate head={}",
        crate::core::story::markers::encode_value(story),
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
                    crate::core::report::plain_text(&top.title),
                    leaves.len()
                ));
            }
        } else if top.state != Some(TaskState::Completed) {
            out.push(format!(
                "task `{}` ({}) is {}",
                top.id,
                crate::core::report::plain_text(&top.title),
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
fn label_pr(ctx: &ShipContext, pr: IssueNumber, add: &[&str], remove: &[&str]) -> Vec<Effect> {
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

fn comment(ctx: &ShipContext, issue: IssueNumber, body: String, marker: String) -> Effect {
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
    let missing = missing(ev);
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
    let body = render::render_story_pr_body(ctx.story_issue, ev.tasks, &missing);
    match next.pr {
        None if shippable && !next.pr_requested && !next.pr_closed => {
            next.pr_requested = true;
            next.pr_body = Some(body.clone());
            effects.push(Effect::CreatePullRequest {
                repo: ctx.repo.clone(),
                head: ctx.story_branch.to_owned(),
                base: ctx.default_branch.to_owned(),
                title: crate::core::report::plain_text(ctx.title),
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
            effects.extend(gate(&mut next, &head, &missing, ctx));
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

/// The `taskgate/ship-gate` check run on `head`: opened once per head,
/// updated only when its verdict or reasons change.
fn gate(
    next: &mut StoryRecord,
    head: &CommitSha,
    missing: &[String],
    ctx: &ShipContext,
) -> Vec<Effect> {
    let key = gate_key(ctx.story, head);
    let green = missing.is_empty();
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
    let (title, summary) = render::gate_output(missing, &ctx.config.ship_label);
    effects.push(Effect::UpdateCheckRun {
        repo: ctx.repo.clone(),
        key: key.clone(),
        update: CheckUpdate {
            status: CheckStatus::Completed,
            conclusion: Some(if green { "success" } else { "failure" }.into()),
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

/// A person asked to ship (label, command or API). Shippable: the story PR
/// is merged at its head and the story is `shipping`. Otherwise refused
/// with what is missing; the label route takes the label off again.
pub fn on_ship_request(record: &StoryRecord, by: &Shipper, ctx: &ShipContext) -> ShipDecision {
    let Some(refusal) = ship_refusal(record) else {
        return ship(record, by, ctx);
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

/// The merge of a shippable story: `shipping`, said on the story issue.
fn ship(record: &StoryRecord, by: &Shipper, ctx: &ShipContext) -> ShipDecision {
    let (Some(pr), Some(head)) = (record.pr, record.head.as_ref()) else {
        unreachable!("ship_refusal lets through only a story with its PR and head");
    };
    let mut next = record.clone();
    next.state = ShipState::Shipping;
    next.shipped_by = Some(by.clone());
    let effects = vec![
        comment(
            ctx,
            ctx.story_issue,
            render::shipping(&by.login, by.via, pr, short(head)),
            format!("shipping pr={pr} head={}", short(head)),
        ),
        Effect::MergePullRequest {
            repo: ctx.repo.clone(),
            number: pr,
            sha: head.clone(),
            method: ctx.config.merge_method,
            title: format!("{} (#{pr})", crate::core::report::plain_text(ctx.title)),
            report_to: ctx.story_marker.to_owned(),
        },
    ];
    ShipDecision {
        record: next,
        effects,
        accepted: true,
        refused: None,
        outcome: format!(
            "ship accepted from {} via {}: merging #{pr}",
            by.login,
            by.via.name()
        ),
    }
}

/// GitHub refused the merge (the executor told the story issue why): the
/// story is shippable again, for another try once fixed.
pub fn on_merge_refused(record: &StoryRecord, why: &str) -> ShipDecision {
    if record.state != ShipState::Shipping {
        return ShipDecision::unchanged(record, "merge refused while not shipping: nothing to do");
    }
    let mut next = record.clone();
    next.state = ShipState::Shippable;
    next.shipped_by = None;
    ShipDecision {
        outcome: format!("merge refused ({why}): the story is shippable again"),
        ..ShipDecision::unchanged(&next, "")
    }
}

fn dispatch(ctx: &ShipContext, workflow: &str, which: StoryWorkflow) -> Effect {
    Effect::DispatchWorkflow {
        repo: ctx.repo.clone(),
        workflow: workflow.to_owned(),
        git_ref: ctx.default_branch.to_owned(),
        // No inputs: a deploy workflow need not declare any, and GitHub
        // refuses inputs a workflow does not declare.
        inputs: BTreeMap::new(),
        report_to: Some(ctx.story_marker.to_owned()),
        attempt: None,
        story_run: Some(StoryRunRef {
            story: ctx.story.to_owned(),
            workflow: which,
        }),
    }
}

/// The story PR was merged. Through a ship request: the deploy workflow is
/// dispatched (or, with none configured, the story is deployed at once).
/// Any other merge went past the gate: recorded and said on the story issue.
pub fn on_story_pr_merged(record: &StoryRecord, ctx: &ShipContext) -> ShipDecision {
    let mut next = record.clone();
    let pr = record.pr.map(|p| p.0).unwrap_or_default();
    match record.state {
        ShipState::Shipping => {}
        ShipState::Building | ShipState::Shippable => {
            next.merged_past_gate = true;
            next.pr_closed = true;
            let effects = vec![comment(
                ctx,
                ctx.story_issue,
                render::merged_past_gate(pr, &record.missing),
                format!("merged-past-gate pr={pr}"),
            )];
            return ShipDecision {
                record: next,
                effects,
                accepted: false,
                refused: None,
                outcome: format!("story PR #{pr} merged past the ship gate"),
            };
        }
        _ => return ShipDecision::unchanged(record, "story PR merged again: nothing to do"),
    }
    next.pr_closed = true;
    match &ctx.config.deploy_workflow {
        Some(workflow) => ShipDecision {
            record: next,
            effects: vec![
                comment(
                    ctx,
                    ctx.story_issue,
                    render::deploying(pr, workflow),
                    format!("deploying pr={pr}"),
                ),
                dispatch(ctx, workflow, StoryWorkflow::Deploy),
            ],
            accepted: false,
            refused: None,
            outcome: format!("story PR #{pr} merged: deploy workflow {workflow} dispatched"),
        },
        None => deployed(
            next,
            ctx,
            render::deployed_without_workflow(pr),
            format!("story PR #{pr} merged; no deploy workflow: deployed"),
        ),
    }
}

/// The story is deployed: labelled, told, and validated next if a
/// validation workflow is configured.
fn deployed(
    mut next: StoryRecord,
    ctx: &ShipContext,
    note: String,
    outcome: String,
) -> ShipDecision {
    next.state = ShipState::Deployed;
    let mut effects = Vec::new();
    if let Some(pr) = next.pr {
        effects.extend(label_pr(ctx, pr, &[labels::DEPLOYED], &[]));
    }
    let note = match &ctx.config.validation_workflow {
        Some(w) => format!("{note} Validation workflow `{w}` dispatched."),
        None => format!("{note} No `validation_workflow` is configured, so nothing validates the deploy; the story stays `deployed`."),
    };
    effects.push(comment(ctx, ctx.story_issue, note, "deployed".into()));
    if let Some(w) = &ctx.config.validation_workflow {
        effects.push(dispatch(ctx, w, StoryWorkflow::Validation));
    }
    ShipDecision {
        record: next,
        effects,
        accepted: false,
        refused: None,
        outcome,
    }
}

/// The deploy workflow run `run` finished. `report` says how (conclusion,
/// link) for the people reading the story issue.
pub fn on_deploy_finished(
    record: &StoryRecord,
    run: u64,
    success: bool,
    report: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    if record.state != ShipState::Shipping {
        return ShipDecision::unchanged(
            record,
            format!(
                "deploy run {run} finished while {}: ignored",
                record.state.name()
            ),
        );
    }
    let mut next = record.clone();
    next.deploy_run = Some(run);
    if success {
        return deployed(
            next,
            ctx,
            render::deploy_succeeded(report),
            format!("deploy run {run} succeeded"),
        );
    }
    needs_fix(
        next,
        ctx,
        render::deploy_failed(report),
        format!("deploy run {run} failed"),
        None,
    )
}

/// The validation workflow run `run` finished: `review-ready`, or
/// `needs-fix` with an issue on the story saying what failed.
pub fn on_validation_finished(
    record: &StoryRecord,
    run: u64,
    success: bool,
    report: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    if record.state != ShipState::Deployed {
        return ShipDecision::unchanged(
            record,
            format!(
                "validation run {run} finished while {}: ignored",
                record.state.name()
            ),
        );
    }
    let mut next = record.clone();
    next.validation_run = Some(run);
    if success {
        next.state = ShipState::ReviewReady;
        let mut effects = Vec::new();
        if let Some(pr) = next.pr {
            effects.extend(label_pr(ctx, pr, &[labels::REVIEW_READY], &[]));
        }
        effects.push(comment(
            ctx,
            ctx.story_issue,
            render::validation_passed(report),
            "review-ready".into(),
        ));
        return ShipDecision {
            record: next,
            effects,
            accepted: false,
            refused: None,
            outcome: format!("validation run {run} passed: review-ready"),
        };
    }
    let fix = render::validation_failed(report);
    needs_fix(
        next,
        ctx,
        fix.clone(),
        format!("validation run {run} failed"),
        Some(fix),
    )
}

/// GitHub refused to start the deploy or validation workflow (the executor
/// told the story issue why): the story needs a fix.
pub fn on_workflow_refused(
    record: &StoryRecord,
    which: StoryWorkflow,
    why: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let expected = match which {
        StoryWorkflow::Deploy => ShipState::Shipping,
        StoryWorkflow::Validation => ShipState::Deployed,
    };
    if record.state != expected {
        return ShipDecision::unchanged(record, "workflow refused while not waiting for it");
    }
    needs_fix(
        record.clone(),
        ctx,
        render::workflow_refused(which.name(), why),
        format!("the {} workflow could not start", which.name()),
        None,
    )
}

fn needs_fix(
    mut next: StoryRecord,
    ctx: &ShipContext,
    note: String,
    outcome: String,
    fix_issue: Option<String>,
) -> ShipDecision {
    next.state = ShipState::NeedsFix;
    let mut effects = Vec::new();
    if let Some(pr) = next.pr {
        effects.extend(label_pr(ctx, pr, &[labels::NEEDS_FIX], &[]));
    }
    effects.push(comment(ctx, ctx.story_issue, note, "needs-fix".into()));
    if let Some(body) = fix_issue {
        next.fixes += 1;
        let marker = format!(
            "story={} fix={}",
            crate::core::story::markers::encode_value(ctx.story),
            next.fixes
        );
        let mut labels_needed: Vec<Effect> = [labels::BRANCH_TODO, labels::NEEDS_FIX]
            .iter()
            .filter(|n| !ctx.labels.contains(**n))
            .filter_map(|n| labels::spec(n))
            .map(|spec| Effect::EnsureLabel {
                repo: ctx.repo.clone(),
                name: spec.name,
                color: spec.color,
                description: spec.description,
            })
            .collect();
        effects.append(&mut labels_needed);
        effects.push(Effect::CreateIssue {
            repo: ctx.repo.clone(),
            marker: marker.clone(),
            title: format!(
                "Fix {} — post-deploy validation failed",
                crate::core::report::plain_text(ctx.title)
            ),
            body: format!("Story: #{}\n\n{body}", ctx.story_issue),
            labels: vec![labels::BRANCH_TODO.into(), labels::NEEDS_FIX.into()],
            assignees: vec![],
        });
        effects.push(Effect::LinkSubIssue {
            repo: ctx.repo.clone(),
            parent: ctx.story_marker.to_owned(),
            child: marker,
            replace_parent: false,
        });
    }
    ShipDecision {
        record: next,
        effects,
        accepted: false,
        refused: None,
        outcome,
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
    if next.state == ShipState::Shipping {
        next.state = ShipState::Shippable;
        next.shipped_by = None;
    }
    ShipDecision {
        effects: vec![comment(
            ctx,
            ctx.story_issue,
            render::closed_unmerged(pr.0),
            format!("closed-unmerged pr={pr}"),
        )],
        outcome: format!("story PR #{pr} closed without merging"),
        ..ShipDecision::unchanged(&next, "")
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
