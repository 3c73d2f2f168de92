//! The ship train against a stream of stories, on a modelled clock (no
//! waiting): 100 stories arriving over time, a proof that takes 10
//! minutes, 10 % of the stories broken (a test fails on any tree that
//! holds them) and 5 % hitting a flaky test once. The same stream goes
//! through today's serial queue (one story per proof, no speculation),
//! a plain binary-split train (no attribution) and the train. Not a test:
//! the core's unit and property tests are the gate, this is the
//! measurement (docs/benchmarks.md).
//!
//! ```text
//! cargo bench -p taskgate-core --bench ship_train
//! ```
//!
//! The repository is modelled as in the train's tests: a commit's tree is
//! the set of stories merged into it (clean merges commute). A broken
//! story's failing test lives in its own test file 70 % of the time (the
//! evidence points at it) and in a shared file no story changed otherwise.

// A bench is a program: it reads its corpus and arguments (crates/taskgate-core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use taskgate_core::ids::{CommitSha, StoryId};
use taskgate_core::ship::{
    on_train_event, Built, CarId, Entry, FailingTest, Priority, Train, TrainAction, TrainEvent,
    TrainSettings,
};

const STORIES: usize = 100;
const PROOF_MS: i64 = 10 * 60_000;
/// Mean time between arrivals: a queue deep enough that the serial queue
/// (six proofs an hour) cannot keep up, as in a busy repository.
const ARRIVAL_MS: i64 = 90_000;

/// A deterministic stream (a fixed-seed generator: every run the same).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Story {
    name: String,
    at_ms: i64,
    broken: bool,
    flaky: bool,
    /// Where its failing test lives when broken.
    test_file: String,
}

/// A valid sha from a label: two FNV-1a hashes of it, so distinct labels
/// (a car's stories joined) get distinct shas.
fn sha(label: &str) -> CommitSha {
    let fnv = |seed: u64| {
        label.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let text = format!("{:016x}{:016x}00000000", fnv(0xcbf2_9ce4_8422_2325), fnv(7));
    CommitSha::parse(&text).expect("40 hex digits")
}

fn stream(seed: u64) -> Vec<Story> {
    let mut rng = Rng(seed);
    let mut at_ms = 0;
    (0..STORIES)
        .map(|i| {
            at_ms += (rng.next() % (2 * ARRIVAL_MS as u64)) as i64;
            let broken = rng.chance(10);
            let flaky = !broken && rng.chance(5);
            let test_file = if rng.chance(70) {
                format!("tests/s{i}.rs")
            } else {
                "tests/shared.rs".to_owned()
            };
            Story {
                name: format!("s{i}"),
                at_ms,
                broken,
                flaky,
                test_file,
            }
        })
        .collect()
}

#[derive(Default)]
struct Figures {
    landed: usize,
    runs: u64,
    waits_ms: Vec<i64>,
    last_landing_ms: i64,
    innocents_refused: usize,
    broken_landed: usize,
    flaky_ejections: usize,
    flaky_events: usize,
    bisection_runs: u64,
    /// Moves of the default branch (one per car landed).
    landings: usize,
}

/// Runs the stream through a train with `settings`; the figures.
fn simulate(stories: &[Story], settings: TrainSettings) -> Figures {
    let by_name: BTreeMap<&str, &Story> = stories.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut train = Train {
        main: Some(sha("main")),
        gates: "test".into(),
        ..Train::default()
    };
    let mut trees: BTreeMap<CommitSha, BTreeSet<String>> = BTreeMap::new();
    trees.insert(sha("main"), BTreeSet::new());
    let mut flaky_left: BTreeSet<String> = stories
        .iter()
        .filter(|s| s.flaky)
        .map(|s| s.name.clone())
        .collect();
    // Proofs running: (end time, car, commit), earliest first.
    let mut running: BinaryHeap<std::cmp::Reverse<(i64, u64, String)>> = BinaryHeap::new();
    let mut f = Figures::default();
    let mut next_arrival = 0;
    let mut commits = 0;
    let mut queue: Vec<TrainEvent> = Vec::new();
    // The looks the train asked for (`TrainAction::Wait`), earliest first.
    let mut wakes: BinaryHeap<std::cmp::Reverse<i64>> = BinaryHeap::new();
    loop {
        let arrival = stories.get(next_arrival).map(|s| s.at_ms);
        let finish = running.peek().map(|r| r.0 .0);
        let wake = wakes.peek().map(|w| w.0);
        let Some(now) = [arrival, finish, wake].into_iter().flatten().min() else {
            break;
        };
        if wake == Some(now) {
            wakes.pop();
            // The shell's look: the default branch's head, unchanged.
            let head = train.main.clone().expect("the train knows main");
            queue.push(TrainEvent::MainMoved { head });
        } else if arrival == Some(now) {
            let s = &stories[next_arrival];
            next_arrival += 1;
            queue.push(TrainEvent::Enqueued(Entry {
                story: StoryId::from(s.name.as_str()),
                head: sha(&format!("head-{}", s.name)),
                priority: Priority::Normal,
                queued_at_ms: s.at_ms,
                files: [format!("src/{}.rs", s.name), format!("tests/{}.rs", s.name)].into(),
                conflicted: false,
            }));
        } else {
            let std::cmp::Reverse((_, car, commit)) = running.pop().expect("a proof ends");
            let tree = &trees[&CommitSha::parse(&commit).expect("a sha the bench made")];
            let mut failing: Vec<FailingTest> = Vec::new();
            for name in tree {
                let s = by_name[name.as_str()];
                if s.broken || flaky_left.remove(name) {
                    failing.push(FailingTest {
                        name: format!("{}::works", s.name),
                        file: Some(s.test_file.clone()),
                        case: None,
                    });
                }
            }
            queue.push(TrainEvent::Proved {
                car: CarId(car),
                commit: CommitSha::parse(&commit).expect("a sha the bench made"),
                failing,
            });
        }
        while let Some(event) = queue.pop() {
            let (next, actions) = on_train_event(&train, event, settings, now);
            train = next;
            for action in actions {
                match action {
                    TrainAction::Build { car, base, heads } => {
                        let mut tree = trees[&base].clone();
                        tree.extend(heads.iter().map(|(s, _)| s.as_str().to_owned()));
                        commits += 1;
                        let commit = sha(&format!("c{commits}"));
                        let names: Vec<&str> = tree.iter().map(String::as_str).collect();
                        let built = Built {
                            commit: commit.clone(),
                            tree: sha(&names.join("+")),
                        };
                        trees.insert(commit, tree);
                        queue.push(TrainEvent::Built { car, built });
                    }
                    TrainAction::Prove { car, commit, .. } => {
                        running.push(std::cmp::Reverse((
                            now + PROOF_MS,
                            car.0,
                            commit.into_string(),
                        )));
                    }
                    TrainAction::Cancel { car } => {
                        let kept: Vec<_> = running.drain().filter(|r| r.0 .1 != car.0).collect();
                        running.extend(kept);
                    }
                    TrainAction::Land {
                        car,
                        commit,
                        stories: landed,
                        ..
                    } => {
                        for story in &landed {
                            let s = by_name[story.as_str()];
                            f.landed += 1;
                            f.waits_ms.push(now - s.at_ms);
                            f.broken_landed += usize::from(s.broken);
                        }
                        f.last_landing_ms = now;
                        f.landings += 1;
                        let _ = commit;
                        queue.push(TrainEvent::Landed { car });
                    }
                    TrainAction::Refuse { story, .. } => {
                        let s = by_name[story.as_str()];
                        if !s.broken {
                            f.innocents_refused += 1;
                            f.flaky_ejections += usize::from(s.flaky);
                        }
                    }
                    TrainAction::Flaky { .. } => f.flaky_events += 1,
                    TrainAction::Wait { until_ms } => wakes.push(std::cmp::Reverse(until_ms)),
                }
            }
        }
    }
    f.runs = train.stats.proof_runs;
    f.bisection_runs = train.stats.bisection_runs;
    f
}

fn percentile(waits: &mut [i64], p: f64) -> f64 {
    waits.sort_unstable();
    let i = ((waits.len() as f64 - 1.0) * p).round() as usize;
    waits.get(i).copied().unwrap_or(0) as f64 / 60_000.0
}

/// The same stream's stories shipped in bursts instead: 2 to 4 within 3
/// seconds (a person labelling several PRs, an agent finishing a plan),
/// a burst every 6 minutes on average (the same 40 stories an hour).
fn bursts(seed: u64) -> Vec<Story> {
    bursts_apart(seed, 4 * ARRIVAL_MS)
}

/// [`bursts`] an hour apart on average: a quiet repository, whose train
/// is idle when each burst comes.
fn quiet_bursts(seed: u64) -> Vec<Story> {
    bursts_apart(seed, 3_600_000)
}

fn bursts_apart(seed: u64, mean_gap_ms: i64) -> Vec<Story> {
    let mut rng = Rng(seed);
    let mut stories = stream(seed);
    let mut at_ms = 0;
    let mut i = 0;
    while i < stories.len() {
        at_ms += (rng.next() % (2 * mean_gap_ms as u64)) as i64;
        let size = 2 + (rng.next() % 3) as usize;
        for s in stories.iter_mut().skip(i).take(size) {
            s.at_ms = at_ms + (rng.next() % 3_000) as i64;
        }
        i += size;
    }
    stories.sort_by_key(|s| s.at_ms);
    stories
}

/// The mean of each train's landings an hour over `seeds` streams (the
/// batching wait against none), each seeded from the benchmark's own;
/// the stories arriving one by one, then in bursts.
fn over_seeds(seeds: u64) {
    for (shape, make) in [
        ("one by one", stream as fn(u64) -> Vec<Story>),
        ("in bursts", bursts),
        ("in bursts an hour apart", quiet_bursts),
    ] {
        over_seeds_of(seeds, shape, make);
    }
}

fn over_seeds_of(seeds: u64, shape: &str, make: fn(u64) -> Vec<Story>) {
    println!("\nMean over {seeds} seeded streams, stories arriving {shape} (landed per hour, proof runs per landed, p50 wait in min, moves of main per landed):");
    for wait_s in [0, 5, 10, 30, 60, 120] {
        let (mut per_hour, mut runs, mut p50, mut moves) = (0.0, 0.0, 0.0, 0.0);
        for seed in 0..seeds {
            let stories = make(0x5eed_2026 + seed * 7_919);
            let settings = TrainSettings {
                batch_wait_ms: wait_s * 1_000,
                ..TrainSettings::default()
            };
            let mut f = simulate(&stories, settings);
            per_hour += f.landed as f64 / (f.last_landing_ms as f64 / 3_600_000.0);
            runs += f.runs as f64 / f.landed.max(1) as f64;
            p50 += percentile(&mut f.waits_ms, 0.5);
            moves += f.landings as f64 / f.landed.max(1) as f64;
        }
        let n = seeds as f64;
        println!(
            "| train (batch 4, parallel 2), batching wait {wait_s} s | {:.1} | {:.2} | {:.1} | {:.2} |",
            per_hour / n,
            runs / n,
            p50 / n,
            moves / n
        );
    }
}

fn main() {
    if let Some(seeds) = std::env::var("SHIP_TRAIN_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return over_seeds(seeds);
    }
    let stories = stream(0x5eed_2026);
    let broken = stories.iter().filter(|s| s.broken).count();
    let flaky = stories.iter().filter(|s| s.flaky).count();
    let last_arrival_h = stories.last().map_or(0, |s| s.at_ms) as f64 / 3_600_000.0;
    println!(
        "{STORIES} stories over {last_arrival_h:.1} h ({broken} broken, {flaky} flaky once), \
         proofs of {} min\n",
        PROOF_MS / 60_000
    );
    println!(
        "| queue | landed | landed per hour | proof runs per landed | wait p50 (min) | wait p95 (min) | innocents refused | broken landed | flaky ejections | flaky events | bisection runs |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let queues = [
        ("serial (batch 1, parallel 1)", 1, 1, true, 0),
        (
            "binary split (batch 4, parallel 2, no attribution)",
            4,
            2,
            false,
            0,
        ),
        ("train (batch 4, parallel 2)", 4, 2, true, 0),
        ("train (batch 4, parallel 3)", 4, 3, true, 0),
        ("train (batch 8, parallel 2)", 8, 2, true, 0),
        (
            "train (batch 4, parallel 2), batching wait 5 s",
            4,
            2,
            true,
            5,
        ),
        (
            "train (batch 4, parallel 2), batching wait 10 s",
            4,
            2,
            true,
            10,
        ),
        (
            "train (batch 4, parallel 2), batching wait 30 s",
            4,
            2,
            true,
            30,
        ),
        (
            "train (batch 4, parallel 2), batching wait 60 s",
            4,
            2,
            true,
            60,
        ),
        (
            "train (batch 4, parallel 2), batching wait 120 s",
            4,
            2,
            true,
            120,
        ),
        (
            "train (batch 4, parallel 2), batching wait 300 s",
            4,
            2,
            true,
            300,
        ),
    ];
    for (name, batch_max, parallel, attribution, wait_s) in queues {
        let settings = TrainSettings {
            batch_max,
            parallel,
            attribution,
            batch_wait_ms: wait_s * 1_000,
        };
        let mut f = simulate(&stories, settings);
        let hours = f.last_landing_ms as f64 / 3_600_000.0;
        println!(
            "| {name} | {} | {:.1} | {:.2} | {:.0} | {:.0} | {} | {} | {} | {} | {} |",
            f.landed,
            f.landed as f64 / hours,
            f.runs as f64 / f.landed.max(1) as f64,
            percentile(&mut f.waits_ms, 0.5),
            percentile(&mut f.waits_ms, 0.95),
            f.innocents_refused,
            f.broken_landed,
            f.flaky_ejections,
            f.flaky_events,
            f.bisection_runs,
        );
    }
}
