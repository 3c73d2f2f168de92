//! Property tests: the loop's invariants over random event sequences.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::tests::{run, Fixture};
use super::*;

#[derive(Debug, Clone)]
enum Op {
    Fail(FailureKind),
    Green,
    Tick(i64),
    Approve,
}

fn kind() -> impl Strategy<Value = FailureKind> {
    prop::sample::select(FailureKind::ALL.to_vec())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => kind().prop_map(Op::Fail),
        1 => Just(Op::Green),
        1 => (0i64..200_000).prop_map(Op::Tick),
        1 => Just(Op::Approve),
    ]
}

fn fixture(attempts: u32, depth: u32, auto_fix: bool) -> Fixture {
    let mut f = Fixture::new();
    f.limits.max_debug_attempts = attempts;
    f.limits.max_branch_depth = depth;
    f.auto_fix = auto_fix;
    f
}

/// Marker keys of todos an effect list opens and closes.
fn opened_and_closed(effects: &[Effect]) -> (Vec<String>, Vec<String>) {
    let mut opened = Vec::new();
    let mut closed = Vec::new();
    for e in effects {
        match e {
            Effect::CreateIssue { marker, .. } => opened.push(marker.clone()),
            Effect::UpdateIssue {
                marker,
                state: Some(IssueState::ClosedCompleted | IssueState::ClosedNotPlanned),
                ..
            } => closed.push(marker.clone()),
            _ => {}
        }
    }
    (opened, closed)
}

fn escalation_reports(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| {
            matches!(e, Effect::CommentOnMarker { comment_marker, .. }
                if comment_marker.starts_with("escalation "))
        })
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// (a) A task that always fails gets exactly N × D failed runs into
    /// todos, then escalates once and stays quiet.
    #[test]
    fn an_always_failing_task_escalates_exactly_once(
        attempts in 1u32..=4,
        depth in 1u32..=3,
        auto_fix: bool,
        kinds in prop::collection::vec(kind(), 40),
    ) {
        let f = fixture(attempts, depth, auto_fix);
        let mut s = LoopState::default();
        let mut reports = 0;
        let mut last_todo_run = 0;
        for (i, k) in kinds.iter().enumerate() {
            let n = i as u32 + 1;
            let mut d = on_failed_run(&s, &run(n, *k, i as i64 * 60), &f.ctx());
            if d.outcome == LoopOutcome::Proposed {
                reports += escalation_reports(&d.effects);
                d = on_approve_branch(&d.state, i as i64 * 60 + 1, &f.ctx());
            }
            if matches!(d.outcome, LoopOutcome::Opened { .. } | LoopOutcome::Updated { .. } | LoopOutcome::Deepened { .. }) {
                last_todo_run = n;
            }
            if let LoopOutcome::Escalated(b) = d.outcome {
                prop_assert_eq!(b, Bound::Attempts);
                prop_assert_eq!(n, attempts * depth + 1);
            }
            reports += escalation_reports(&d.effects);
            s = d.state;
        }
        prop_assert_eq!(last_todo_run, attempts * depth);
        prop_assert_eq!(reports, 1);
        prop_assert!(s.open.is_none());
        prop_assert!(is_task_blocked(&s).is_some());
    }

    /// (b)–(e) over random sequences of runs, ticks and approvals.
    #[test]
    fn the_loop_keeps_its_invariants(
        attempts in 1u32..=4,
        depth in 1u32..=3,
        auto_fix: bool,
        concurrent in 0u32..=6,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let mut f = fixture(attempts, depth, auto_fix);
        f.open_todos_in_story = concurrent;
        let mut s = LoopState::default();
        let mut now = 0i64;
        let mut attempt = 0u32;
        let mut open: BTreeSet<String> = BTreeSet::new();
        let mut ever: BTreeSet<String> = BTreeSet::new();
        for op in ops {
            now += 30;
            let d = match &op {
                Op::Fail(k) => {
                    attempt += 1;
                    let r = run(attempt, *k, now);
                    let d = on_failed_run(&s, &r, &f.ctx());
                    // (e) a redelivered run changes nothing.
                    let again = on_failed_run(&d.state, &r, &f.ctx());
                    prop_assert_eq!(&again.state, &d.state);
                    prop_assert!(again.effects.is_empty());
                    d
                }
                Op::Green => on_green_run(&s, &crate::ids::sha(&"a".repeat(40)), now, &f.ctx()),
                Op::Tick(dt) => {
                    now += dt;
                    on_tick(&s, now, &f.ctx())
                }
                Op::Approve => on_approve_branch(&s, now, &f.ctx()),
            };
            let (opened, closed) = opened_and_closed(&d.effects);
            for m in closed {
                prop_assert!(open.remove(&m), "closed {} that was not open", m);
            }
            for m in opened {
                // (b) never two open todos for one task and depth; never a
                // marker used twice.
                prop_assert!(open.is_empty(), "opened {} while {:?} is open", m, open);
                prop_assert!(ever.insert(m.clone()), "marker {} reused", m);
                open.insert(m);
            }
            prop_assert_eq!(open.len(), usize::from(d.state.open.is_some()));
            if let Some(o) = &d.state.open {
                prop_assert!(open.contains(&o.marker));
                prop_assert!(o.failed_runs <= attempts && o.depth <= depth);
            }
            // (c) every escalated state has a reason.
            if let LoopOutcome::Escalated(b) = d.outcome {
                prop_assert_eq!(d.state.escalation.as_ref().map(|e| e.reason), Some(b));
            }
            prop_assert_eq!(is_task_blocked(&d.state).is_some(), d.state.escalation.is_some());
            // (d) after a green run there is no open todo or proposal.
            if matches!(op, Op::Green) {
                prop_assert!(d.state.open.is_none() && d.state.proposal.is_none());
            }
            prop_assert!(d.state.failures.len() <= KEPT_FAILURES);
            s = d.state;
        }
    }
}
