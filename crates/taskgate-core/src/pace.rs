//! The write budget: how many content-creating calls taskgate makes on
//! GitHub per installation, and how long a number of them takes.
//!
//! Owns: the budget's figures ([`Pacing`]), the time `n` writes take under
//! it, and the note a story gets when its plan needs more writes than an
//! hour's budget ([`render_plan_pace`]).
//! Must not: wait or count writes; the executor waits
//! (`github::executor`) and the store hands out the slots
//! (`store::pacing`), both by the same rule as [`Pacing::time_for`].
//!
//! The idea a reader needs: GitHub's secondary limits allow "no more than
//! 80 content-generating requests per minute and no more than 500 … per
//! hour". Spacing writes at 60 a minute alone stays under the first and
//! runs through the second in about eight minutes, after which GitHub
//! refuses every write for the rest of the hour. The budget holds both: a
//! write goes one interval after the one before (60 a minute: one a
//! second), and never while `per_hour` writes have gone out in the hour
//! before it. A plan of a few dozen writes goes at the minute's pace; a
//! larger one goes in hourly batches, and its story says when it will be
//! complete.

use std::time::Duration;

/// GitHub's documented secondary limits on content-creating requests.
pub const GITHUB_WRITES_PER_MINUTE: u32 = 80;
pub const GITHUB_WRITES_PER_HOUR: u32 = 500;

/// The writes per installation taskgate allows itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Writes a minute, evenly spaced (60: one a second); 0 spaces nothing.
    pub per_minute: u32,
    /// Writes in any hour; 0 bounds nothing.
    pub per_hour: u32,
}

impl Default for Pacing {
    /// 60 a minute and 450 an hour: under GitHub's 80 and 500, with room
    /// for the effects that make two writes (a refusal said on its issue,
    /// an issue whose assignees had to be left out).
    fn default() -> Self {
        Pacing {
            per_minute: 60,
            per_hour: 450,
        }
    }
}

impl Pacing {
    /// No pacing at all (the tests and the demo, against the fake).
    pub const OFF: Pacing = Pacing {
        per_minute: 0,
        per_hour: 0,
    };

    pub fn is_off(&self) -> bool {
        self.per_minute == 0 && self.per_hour == 0
    }

    /// The least time between two writes, in whole milliseconds rounded
    /// up (writes are never closer than asked); 0 when unspaced.
    pub fn interval_ms(&self) -> i64 {
        if self.per_minute == 0 {
            0
        } else {
            60_000_u64.div_ceil(u64::from(self.per_minute)) as i64
        }
    }

    /// From the first to the last of `writes` writes of an installation
    /// that has not written for an hour: the `k`-th write (from 0) goes
    /// `k mod per_hour` intervals into hour `k / per_hour`.
    pub fn time_for(&self, writes: u64) -> Duration {
        let Some(last) = writes.checked_sub(1) else {
            return Duration::ZERO;
        };
        let interval = self.interval_ms() as u64;
        let ms = match u64::from(self.per_hour) {
            0 => last * interval,
            hour => (last / hour) * 3_600_000 + (last % hour) * interval,
        };
        Duration::from_millis(ms)
    }
}

/// What a story says when its plan needs more writes than an hour's
/// budget: how many, at what pace, and when the plan will be complete on
/// GitHub (`now_s` is unix seconds). `None` when an hour's budget is
/// enough, or nothing is bounded.
pub fn render_plan_pace(writes: u64, pacing: &Pacing, now_s: i64) -> Option<String> {
    if pacing.per_hour == 0 || writes <= u64::from(pacing.per_hour) {
        return None;
    }
    let takes = pacing.time_for(writes);
    let done = now_s + takes.as_secs() as i64;
    let at = chrono::DateTime::from_timestamp(done, 0)?
        .format("%Y-%m-%d %H:%M UTC")
        .to_string();
    let minutes = takes.as_secs().div_ceil(60);
    let (hours, minutes) = (minutes / 60, minutes % 60);
    Some(format!(
        "This plan needs about {writes} writes to GitHub (issues, sub-issue and dependency links, \
         labels, branches). GitHub allows an installation no more than {GITHUB_WRITES_PER_HOUR} \
         such writes an hour, and taskgate makes at most {} an hour ({} a minute), so the plan \
         will be complete on GitHub at about **{at}** (in {hours} h {minutes:02} min). Nothing \
         is lost meanwhile: what is not written yet waits in taskgate's queue, and this story's \
         issues fill in as it goes.",
        pacing.per_hour, pacing.per_minute
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budget_stays_under_both_of_githubs_limits() {
        let p = Pacing::default();
        assert!(p.per_minute < GITHUB_WRITES_PER_MINUTE);
        assert!(p.per_hour < GITHUB_WRITES_PER_HOUR);
        assert_eq!(p.interval_ms(), 1_000);
        assert_eq!(Pacing::OFF.interval_ms(), 0);
        assert_eq!(
            Pacing {
                per_minute: 7,
                per_hour: 0
            }
            .interval_ms(),
            8_572
        );
    }

    #[test]
    fn writes_past_an_hours_budget_wait_for_the_next_hour() {
        let p = Pacing::default();
        assert_eq!(p.time_for(0), Duration::ZERO);
        assert_eq!(p.time_for(1), Duration::ZERO);
        assert_eq!(p.time_for(450), Duration::from_secs(449));
        // The 451st write goes an hour after the first.
        assert_eq!(p.time_for(451), Duration::from_secs(3_600));
        assert_eq!(p.time_for(600), Duration::from_secs(3_600 + 149));
        let unbounded = Pacing {
            per_minute: 60,
            per_hour: 0,
        };
        assert_eq!(unbounded.time_for(600), Duration::from_secs(599));
    }

    #[test]
    fn a_plan_over_an_hours_budget_says_when_it_will_be_complete() {
        let p = Pacing::default();
        assert_eq!(render_plan_pace(450, &p, 0), None);
        assert_eq!(render_plan_pace(10_000, &Pacing::OFF, 0), None);
        let now = 1_767_268_800; // 2026-01-01 12:00 UTC
        insta::assert_snapshot!(render_plan_pace(612, &p, now).unwrap(), @"This plan needs about 612 writes to GitHub (issues, sub-issue and dependency links, labels, branches). GitHub allows an installation no more than 500 such writes an hour, and taskgate makes at most 450 an hour (60 a minute), so the plan will be complete on GitHub at about **2026-01-01 13:02 UTC** (in 1 h 03 min). Nothing is lost meanwhile: what is not written yet waits in taskgate's queue, and this story's issues fill in as it goes.");
    }
}
