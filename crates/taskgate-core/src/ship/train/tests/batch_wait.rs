//! The batching wait (`ship_batch_wait`): an idle train waits a little for
//! more stories before it forms its first car, so a burst of ships rides
//! in one car; a train with a car in it never waits.

use super::*;

/// Thirty seconds, in the train's milliseconds.
const WAIT_MS: i64 = 30_000;

/// A started, idle train of `batch_max` stories a car and `parallel`
/// cars that waits [`WAIT_MS`] for more stories.
fn waiting_train(batch_max: usize, parallel: usize) -> World {
    let mut w = World::new(batch_max, parallel);
    w.settings.batch_wait_ms = WAIT_MS;
    w.start();
    w
}

impl World {
    /// `story` shipped at `at_ms` of the train's clock.
    fn ship_at(&mut self, story: &str, at_ms: i64) {
        self.now_ms = at_ms;
        self.ship_with(story, Priority::Normal, at_ms);
    }

    /// The queue's next look at `at_ms` (the shell's `MainMoved` with the
    /// default branch's head unchanged).
    fn look_at(&mut self, at_ms: i64) {
        self.now_ms = at_ms;
        self.event(TrainEvent::MainMoved {
            head: self.train.main.clone().expect("started"),
        });
    }
}

#[test]
fn three_stories_shipped_within_a_second_ride_in_one_car_once_the_wait_is_over() {
    let mut w = waiting_train(4, 2);
    for (story, at) in [("a", 0), ("b", 400), ("c", 900)] {
        w.ship_at(story, at);
        assert!(w.train.cars.is_empty(), "no car yet: {:?}", w.train);
    }
    assert_eq!(w.train.waiting.len(), 3);
    assert_eq!(
        w.waits, [WAIT_MS; 3],
        "each look asks to be woken when the first ship's wait ends"
    );
    w.look_at(WAIT_MS - 1);
    assert!(w.train.cars.is_empty(), "not before the wait is over");
    w.look_at(WAIT_MS);
    assert_eq!(w.train.cars.len(), 1, "{:?}", w.train);
    w.settle();
    assert_eq!(w.landed, vec![vec!["a", "b", "c"]], "one car, one landing");
    assert_eq!(w.train.stats.proof_runs, 1);
}

#[test]
fn a_car_already_proving_means_no_wait_for_the_story_shipped_behind_it() {
    let mut w = waiting_train(4, 2);
    w.ship_at("a", 0);
    w.look_at(WAIT_MS);
    assert_eq!(w.running.len(), 1, "a's car proves");
    let asked = w.waits.len();
    w.ship_at("b", WAIT_MS + 1_000);
    assert_eq!(
        w.train.cars.len(),
        2,
        "b's car forms at once: {:?}",
        w.train
    );
    assert!(w.train.waiting.is_empty());
    assert_eq!(w.waits.len(), asked, "no wait asked for");
    w.settle();
    assert_eq!(w.landed, vec![vec!["a"], vec!["b"]]);
}

#[test]
fn a_full_car_or_a_hotfix_does_not_wait() {
    let mut full = waiting_train(2, 1);
    full.ship_at("a", 0);
    full.ship_at("b", 100);
    assert_eq!(full.train.cars.len(), 1, "a car's worth: {:?}", full.train);
    full.settle();
    assert_eq!(full.landed, vec![vec!["a", "b"]]);

    let mut hotfix = waiting_train(4, 1);
    hotfix.now_ms = 0;
    hotfix.ship_with("fix", Priority::Hotfix, 0);
    assert_eq!(hotfix.train.cars.len(), 1, "{:?}", hotfix.train);
    assert!(hotfix.waits.is_empty());
}

#[test]
fn without_a_wait_the_first_story_forms_a_car_at_once() {
    let mut w = World::new(4, 2);
    w.start();
    w.ship_at("a", 0);
    assert_eq!(w.train.cars.len(), 1);
    assert!(w.waits.is_empty());
}
