//! The notes a ship train's stories get while their batch proves: each
//! story of the car is told, on its issue, the batch it proves in (once per
//! car, `core::ship::on_car_proving`), as the one-story queue's story is
//! told "Proving".
//!
//! Owns: [`Ship::tell_car_proving`]. Must not: change a story's record or
//! start anything.

use super::*;
use taskgate_core::ship::CarId;

impl Ship {
    /// `TrainAction::Prove` of `car` on `commit`: every story of the car
    /// (as the train is after the events) told on its issue.
    pub(in crate::app::ship) async fn tell_car_proving(
        &self,
        l: &Located,
        after: &Train,
        (car, commit): (CarId, &CommitSha),
    ) -> Result<Decision, ShipError> {
        let mut decision = Decision::default();
        let Some(found) = after.cars.iter().find(|c| c.id == car) else {
            return Ok(decision);
        };
        let Some(base) = found.base.as_ref() else {
            return Ok(decision);
        };
        let stories: Vec<StoryId> = found.stories.iter().map(|e| e.story.clone()).collect();
        let batch = self.batch(l, &stories).await?;
        for story in &stories {
            let Some(s) = self.locate(&l.repo, story, Some(&l.default_branch)).await? else {
                continue;
            };
            let d = ship::on_car_proving(&s.record, (car, base, commit), &batch, &s.ctx());
            decision.merge(s.finish(d));
        }
        Ok(decision)
    }
}
