//! Check-run links that come after the evidence (issue 50, item 3): the
//! failure loop writes a todo as soon as a run finishes, and a gate's
//! check run may not have its id yet then (its create still waiting on
//! GitHub's answer), so the evidence names the gate without a link.
//!
//! Owns: which gates of a recorded failure still lack their check run
//! ([`missing_check_runs`]) and the transition that adds the links once
//! the shell knows them ([`on_check_runs_known`]), editing the open
//! todo's body when it shows that failure.
//! Must not: do IO, or know how check runs are keyed or recorded (the
//! task decides which check runs to wait for, the shell reads their ids).

use std::collections::BTreeMap;

use super::evidence::kept_url;
use super::{render_todo_body, LoopContext, LoopDecision, LoopOutcome, LoopState, Step};

/// The gates of the failure recorded for `attempt` whose check run the
/// evidence does not link yet; empty when no such failure is kept.
pub fn missing_check_runs(state: &LoopState, attempt: u32) -> Vec<String> {
    state
        .failures
        .iter()
        .rev()
        .find(|f| f.attempt == attempt)
        .map(|f| {
            f.gates
                .iter()
                .filter(|g| g.check_run.is_none())
                .map(|g| g.gate.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The check runs of `attempt` are known now (`check_runs`: gate → its
/// `html_url`): the failure recorded for it links those it lacked, and
/// the open todo, when it shows that failure, has its body written again.
/// A link already there, or a failure no longer kept, changes nothing.
pub fn on_check_runs_known(
    state: &LoopState,
    attempt: u32,
    check_runs: &BTreeMap<String, String>,
    now: i64,
    ctx: &LoopContext,
) -> LoopDecision {
    let mut step = Step::new(state, ctx);
    let Some(failure) = step
        .s
        .failures
        .iter_mut()
        .rev()
        .find(|f| f.attempt == attempt)
    else {
        return step.done(LoopOutcome::Nothing);
    };
    let mut linked = 0;
    for g in failure.gates.iter_mut().filter(|g| g.check_run.is_none()) {
        g.check_run = kept_url(check_runs.get(&g.gate).map(String::as_str));
        linked += usize::from(g.check_run.is_some());
    }
    if linked == 0 {
        return Step::new(state, ctx).done(LoopOutcome::Nothing);
    }
    let shown = step.latest_failure().is_some_and(|f| f.attempt == attempt);
    if let Some(todo) = step.s.open.clone().filter(|_| shown) {
        let body = render_todo_body(&step.view(&todo, now));
        step.set_body(&todo.marker, body);
    }
    step.done(LoopOutcome::Linked)
}
