//! A freeze holds the ship train as it holds the one-story queue: a car
//! proven (or asked to land) while the repository is frozen does not land.
//!
//! Owns: [`Ship::hold_for_freeze`]. Must not: decide a story's record (the
//! core does: `core::ship::held_by_freeze`) or write to GitHub.
//!
//! How it matches the one-story queue: there, a proof that passes during a
//! freeze sends the story back to `queued` with a note, and it is proven
//! again on the base as it is when the freeze lifts. Here every car not
//! already landing leaves the train (its stories stay `queued`), each story
//! of a car that would have landed is told so on its issue, and the
//! queue's next look after the freeze (the unfreeze, or the periodic pass
//! at a window's end) forms and proves the batches again. A batch rebuilt
//! on an unchanged base has the same tree, whose proof the train reuses.

use super::*;
use taskgate_core::ship::Car;

impl Ship {
    /// The train after `events` asked a car to land while frozen: the
    /// cars not already landing before (`before`) are dissolved, their
    /// stories out of the train until the next look, and nothing of the
    /// events' actions is done. `None` when nothing was asked to land, or
    /// the repository is not frozen.
    pub(in crate::app::ship) async fn hold_for_freeze(
        &self,
        l: &Located,
        (before, after): (&Train, &Train),
        actions: &[TrainAction],
    ) -> Result<Option<ShipOutcome>, ShipError> {
        let Some(frozen) = l.frozen.as_deref() else {
            return Ok(None);
        };
        let landing = |car: &Car| before.cars.iter().any(|b| b.id == car.id && b.landing);
        let mut decision = Decision::nothing("");
        let mut held = false;
        for action in actions {
            let TrainAction::Land {
                car,
                commit,
                stories,
                ..
            } = action
            else {
                continue;
            };
            if after.cars.iter().any(|c| c.id == *car && landing(c)) {
                continue;
            }
            held = true;
            for story in stories {
                let Some(s) = self.locate(&l.repo, story, Some(&l.default_branch)).await? else {
                    continue;
                };
                let d = ship::held_by_freeze(&s.record, (*car, commit), frozen, &s.ctx());
                decision.merge(s.finish(d));
            }
        }
        if !held {
            return Ok(None);
        }
        let mut train = after.clone();
        train.cars.retain(|c| landing(c));
        let outcome = format!("ship train held: frozen ({frozen})");
        decision.outcome = outcome;
        decision.changes.insert(
            0,
            Change::TrainUpdated {
                repo: l.repo.clone(),
                train: Box::new(train),
            },
        );
        Ok(Some(decision.into()))
    }
}
