//! The ship queue's figures (issue 31 item 7), from the story records:
//! how long stories waited from their ship request to landing, how many
//! landed (in all, in the last hour, per hour of the last day) and how many
//! proof runs the ships cost.
//!
//! Owns: [`QueueFigures`], the wait histogram's buckets, the percentiles
//! and the last day by hour. Must not: read the clock or the store (the
//! shell passes the records and the time in) or render anything.
//!
//! Everything is counted from the stored records, so every replica's
//! `/metrics` and dashboard say the same and a restart loses nothing.

use super::StoryRecord;

/// The wait histogram's upper bounds, in seconds: a minute to a day.
pub const WAIT_BUCKETS_S: [f64; 10] = [
    60.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14_400.0, 28_800.0, 86_400.0,
];

/// One hour of the last day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HourFigures {
    /// Stories that landed in the hour.
    pub landed: u64,
    /// Their summed wait, in seconds (divide by `landed` for the mean).
    pub wait_s: i64,
}

/// The queue's figures at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueFigures {
    /// Each landed story's wait, ship request → landed, in seconds,
    /// ascending.
    pub waits_s: Vec<i64>,
    /// Stories landed through the queue.
    pub landed: u64,
    /// Of them, those landed in the last hour.
    pub landed_last_hour: u64,
    /// Proof runs started for ships (all stories, landed or not).
    pub proof_runs: u64,
    /// The last 24 hours, oldest first; the last is the hour ending now.
    pub last_day: Vec<HourFigures>,
}

const HOUR_MS: i64 = 3_600_000;

/// The queue's figures as `/metrics` shows them: sums a store can keep
/// without reading every story's record ([`QueueFigures::totals`] over the
/// records is the same).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueTotals {
    pub landed: u64,
    pub landed_last_hour: u64,
    pub proof_runs: u64,
    /// The landed stories' waits, summed, in seconds.
    pub wait_sum_s: i64,
    /// The wait histogram's cumulative counts, one per [`WAIT_BUCKETS_S`]
    /// bound, then `+Inf` ([`QueueFigures::wait_buckets`]).
    pub wait_buckets: Vec<(f64, u64)>,
}

/// The start of the hour `landed_last_hour` counts at `now_ms`: a landing
/// after it (or later than now) is in it.
pub fn last_hour_from(now_ms: i64) -> i64 {
    now_ms - HOUR_MS
}

impl QueueFigures {
    /// The figures of `records` at `now_ms`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a StoryRecord>, now_ms: i64) -> Self {
        let mut f = QueueFigures {
            last_day: vec![HourFigures::default(); 24],
            ..QueueFigures::default()
        };
        for r in records {
            f.proof_runs += u64::from(r.proof_runs);
            let Some(at) = r.landed_at_ms else { continue };
            let wait_s = r.queue_wait_ms.unwrap_or(0) / 1000;
            f.landed += 1;
            f.waits_s.push(wait_s);
            // A landing within the caller's clock tick is now, not later.
            let ago = (now_ms - at).max(0);
            if (0..HOUR_MS).contains(&ago) {
                f.landed_last_hour += 1;
            }
            if (0..24 * HOUR_MS).contains(&ago) {
                let hour = &mut f.last_day[23 - (ago / HOUR_MS) as usize];
                hour.landed += 1;
                hour.wait_s += wait_s;
            }
        }
        f.waits_s.sort_unstable();
        f
    }

    /// The `p`-th percentile of the waits (nearest rank), in seconds;
    /// `None` before anything landed.
    pub fn wait_percentile(&self, p: u32) -> Option<i64> {
        if self.waits_s.is_empty() {
            return None;
        }
        let n = self.waits_s.len();
        let rank = (u64::from(p) * n as u64).div_ceil(100).max(1) as usize;
        Some(self.waits_s[rank.min(n) - 1])
    }

    /// The wait histogram's cumulative counts, one per [`WAIT_BUCKETS_S`]
    /// bound, then `+Inf`.
    pub fn wait_buckets(&self) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = WAIT_BUCKETS_S
            .iter()
            .map(|&b| {
                (
                    b,
                    self.waits_s.iter().filter(|&&w| w as f64 <= b).count() as u64,
                )
            })
            .collect();
        out.push((f64::INFINITY, self.waits_s.len() as u64));
        out
    }

    /// What `/metrics` shows of these figures.
    pub fn totals(&self) -> QueueTotals {
        QueueTotals {
            landed: self.landed,
            landed_last_hour: self.landed_last_hour,
            proof_runs: self.proof_runs,
            wait_sum_s: self.waits_s.iter().sum(),
            wait_buckets: self.wait_buckets(),
        }
    }

    /// Proof runs per landed story; `None` before anything landed.
    pub fn runs_per_landed(&self) -> Option<f64> {
        (self.landed > 0).then(|| self.proof_runs as f64 / self.landed as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landed(at_ms: i64, wait_s: i64, runs: u32) -> StoryRecord {
        StoryRecord {
            landed_at_ms: Some(at_ms),
            queue_wait_ms: Some(wait_s * 1000),
            proof_runs: runs,
            ..StoryRecord::default()
        }
    }

    #[test]
    fn waits_landings_and_runs_are_counted_from_the_records() {
        let now = 100 * HOUR_MS;
        let records = [
            landed(now - 10 * 60_000, 600, 1),
            landed(now - 30 * 60_000, 120, 2),
            landed(now - 3 * HOUR_MS, 3000, 1),
            landed(now - 30 * HOUR_MS, 40, 1),
            StoryRecord {
                proof_runs: 1,
                ..StoryRecord::default()
            },
        ];
        let f = QueueFigures::of(&records, now);
        assert_eq!(f.waits_s, [40, 120, 600, 3000]);
        assert_eq!((f.landed, f.landed_last_hour, f.proof_runs), (4, 2, 6));
        assert_eq!(f.runs_per_landed(), Some(1.5));
        assert_eq!(f.wait_percentile(50), Some(120));
        assert_eq!(f.wait_percentile(95), Some(3000));
        assert_eq!(
            f.last_day[23],
            HourFigures {
                landed: 2,
                wait_s: 720
            }
        );
        assert_eq!(
            f.last_day[20],
            HourFigures {
                landed: 1,
                wait_s: 3000
            }
        );
        assert_eq!(
            f.last_day.iter().map(|h| h.landed).sum::<u64>(),
            3,
            "a day only"
        );
        let buckets = f.wait_buckets();
        assert_eq!(buckets[0], (60.0, 1));
        assert_eq!(buckets[2], (600.0, 3));
        assert_eq!(buckets.last(), Some(&(f64::INFINITY, 4)));
        assert_eq!(QueueFigures::of(&[], now).wait_percentile(50), None);
    }
}
