//! Narrowing a car's confirmed failure down to the stories that caused it:
//! a car of one story refuses it; a car of several is split in two, the
//! evidence's suspect apart from the others (`attribution`), or in halves
//! when the evidence names no one.
//!
//! Owns: the split and the refusal. Must not: decide when a failure is
//! confirmed or may be blamed (`train`).

use super::{likely_culprit, Changed, Entry, FailingTest, Refusal, Step, TrainAction};
use crate::ids::StoryId;

impl Step {
    /// Car `at` failed on its own changes (every car ahead passed): the
    /// cars behind it go back to the queue, and it is refused or split.
    pub(super) fn blame(&mut self, at: usize, failing: Vec<FailingTest>) {
        let proven_base = match at {
            0 => self.t.main.clone(),
            _ => (self.t.cars[at - 1].passed)
                .then(|| self.t.cars[at - 1].built.as_ref().map(|b| b.commit.clone()))
                .flatten(),
        };
        let car = self.t.cars.remove(at);
        if !car.aside {
            self.dissolve_from(at);
        }
        let batch: Vec<StoryId> = if car.split_from.is_empty() {
            car.stories.iter().map(|e| e.story.clone()).collect()
        } else {
            car.split_from.clone()
        };
        if let [only] = car.stories.as_slice() {
            let (Some(base), Some(built)) = (car.base.clone(), car.built.clone()) else {
                // Never proven: nothing to blame it for; it waits again.
                self.t.waiting.extend(car.stories);
                return;
            };
            self.t.stats.refused += 1;
            if proven_base.as_ref() != Some(&base) {
                self.t.stats.innocents_refused += 1;
            }
            self.actions.push(TrainAction::Refuse {
                story: only.story.clone(),
                why: Refusal::Failed {
                    failing,
                    base,
                    commit: built.commit,
                    batch,
                },
            });
            return;
        }
        self.split_into_two(at, car.stories, &failing, batch);
    }

    /// Car `at`, of several stories, failed once: it is split now, so the
    /// check of its failure (`verdict`) runs beside the proof of the
    /// stories that are likely innocent. Nobody is blamed yet.
    pub(super) fn narrow(&mut self, at: usize, failing: &[FailingTest]) {
        let car = self.t.cars.remove(at);
        self.dissolve_from(at);
        let batch = if car.split_from.is_empty() {
            car.stories.iter().map(|e| e.story.clone()).collect()
        } else {
            car.split_from.clone()
        };
        self.split_into_two(at, car.stories, failing, batch);
    }

    fn split_into_two(
        &mut self,
        at: usize,
        stories: Vec<Entry>,
        failing: &[FailingTest],
        batch: Vec<StoryId>,
    ) {
        let (first, second, suspect) = split(stories, failing, self.attribution);
        let first = self.new_car(first, batch.clone());
        let mut second = self.new_car(second, batch);
        // The evidence's suspect is checked beside the train; halves are
        // not: the fault may be in either, so the cars behind wait.
        second.aside = suspect;
        self.t.cars.insert(at, second);
        self.t.cars.insert(at, first);
    }
}

/// The two cars a failed one becomes, in the order they are proven: the
/// others, then the suspect (`true`); or the first half, then the second.
fn split(
    stories: Vec<Entry>,
    failing: &[FailingTest],
    attribution: bool,
) -> (Vec<Entry>, Vec<Entry>, bool) {
    let changed: Vec<Changed<'_>> = stories
        .iter()
        .map(|e| Changed {
            story: &e.story,
            files: &e.files,
        })
        .collect();
    let suspect = attribution
        .then(|| likely_culprit(&changed, failing))
        .flatten();
    match suspect {
        Some(suspect) => {
            let (others, suspect) = stories.into_iter().partition(|e| e.story != suspect);
            (others, suspect, true)
        }
        None => {
            let mut first = stories;
            let second = first.split_off(first.len() / 2);
            (first, second, false)
        }
    }
}
