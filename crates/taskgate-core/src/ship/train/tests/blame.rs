//! The train when a proof fails: blame narrowed to the story that
//! caused it (a suspect checked aside, or halves), flakes told from
//! confirmed failures, and proven trees reused only with their gates.

use super::*;

#[test]
fn a_batch_of_three_with_one_broken_story_lands_two_and_refuses_one_in_fewer_runs_than_one_at_a_time(
) {
    let mut batched = World::new(4, 1);
    batched.broken.insert("b".into());
    for s in ["a", "b", "c"] {
        batched.ship(s);
    }
    batched.start();
    batched.settle();
    assert_eq!(batched.landed, vec![vec!["a", "c"]]);
    assert_eq!(batched.refused_names(), vec!["b"]);
    // The batch, its retry, and the batch without `b`; `b` alone on what
    // landed is the tree that failed twice, refused with no run.
    assert_eq!(batched.train.stats.proof_runs, 3);
    // Proven: the batch of three, then the two without `b` beside `b`
    // alone on them (the check of the failed tree).
    assert_eq!(
        batched.train.stats.batch_sizes,
        [(3, 1), (2, 1), (1, 1)].into()
    );
    assert_eq!(batched.train.stats.innocents_refused, 0);
    let Refusal::Failed { failing, batch, .. } = &batched.refused[0].1 else {
        panic!("{:?}", batched.refused[0].1);
    };
    assert_eq!(failing, &vec![failing_test("b")]);
    assert_eq!(batch, &["a", "b", "c"].map(StoryId::from).to_vec());

    let mut one_at_a_time = World::new(1, 1);
    one_at_a_time.broken.insert("b".into());
    for s in ["a", "b", "c"] {
        one_at_a_time.ship(s);
    }
    one_at_a_time.start();
    one_at_a_time.settle();
    assert_eq!(one_at_a_time.landed, vec![vec!["a"], vec!["c"]]);
    assert_eq!(one_at_a_time.train.stats.proof_runs, 4);
}

#[test]
fn the_suspect_of_a_failed_batch_is_checked_beside_the_train_while_the_next_car_proves() {
    let mut w = World::new(4, 2);
    w.broken.insert("b".into());
    for s in ["a", "b", "c", "d", "e"] {
        w.ship(s);
    }
    w.start();
    // a+b+c+d fails, its tests pointing at b; e, on it, is dissolved.
    w.period();
    let cars: Vec<(Vec<&str>, bool)> = (w.train.cars.iter())
        .map(|c| {
            (
                c.stories.iter().map(|e| e.story.as_str()).collect(),
                c.aside,
            )
        })
        .collect();
    assert_eq!(
        cars,
        [
            (vec!["a", "c", "d"], false),
            (vec!["b"], true),
            (vec!["e"], false)
        ]
    );
    // `e` is built without `b`, and proven beside b's check.
    let e = &w.train.cars[2];
    assert_eq!(
        e.base,
        w.train.cars[0].built.as_ref().map(|b| b.commit.clone())
    );
    assert_eq!(w.running.len(), 3);
    w.period();
    assert_eq!(w.landed, vec![vec!["a", "c", "d"], vec!["e"]]);
    assert_eq!(w.refused_names(), vec!["b"]);
    assert_eq!(w.train.stats.innocents_refused, 0);
    // a+b+c+d, e on it, a+c+d, b's check, e again.
    assert_eq!(w.train.stats.proof_runs, 5);
    assert!(w.train.cars.is_empty() && w.running.is_empty());
}

#[test]
fn a_suspect_whose_check_passes_was_a_flake_and_lands_in_a_car_behind() {
    let mut w = World::new(4, 2);
    w.flaky.insert("b".into());
    for s in ["a", "b", "c", "d", "e"] {
        w.ship(s);
    }
    w.start();
    w.period(); // a+b+c+d fails once, b's test; e on it is dissolved
    w.period(); // a+c+d and e pass; b's check passes: a flake
    assert_eq!(w.landed, vec![vec!["a", "c", "d"], vec!["e"]]);
    assert_eq!(w.flaky_events, vec![vec![failing_test("b")]]);
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "c", "d"], vec!["e"], vec!["b"]]);
    assert!(w.refused.is_empty());
}

#[test]
fn a_suspect_breaking_another_story_s_test_is_checked_with_that_story_s_gates() {
    let mut w = World::new(4, 1);
    // b changes a's test file and breaks it: the evidence names b.
    w.breaks.insert("b".into(), "a".into());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    w.settle();
    // b's check aside reran a's gates on the failed tree: confirmed, not
    // a flake.
    assert_eq!(w.refused_names(), vec!["b"]);
    assert_eq!(w.landed, vec![vec!["a", "c"]]);
    assert!(w.flaky_events.is_empty(), "{:?}", w.flaky_events);
}

#[test]
fn a_tree_proven_with_fewer_stories_gates_is_proven_again() {
    let mut w = World::new(4, 1);
    // a+b's tree, proven by a car of b built on a: b's gates alone.
    w.train.proven.push(proven(&["a", "b"], &["b"]));
    w.ship("a");
    w.ship("b");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "b"]]);
    assert_eq!(w.train.stats.reused_proofs, 0);
    assert_eq!(w.train.stats.proof_runs, 1);
    // Now both stories' gates ran on it: a car of the two reuses it.
    assert_eq!(w.train.proven, vec![proven(&["a", "b"], &["a", "b"])]);
}

#[test]
fn a_flaky_failure_in_a_batch_is_checked_and_everyone_lands() {
    let mut w = World::new(4, 1);
    w.flaky.insert("b".into());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    w.settle();
    // Split at once: `b` alone on the others is the failed tree again,
    // and it passes: a flake, nobody refused.
    assert_eq!(w.landed, vec![vec!["a", "c"], vec!["b"]]);
    assert!(w.refused.is_empty());
    assert_eq!(w.flaky_events, vec![vec![failing_test("b")]]);
    assert_eq!(w.flaky_retried, [false], "seen on two cars of one tree");
    assert_eq!(w.train.stats.proof_runs, 3);
    assert_eq!(w.train.stats.flaky_retries, 1);
}

#[test]
fn a_story_alone_that_fails_once_is_proven_again_on_the_same_commit() {
    let mut w = World::new(4, 1);
    w.flaky.insert("a".into());
    w.ship("a");
    w.start();
    let first = w.running[0].1.clone();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"]]);
    assert_eq!(w.flaky_events, vec![vec![failing_test("a")]]);
    assert_eq!(w.train.stats.flaky_retries, 1);
    assert_eq!(w.flaky_retried, [true], "seen on the car's own retry");
    assert_eq!(w.train.stats.proof_runs, 2);
    assert!(
        w.green.contains_key(&first),
        "the retry ran on the same commit"
    );
}

#[test]
fn without_a_suspect_a_failed_batch_is_split_in_halves() {
    let mut w = World::new(4, 1);
    w.broken.insert("d".into());
    for s in ["a", "b", "c", "d"] {
        w.ship(s);
    }
    // A failure no story's files point at.
    for e in &mut w.train.waiting {
        e.files.clear();
    }
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "b"], vec!["c"]]);
    assert_eq!(w.refused_names(), vec!["d"]);
    assert!(w.train.stats.bisection_runs >= 2, "{:?}", w.train.stats);
}

#[test]
fn two_broken_stories_in_a_batch_are_both_refused_and_the_others_land() {
    let mut w = World::new(4, 1);
    w.broken.extend(["b".to_owned(), "d".to_owned()]);
    for s in ["a", "b", "c", "d"] {
        w.ship(s);
    }
    w.start();
    w.settle();
    let landed: BTreeSet<String> = w.landed.concat().into_iter().collect();
    assert_eq!(landed, ["a", "c"].map(String::from).into());
    let mut refused = w.refused_names();
    refused.sort_unstable();
    assert_eq!(refused, vec!["b", "d"]);
}

#[test]
fn a_speculative_car_is_rebuilt_on_the_right_base_when_the_car_ahead_fails() {
    let mut w = World::new(1, 2);
    w.newest_first = true;
    w.broken.insert("a".into());
    w.ship("a");
    w.ship("b");
    w.start();
    assert_eq!(w.train.cars.len(), 2, "b proves on top of a");
    let speculative = w.train.cars[1].built.clone().unwrap();
    w.settle();
    assert_eq!(w.refused_names(), vec!["a"]);
    assert_eq!(w.landed, vec![vec!["b"]]);
    // What landed for b was built on main, not on a.
    assert_eq!(w.main_trees, vec![["b".to_owned()].into()]);
    // b's gates passed on top of a first (newest first), and that tree,
    // holding a, did not land.
    assert!(w.green.contains_key(&speculative.commit));
}

#[test]
fn a_speculative_car_proven_on_the_car_ahead_lands_right_after_it() {
    let mut w = World::new(1, 2);
    w.ship("a");
    w.ship("b");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"], vec!["b"]]);
    assert_eq!(w.train.stats.proof_runs, 2, "b was not proven again");
}

#[test]
fn a_tree_proven_before_lands_with_no_run() {
    let mut w = World::new(4, 1);
    w.train.proven.push(proven(&["a"], &["a"]));
    w.ship("a");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"]]);
    assert_eq!(w.train.stats.proof_runs, 0);
    assert_eq!(w.train.stats.reused_proofs, 1);
}

#[test]
fn a_tree_proven_with_other_gates_is_proven_again() {
    let mut w = World::new(4, 1);
    w.train = w.train.clone().with_gates("test", &digests(&[("a", "1")]));
    w.train.proven.push(proven(&["a"], &["a"]));
    // Same key: kept.
    w.train = w.train.clone().with_gates("test", &digests(&[("a", "1")]));
    assert_eq!(w.train.proven.len(), 1);
    // The gates changed (e.g. `ship_gates`): the tree is proven again.
    w.train = w
        .train
        .clone()
        .with_gates("test,lint", &digests(&[("a", "1")]));
    w.ship("a");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"]]);
    assert_eq!(w.train.stats.reused_proofs, 0);
    assert_eq!(w.train.stats.proof_runs, 1);
    assert_eq!(w.train.gates, "test,lint");
}

#[test]
fn a_tree_proven_before_a_storys_gates_changed_is_proven_again() {
    let mut w = World::new(4, 1);
    w.train = (w.train.clone()).with_gates("test", &digests(&[("a", "1"), ("b", "1")]));
    w.train.proven.push(proven(&["a"], &["a"]));
    w.train.proven.push(proven(&["b"], &["b"]));
    // The same definitions: kept.
    w.train = (w.train.clone()).with_gates("test", &digests(&[("a", "1"), ("b", "1")]));
    assert_eq!(w.train.proven.len(), 2);
    // Story a's plan tightened a gate (a comment plan: no tree moved).
    w.train = (w.train.clone()).with_gates("test", &digests(&[("a", "2"), ("b", "1")]));
    assert_eq!(
        w.train.proven,
        vec![proven(&["b"], &["b"])],
        "only b's proof kept"
    );
    w.ship("a");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"]]);
    assert_eq!(w.train.stats.reused_proofs, 0);
    assert_eq!(w.train.stats.proof_runs, 1);
}

#[test]
fn a_tree_proven_by_a_story_whose_gates_were_never_given_is_proven_again() {
    let mut w = World::new(4, 1);
    // A train stored before the digests were: nothing says what ran.
    w.train.proven.push(proven(&["a"], &["a"]));
    w.train = w.train.clone().with_gates("test", &digests(&[("a", "1")]));
    assert!(w.train.proven.is_empty());
    // A landed story's digest is kept while a tree it proved is.
    w.train.proven.push(proven(&["a"], &["a"]));
    w.train = w.train.clone().with_gates("test", &digests(&[("a", "1")]));
    assert_eq!(w.train.proven.len(), 1);
    w.train = w.train.clone().with_gates("test", &digests(&[("b", "1")]));
    assert_eq!(w.train.proven.len(), 1);
    assert_eq!(w.train.story_gates, digests(&[("a", "1"), ("b", "1")]));
    w.train = w.train.clone().with_gates("test", &digests(&[("a", "2")]));
    assert!(w.train.proven.is_empty());
    assert_eq!(
        w.train.story_gates,
        digests(&[("a", "2")]),
        "b is named by nothing now"
    );
}

#[test]
fn a_test_failing_twice_under_two_gate_lines_is_confirmed_not_flaky() {
    let settings = TrainSettings {
        batch_max: 4,
        parallel: 1,
        attribution: true,
        batch_wait_ms: 0,
    };
    let world = World::new(4, 1);
    let mut train = world.train.clone();
    let mut actions = Vec::new();
    let mut step = |train: &mut Train, event| {
        let (next, more) = on_train_event(train, event, settings, 0);
        *train = next;
        actions.extend(more.clone());
        more
    };
    step(
        &mut train,
        TrainEvent::MainMoved {
            head: crate::ids::sha("main-0"),
        },
    );
    step(
        &mut train,
        TrainEvent::Enqueued(world.entry("a", Priority::Normal, 0)),
    );
    let car = train.cars[0].id;
    let (commit, tree) = (crate::ids::sha("car-a"), crate::ids::sha("tree:a"));
    step(
        &mut train,
        TrainEvent::Built {
            car,
            built: Built {
                commit: commit.clone(),
                tree,
            },
        },
    );
    // The same case, reported under two different lines of its gate (the
    // proof's gate is named after the car's first story's task).
    let under = |line: &str| FailingTest {
        name: format!("`ship/{line}/test` (test_failure): a::works failed"),
        file: Some("tests/a.rs".into()),
        case: Some(crate::results::TestId::new("a::works")),
    };
    let failing = vec![under("first")];
    step(
        &mut train,
        TrainEvent::Proved {
            car,
            commit: commit.clone(),
            failing,
        },
    );
    let failing = vec![under("second")];
    step(
        &mut train,
        TrainEvent::Proved {
            car,
            commit,
            failing,
        },
    );
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, TrainAction::Flaky { .. })),
        "{actions:#?}"
    );
    assert!(actions
        .iter()
        .any(|a| matches!(a, TrainAction::Refuse { .. })));
}
