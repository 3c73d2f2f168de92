//! A train story as the product shows it (issue 31): a queued story
//! riding in a car is `proving`, with its batch and the car's proof, as
//! the one-story queue's proving story is.
//!
//! Owns: [`car_of`] and [`shown_record`]. Must not: change the stored
//! record or the train: the shown record is for reading only.
//!
//! The idea a reader needs: **the stored record stays `queued`.** The
//! train's own transitions read that state (a car lands only stories
//! still queued, `in_train::on_car_landing`; a story that left the queue
//! leaves its car), and the one-story queue waits while any story is
//! proving: moving the record would change both. What the API and the
//! dashboard read is the record seen through the train.

use super::{Car, Train};
use crate::ids::StoryId;
use crate::ship::LandingPlan;
use crate::ship::{ShipProof, ShipState, StoryRecord};

/// The car `story` rides in, if any.
pub fn car_of<'t>(train: &'t Train, story: &StoryId) -> Option<&'t Car> {
    train
        .cars
        .iter()
        .find(|c| c.stories.iter().any(|e| &e.story == story))
}

/// `record` of `story` as shown: `proving` while it rides in a car (built
/// or being proven, or proven and waiting for the cars ahead to land),
/// with a proof at the car's base and commit (none yet while it is being
/// built). Any other record is shown as stored.
pub fn shown_record(train: &Train, story: &StoryId, record: &StoryRecord) -> StoryRecord {
    let mut shown = record.clone();
    if record.state != ShipState::Queued {
        return shown;
    }
    let Some(car) = car_of(train, story) else {
        return shown;
    };
    let Some(entry) = car.stories.iter().find(|e| &e.story == story) else {
        return shown;
    };
    shown.state = ShipState::Proving;
    if let Some(base) = &car.base {
        shown.proof = Some(ShipProof {
            round: record.proof.as_ref().map_or(1, |p| p.round),
            base: base.clone(),
            head: entry.head.clone(),
            commit: car.built.as_ref().map(|b| b.commit.clone()),
            landing: LandingPlan::default(),
            ahead: vec![],
        });
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CommitSha;
    use crate::ship::{Built, CarId, Entry, Priority};

    fn sha(c: char) -> CommitSha {
        crate::ids::sha(&c.to_string().repeat(40))
    }

    fn train(built: bool) -> Train {
        let entry = |s: &str, h: char| Entry {
            story: StoryId::new(s),
            head: sha(h),
            priority: Priority::Normal,
            queued_at_ms: 0,
            files: Default::default(),
            conflicted: false,
        };
        let mut t = Train::default();
        t.cars.push(Car {
            id: CarId(7),
            stories: vec![entry("a", '1'), entry("b", '2')],
            base: Some(sha('b')),
            built: built.then(|| Built {
                commit: sha('c'),
                tree: sha('t'),
            }),
            building: !built,
            runs: 0,
            proving: built,
            passed: false,
            failure: None,
            reused: false,
            landing: false,
            split_from: vec![],
            aside: false,
            gates_of: vec![],
        });
        t
    }

    fn queued() -> StoryRecord {
        StoryRecord {
            state: ShipState::Queued,
            ..StoryRecord::default()
        }
    }

    #[test]
    fn a_queued_story_in_a_car_is_shown_proving_at_the_cars_commit() {
        let shown = shown_record(&train(true), &StoryId::new("b"), &queued());
        assert_eq!(shown.state, ShipState::Proving);
        let proof = shown.proof.unwrap();
        assert_eq!((proof.base, proof.head), (sha('b'), sha('2')));
        assert_eq!(proof.commit, Some(sha('c')));
        let building = shown_record(&train(false), &StoryId::new("a"), &queued());
        assert_eq!(building.state, ShipState::Proving);
        assert_eq!(building.proof.unwrap().commit, None, "not built yet");
    }

    #[test]
    fn a_story_in_no_car_or_not_queued_is_shown_as_stored() {
        let t = train(true);
        assert_eq!(shown_record(&t, &StoryId::new("z"), &queued()), queued());
        let landing = StoryRecord {
            state: ShipState::Shipping,
            ..StoryRecord::default()
        };
        assert_eq!(shown_record(&t, &StoryId::new("a"), &landing), landing);
    }
}
