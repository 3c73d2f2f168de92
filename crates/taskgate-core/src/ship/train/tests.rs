//! The train against a modelled repository: a commit's tree is the set of
//! stories merged into it (merges commute, as clean git merges of
//! unrelated changes do), a proof fails when a broken story is in the
//! tree and the proof runs its gates, and a flaky story fails the first
//! proof that runs its gates.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

/// A modelled repository and shell around a [`Train`].
struct World {
    train: Train,
    settings: TrainSettings,
    /// Each commit's tree, as the stories in it.
    trees: BTreeMap<CommitSha, BTreeSet<String>>,
    broken: BTreeSet<String>,
    /// Stories that fail the first proof they are in, once.
    flaky: BTreeSet<String>,
    /// Stories that do not merge on anything.
    conflicting: BTreeSet<String>,
    /// A story that breaks another's test (by the key's name), changing
    /// that test's file rather than its own.
    breaks: BTreeMap<String, String>,
    /// Proofs started and not finished, oldest first.
    running: Vec<Running>,
    /// Finish the newest proof first (a speculative car ends first).
    newest_first: bool,
    landed: Vec<Vec<String>>,
    refused: Vec<(String, Refusal)>,
    flaky_events: Vec<Vec<FailingTest>>,
    /// Each flaky event's `retried`: seen on the car's own retry.
    flaky_retried: Vec<bool>,
    /// Commits a proof passed on, with the stories whose gates it ran.
    green: BTreeMap<CommitSha, BTreeSet<String>>,
    /// Trees that landed.
    main_trees: Vec<BTreeSet<String>>,
    next_commit: u64,
    /// When set, builds are not answered but kept here (a GitHub that
    /// has not answered yet).
    builds_held: Option<Vec<TrainAction>>,
}

/// A proof started: its car, its commit and whose gates it runs.
type Running = (CarId, CommitSha, Vec<StoryId>);

/// `tree` proven with the gates of `gates_of`.
fn proven(tree: &[&str], gates_of: &[&str]) -> ProvenTree {
    ProvenTree {
        tree: tree_sha(&tree.iter().map(|s| s.to_string()).collect()),
        gates_of: gates_of.iter().map(|s| StoryId::from(*s)).collect(),
    }
}

fn tree_sha(stories: &BTreeSet<String>) -> CommitSha {
    let names: Vec<&str> = stories.iter().map(String::as_str).collect();
    CommitSha(format!("tree:{}", names.join("+")))
}

fn failing_test(story: &str) -> FailingTest {
    FailingTest {
        name: format!("tests::{story}_works"),
        file: Some(format!("tests/{story}.rs")),
        case: None,
    }
}

impl World {
    fn new(batch_max: usize, parallel: usize) -> World {
        let main = CommitSha("main-0".into());
        let mut trees = BTreeMap::new();
        trees.insert(main.clone(), BTreeSet::new());
        World {
            // Not started: stories shipped before [`World::start`] wait
            // together, as they do behind a car being proven.
            train: Train {
                gates: "test".into(),
                ..Train::default()
            },
            settings: TrainSettings {
                batch_max,
                parallel,
                attribution: true,
            },
            trees,
            broken: BTreeSet::new(),
            flaky: BTreeSet::new(),
            conflicting: BTreeSet::new(),
            breaks: BTreeMap::new(),
            running: Vec::new(),
            newest_first: false,
            landed: Vec::new(),
            refused: Vec::new(),
            flaky_events: Vec::new(),
            flaky_retried: Vec::new(),
            green: BTreeMap::new(),
            main_trees: Vec::new(),
            next_commit: 0,
            builds_held: None,
        }
    }

    /// The train learns the default branch's head and moves.
    fn start(&mut self) {
        self.event(TrainEvent::MainMoved {
            head: CommitSha("main-0".into()),
        });
    }

    fn entry(&self, story: &str, priority: Priority, at: i64) -> Entry {
        let victim = self.breaks.values().any(|v| v == story);
        let files = match self.breaks.get(story) {
            Some(victim) => [format!("tests/{victim}.rs")].into(),
            // Its test was there before: it did not change it.
            None if victim => [format!("src/{story}.rs")].into(),
            None => [format!("tests/{story}.rs"), format!("src/{story}.rs")].into(),
        };
        Entry {
            story: StoryId::from(story),
            head: CommitSha(format!("head-{story}")),
            priority,
            queued_at_ms: at,
            files,
            conflicted: false,
        }
    }

    fn ship(&mut self, story: &str) {
        let at = self.next_commit as i64;
        self.ship_with(story, Priority::Normal, at);
    }

    fn ship_with(&mut self, story: &str, priority: Priority, at: i64) {
        let entry = self.entry(story, priority, at);
        self.event(TrainEvent::Enqueued(entry));
    }

    fn event(&mut self, event: TrainEvent) {
        let (train, actions) = on_train_event(&self.train, event, self.settings);
        self.train = train;
        for action in actions {
            self.perform(action);
        }
    }

    fn perform(&mut self, action: TrainAction) {
        if let (Some(held), TrainAction::Build { .. }) = (self.builds_held.as_mut(), &action) {
            held.push(action);
            return;
        }
        match action {
            TrainAction::Build { car, base, heads } => {
                let conflict = heads
                    .iter()
                    .find(|(s, _)| self.conflicting.contains(s.as_str()));
                if let Some((story, _)) = conflict {
                    let story = story.clone();
                    return self.event(TrainEvent::Conflict { car, story });
                }
                let mut tree = self.trees[&base].clone();
                tree.extend(heads.iter().map(|(s, _)| s.as_str().to_owned()));
                self.next_commit += 1;
                let commit = CommitSha(format!("car-{car}-{}", self.next_commit));
                self.trees.insert(commit.clone(), tree.clone());
                let built = Built {
                    commit,
                    tree: tree_sha(&tree),
                };
                self.event(TrainEvent::Built { car, built });
            }
            TrainAction::Prove {
                car,
                commit,
                gates_of,
            } => self.running.push((car, commit, gates_of)),
            TrainAction::Cancel { car } => self.running.retain(|(c, ..)| *c != car),
            TrainAction::Land {
                car,
                commit,
                stories,
                reused,
            } => {
                let tree = &self.trees[&commit];
                assert!(
                    self.green.contains_key(&commit) || reused,
                    "landed {commit} without a proof"
                );
                if let Some(ran) = self.green.get(&commit) {
                    let unproven: Vec<_> = (stories.iter())
                        .filter(|s| !ran.contains(s.as_str()))
                        .collect();
                    assert!(unproven.is_empty(), "landed {unproven:?} unproven");
                }
                assert!(
                    self.broken.is_disjoint(tree),
                    "a broken story landed: {tree:?}"
                );
                self.main_trees.push(tree.clone());
                self.landed
                    .push(stories.iter().map(|s| s.as_str().to_owned()).collect());
                self.event(TrainEvent::Landed { car });
            }
            TrainAction::Refuse { story, why } => {
                self.refused.push((story.as_str().to_owned(), why));
            }
            TrainAction::Flaky { tests, retried, .. } => {
                self.flaky_events.push(tests);
                self.flaky_retried.push(retried);
            }
        }
    }

    /// Finishes the proofs that are running, one at a time, until none is.
    fn settle(&mut self) {
        while !self.running.is_empty() {
            let next = if self.newest_first {
                self.running.pop().unwrap()
            } else {
                self.running.remove(0)
            };
            self.finish(next);
        }
    }

    fn finish(&mut self, (car, commit, gates_of): Running) {
        let failing = self.run(&commit, &gates_of);
        if failing.is_empty() {
            let ran = gates_of.iter().map(|s| s.as_str().to_owned()).collect();
            self.green.insert(commit.clone(), ran);
        }
        self.event(TrainEvent::Proved {
            car,
            commit,
            failing,
        });
    }

    /// Finishes the proofs running now, not those they start: one proof
    /// period of clock time.
    fn period(&mut self) {
        let now: Vec<Running> = std::mem::take(&mut self.running);
        for running in now {
            self.finish(running);
        }
    }

    fn run(&mut self, commit: &CommitSha, gates_of: &[StoryId]) -> Vec<FailingTest> {
        let tree = &self.trees[commit];
        let ran: BTreeSet<String> = (tree.iter())
            .filter(|s| gates_of.iter().any(|g| g == s.as_str()))
            .cloned()
            .collect();
        let victims = (self.breaks.iter())
            .filter(|(breaker, victim)| tree.contains(*breaker) && ran.contains(*victim))
            .map(|(_, victim)| victim);
        let broken: BTreeSet<&String> = self.broken.intersection(&ran).chain(victims).collect();
        let flaky: Vec<String> = self.flaky.intersection(&ran).cloned().collect();
        for story in &flaky {
            self.flaky.remove(story);
        }
        let mut failing: Vec<FailingTest> = broken
            .into_iter()
            .chain(&flaky)
            .map(|s| failing_test(s))
            .collect();
        failing.dedup();
        failing.sort();
        failing
    }

    fn refused_names(&self) -> Vec<&str> {
        self.refused.iter().map(|(s, _)| s.as_str()).collect()
    }
}

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
    w.train.proven.push(proven(&["a"], &["a"]));
    // Same key: kept.
    w.train = w.train.clone().with_gates("test");
    assert_eq!(w.train.proven.len(), 1);
    // The gates changed (e.g. `ship_gates`): the tree is proven again.
    w.train = w.train.clone().with_gates("test,lint");
    w.ship("a");
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"]]);
    assert_eq!(w.train.stats.reused_proofs, 0);
    assert_eq!(w.train.stats.proof_runs, 1);
    assert_eq!(w.train.gates, "test,lint");
}

#[test]
fn a_high_priority_story_goes_ahead_of_the_normal_ones_waiting() {
    let mut w = World::new(1, 1);
    for (i, s) in ["a", "b", "c"].iter().enumerate() {
        w.ship_with(s, Priority::Normal, i as i64);
    }
    w.start();
    w.ship_with("urgent", Priority::High, 10);
    w.settle();
    assert_eq!(
        w.landed,
        vec![vec!["a"], vec!["urgent"], vec!["b"], vec!["c"]]
    );
}

#[test]
fn a_hotfix_goes_first_and_what_was_proving_is_rebuilt_behind_it() {
    let mut w = World::new(2, 2);
    for (i, s) in ["a", "b", "c"].iter().enumerate() {
        w.ship_with(s, Priority::Normal, i as i64);
    }
    w.start();
    w.ship_with("fix", Priority::Hotfix, 10);
    w.settle();
    assert_eq!(w.landed[0], vec!["fix", "a"]);
    let landed: BTreeSet<String> = w.landed.concat().into_iter().collect();
    assert_eq!(landed.len(), 4);
}

#[test]
fn a_story_that_conflicts_rides_alone_and_is_refused_on_the_default_branch() {
    let mut w = World::new(4, 1);
    w.conflicting.insert("b".into());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "c"]]);
    assert_eq!(w.refused_names(), vec!["b"]);
    assert!(matches!(w.refused[0].1, Refusal::Conflict { .. }));
    assert!(w.train.cars.is_empty() && w.train.waiting.is_empty());
}

#[test]
fn the_default_branch_moving_under_the_train_rebuilds_every_car_on_it() {
    let mut w = World::new(2, 2);
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    let moved = CommitSha("someone-else".into());
    w.trees.insert(moved.clone(), ["x".to_owned()].into());
    w.event(TrainEvent::MainMoved { head: moved });
    w.settle();
    for tree in &w.main_trees {
        assert!(tree.contains("x"), "built on the old head: {tree:?}");
    }
    assert_eq!(w.landed.concat().len(), 3);
}

#[test]
fn a_story_shipped_twice_rides_once_and_one_unshipped_leaves_its_car() {
    let mut w = World::new(4, 1);
    w.ship("a");
    w.ship("a");
    w.ship("b");
    w.event(TrainEvent::Dequeued(StoryId::from("a")));
    w.start();
    w.settle();
    assert_eq!(w.landed, vec![vec!["b"]]);
}

#[test]
fn a_late_proof_of_a_dissolved_car_changes_nothing() {
    let mut w = World::new(2, 1);
    w.ship("a");
    w.start();
    let (car, commit, _) = w.running[0].clone();
    w.trees.insert(CommitSha("main-0b".into()), BTreeSet::new());
    w.event(TrainEvent::MainMoved {
        head: CommitSha("main-0b".into()),
    });
    let before = w.train.clone();
    w.event(TrainEvent::Proved {
        car,
        commit,
        failing: vec![],
    });
    assert_eq!(w.train, before);
}

/// A train of three stories (two a car, two cars) whose first car's
/// build is not answered yet, with the build asked for.
fn first_build_held() -> (World, CarId) {
    let mut w = World::new(2, 2);
    w.builds_held = Some(Vec::new());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    let held = w.builds_held.replace(Vec::new()).unwrap();
    let [TrainAction::Build { car, .. }] = held.as_slice() else {
        panic!("one build: {held:?}");
    };
    (w, *car)
}

#[test]
fn a_car_github_refuses_to_build_turns_the_train_off_and_leaves_its_stories_to_the_serial_queue() {
    let (mut w, car) = first_build_held();
    w.event(TrainEvent::CarFailed {
        car,
        why: "Cannot create ref due to creations being restricted.".into(),
        refused: true,
        at_ms: 1_000,
    });
    assert_eq!(w.builds_held, Some(vec![]), "nothing is built again");
    assert!(w.train.cars.is_empty() && w.train.waiting.is_empty());
    let off = w.train.off_at(1_000).expect("the train is off");
    assert_eq!(off.branch, car_branch(car));
    assert_eq!(w.train.off_at(1_000 + TRAIN_OFF_MS), None, "for a day");
}

#[test]
fn a_car_github_failed_to_build_is_formed_again_with_the_same_stories() {
    let (mut w, car) = first_build_held();
    w.event(TrainEvent::CarFailed {
        car,
        why: "gave up after 5 failed attempts: 502".into(),
        refused: false,
        at_ms: 1_000,
    });
    let held = w.builds_held.clone().unwrap();
    let [TrainAction::Build {
        car: again, heads, ..
    }] = held.as_slice()
    else {
        panic!("one build: {held:?}");
    };
    assert_ne!(*again, car);
    let stories: Vec<&str> = heads.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stories, ["a", "b"]);
    assert_eq!(w.train.off, None);
}

#[test]
fn a_story_github_refuses_to_merge_for_what_it_changes_is_refused_alone_and_the_train_stays_on() {
    let (mut w, car) = first_build_held();
    let message = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";
    w.event(TrainEvent::StoryRefused {
        car,
        story: StoryId::from("b"),
        message: message.into(),
    });
    assert_eq!(w.refused_names(), vec!["b"]);
    assert_eq!(
        w.refused[0].1,
        Refusal::Rules {
            message: message.into()
        }
    );
    assert_eq!(w.train.off, None, "the train stays on for the others");
    // The others are formed into a car without it, and land together.
    let held = w.builds_held.take().unwrap();
    let [TrainAction::Build { heads, .. }] = held.as_slice() else {
        panic!("one build: {held:?}");
    };
    let stories: Vec<&str> = heads.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stories, ["a", "c"]);
    for action in held {
        w.perform(action);
    }
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "c"]]);
}

#[test]
fn a_late_build_failure_of_a_car_built_since_changes_nothing() {
    let (mut w, car) = first_build_held();
    let built = Built {
        commit: CommitSha("car-1".into()),
        tree: CommitSha("tree-1".into()),
    };
    w.event(TrainEvent::Built { car, built });
    let before = w.train.clone();
    w.event(TrainEvent::CarFailed {
        car,
        why: "refused".into(),
        refused: true,
        at_ms: 1_000,
    });
    assert_eq!(w.train, before);
}

proptest! {
    /// Whatever stories are broken or flaky, and whichever proof ends
    /// first: nothing broken lands, no innocent story is refused, no
    /// flake refuses anyone, everything shipped ends landed or refused,
    /// and every landed tree was proven green.
    #[test]
    fn the_train_lands_every_innocent_story_and_only_those(
        stories in 1usize..12,
        broken in proptest::collection::btree_set(0usize..12, 0..4),
        flaky in proptest::collection::btree_set(0usize..12, 0..3),
        batch_max in 1usize..5,
        parallel in 1usize..4,
        newest_first in any::<bool>(),
    ) {
        let mut w = World::new(batch_max, parallel);
        w.newest_first = newest_first;
        let names: Vec<String> = (0..stories).map(|i| format!("s{i}")).collect();
        w.broken = broken.iter().filter(|i| **i < stories).map(|i| names[*i].clone()).collect();
        w.flaky = flaky.iter().filter(|i| **i < stories).map(|i| names[*i].clone()).collect();
        for n in &names {
            w.ship(n);
        }
        w.start();
        w.settle();
        let landed: BTreeSet<String> = w.landed.concat().into_iter().collect();
        let refused: BTreeSet<String> = w.refused.iter().map(|(s, _)| s.clone()).collect();
        let innocent: BTreeSet<String> = names.iter().filter(|n| !w.broken.contains(*n)).cloned().collect();
        prop_assert_eq!(&landed, &innocent);
        prop_assert_eq!(&refused, &w.broken);
        prop_assert!(w.train.cars.is_empty() && w.train.waiting.is_empty());
        prop_assert_eq!(w.train.stats.innocents_refused, 0);
    }
}

#[test]
fn a_test_failing_twice_under_two_gate_lines_is_confirmed_not_flaky() {
    let settings = TrainSettings {
        batch_max: 4,
        parallel: 1,
        attribution: true,
    };
    let world = World::new(4, 1);
    let mut train = world.train.clone();
    let mut actions = Vec::new();
    let mut step = |train: &mut Train, event| {
        let (next, more) = on_train_event(train, event, settings);
        *train = next;
        actions.extend(more.clone());
        more
    };
    step(
        &mut train,
        TrainEvent::MainMoved {
            head: CommitSha("main-0".into()),
        },
    );
    step(
        &mut train,
        TrainEvent::Enqueued(world.entry("a", Priority::Normal, 0)),
    );
    let car = train.cars[0].id;
    let (commit, tree) = (CommitSha("car-a".into()), CommitSha("tree:a".into()));
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
