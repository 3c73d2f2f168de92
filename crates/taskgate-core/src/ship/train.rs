//! The ship train (issue 31): the repository's ship queue as batches
//! proven in parallel, each on top of the one ahead of it, so a deep
//! queue lands several stories per proof and a failure costs the guilty
//! story only.
//!
//! Owns: the queue-level record [`Train`] (stored as JSON per repository
//! by the shell), its transition [`on_train_event`], and the actions the
//! shell performs ([`TrainAction`]: build a car's merge commit, prove it,
//! cancel it, land it, refuse a story, record a flaky event).
//! Must not: do IO, read the clock (time comes in with the event), or know
//! how a car's commit is built or a proof is run.
//!
//! Ideas a reader needs:
//! - **Cars.** A car is up to `batch_max` stories merged in queue order on
//!   a base: the default branch's head for the first car, the commit of
//!   the car ahead for the others (speculation). At most `parallel` cars
//!   are formed from the queue at once. The first car lands as one
//!   fast-forward once proven, and the car behind it is then proven on
//!   exactly what the default branch is.
//! - **A burst rides together.** An idle train (no car in it) waits up to
//!   `batch_wait_ms` after the first waiting story's ship before forming
//!   its first car, unless a car's worth is waiting or a hotfix is
//!   (`advance`'s `holds_for_more`). A train with a car in it never waits:
//!   the next car is built on it at once.
//! - **The tested tree is the tree that lands.** A car lands only with a
//!   verdict on its own commit; anything that changes what a car is built
//!   on (a failure ahead, the default branch moved, a story leaving)
//!   dissolves it and every car behind it, and their stories are formed
//!   into new cars.
//! - **Flakes blame nobody.** A failed proof is run again on the same
//!   commit before anyone is blamed. A pass then lands the car, and the
//!   tests that failed the first time are a flaky event.
//! - **Blame is narrowed, not guessed.** A confirmed failure of a car of
//!   one story refuses that story. A car of several is split: without the
//!   story the evidence points at (`attribution`), then that story alone;
//!   with no clear suspect, in halves. Innocent stories land without a
//!   person; a split car rebuilt on the same changes meets the failed
//!   tree again and is refused without another run ([`Train::failed`]).
//! - **A suspect is checked beside the train.** The suspect of a failed
//!   car rides aside (`Car::aside`): built on the car of the others, not
//!   counted in `parallel`, and nothing built on it, so the cars behind
//!   are formed and proven without waiting for the check.
//! - **Proofs are reused by tree.** A car whose commit has a tree already
//!   proven green with the same gates passes without a run.

mod advance;
mod attribution;
mod blame;
mod build_failed;
mod effects;
mod proven;
mod shown;
#[cfg(test)]
mod tests;
mod verdict;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use attribution::{likely_culprit, Changed, FailingTest};
pub use build_failed::{TrainOff, TRAIN_OFF_MS};
pub use effects::{build_car_effect, car_branch, CarHead};
pub use proven::ProvenTree;
pub use shown::{car_of, shown_record};

use crate::ids::{CommitSha, StoryId};

/// Trees remembered as proven green, or as failing, per repository.
pub const KEPT_TREES: usize = 200;

/// How a story is ordered in the queue (`/taskgate ship --priority`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    #[default]
    Normal,
    /// Ahead of every normal story not yet in a car.
    High,
    /// First: the cars being proven are dissolved and rebuilt behind it.
    Hotfix,
}

/// The train's settings (`ship_batch_max`, `ship_parallel`,
/// `ship_bisect`, `ship_batch_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainSettings {
    /// Stories per car; 1 proves one story at a time.
    pub batch_max: usize,
    /// Cars formed from the queue at once (speculation depth).
    pub parallel: usize,
    /// Split a failed car by the evidence first; off, always in halves
    /// (the plain binary split the benchmark compares with).
    pub attribution: bool,
    /// How long the first car of an idle train waits for more stories
    /// (ms, from the first story's ship); 0: it forms at once. Never
    /// waited while a car is in the train.
    pub batch_wait_ms: i64,
}

impl Default for TrainSettings {
    /// The train as the model and its tests know it: no batching wait
    /// (the repository config's default is `RepoConfig::ship_batch_wait`).
    fn default() -> TrainSettings {
        TrainSettings {
            batch_max: 4,
            parallel: 2,
            attribution: true,
            batch_wait_ms: 0,
        }
    }
}

/// A story waiting in the train, with what it ships.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub story: StoryId,
    /// The pinned story head that is merged and lands.
    pub head: CommitSha,
    pub priority: Priority,
    pub queued_at_ms: i64,
    /// The files the story changes against the default branch: the
    /// evidence attribution reads.
    pub files: BTreeSet<String>,
    /// It could not be merged once: it goes in a car of its own.
    #[serde(default)]
    pub conflicted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CarId(pub u64);

impl std::fmt::Display for CarId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A car's merge commit as the shell built it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Built {
    pub commit: CommitSha,
    /// The commit's tree: what proofs are keyed by.
    pub tree: CommitSha,
}

/// A batch of stories merged on a base and proven together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Car {
    pub id: CarId,
    pub stories: Vec<Entry>,
    /// What it is built on, once known.
    pub base: Option<CommitSha>,
    /// Asked to be built (on `base`), not yet heard back.
    pub building: bool,
    pub built: Option<Built>,
    /// Proof runs started on its commit (a failed first one is retried).
    pub runs: u32,
    /// A run is going.
    pub proving: bool,
    /// Proven green on its commit.
    pub passed: bool,
    /// Failed twice on its commit (or its tree is known to fail): blamed
    /// once every car ahead of it has passed, since until then the fault
    /// may be theirs.
    pub failure: Option<Vec<FailingTest>>,
    /// Proven without a run of its own (its tree was proven before).
    pub reused: bool,
    /// Asked to land.
    pub landing: bool,
    /// Formed by splitting a failed car: the stories of the car whose
    /// failure it narrows down.
    pub split_from: Vec<StoryId>,
    /// A check beside the train: the suspect of a failed car, built on
    /// the car of the others, so its tree is the failed one again and its
    /// run is the failure's check. Nothing is built on it and it never
    /// lands: the cars behind are built without the suspect, so the train
    /// stays full while the check runs. Failed again, its story is
    /// refused; passed, the failure was a flake and its story waits again.
    #[serde(default)]
    pub aside: bool,
    /// Whose gates its proof runs, set when the proof starts
    /// ([`TrainAction::Prove`]).
    #[serde(default)]
    pub gates_of: Vec<StoryId>,
}

/// A tree known to fail, with the tests that failed on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedTree {
    pub tree: CommitSha,
    pub failing: Vec<FailingTest>,
    /// The commit whose run failed, when known: a pass on the same commit
    /// is a retry of one pseudo task, whose own history holds the flake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitSha>,
}

/// Running counts for `/metrics` and the benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainStats {
    pub proof_runs: u64,
    pub reused_proofs: u64,
    pub flaky_retries: u64,
    /// Runs of cars formed by splitting a failed one.
    pub bisection_runs: u64,
    pub landed: u64,
    pub refused: u64,
    /// Cars proven (their first run, or a reused proof), by how many
    /// stories each held: the batch sizes.
    #[serde(default)]
    pub batch_sizes: std::collections::BTreeMap<u32, u64>,
    /// Stories refused for a failure on a base that was neither the
    /// default branch's head nor a car proven green ahead of them: the
    /// failure may have been the base's, so the story may be innocent.
    /// The train blames only once every car ahead passed: this stays 0.
    #[serde(default)]
    pub innocents_refused: u64,
}

/// One repository's ship train.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Train {
    /// The default branch's head as last known.
    pub main: Option<CommitSha>,
    /// Stories not in a car yet, in the order they arrived.
    pub waiting: Vec<Entry>,
    /// Cars in landing order: each is built on the one before it.
    pub cars: Vec<Car>,
    pub next_car: u64,
    /// The gates a proof runs, as a key: a tree proven with other gates
    /// is not reused.
    pub gates: String,
    /// Trees proven green with `gates`, newest last, each with the
    /// stories whose gates ran on it.
    #[serde(default, deserialize_with = "proven::stored_proven")]
    pub proven: Vec<ProvenTree>,
    /// Trees whose proof failed twice with `gates`, newest last.
    pub failed: Vec<FailedTree>,
    /// Trees whose proof failed once, newest last: the next proof of the
    /// same tree (the retry, or the split car that rebuilds it) decides.
    #[serde(default)]
    pub failed_once: Vec<FailedTree>,
    /// A digest of each story's gate definitions (its plan's commands,
    /// timeouts, artifacts, metrics, required tests), as last given by
    /// the shell: a story whose gates changed has its proofs forgotten
    /// (`Train::with_gates`).
    #[serde(default)]
    pub story_gates: BTreeMap<StoryId, String>,
    pub stats: TrainStats,
    /// GitHub refused to build a car (a rule on the batch branches, a
    /// permission): the repository ships one story at a time until then.
    #[serde(default)]
    pub off: Option<TrainOff>,
}

impl Train {
    /// The car whose merge commit is `commit`, if one is in the train.
    pub fn car_built_at(&self, commit: &CommitSha) -> Option<&Car> {
        (self.cars.iter()).find(|c| c.built.as_ref().is_some_and(|b| b.commit == *commit))
    }
}

/// What happened, as the shell reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrainEvent {
    Enqueued(Entry),
    /// A story left the queue (unshipped, or its head moved).
    Dequeued(StoryId),
    Built {
        car: CarId,
        built: Built,
    },
    /// `story` does not merge cleanly on the car's base and the stories
    /// before it in the car.
    Conflict {
        car: CarId,
        story: StoryId,
    },
    /// A proof run on the car's commit ended; no failing tests is a pass.
    Proved {
        car: CarId,
        commit: CommitSha,
        failing: Vec<FailingTest>,
    },
    /// The default branch was fast-forwarded to the car's commit.
    Landed {
        car: CarId,
    },
    /// The default branch's rules refused the car's landing (or GitHub
    /// failed it for good): its stories leave the train (the shell
    /// refuses them), and the cars behind it are rebuilt.
    LandRefused {
        car: CarId,
    },
    /// The default branch's rules, read at the landing of car `car`, no
    /// longer let a batch land by a fast-forward (`core::ship::
    /// landing_holds`): nothing landed. The train steps aside: every car
    /// is dissolved and its stories, still queued, are left to the
    /// one-story queue, which proves each as the rules now ask (the next
    /// look at the queue reads them afresh: `core::ship::train_unfit`).
    RulesChanged {
        car: CarId,
    },
    /// The default branch is at `head`: when that is not what the train
    /// built on, every car is rebuilt on it.
    MainMoved {
        head: CommitSha,
    },
    /// GitHub did not build the car: it `refused` (a rule or a permission
    /// said no, which the next car would meet again) or failed past the
    /// executor's retries; `why` in GitHub's words, at `at_ms`.
    CarFailed {
        car: CarId,
        why: String,
        refused: bool,
        at_ms: i64,
    },
    /// GitHub refused to merge `story` into the car for what the story
    /// changes (a workflow file without the `workflows` permission): the
    /// next car holding it would meet the same answer, the others would
    /// not. `message` in GitHub's words.
    StoryRefused {
        car: CarId,
        story: StoryId,
        message: String,
    },
}

/// Why a story is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its proof failed twice on `commit`, built on `base`.
    Failed {
        failing: Vec<FailingTest>,
        base: CommitSha,
        commit: CommitSha,
        /// The batch whose failure was narrowed down to it.
        batch: Vec<StoryId>,
    },
    /// It does not merge cleanly on the default branch.
    Conflict { base: CommitSha },
    /// GitHub refused to merge it (`message`: what GitHub said, read into
    /// violations as a landing's refusal is).
    Rules { message: String },
}

/// What the shell does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrainAction {
    /// Merge each story's head, in order, on `base`; report
    /// [`TrainEvent::Built`] or [`TrainEvent::Conflict`].
    Build {
        car: CarId,
        base: CommitSha,
        heads: Vec<(StoryId, CommitSha)>,
    },
    /// Run the gates of `gates_of`'s stories on the car's commit; report
    /// [`TrainEvent::Proved`].
    Prove {
        car: CarId,
        commit: CommitSha,
        /// Whose gates the run runs: the car's stories; for a check
        /// aside, the failed car's (the car it is built on, then its own),
        /// since its tree is the failed one and its run is that failure's
        /// check.
        gates_of: Vec<StoryId>,
    },
    /// Stop the car's run: it was dissolved.
    Cancel {
        car: CarId,
    },
    /// Fast-forward the default branch to `commit`; report
    /// [`TrainEvent::Landed`] or [`TrainEvent::MainMoved`].
    Land {
        car: CarId,
        commit: CommitSha,
        stories: Vec<StoryId>,
        reused: bool,
    },
    Refuse {
        story: StoryId,
        why: Refusal,
    },
    /// The idle train waits for more stories before it forms its first
    /// car: look at it again at `until_ms`, when the batching wait ends
    /// (an earlier ship may form it sooner: a full car does not wait).
    Wait {
        until_ms: i64,
    },
    /// Tests that failed on a tree and then passed on it at `commit`.
    Flaky {
        car: CarId,
        commit: CommitSha,
        tests: Vec<FailingTest>,
        /// Failed on `commit` too: the car's retry, two attempts of its
        /// first story's proof (else the failure was another car's, on
        /// the same tree).
        retried: bool,
    },
}

/// The train after `event`, taken at `now_ms`, and what to do.
pub fn on_train_event(
    train: &Train,
    event: TrainEvent,
    settings: TrainSettings,
    now_ms: i64,
) -> (Train, Vec<TrainAction>) {
    let mut step = Step {
        t: train.clone(),
        actions: Vec::new(),
        attribution: settings.attribution,
        now_ms,
    };
    step.apply(event);
    step.advance(settings);
    (step.t, step.actions)
}

pub(super) struct Step {
    t: Train,
    actions: Vec<TrainAction>,
    attribution: bool,
    /// When the event is taken: what the batching wait is measured by.
    now_ms: i64,
}

impl Step {
    fn apply(&mut self, event: TrainEvent) {
        match event {
            TrainEvent::Enqueued(entry) => self.enqueue(entry),
            TrainEvent::Dequeued(story) => self.dequeue(&story),
            TrainEvent::Built { car, built } => {
                if let Some(c) = self.car_mut(car) {
                    if c.building {
                        c.building = false;
                        c.built = Some(built);
                    }
                }
            }
            TrainEvent::Conflict { car, story } => self.conflict(car, &story),
            TrainEvent::Proved {
                car,
                commit,
                failing,
            } => self.proved(car, &commit, failing),
            TrainEvent::Landed { car } => self.landed(car),
            TrainEvent::LandRefused { car } => self.land_refused(car),
            TrainEvent::RulesChanged { car } => self.rules_changed(car),
            TrainEvent::MainMoved { head } => self.main_moved(head),
            TrainEvent::CarFailed {
                car,
                why,
                refused,
                at_ms,
            } => self.car_failed(car, why, refused, at_ms),
            TrainEvent::StoryRefused {
                car,
                story,
                message,
            } => self.story_refused(car, &story, message),
        }
    }

    fn car_mut(&mut self, id: CarId) -> Option<&mut Car> {
        self.t.cars.iter_mut().find(|c| c.id == id)
    }

    fn position(&self, id: CarId) -> Option<usize> {
        self.t.cars.iter().position(|c| c.id == id)
    }

    fn enqueue(&mut self, entry: Entry) {
        let known = |e: &Entry| e.story == entry.story;
        if self.t.waiting.iter().any(known)
            || self.t.cars.iter().any(|c| c.stories.iter().any(known))
        {
            return; // shipped twice: one place in the queue
        }
        if entry.priority == Priority::Hotfix {
            // Everything not already landing is rebuilt behind it.
            let from = self.t.cars.iter().position(|c| !c.landing);
            if let Some(from) = from {
                self.dissolve_from(from);
            }
        }
        self.t.waiting.push(entry);
    }

    fn dequeue(&mut self, story: &StoryId) {
        self.t.waiting.retain(|e| e.story != *story);
        let at = self
            .t
            .cars
            .iter()
            .position(|c| !c.landing && c.stories.iter().any(|e| e.story == *story));
        if let Some(at) = at {
            self.drop_car(at);
            self.t.waiting.retain(|e| e.story != *story);
        }
    }

    /// Car `at` goes back to the queue, and so do the cars built on it:
    /// every car behind, or none behind a check aside.
    fn drop_car(&mut self, at: usize) {
        if self.t.cars[at].aside {
            let car = self.t.cars.remove(at);
            if car.proving {
                self.actions.push(TrainAction::Cancel { car: car.id });
            }
            self.t.waiting.extend(car.stories);
        } else {
            self.dissolve_from(at);
        }
    }

    /// Cars from `at` on go back to the queue: their runs are stopped and
    /// their stories formed into new cars.
    fn dissolve_from(&mut self, at: usize) {
        for car in self.t.cars.drain(at..).collect::<Vec<_>>() {
            if car.proving {
                self.actions.push(TrainAction::Cancel { car: car.id });
            }
            self.t.waiting.extend(car.stories);
        }
    }

    fn conflict(&mut self, car: CarId, story: &StoryId) {
        let Some(at) = self.position(car) else {
            return;
        };
        if !self.t.cars[at].building {
            return;
        }
        let alone_on_main = at == 0 && self.t.cars[at].stories.len() == 1;
        if let (true, Some(base)) = (alone_on_main, self.t.cars[at].base.clone()) {
            self.t.cars.remove(at);
            self.t.stats.refused += 1;
            self.actions.push(TrainAction::Refuse {
                story: story.clone(),
                why: Refusal::Conflict { base },
            });
            self.dissolve_from(at);
            return;
        }
        // It may only conflict with a story ahead of it that has not
        // landed yet: it is tried again in a car of its own, behind.
        self.drop_car(at);
        if let Some(e) = self.t.waiting.iter_mut().find(|e| e.story == *story) {
            e.conflicted = true;
        }
    }

    /// The first car, taken off the train, when it is `car` and was asked
    /// to land: GitHub's answer to any other is stale.
    fn take_landing(&mut self, car: CarId) -> Option<Car> {
        let first = self.t.cars.first()?;
        (first.id == car && first.landing).then(|| self.t.cars.remove(0))
    }

    fn landed(&mut self, car: CarId) {
        let Some(car) = self.take_landing(car) else {
            return;
        };
        self.t.main = car.built.map(|b| b.commit);
        self.t.stats.landed += car.stories.len() as u64;
    }

    fn land_refused(&mut self, car: CarId) {
        let Some(car) = self.take_landing(car) else {
            return;
        };
        self.t.stats.refused += car.stories.len() as u64;
        self.dissolve_from(0);
    }

    fn rules_changed(&mut self, car: CarId) {
        if self.take_landing(car).is_none() {
            return;
        }
        self.dissolve_from(0);
        self.t.waiting.clear();
    }

    fn main_moved(&mut self, head: CommitSha) {
        if self.t.main.as_ref() == Some(&head) {
            return;
        }
        // Our own landing's push, ahead of the answer that it landed.
        let ours = self
            .t
            .cars
            .first()
            .is_some_and(|c| c.landing && c.built.as_ref().is_some_and(|b| b.commit == head));
        if ours {
            return;
        }
        self.t.main = Some(head);
        self.dissolve_from(0);
    }
}

pub(super) fn remember_failed(
    list: &mut Vec<FailedTree>,
    tree: CommitSha,
    failing: Vec<FailingTest>,
) {
    list.retain(|f| f.tree != tree);
    list.push(FailedTree {
        tree,
        failing,
        commit: None,
    });
    let excess = list.len().saturating_sub(KEPT_TREES);
    list.drain(..excess);
}
