//! A car GitHub did not build (`TrainEvent::CarFailed`): refused by a
//! rule or a missing permission on the batch branches, or failed past the
//! executor's retries.
//!
//! Owns: [`TrainOff`] and what the train does with a car that will not be
//! built. Must not: tell anyone (the shell's one-story queue says why on
//! each story's issue when it proves it) or read the clock (the time
//! comes with the event).
//!
//! The idea a reader needs: **a refusal repeats, a failure may not.**
//! Every car is built on a `taskgate/ship-batch-<n>` branch, so a rule
//! that refused one refuses the next: rebuilding would ask GitHub the same
//! question forever while the stories wait. The train steps aside instead
//! ([`Train::off`]): its cars are dissolved and its stories left to the
//! one-story queue (`taskgate/ship-<issue>`, which that rule does not
//! name), for [`TRAIN_OFF_MS`], after which the next queue look tries a
//! batch again. A failure (5xx past the retries) is GitHub's trouble, not
//! a rule: the car is dissolved and its stories formed into a new car.
//!
//! A refusal of one story's merge for what the story changes
//! (`TrainEvent::StoryRefused`: a workflow file without the `workflows`
//! permission) is that story's alone: it is refused as a landing would
//! be, and the others are formed into new cars with the train still on.

use serde::{Deserialize, Serialize};

use super::{CarId, Refusal, Step, Train, TrainAction};
use crate::ids::StoryId;

/// How long the train stays off after GitHub refused a car: a day, so a
/// rule fixed today is used tomorrow, and a rule left in place costs one
/// refused call a day.
pub const TRAIN_OFF_MS: i64 = 24 * 3_600_000;

/// The train stepped aside: GitHub refused to build a car.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainOff {
    /// The branch GitHub refused (`taskgate/ship-batch-<n>`).
    pub branch: String,
    /// What GitHub said.
    pub why: String,
    /// Until when stories ship one at a time.
    pub until_ms: i64,
}

impl Train {
    /// Why the train is off at `now_ms`, if it is.
    pub fn off_at(&self, now_ms: i64) -> Option<&TrainOff> {
        self.off.as_ref().filter(|off| now_ms < off.until_ms)
    }
}

impl Step {
    /// Car `car` was not built. A stale answer (the car was dissolved, or
    /// built since) changes nothing.
    pub(super) fn car_failed(&mut self, car: CarId, why: String, refused: bool, at_ms: i64) {
        let Some(at) = self.position(car) else {
            return;
        };
        if !self.t.cars[at].building {
            return;
        }
        if !refused {
            self.drop_car(at);
            return;
        }
        // Every car not already landing, and every story waiting, goes to
        // the one-story queue: the stories are still queued there.
        let from = self.t.cars.iter().position(|c| !c.landing);
        if let Some(from) = from {
            self.dissolve_from(from);
        }
        self.t.waiting.clear();
        self.t.off = Some(TrainOff {
            branch: super::car_branch(car),
            why,
            until_ms: at_ms + TRAIN_OFF_MS,
        });
    }

    /// GitHub refused to merge `story` into car `car` for what it
    /// changes: the story leaves the train, refused; the car and those
    /// built on it go back to the queue without it.
    pub(super) fn story_refused(&mut self, car: CarId, story: &StoryId, message: String) {
        let Some(at) = self.position(car) else {
            return;
        };
        if !self.t.cars[at].building {
            return;
        }
        self.drop_car(at);
        self.t.waiting.retain(|e| e.story != *story);
        self.t.stats.refused += 1;
        self.actions.push(TrainAction::Refuse {
            story: story.clone(),
            why: Refusal::Rules { message },
        });
    }
}
