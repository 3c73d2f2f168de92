//! How the train moves on after an event: a proven first car lands,
//! a confirmed failure is blamed, cars are formed from the queue, built
//! and proven.
//!
//! Owns: [`Step::advance`] and the steps it repeats until nothing changes.
//! Must not: apply events (the parent module does), or do IO.

use super::{Car, CarId, Entry, Step, TrainAction, TrainSettings};
use crate::ids::StoryId;

impl Step {
    /// Moves the train on: lands a proven first car, builds and proves
    /// what can be, and forms cars from the queue.
    pub(super) fn advance(&mut self, settings: TrainSettings) {
        loop {
            let before = (self.t.clone(), self.actions.len());
            self.land_first();
            self.blame_first_failure();
            self.form_cars(settings);
            self.build_and_prove();
            if (&self.t, self.actions.len()) == (&before.0, before.1) {
                break;
            }
        }
        if let Some(until_ms) = self.holds_for_more(settings) {
            self.actions.push(TrainAction::Wait { until_ms });
        }
    }

    /// Until when the first car of an idle train waits for more stories
    /// (`batch_wait_ms` after the first waiting one was shipped), or
    /// `None` when it forms now: a car is in the train already (it is
    /// proving, or landing: the next car rides behind it at once), a
    /// car's worth is waiting, a hotfix is waiting, or the wait is over.
    fn holds_for_more(&self, settings: TrainSettings) -> Option<i64> {
        if settings.batch_wait_ms <= 0 || !self.t.cars.is_empty() || self.t.main.is_none() {
            return None;
        }
        let waiting = &self.t.waiting;
        let full = waiting.len() >= settings.batch_max.max(1);
        let hotfix = (waiting.iter()).any(|e| e.priority == super::Priority::Hotfix);
        if full || hotfix {
            return None;
        }
        let first = waiting.iter().map(|e| e.queued_at_ms).min()?;
        let until_ms = first.saturating_add(settings.batch_wait_ms);
        (self.now_ms < until_ms).then_some(until_ms)
    }

    fn land_first(&mut self) {
        let Some(car) = self.t.cars.first_mut() else {
            return;
        };
        // A check aside first: the car behind waits for its verdict, so a
        // refusal is always on a base that is the default branch's head.
        if !car.passed || car.landing || car.aside {
            return;
        }
        let (Some(built), Some(base)) = (car.built.clone(), car.base.clone()) else {
            return;
        };
        if self.t.main.as_ref() != Some(&base) {
            return; // built on a base that is not the default branch's head
        }
        car.landing = true;
        self.actions.push(TrainAction::Land {
            car: car.id,
            commit: built.commit,
            stories: car.stories.iter().map(|e| e.story.clone()).collect(),
            reused: car.reused,
        });
    }

    fn form_cars(&mut self, settings: TrainSettings) {
        if self.t.main.is_none() || self.holds_for_more(settings).is_some() {
            return;
        }
        let in_line = |cars: &[Car]| cars.iter().filter(|c| !c.aside).count();
        while in_line(&self.t.cars) < settings.parallel.max(1) && !self.t.waiting.is_empty() {
            let stories = take_next(&mut self.t.waiting, settings.batch_max.max(1));
            let car = self.new_car(stories, Vec::new());
            self.t.cars.push(car);
        }
    }

    pub(super) fn new_car(&mut self, stories: Vec<Entry>, split_from: Vec<StoryId>) -> Car {
        self.t.next_car += 1;
        Car {
            id: CarId(self.t.next_car),
            stories,
            base: None,
            building: false,
            built: None,
            runs: 0,
            proving: false,
            passed: false,
            failure: None,
            reused: false,
            landing: false,
            split_from,
            aside: false,
            gates_of: Vec::new(),
        }
    }

    fn build_and_prove(&mut self) {
        for i in 0..self.t.cars.len() {
            // Built on the nearest car ahead that is not a check aside.
            let ahead = self.t.cars[..i].iter().rev().find(|c| !c.aside);
            let base = match ahead {
                None => self.t.main.clone(),
                Some(car) => car.built.as_ref().map(|b| b.commit.clone()),
            };
            let car = &mut self.t.cars[i];
            if car.base.is_none() {
                let Some(base) = base else {
                    return; // the car ahead is not built yet
                };
                car.base = Some(base.clone());
                car.building = true;
                self.actions.push(TrainAction::Build {
                    car: car.id,
                    base,
                    heads: car
                        .stories
                        .iter()
                        .map(|e| (e.story.clone(), e.head.clone()))
                        .collect(),
                });
                continue;
            }
            self.prove_built(i);
        }
    }

    /// Blames the first car with a confirmed failure once every car ahead
    /// of it has passed.
    fn blame_first_failure(&mut self) {
        let at = self.t.cars.iter().position(|c| !c.passed);
        let Some(at) = at else {
            return;
        };
        if let Some(failing) = self.t.cars[at].failure.clone() {
            self.blame(at, failing);
        }
    }

    /// Starts the proof of car `i` once built, or settles it without a
    /// run when its tree was proven, or is known to fail, before.
    fn prove_built(&mut self, i: usize) {
        let car = &self.t.cars[i];
        let Some(built) = car.built.clone() else {
            return;
        };
        if car.passed || car.proving || car.failure.is_some() {
            return;
        }
        let size = car.stories.len() as u32;
        let gates_of = self.gates_of(i);
        let proven = self
            .t
            .proven
            .iter()
            .any(|p| p.covers(&built.tree, &gates_of));
        if car.runs == 0 && proven {
            self.t.stats.reused_proofs += 1;
            *self.t.stats.batch_sizes.entry(size).or_default() += 1;
            self.t.cars[i].reused = true;
            self.pass(i);
            return;
        }
        let known = self.t.failed.iter().find(|f| f.tree == built.tree);
        if let (0, Some(known)) = (car.runs, known) {
            self.t.cars[i].failure = Some(known.failing.clone());
            return;
        }
        if car.runs == 0 {
            *self.t.stats.batch_sizes.entry(size).or_default() += 1;
        }
        let car = &mut self.t.cars[i];
        car.runs += 1;
        car.proving = true;
        car.gates_of = gates_of.clone();
        self.t.stats.proof_runs += 1;
        if !car.split_from.is_empty() {
            self.t.stats.bisection_runs += 1;
        }
        self.actions.push(TrainAction::Prove {
            car: car.id,
            commit: built.commit,
            gates_of,
        });
    }

    /// The stories whose gates car `i`'s proof runs ([`TrainAction::Prove`]).
    fn gates_of(&self, i: usize) -> Vec<StoryId> {
        let car = &self.t.cars[i];
        let own = car.stories.iter().map(|e| e.story.clone());
        if !car.aside {
            return own.collect();
        }
        let ahead = self.t.cars[..i].iter().rev().find(|c| !c.aside);
        let built_on = ahead.into_iter().flat_map(|c| &c.stories);
        built_on.map(|e| e.story.clone()).chain(own).collect()
    }
}

/// The next car's stories: up to `max` of the waiting ones, highest
/// priority first and then in arrival order; a story that conflicted once
/// rides alone.
fn take_next(waiting: &mut Vec<Entry>, max: usize) -> Vec<Entry> {
    let mut order: Vec<usize> = (0..waiting.len()).collect();
    order.sort_by_key(|&i| {
        let e = &waiting[i];
        (std::cmp::Reverse(e.priority), e.queued_at_ms, i)
    });
    let mut picked = Vec::new();
    for i in order {
        if picked.len() == max {
            break;
        }
        let alone = waiting[i].conflicted;
        if alone && !picked.is_empty() {
            continue; // its own car comes next
        }
        picked.push(i);
        if alone {
            break;
        }
    }
    picked.sort_unstable();
    let mut taken = Vec::with_capacity(picked.len());
    for (n, i) in picked.into_iter().enumerate() {
        taken.push(waiting.remove(i - n));
    }
    taken.sort_by_key(|e| (std::cmp::Reverse(e.priority), e.queued_at_ms));
    taken
}
