//! The train when GitHub does not build a car: a refusal of the batch
//! branch turns the train off, a failure builds the car again, a refusal
//! of one story's changes refuses that story alone.

use super::*;

/// A train of three stories (two a car, two cars) whose first car's
/// build is not answered yet, with the build asked for.
fn first_build_held() -> (World, CarId) {
    let mut w = World::new(2, 2);
    w.builds_held = Some(Vec::new());
    for s in ["a", "b", "c"] {
        w.ship(s);
    }
    w.start();
    let held = w.builds_held.replace(Vec::new()).unwrap();
    let [TrainAction::Build { car, .. }] = held.as_slice() else {
        panic!("one build: {held:?}");
    };
    (w, *car)
}

#[test]
fn a_car_github_refuses_to_build_turns_the_train_off_and_leaves_its_stories_to_the_serial_queue() {
    let (mut w, car) = first_build_held();
    w.event(TrainEvent::CarFailed {
        car,
        why: "Cannot create ref due to creations being restricted.".into(),
        refused: true,
        at_ms: 1_000,
    });
    assert_eq!(w.builds_held, Some(vec![]), "nothing is built again");
    assert!(w.train.cars.is_empty() && w.train.waiting.is_empty());
    let off = w.train.off_at(1_000).expect("the train is off");
    assert_eq!(off.branch, car_branch(car));
    assert_eq!(w.train.off_at(1_000 + TRAIN_OFF_MS), None, "for a day");
}

#[test]
fn a_car_github_failed_to_build_is_formed_again_with_the_same_stories() {
    let (mut w, car) = first_build_held();
    w.event(TrainEvent::CarFailed {
        car,
        why: "gave up after 5 failed attempts: 502".into(),
        refused: false,
        at_ms: 1_000,
    });
    let held = w.builds_held.clone().unwrap();
    let [TrainAction::Build {
        car: again, heads, ..
    }] = held.as_slice()
    else {
        panic!("one build: {held:?}");
    };
    assert_ne!(*again, car);
    let stories: Vec<&str> = heads.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stories, ["a", "b"]);
    assert_eq!(w.train.off, None);
}

#[test]
fn a_story_github_refuses_to_merge_for_what_it_changes_is_refused_alone_and_the_train_stays_on() {
    let (mut w, car) = first_build_held();
    let message = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";
    w.event(TrainEvent::StoryRefused {
        car,
        story: StoryId::from("b"),
        message: message.into(),
    });
    assert_eq!(w.refused_names(), vec!["b"]);
    assert_eq!(
        w.refused[0].1,
        Refusal::Rules {
            message: message.into()
        }
    );
    assert_eq!(w.train.off, None, "the train stays on for the others");
    // The others are formed into a car without it, and land together.
    let held = w.builds_held.take().unwrap();
    let [TrainAction::Build { heads, .. }] = held.as_slice() else {
        panic!("one build: {held:?}");
    };
    let stories: Vec<&str> = heads.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stories, ["a", "c"]);
    for action in held {
        w.perform(action);
    }
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "c"]]);
}

#[test]
fn a_late_build_failure_of_a_car_built_since_changes_nothing() {
    let (mut w, car) = first_build_held();
    let built = Built {
        commit: crate::ids::sha("car-1"),
        tree: crate::ids::sha("tree-1"),
    };
    w.event(TrainEvent::Built { car, built });
    let before = w.train.clone();
    w.event(TrainEvent::CarFailed {
        car,
        why: "refused".into(),
        refused: true,
        at_ms: 1_000,
    });
    assert_eq!(w.train, before);
}
