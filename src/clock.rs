//! The clock: the one source of "now" for the whole shell. The store's
//! timestamps, the executor's and the processor's due times, the periods of
//! the run queue's tick, the redelivery pass and retention, and the time
//! decisions are taken at all read it; nothing else in the shell asks the
//! system for the time. (Durations measured with a monotonic `Instant` —
//! latencies, pacing — and GitHub's own times — the App's JWT, token
//! expiry — are not "now" in this sense.)
//!
//! Owns: the [`Clock`] type: the system clock, a movable one for tests, and
//! one over any other [`TimeSource`] (a test's).
//! Must not: import anything from the crate; every layer may take a clock.
//!
//! Two ideas a reader needs:
//! - **Tests move time on instead of sleeping.** [`Clock::movable`] is the
//!   system's time plus a shift that [`Clock::advance`] grows: time still
//!   flows, and a test that wants a minute to pass says so, at once.
//! - **Waits wake when time moves.** A loop that sleeps until a time read
//!   from the clock sleeps through [`Clock::sleep_until_ms`]: on the system
//!   clock that is a plain timer; on a movable one it also wakes when the
//!   clock is advanced, and sleeps on if the time has not come yet. Its
//!   deadline is an absolute time, read when the wait is decided (a pass
//!   due `every` after the last one began, an effect due at its retry
//!   time), so an advance that comes before the loop is back asleep still
//!   counts (a relative wait would start over from the moved time).
//!   A movable clock lists its sleeps in progress, each with the code
//!   that sleeps and the time it waits for ([`Clock::sleeps`]), so a test
//!   can move it straight to the time an idle loop waits for.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

/// "Now", injected. Cheap to clone; clones share one time.
#[derive(Clone)]
pub struct Clock(Source);

#[derive(Clone)]
enum Source {
    System,
    /// The system's time plus a shift tests grow.
    Movable(Arc<Movable>),
    Other(Arc<dyn TimeSource>),
}

/// A movable clock's shift, and who sleeps on it until when.
struct Movable {
    /// Milliseconds this clock is ahead of the system's; waits watch it.
    ahead: watch::Sender<i64>,
    /// The sleeps in progress, by a number of their own.
    sleeps: Mutex<BTreeMap<u64, Sleep>>,
    next_id: AtomicU64,
}

/// A sleep in progress on a movable clock: where it was asked for, and
/// the time it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleep {
    /// The code that sleeps (`src/github/executor.rs`): a loop is asleep
    /// while its sleep is listed.
    pub at: &'static Location<'static>,
    /// The time it waits for, in milliseconds since the Unix epoch.
    pub until_ms: i64,
}

/// A listed sleep, unlisted when the sleep ends or is dropped (a
/// `select!` that took another branch).
struct Listed<'c> {
    clock: &'c Movable,
    id: u64,
}

impl Movable {
    fn sleeps(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Sleep>> {
        // A panic while holding it left a plain map: still usable.
        self.sleeps.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn list(&self, sleep: Sleep) -> Listed<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.sleeps().insert(id, sleep);
        Listed { clock: self, id }
    }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.clock.sleeps().remove(&self.id);
    }
}

/// A time source other than the system's, for [`Clock::from_source`].
pub trait TimeSource: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Whole seconds since the Unix epoch: the time decisions are taken at
    /// (the core takes seconds). Stamps and waits read milliseconds.
    fn now_s(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock(Source::System)
    }

    /// The system's time, which [`Clock::advance`] moves on (tests).
    pub fn movable() -> Clock {
        Clock(Source::Movable(Arc::new(Movable {
            ahead: watch::channel(0).0,
            sleeps: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
        })))
    }

    /// A clock that reads `source` (a test's). It cannot be advanced; its
    /// waits are timers, as the system clock's.
    pub fn from_source(source: impl TimeSource) -> Clock {
        Clock(Source::Other(Arc::new(source)))
    }

    /// Milliseconds since the Unix epoch: for stamps, due times and waits.
    pub fn now_ms(&self) -> i64 {
        match &self.0 {
            Source::System => system_ms(),
            Source::Movable(m) => system_ms() + *m.ahead.borrow(),
            Source::Other(source) => source.now_ms(),
        }
    }

    /// Whole seconds since the Unix epoch: the time decisions are taken at.
    pub fn now_s(&self) -> i64 {
        match &self.0 {
            Source::Other(source) => source.now_s(),
            _ => self.now_ms().div_euclid(1000),
        }
    }

    /// Moves a movable clock on by `by`, and wakes whoever sleeps on it.
    ///
    /// # Panics
    /// On any other clock: the system's time is not the tests' to move.
    pub fn advance(&self, by: Duration) {
        let Source::Movable(m) = &self.0 else {
            panic!("only a movable clock (Clock::movable) can be advanced");
        };
        m.ahead.send_modify(|ms| *ms += millis(by));
    }

    /// The sleeps in progress on this movable clock
    /// ([`Clock::sleep_until_ms`]), earliest first; none on any other
    /// clock. A test moves the clock straight to the time a loop sleeps
    /// until, once that loop is asleep, rather than by small steps (as
    /// tokio's paused time jumps to its next timer).
    pub fn sleeps(&self) -> Vec<Sleep> {
        let Source::Movable(m) = &self.0 else {
            return Vec::new();
        };
        let mut sleeps: Vec<Sleep> = m.sleeps().values().copied().collect();
        sleeps.sort_by_key(|s| s.until_ms);
        sleeps
    }

    /// How far [`Clock::advance`] has moved this clock on; 0 for any other
    /// clock. Time a test moves on passes for everyone, the database's
    /// clock included: leases on PostgreSQL are judged by that clock plus
    /// this (`store::leases`), so a replica's own wrong time counts for
    /// nothing there.
    pub fn moved_ms(&self) -> i64 {
        match &self.0 {
            Source::Movable(m) => *m.ahead.borrow(),
            _ => 0,
        }
    }

    /// Returns once the clock reads `at_ms` or later. On a movable clock,
    /// the sleep is listed meanwhile ([`Clock::sleeps`]) with where it was
    /// asked for.
    #[track_caller]
    pub fn sleep_until_ms(&self, at_ms: i64) -> impl Future<Output = ()> + Send + '_ {
        let at = Location::caller();
        async move {
            let Source::Movable(m) = &self.0 else {
                let left = at_ms - self.now_ms();
                if left > 0 {
                    tokio::time::sleep(Duration::from_millis(left as u64)).await;
                }
                return;
            };
            let mut moved = m.ahead.subscribe();
            if at_ms - self.now_ms() <= 0 {
                return;
            }
            let _listed = m.list(Sleep {
                at,
                until_ms: at_ms,
            });
            loop {
                let left = at_ms - self.now_ms();
                if left <= 0 {
                    return;
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(left as u64)) => {}
                    // Never closed: this clock holds the sender.
                    _ = moved.changed() => {}
                }
            }
        }
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Source::System => f.write_str("Clock::system()"),
            Source::Movable(m) => write!(f, "Clock::movable() ({} ms ahead)", *m.ahead.borrow()),
            Source::Other(_) => f.write_str("Clock::from_source(..)"),
        }
    }
}

fn system_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_the_milliseconds_floored() {
        struct At(i64);
        impl TimeSource for At {
            fn now_ms(&self) -> i64 {
                self.0
            }
        }
        let at = |ms| Clock::from_source(At(ms));
        assert_eq!(at(1_999).now_s(), 1);
        assert_eq!(at(2_000).now_s(), 2);
        assert_eq!(at(-1).now_s(), -1);
    }

    #[test]
    fn a_movable_clock_and_its_clones_move_together() {
        let clock = Clock::movable();
        let clone = clock.clone();
        let before = clock.now_ms();
        clone.advance(Duration::from_secs(3600));
        let moved = clock.now_ms() - before;
        assert!((3_600_000..3_660_000).contains(&moved), "{moved}");
    }

    #[test]
    #[should_panic(expected = "only a movable clock")]
    fn the_system_clock_cannot_be_advanced() {
        Clock::system().advance(Duration::from_secs(1));
    }

    #[tokio::test]
    async fn a_sleep_on_a_movable_clock_ends_when_the_clock_is_advanced_past_it() {
        let clock = Clock::movable();
        let until = clock.now_ms() + 3_600_000;
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep_until_ms(until).await }
        });
        // Half way: it sleeps on.
        clock.advance(Duration::from_secs(1800));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(1800));
        tokio::time::timeout(Duration::from_secs(10), sleeper)
            .await
            .expect("woken by the advance")
            .unwrap();
    }

    #[tokio::test]
    async fn a_movable_clock_lists_its_sleeps_with_where_they_sleep() {
        let clock = Clock::movable();
        assert_eq!(clock.sleeps(), []);
        let now = clock.now_ms();
        let sleep = |at| {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep_until_ms(at).await })
        };
        let (soon, later) = (sleep(now + 60_000), sleep(now + 3_600_000));
        while clock.sleeps().len() < 2 {
            tokio::task::yield_now().await;
        }
        let sleeps = clock.sleeps();
        assert_eq!(sleeps[0].until_ms, now + 60_000);
        assert!(sleeps[0].at.file().ends_with("clock.rs"), "{sleeps:?}");
        // Woken, a sleep is unlisted; so is one dropped before its time.
        clock.advance(Duration::from_secs(61));
        soon.await.unwrap();
        assert_eq!(clock.sleeps()[..], [sleeps[1]]);
        later.abort();
        let _ = later.await;
        assert_eq!(clock.sleeps(), []);
    }
}
