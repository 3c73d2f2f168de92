//! A task's run as it goes: waiting, held, started, finished, skipped
//! ([`on_run_progress`]): the check runs updated, the verdict concluded,
//! and a proven task merged in `auto` review.
//!
//! Owns: the transitions of a run's progress and what a finished run
//! concludes. Must not: start runs (the parent module queues them) or do
//! IO.

use super::*;

pub fn on_run_progress(
    record: &TaskRecord,
    progress: &RunProgress,
    ctx: &TaskContext,
) -> TaskDecision {
    let Some(current) = record
        .current
        .as_ref()
        .filter(|a| a.number == progress.attempt() && a.status.is_active())
    else {
        return TaskDecision::unchanged(
            record,
            format!(
                "attempt {} is not the task's active attempt: ignored",
                progress.attempt()
            ),
        );
    };
    // Every gate's check of the attempt moved to the same status.
    let each_gate = |status, conclusion: Option<CheckConclusion>, output: CheckOutput, retry| {
        (current.gates.iter())
            .map(|g| {
                let key = check_key(ctx.story, ctx.task, current.number, g);
                update_check(ctx, key, status, conclusion, Some(output.clone()), retry)
            })
            .collect::<Vec<Effect>>()
    };
    let mut next = record.clone();
    let attempt = next.current.as_mut().expect("checked above");
    match progress {
        RunProgress::Waiting { ahead, .. } => TaskDecision {
            effects: each_gate(
                CheckStatus::Queued,
                None,
                render::waiting_output(*ahead),
                false,
            ),
            outcome: format!("attempt {} waits behind {ahead} run(s)", current.number),
            ..TaskDecision::unchanged(record, "")
        },
        RunProgress::Held { low, .. } => TaskDecision {
            effects: each_gate(CheckStatus::Queued, None, render::held_output(low), false),
            outcome: format!("attempt {} held: {}", current.number, low.says()),
            ..TaskDecision::unchanged(record, "")
        },
        RunProgress::Started { .. } => {
            if attempt.status == AttemptStatus::Running {
                return TaskDecision::unchanged(record, "already running");
            }
            attempt.status = AttemptStatus::Running;
            attempt.started_at = Some(ctx.now);
            TaskDecision {
                effects: each_gate(
                    CheckStatus::InProgress,
                    None,
                    CheckOutput {
                        title: "Running".into(),
                        summary: render::running_summary(current.number, &current.sha),
                        text: String::new(),
                        annotations: vec![],
                    },
                    false,
                ),
                outcome: format!("attempt {} started", current.number),
                ..TaskDecision::unchanged(&next, "")
            }
        }
        RunProgress::Skipped { why, .. } => {
            attempt.status = AttemptStatus::Skipped;
            attempt.finished_at = Some(ctx.now);
            let effects = each_gate(
                CheckStatus::Completed,
                Some(CheckConclusion::Cancelled),
                render::skipped_output(why),
                true,
            );
            TaskDecision {
                effects,
                outcome: format!("attempt {} not run: {why}", current.number),
                ..TaskDecision::unchanged(&next, "")
            }
        }
        RunProgress::Finished {
            report, workspace, ..
        } => finish(&next, current, report, workspace, ctx),
    }
}

fn finish(
    record: &TaskRecord,
    current: &Attempt,
    report: &RunReport,
    workspace: &str,
    ctx: &TaskContext,
) -> TaskDecision {
    if let Some(why) = &report.runner_fault {
        return crate::task::runner_fault::on_runner_fault(record, current, why, ctx);
    }
    let mut next = record.clone();
    let mut effects = Vec::new();
    for gate in &current.gates {
        let key = check_key(ctx.story, ctx.task, current.number, gate);
        let verdict = match report.gates.iter().find(|g| &g.gate == gate) {
            Some(result) => {
                effects.extend(completed_check(ctx, key, result, workspace));
                GateVerdict {
                    sha: current.sha.clone(),
                    attempt: current.number,
                    passed: result.passed,
                    kind: result.kind,
                    summary: result.summary.clone(),
                }
            }
            None => {
                // The runner said nothing about this gate: a runner fault.
                effects.push(update_check(
                    ctx,
                    key,
                    CheckStatus::Completed,
                    Some(CheckConclusion::Failure),
                    Some(render::missing_gate_output(gate)),
                    true,
                ));
                GateVerdict {
                    sha: current.sha.clone(),
                    attempt: current.number,
                    passed: false,
                    kind: Some(crate::classify::FailureKind::ToolingError),
                    summary: Some("the runner reported nothing for this gate".into()),
                }
            }
        };
        next.verdicts.insert(gate.clone(), verdict);
    }
    conclude(next, current, ctx, effects)
}

/// Completes a gate's check run with its result: the first 50 annotations
/// with the conclusion, then the rest (GitHub takes 50 per request and
/// appends the rest).
fn completed_check(
    ctx: &TaskContext,
    key: String,
    result: &GateResult,
    workspace: &str,
) -> Vec<Effect> {
    let output = render_check_output(result, workspace);
    let batches = annotation_batches(&output.annotations);
    let first = CheckOutput {
        annotations: batches.first().map(|b| b.to_vec()).unwrap_or_default(),
        ..output.clone()
    };
    let mut effects = vec![update_check(
        ctx,
        key.clone(),
        CheckStatus::Completed,
        Some(CheckConclusion::of(result.passed)),
        Some(first),
        true,
    )];
    for batch in batches.iter().skip(1) {
        effects.push(update_check(
            ctx,
            key.clone(),
            CheckStatus::Completed,
            None,
            Some(CheckOutput {
                title: output.title.clone(),
                summary: output.summary.clone(),
                text: String::new(),
                annotations: batch.to_vec(),
            }),
            false,
        ));
    }
    effects
}

/// The attempt's verdict once every gate is recorded: passed when every
/// gate of the task passed at its commit. A pass moves the task to review
/// (and merges it in auto review), a failure to `test-failed`.
fn conclude(
    mut next: TaskRecord,
    current: &Attempt,
    ctx: &TaskContext,
    mut effects: Vec<Effect>,
) -> TaskDecision {
    let passed = ctx.gates.iter().all(|g| {
        next.verdicts
            .get(g)
            .is_some_and(|v| v.passed && v.sha == current.sha)
    });
    let attempt = next.current.as_mut().expect("current exists");
    attempt.status = if passed {
        AttemptStatus::Passed
    } else {
        AttemptStatus::Failed
    };
    attempt.finished_at = Some(ctx.now);
    next.state = Some(if passed {
        TaskState::Review
    } else {
        TaskState::TestFailed
    });
    if passed && crate::task::merged_past::proven_after_merge(&next, &current.sha) {
        crate::task::merged_past::complete(&mut next, &current.sha, ctx);
    } else if passed {
        effects.extend(merge_if_ready(&next, ctx));
    }
    effects.extend(crate::task::review_text::checker_report(
        &next, current, ctx,
    ));
    effects.push(reconcile(ctx));
    TaskDecision {
        record: next,
        effects,
        run: None,
        cancelled: None,
        verdict: Some(passed),
        outcome: format!(
            "attempt {} {}",
            current.number,
            if passed { "passed" } else { "failed" }
        ),
    }
}

/// A person accepted `sha` despite its gates (`/approve --override`).
pub(super) fn overridden_at(record: &TaskRecord, sha: &CommitSha) -> bool {
    record
        .overrides
        .last()
        .is_some_and(|o| o.sha.as_ref() == Some(sha))
}

/// Every gate has passed at `sha`.
pub(in crate::task) fn proven_at(record: &TaskRecord, sha: &CommitSha, ctx: &TaskContext) -> bool {
    !ctx.gates.is_empty()
        && ctx.gates.iter().all(|g| {
            record
                .verdicts
                .get(g)
                .is_some_and(|v| v.passed && v.sha == *sha)
        })
}

/// In `auto` review a proven task whose PR is ready for review is merged
/// into the story branch (SPEC §3); `human` review waits for `/approve`.
pub(super) fn merge_if_ready(record: &TaskRecord, ctx: &TaskContext) -> Option<Effect> {
    let (pr, head) = (record.pr?, record.head.as_ref()?);
    (ctx.review == ReviewMode::Auto && !pr.draft && proven_at(record, head, ctx))
        .then(|| super::merge_pull(pr.number, head, ctx, false))
}
