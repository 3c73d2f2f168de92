//! The ship train's shell (issue 31): a train event of a repository read
//! into `core::ship::on_train_event` with the repository's train settings,
//! and the train after it stored with the effects of its actions, in one
//! decision.
//!
//! Owns: [`Ship::on_train_event`] and mapping `TrainAction`s to effects.
//! Must not: decide (the core does) or write to GitHub (effects do).
//!
//! The one idea a reader needs: **the train is stored only with what it
//! asked for.** A train whose actions the shell cannot perform yet is
//! left as it was (the decision says which action), so the stored train
//! never waits for an answer that will not come.

use super::*;
use taskgate_core::ship::{build_car_effect, TrainAction, TrainEvent};

impl Ship {
    /// A train event of `l`'s repository, with `l`'s config (the car's
    /// first story's): the stored train after it, and its effects.
    pub(super) async fn on_train_event(
        &self,
        l: &Located,
        event: TrainEvent,
    ) -> Result<ShipOutcome, ShipError> {
        let train = self.store.ship_train(&l.repo).await?;
        let (next, actions) = ship::on_train_event(&train, event, l.config.train_settings());
        let mut effects = Vec::new();
        for action in &actions {
            match action {
                TrainAction::Build { car, base, heads } => {
                    effects.push(build_car_effect(&l.repo, *car, base, heads));
                }
                other => {
                    return Ok(Decision::nothing(format!(
                        "ship train: left as it was, the shell does not perform {other:?} yet"
                    ))
                    .into())
                }
            }
        }
        let cars = next.cars.len();
        let outcome = format!("ship train: {} actions, {cars} cars", actions.len());
        Ok(Decision {
            changes: vec![Change::TrainUpdated {
                repo: l.repo.clone(),
                train: Box::new(next),
            }],
            effects,
            outcome,
        }
        .into())
    }
}
