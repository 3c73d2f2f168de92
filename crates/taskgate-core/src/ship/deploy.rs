//! After the landing: the story PR merged (through a ship, or past the
//! gate), the deploy workflow, the post-deploy validation, and `needs-fix`
//! with its fix issue (and, for a failed validation, the rollback).

use std::collections::BTreeMap;

use super::decide::{comment, label_pr, ShipContext, ShipDecision};
use super::render;
use super::{ShipState, StoryRecord, StoryRunRef, StoryWorkflow};
use crate::effect::Effect;
use crate::ids::CommitSha;
use crate::story::labels;

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
pub fn on_story_pr_merged(
    record: &StoryRecord,
    merge_commit: Option<&CommitSha>,
    ctx: &ShipContext,
) -> ShipDecision {
    let mut next = record.clone();
    let pr = record.pr.map(|p| p.get()).unwrap_or_default();
    match record.state {
        ShipState::Shipping => {}
        ShipState::Building | ShipState::Shippable | ShipState::Queued | ShipState::Proving => {
            next.merged_past_gate = true;
            next.pr_closed = true;
            let mut effects = vec![comment(
                ctx,
                ctx.story_issue,
                render::merged_past_gate(pr, &record.missing),
                format!("merged-past-gate pr={pr}"),
            )];
            if matches!(record.state, ShipState::Queued | ShipState::Proving) {
                // Out of the queue: the stories behind it move up.
                next.state = ShipState::Shippable;
                next.queued_at_ms = None;
                next.proof = None;
                effects.push(super::queue::advance(ctx));
            }
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
    next.queued_at_ms = None;
    // The queue's figures (`figures`): when it landed, after how long.
    next.landed_at_ms = Some(ctx.now_ms);
    next.queue_wait_ms = record.queued_at_ms.map(|at| (ctx.now_ms - at).max(0));
    // A fast-forward lands the tested commit itself; the story PR's merge
    // lands as GitHub's merge commit (of the proven tree).
    next.landed = match record.proof.as_ref() {
        Some(p)
            if matches!(
                p.landing.via,
                super::LandVia::PullRequest { .. } | super::LandVia::MergeQueue
            ) =>
        {
            merge_commit.cloned().or_else(|| p.commit.clone())
        }
        Some(p) => p.commit.clone(),
        None => None,
    };
    let mut d = match &ctx.config.deploy_workflow {
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
    };
    // Landed: the next story in the queue is proven on this new base.
    d.effects.push(super::queue::advance(ctx));
    d
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
    let d = needs_fix(
        next,
        ctx,
        fix.clone(),
        format!("validation run {run} failed"),
        Some(fix),
    );
    // What landed is taken out again: a revert, proven before it lands.
    let ask = super::RollbackAsk {
        by: None,
        because: format!("post-deploy validation run {run} failed"),
        now: None,
    };
    match super::start_rollback(&d.record, ask, ctx) {
        Ok(rollback) => ShipDecision {
            effects: [d.effects, rollback.effects].concat(),
            outcome: format!("{}; {}", d.outcome, rollback.outcome),
            ..rollback
        },
        // Nothing taskgate landed to revert (merged by an older version).
        Err(_) => d,
    }
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
            crate::story::markers::encode_value(ctx.story.as_str()),
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
                crate::report::plain_text(ctx.title)
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
            child_repo: None,
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
