//! Where runs meet the failure loop: a finished run's verdict is handed to
//! `core::failure`, whose branch todos, bounds and escalation then follow,
//! and an escalated task is `blocked`.

use super::{TaskContext, TaskDecision};
use crate::classify::FailureKind;
use crate::config::{Limits, RepoConfig};
use crate::failure::{
    self, failing_tests, is_task_blocked, log_excerpt, FailedRun, GateFailure, LoopContext,
    LoopDecision, LoopOutcome, RunLinks, TESTS_KEPT,
};
use crate::plan::{Task, TaskState};
use crate::report::RunReport;
use crate::CheckConclusion;

/// What the failure loop needs beyond the task's run context.
#[derive(Debug, Clone)]
pub struct LoopInputs<'a> {
    pub task: &'a Task,
    pub config: &'a RepoConfig,
    /// Story-effective ([`RepoConfig::effective_limits`]).
    pub limits: Limits,
    pub auto_fix: bool,
    /// Other tasks of the story with an open branch todo.
    pub open_todos_in_story: u32,
    /// Where GitHub shows the run (check runs, compare links), from the
    /// shell; empty when it does not know.
    pub links: RunLinks,
}

pub fn loop_context<'a>(
    ctx: &'a TaskContext<'a>,
    inputs: &'a LoopInputs<'a>,
    human_involved: bool,
) -> LoopContext<'a> {
    LoopContext {
        repo: ctx.repo,
        story: ctx.story,
        task: inputs.task,
        task_marker: ctx.task_marker,
        task_branch: ctx.branch,
        config: inputs.config,
        limits: &inputs.limits,
        auto_fix: inputs.auto_fix,
        open_todos_in_story: inputs.open_todos_in_story,
        human_involved,
    }
}

/// Applies the failure loop to a decision that ended a run with a verdict.
pub fn follow_verdict(
    mut d: TaskDecision,
    report: &RunReport,
    ctx: &TaskContext,
    inputs: &LoopInputs,
) -> TaskDecision {
    let (Some(passed), Some(current)) = (d.verdict, d.record.current.clone()) else {
        return d;
    };
    let lctx = loop_context(ctx, inputs, d.record.human_involved);
    let todo_role = d.record.failure.open.as_ref().map(|t| t.role.clone());
    let person = d.record.human_involved;
    let LoopDecision {
        state,
        effects,
        outcome,
    } = if passed {
        failure::on_green_run(&d.record.failure, &current.sha, ctx.now, &lctx)
    } else {
        let gates = failing_gates(&d, report, ctx.gates, &inputs.links);
        let run = FailedRun {
            attempt: current.number,
            sha: current.sha.clone(),
            gates,
            // The compare link from `last_green` shows the diff; the files
            // it changed are listed when the runner recorded them.
            changes_since_green: inputs
                .links
                .changed_since_green
                .as_deref()
                .map(failure::changed_files_text),
            now: ctx.now,
            last_green: d.record.failure.last_green.clone(),
            repo_url: inputs.links.repo_url.clone(),
        };
        failure::on_failed_run(&d.record.failure, &run, &lctx)
    };
    d.record.failure = state;
    let mut effects = effects;
    if passed {
        d.record.human_involved = false;
    } else if is_task_blocked(&d.record.failure).is_some() {
        d.record.state = Some(TaskState::Blocked);
    }
    if let (LoopOutcome::Closed { .. }, Some(role)) = (outcome, &todo_role) {
        // The todo's fix is green: taskgate's own draft may be done.
        let ready = super::ready::ready_when_fixed(&mut d.record, role, person, ctx, inputs.config);
        effects.extend(ready);
    }
    // Branch-todo effects go before the reconcile pass that relabels.
    let reconcile = d
        .effects
        .iter()
        .position(|e| matches!(e, crate::Effect::Reconcile { .. }))
        .unwrap_or(d.effects.len());
    d.effects.splice(reconcile..reconcile, effects);
    if !passed && outcome != LoopOutcome::Nothing {
        d.effects.extend(await_check_runs(&d.record, &current, ctx));
    }
    if outcome == LoopOutcome::Proposed {
        // Manual mode: the failing check runs offer to open the proposed todo.
        let buttons = ctx.gates.iter().filter(|g| {
            d.record
                .verdicts
                .get(*g)
                .is_some_and(|v| !v.passed && v.sha == current.sha && v.attempt == current.number)
        });
        let updates: Vec<_> = buttons
            .map(|gate| crate::Effect::UpdateCheckRun {
                repo: ctx.repo.clone(),
                key: super::check_key(ctx.story, ctx.task, current.number, gate),
                update: crate::CheckUpdate {
                    status: crate::CheckStatus::Completed,
                    conclusion: Some(CheckConclusion::Failure),
                    output: None,
                    retry_button: true,
                    approve_button: true,
                },
            })
            .collect();
        d.effects.splice(reconcile..reconcile, updates);
    }
    if outcome != LoopOutcome::Nothing {
        d.outcome = format!("{}; failure loop: {outcome:?}", d.outcome);
    }
    d
}

/// The evidence just recorded for `current` names a gate this attempt
/// ran without its check run (its create had no answer yet when the run
/// finished): wait for each such check run, so the todo links it then
/// ([`on_check_runs_known`]). A gate red from an earlier attempt at the
/// same commit has no check run in this one, and is not waited for; nor
/// is a milestone's (its evidence links no check runs yet).
fn await_check_runs(
    record: &super::TaskRecord,
    current: &super::Attempt,
    ctx: &TaskContext,
) -> Vec<crate::Effect> {
    if ctx.task.task().is_none() {
        return vec![];
    }
    failure::missing_check_runs(&record.failure, current.number)
        .into_iter()
        .filter(|gate| current.gates.contains(gate))
        .map(|gate| crate::Effect::AwaitCheckRun {
            repo: ctx.repo.clone(),
            key: super::check_key(ctx.story, ctx.task, current.number, &gate),
            attempt: crate::AttemptRef {
                story: ctx.story.clone(),
                task: ctx.task.clone(),
                attempt: current.number,
            },
        })
        .collect()
}

/// The check runs of `attempt` have their ids now (`inputs.links`): the
/// failure recorded for it links them, and its open todo shows them.
pub fn on_check_runs_known(
    record: &super::TaskRecord,
    attempt: u32,
    ctx: &TaskContext,
    inputs: &LoopInputs,
) -> TaskDecision {
    let lctx = loop_context(ctx, inputs, record.human_involved);
    let ld = failure::on_check_runs_known(
        &record.failure,
        attempt,
        &inputs.links.check_runs,
        ctx.now,
        &lctx,
    );
    let mut record = record.clone();
    record.failure = ld.state;
    TaskDecision {
        record,
        effects: ld.effects,
        run: None,
        cancelled: None,
        verdict: None,
        outcome: format!("check runs of attempt {attempt} known: {:?}", ld.outcome),
    }
}

/// A periodic look at a task's open branch todo: its lifetime bound may
/// have passed, escalating it; an escalated task is `blocked`, and the
/// story's issues are relabelled by a reconcile pass.
pub fn on_lifetime_tick(
    record: &super::TaskRecord,
    ctx: &TaskContext,
    inputs: &LoopInputs,
) -> TaskDecision {
    let lctx = loop_context(ctx, inputs, record.human_involved);
    let ld = failure::on_tick(&record.failure, ctx.now, &lctx);
    let mut record = record.clone();
    record.failure = ld.state;
    let mut effects = ld.effects;
    if is_task_blocked(&record.failure).is_some() && record.state != Some(TaskState::Blocked) {
        record.state = Some(TaskState::Blocked);
        effects.push(crate::Effect::Reconcile {
            repo: ctx.repo.clone(),
            story: ctx.story.to_owned(),
            round: 0,
        });
    }
    TaskDecision {
        record,
        effects,
        run: None,
        cancelled: None,
        verdict: None,
        outcome: format!("tick: {:?}", ld.outcome),
    }
}

/// The gates that are red at the attempt's commit, with their commands,
/// failing tests and log excerpt from the report when this run ran them,
/// and their check runs.
fn failing_gates(
    d: &TaskDecision,
    report: &RunReport,
    plan_gates: &[String],
    links: &RunLinks,
) -> Vec<GateFailure> {
    let Some(current) = &d.record.current else {
        return vec![];
    };
    // In plan order: the first failing gate names the branch todo.
    plan_gates
        .iter()
        .filter_map(|gate| Some((gate, d.record.verdicts.get(gate)?)))
        .filter(|(_, v)| !v.passed && v.sha == current.sha)
        .map(|(gate, v)| {
            let ran = report.gates.iter().find(|g| &g.gate == gate);
            let (tests, tests_failed) = ran
                .map(|g| failing_tests(g, TESTS_KEPT))
                .unwrap_or_default();
            GateFailure {
                gate: gate.clone(),
                kind: v.kind.unwrap_or(FailureKind::Unknown),
                summary: v.summary.clone().unwrap_or_default(),
                commands: ran
                    .map(|g| {
                        g.commands
                            .iter()
                            .filter(|c| !c.passed())
                            .map(|c| c.cmd.clone())
                            .collect()
                    })
                    .unwrap_or_default(),
                tests,
                tests_failed,
                excerpt: ran.and_then(log_excerpt),
                check_run: links.check_runs.get(gate).cloned(),
            }
        })
        .collect()
}
