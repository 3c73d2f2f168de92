//! The fix rate counted as todos open and close, summed over tasks,
//! capped and shown.

use super::*;
use crate::classify::FailureKind;
use crate::config::AgentRoute;
use crate::failure::tests::{run, Fixture};
use crate::failure::{note_person, on_failed_run, on_green_run, on_task_completed};

fn green(state: &LoopState, now: i64, f: &Fixture) -> LoopState {
    on_green_run(state, &crate::ids::sha(&"f".repeat(40)), now, &f.ctx()).state
}

/// Failed runs `1..=n`, a thousand seconds apart from `t0`.
fn red(state: &LoopState, attempts: std::ops::RangeInclusive<u32>, f: &Fixture) -> LoopState {
    attempts.fold(state.clone(), |s, a| {
        on_failed_run(
            &s,
            &run(a, FailureKind::TestFailure, i64::from(a) * 1_000),
            &f.ctx(),
        )
        .state
    })
}

fn fixes(s: &LoopState, key: &str) -> FixTotals {
    s.totals.fixes.get(key).cloned().unwrap_or_default()
}

#[test]
fn a_fixed_todo_counts_for_the_agent_its_role_named_when_it_opened() {
    let mut f = Fixture::new();
    let s = red(&LoopState::default(), 1..=2, &f);
    // The config changes while the todo is open: the todo keeps its agent.
    f.config.roles.get_mut("coder").unwrap().agent = Some(AgentRoute::Mention("@claude".into()));
    let s = green(&s, 3_500, &f);
    let mut at_green = FixTotals {
        opened: 1,
        greened: 1,
        attempts_to_green: 2,
        seconds_to_green: 2_500,
        seconds_to_green_buckets: SecondsBuckets(BTreeMap::from([(3_600, 1)])),
        ..FixTotals::default()
    };
    assert_eq!(fixes(&s, "test_failure/workflow:agent-coder.yml"), at_green);
    // Fixed when the task completes, no person having acted.
    let s = on_task_completed(&s, 4_000);
    at_green.fixed_without_human = 1;
    assert_eq!(fixes(&s, "test_failure/workflow:agent-coder.yml"), at_green);
    assert_eq!(s.fixed_without_human, 1);
    assert_eq!(s.history[0].agent, "workflow:agent-coder.yml");
    // The next todo is the new agent's.
    let s = red(&s, 4..=4, &f);
    assert_eq!(fixes(&s, "test_failure/mention:@claude").opened, 1);
}

#[test]
fn a_fix_after_a_persons_command_counts_as_fixed_with_a_person() {
    let mut f = Fixture::new();
    let s = red(&LoopState::default(), 1..=1, &f);
    f.human_involved = true;
    let s = on_task_completed(&green(&s, 1_060, &f), 1_100);
    let fix = fixes(&s, "test_failure/workflow:agent-coder.yml");
    assert_eq!((fix.fixed_without_human, fix.fixed_with_human), (0, 1));
    assert_eq!((fix.attempts_to_green, fix.seconds_to_green), (1, 60));
    assert_eq!(fix.waited_for_person, 0, "the person acted before green");
    assert_eq!(s.fixed_with_human, 1, "the same rule as the task's count");
}

#[test]
fn a_fix_whose_task_then_waited_for_a_person_counts_the_wait() {
    let f = Fixture::new();
    let s = green(&red(&LoopState::default(), 1..=1, &f), 1_060, &f);
    // The agent's fix is green; a person's action completes the task
    // twenty minutes later.
    let s = on_task_completed(&note_person(&s), 2_260);
    let fix = fixes(&s, "test_failure/workflow:agent-coder.yml");
    assert_eq!((fix.fixed_without_human, fix.fixed_with_human), (0, 1));
    assert_eq!(
        (fix.waited_for_person, fix.seconds_waiting_for_person),
        (1, 1_200)
    );
    assert_eq!(
        fix.waiting_buckets.per_bound()[..5],
        [(60, 0), (300, 0), (900, 0), (1_800, 1), (3_600, 0)]
    );
    // Nothing is counted twice.
    assert_eq!(on_task_completed(&s, 9_999), s);
}

#[test]
fn a_spent_todo_and_an_escalated_one_count_for_their_own_agents() {
    let f = Fixture::new();
    // 2 attempts at depth 1 (coder), 2 at depth 2 (debugger, no agent),
    // then the bound.
    let s = red(&LoopState::default(), 1..=5, &f);
    assert!(s.escalation.is_some());
    assert_eq!(
        fixes(&s, "test_failure/workflow:agent-coder.yml"),
        FixTotals {
            opened: 1,
            superseded: 1,
            ..FixTotals::default()
        }
    );
    assert_eq!(
        fixes(&s, "test_failure/none"),
        FixTotals {
            opened: 1,
            escalated: 1,
            ..FixTotals::default()
        }
    );
}

#[test]
fn a_record_stored_before_agents_were_counted_reads_unchanged() {
    let json = r#"{"open":{"marker":"m","depth":1,"failed_runs":1,"kind":"timeout","role":"coder","opened_at":5},
        "history":[{"marker":"n","depth":1,"kind":"timeout","role":"coder","opened_at":1,"closed_at":2,"resolution":"fixed","failed_runs":1}],
        "totals":{"opened":{"timeout/coder":2},"fixed":1,"fixed_seconds":1}}"#;
    let s: LoopState = serde_json::from_str(json).unwrap();
    assert_eq!(s.open.as_ref().unwrap().agent, UNRECORDED_AGENT);
    assert_eq!(s.history[0].agent, UNRECORDED_AGENT);
    assert!(s.totals.fixes.is_empty());
    assert_eq!(s.totals.opened["timeout/coder"], 2);
    // Fixed now, it counts for the agent nobody recorded.
    let s = on_task_completed(&green(&s, 65, &Fixture::new()), 70);
    assert_eq!(fixes(&s, "timeout/unknown").fixed_without_human, 1);
    // Fixes counted at the green run before `greened` was kept are its
    // green ones.
    let old: FixTotals =
        serde_json::from_str(r#"{"opened":3,"fixed_without_human":1,"fixed_with_human":1}"#)
            .unwrap();
    assert_eq!(old.greened, 2);
}

#[test]
fn sums_todos_fixes_and_the_autonomous_share() {
    let a = LoopState {
        totals: LoopTotals {
            opened: BTreeMap::from([("test_failure/coder".to_owned(), 2)]),
            fixed: 1,
            fixed_seconds: 60,
            fixes: BTreeMap::from([(
                "test_failure/label:a/b".to_owned(),
                FixTotals {
                    opened: 2,
                    fixed_without_human: 1,
                    ..FixTotals::default()
                },
            )]),
        },
        fixed_without_human: 1,
        ..LoopState::default()
    };
    let b = LoopState {
        totals: LoopTotals {
            opened: BTreeMap::from([("timeout/tester".to_owned(), 1)]),
            fixes: BTreeMap::from([(
                "test_failure/label:a/b".to_owned(),
                FixTotals {
                    opened: 1,
                    escalated: 1,
                    ..FixTotals::default()
                },
            )]),
            ..LoopTotals::default()
        },
        fixed_with_human: 1,
        ..LoopState::default()
    };
    let mut stats = LoopStats::default();
    stats.add(&a);
    stats.add(&b);
    assert_eq!(
        stats.todos_opened[&("test_failure".into(), "coder".into())],
        2
    );
    assert_eq!(stats.todos_opened[&("timeout".into(), "tester".into())], 1);
    assert_eq!((stats.todos_fixed, stats.fixed_seconds_total), (1, 60));
    assert_eq!(stats.autonomous_fix_rate(), Some(0.5));
    assert_eq!(LoopStats::default().autonomous_fix_rate(), None);
    // A label's `/` stays in the agent's name.
    assert_eq!(
        stats.fixes[&("label:a/b".into(), "test_failure".into())],
        FixTotals {
            opened: 3,
            fixed_without_human: 1,
            escalated: 1,
            ..FixTotals::default()
        }
    );
}

#[test]
fn agents_beyond_the_cap_are_summed_as_other() {
    let mut stats = LoopStats::default();
    for n in 1..=12u64 {
        let fix = FixTotals {
            opened: n,
            ..FixTotals::default()
        };
        stats.add_fixes(&format!("label:a{n:02}"), "timeout", &fix);
    }
    let rates = stats.fix_rates(MAX_AGENTS);
    assert_eq!(rates.len(), MAX_AGENTS + 1);
    // The two with the fewest todos (1 and 2) are summed.
    assert_eq!(rates[&(OTHER_AGENTS.into(), "timeout".into())].opened, 3);
    assert!(rates.contains_key(&("label:a03".into(), "timeout".into())));
    assert!(!rates.contains_key(&("label:a02".into(), "timeout".into())));
}

#[test]
fn the_fix_rate_table_names_each_agent_and_kind_without_calling_anyone() {
    let mut stats = LoopStats::default();
    let fixed = FixTotals {
        opened: 3,
        fixed_without_human: 2,
        fixed_with_human: 1,
        greened: 3,
        attempts_to_green: 4,
        seconds_to_green: 1_800,
        ..FixTotals::default()
    };
    stats.add_fixes("mention:@claude", "test_failure", &fixed);
    let escalated = FixTotals {
        opened: 1,
        escalated: 1,
        ..FixTotals::default()
    };
    stats.add_fixes("label:fix|me", "build_failure", &escalated);
    stats.add_fixes("none", "timeout", &FixTotals::default());
    let table = render_fix_rates(&stats.fix_rates(MAX_AGENTS)).unwrap();
    // `@claude` is written with a zero-width joiner after the `@`.
    insta::assert_snapshot!(table, @r"
    | agent | failure kind | todos | fixed without a person | fixed after a person stepped in | escalated | attempts to green | time to green |
    |---|---|---:|---:|---:|---:|---:|---:|
    | `label:fix\|me` | build_failure | 1 | 0 | 0 | 1 | — | — |
    | `mention:@‍claude` | test_failure | 3 | 2 | 1 | 0 | 1.3 | 10 min |
    ");
    assert_eq!(render_fix_rates(&BTreeMap::new()), None);
}
