//! The train against a modelled repository: a commit's tree is the set of
//! stories merged into it (merges commute, as clean git merges of
//! unrelated changes do), a proof fails when a broken story is in the
//! tree and the proof runs its gates, and a flaky story fails the first
//! proof that runs its gates.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

mod batch_wait;
mod blame;
mod build_failed;
mod rules_changed;

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
    /// When set, landings are not answered but kept here.
    lands_held: Option<Vec<TrainAction>>,
    /// The clock the train's events are taken at (ms).
    now_ms: i64,
    /// The times the train asked to be looked at again (`Wait`).
    waits: Vec<i64>,
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

/// Gate digests by story, as the shell gives them.
fn digests(of: &[(&str, &str)]) -> BTreeMap<StoryId, String> {
    (of.iter())
        .map(|(story, digest)| (StoryId::from(*story), (*digest).to_owned()))
        .collect()
}

fn tree_sha(stories: &BTreeSet<String>) -> CommitSha {
    let names: Vec<&str> = stories.iter().map(String::as_str).collect();
    crate::ids::sha(&format!("tree:{}", names.join("+")))
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
        let main = crate::ids::sha("main-0");
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
                batch_wait_ms: 0,
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
            lands_held: None,
            now_ms: 0,
            waits: Vec::new(),
        }
    }

    /// The train learns the default branch's head and moves.
    fn start(&mut self) {
        self.event(TrainEvent::MainMoved {
            head: crate::ids::sha("main-0"),
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
            head: crate::ids::sha(&format!("head-{story}")),
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
        let (train, actions) = on_train_event(&self.train, event, self.settings, self.now_ms);
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
        if let (Some(held), TrainAction::Land { .. }) = (self.lands_held.as_mut(), &action) {
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
                let commit = crate::ids::sha(&format!("car-{car}-{}", self.next_commit));
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
            TrainAction::Wait { until_ms } => self.waits.push(until_ms),
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
    let moved = crate::ids::sha("someone-else");
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
    w.trees.insert(crate::ids::sha("main-0b"), BTreeSet::new());
    w.event(TrainEvent::MainMoved {
        head: crate::ids::sha("main-0b"),
    });
    let before = w.train.clone();
    w.event(TrainEvent::Proved {
        car,
        commit,
        failing: vec![],
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
