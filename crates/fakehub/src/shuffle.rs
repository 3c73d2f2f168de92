//! Webhooks out of order and twice, as GitHub delivers them: a mode of
//! the echo engine (`FakeGitHub::shuffle_deliveries`).
//!
//! GitHub promises neither order nor exactly-once: each delivery leaves
//! on its own, a slow one is overtaken, and a redelivery (or a retry a
//! proxy made) brings the same `X-GitHub-Delivery` again. In this mode
//! each echo is given a due time drawn within the window on GitHub's
//! clock after its write, and the delivery task sends whichever is due
//! first; about `duplicate_share` of them are sent a second time, with the
//! same delivery id, due within the window after the first copy.
//!
//! Waiting for a due time would make every test take seconds, so the
//! mode keeps its own clock ([`Shuffle::now`]), which runs [`COMPRESSION`]
//! times faster than the real one from the moment the mode starts: a 3 s
//! window holds an echo at most 60 ms of real time. Moving GitHub's clock
//! (`FakeGitHub::advance`) moves it too, so passing a due time releases
//! the echo at once. The order is what the window decides, not the wall
//! clock. Draws come from one seeded generator, so a
//! failing run is repeated with its seed (printed when the mode starts).
//!
//! Owns: the draws and the queue ordered by due time. Must not: build or
//! send payloads (`echo`, `webhooks`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::state::PendingDelivery;

/// Real time is GitHub's divided by this while an echo waits.
pub const COMPRESSION: u32 = 50;

/// The mode's settings and its generator.
pub struct Shuffle {
    pub window: Duration,
    pub duplicate_share: f64,
    rng: fastrand::Rng,
    /// When the mode started, on the real clock.
    started: Instant,
}

/// One copy of an echo on its way.
pub(crate) struct Queued {
    pub attempt: PendingDelivery,
    /// When it is due on GitHub's clock (`None`: at once, in order).
    pub due: Option<Instant>,
    /// The second copy of a delivery (logged as a redelivery).
    pub duplicate: bool,
}

impl Shuffle {
    pub fn new(window: Duration, duplicate_share: f64, seed: u64) -> Shuffle {
        Shuffle {
            window,
            duplicate_share: duplicate_share.clamp(0.0, 1.0),
            rng: fastrand::Rng::with_seed(seed),
            started: Instant::now(),
        }
    }

    /// The same mode on `previous`'s clock, when the mode was on already
    /// (a second server in front of the same fake): echoes waiting keep
    /// their due times.
    pub(crate) fn continuing(mut self, previous: Option<&Shuffle>) -> Shuffle {
        if let Some(previous) = previous {
            self.started = previous.started;
        }
        self
    }

    /// The mode's clock: the real time since the mode started, run
    /// [`COMPRESSION`] times faster, plus how far GitHub's clock was moved
    /// on (`ahead`). Due times are drawn and compared on it, so a wait of
    /// `d` on it takes `d / COMPRESSION` of real time.
    pub(crate) fn now(&self, ahead: Duration) -> Instant {
        compressed(self.started, Instant::now(), ahead)
    }

    fn within_window(&mut self) -> Duration {
        let ms = u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(self.rng.u64(0..=ms))
    }

    /// The copies of one echo written at `now` (GitHub's clock): one, or
    /// two with the same delivery id.
    pub(crate) fn copies(&mut self, attempt: PendingDelivery, now: Instant) -> Vec<Queued> {
        let due = now + self.within_window();
        let mut copies = Vec::with_capacity(2);
        if self.rng.f64() < self.duplicate_share {
            copies.push(Queued {
                attempt: attempt.clone(),
                due: Some(due + self.within_window()),
                duplicate: true,
            });
        }
        copies.insert(
            0,
            Queued {
                attempt,
                due: Some(due),
                duplicate: false,
            },
        );
        copies
    }
}

/// The compressed time at real instant `real` of a mode started at `started`.
fn compressed(started: Instant, real: Instant, ahead: Duration) -> Instant {
    started + real.saturating_duration_since(started) * COMPRESSION + ahead
}

/// Echoes waiting for their due time, the earliest first (ties in the
/// order they were queued).
#[derive(Default)]
pub(crate) struct Waiting {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    items: std::collections::HashMap<u64, Queued>,
    next: u64,
}

impl Waiting {
    pub(crate) fn push(&mut self, queued: Queued, now: Instant) {
        let due = queued.due.unwrap_or(now);
        self.heap.push(Reverse((due, self.next)));
        self.items.insert(self.next, queued);
        self.next += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The earliest echo if it is due at `now`, else how long to wait for
    /// it in real time (compressed).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Result<Queued, Duration> {
        let Some(Reverse((due, key))) = self.heap.peek().copied() else {
            return Err(Duration::from_secs(3600));
        };
        if due <= now {
            self.heap.pop();
            return Ok(self.items.remove(&key).expect("queued with its key"));
        }
        Err((due - now) / COMPRESSION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u64) -> PendingDelivery {
        PendingDelivery {
            url: String::new(),
            secret: String::new(),
            event: "push".into(),
            guid: format!("g{n}"),
            payload: serde_json::Value::Null,
        }
    }

    fn order(seed: u64) -> (Vec<String>, usize) {
        let mut shuffle = Shuffle::new(Duration::from_secs(3), 0.05, seed);
        let mut waiting = Waiting::default();
        let start = Instant::now();
        for n in 0..400 {
            // One echo every 10 ms of GitHub's clock.
            let at = start + Duration::from_millis(10 * n);
            for q in shuffle.copies(attempt(n), at) {
                waiting.push(q, at);
            }
        }
        let end = start + Duration::from_secs(60);
        let mut out = Vec::new();
        let mut duplicates = 0;
        while let Ok(q) = waiting.pop_due(end) {
            duplicates += usize::from(q.duplicate);
            out.push(q.attempt.guid);
        }
        (out, duplicates)
    }

    #[test]
    fn deliveries_are_reordered_within_the_window_and_about_one_in_twenty_repeated() {
        let (out, duplicates) = order(7);
        assert_eq!(out.len(), 400 + duplicates);
        assert!((8..=35).contains(&duplicates), "{duplicates}");
        let position = |g: &str| out.iter().position(|o| o == g).unwrap();
        let overtaken = (1..400)
            .filter(|n| position(&format!("g{n}")) < position(&format!("g{}", n - 1)))
            .count();
        assert!(overtaken > 50, "{overtaken} overtaken");
        // Never by more than the window: 3 s is 300 echoes here.
        assert!(position("g399") > position("g0"));
        assert_eq!(order(7), (out, duplicates), "the seed repeats the order");
        assert_ne!(order(8).0, order(7).0);
    }

    #[test]
    fn the_modes_clock_runs_fifty_times_faster_and_moves_with_githubs() {
        let started = Instant::now();
        let real = started + Duration::from_millis(60);
        assert_eq!(
            compressed(started, real, Duration::ZERO),
            started + Duration::from_secs(3),
            "60 ms of real time is a 3 s window"
        );
        assert_eq!(
            compressed(started, real, Duration::from_secs(10)),
            started + Duration::from_secs(13)
        );
    }

    #[test]
    fn an_echo_waits_for_its_due_time_compressed() {
        let mut waiting = Waiting::default();
        let now = Instant::now();
        let due = Some(now + Duration::from_secs(2));
        waiting.push(
            Queued {
                attempt: attempt(1),
                due,
                duplicate: false,
            },
            now,
        );
        assert_eq!(waiting.pop_due(now).err(), Some(Duration::from_millis(40)));
        assert!(waiting.pop_due(now + Duration::from_secs(2)).is_ok());
        assert!(waiting.is_empty());
    }
}
