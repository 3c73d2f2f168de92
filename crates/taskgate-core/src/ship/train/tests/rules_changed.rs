//! The train when the rules read at a car's landing no longer allow a
//! batch's fast-forward: nothing lands, and the train steps aside for the
//! one-story queue.

use super::*;

#[test]
fn rules_changed_at_a_cars_landing_dissolve_the_train_and_leave_its_stories_queued() {
    let mut w = World::new(2, 2);
    w.lands_held = Some(Vec::new());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    w.settle();
    let held = w.lands_held.replace(Vec::new()).unwrap();
    let [TrainAction::Land { car, .. }] = held.as_slice() else {
        panic!("the first car asked to land: {held:?}");
    };
    w.event(TrainEvent::RulesChanged { car: *car });
    assert!(w.landed.is_empty(), "nothing landed");
    assert!(
        w.train.cars.is_empty() && w.train.waiting.is_empty(),
        "every story left to the one-story queue: {:?}",
        w.train
    );
    assert_eq!(w.train.stats.refused, 0, "nobody refused");
    assert_eq!(w.lands_held, Some(vec![]), "no landing asked again");
}

#[test]
fn rules_changed_for_a_car_not_landing_change_nothing() {
    let mut w = World::new(2, 1);
    w.builds_held = Some(Vec::new());
    w.ship("a");
    w.start();
    let before = w.train.clone();
    w.event(TrainEvent::RulesChanged { car: CarId(1) });
    assert_eq!(w.train, before);
}
