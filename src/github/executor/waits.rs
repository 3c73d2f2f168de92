//! How long the executor waits after GitHub failed a call: the
//! exponential [`Backoff`] for 5xx and lost answers, and the wait GitHub
//! asks for when a rate limit is met ([`rate_limit_wait`]).
//!
//! Owns: reading those waits from the backoff settings and GitHub's
//! headers. Must not: sleep, pause an installation or record anything (the
//! executor does, with the waits it reads here).

use std::time::Duration;

use http::HeaderMap;

/// Exponential backoff for 5xx and lost connections.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    /// Failed attempts (server error or no answer) before an effect is
    /// given up; attempts that met a rate limit do not count.
    pub max_attempts: u32,
    /// How long GitHub's lists may take to show a write: the least wait
    /// before an effect that may have created its object (its answer was
    /// lost, or it was interrupted) looks for it again (`lag`).
    pub read_lag: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(600),
            max_attempts: 8,
            read_lag: DEFAULT_READ_LAG,
        }
    }
}

/// GitHub documents no bound on how far its lists lag its writes; seconds
/// are what integrations meet. A retry that waits this long costs little:
/// it follows a lost answer or a crash only.
pub const DEFAULT_READ_LAG: Duration = Duration::from_secs(10);

impl Backoff {
    /// Delay after the `attempt`-th failure (1-based), with ±20 % jitter so
    /// many effects failing together do not retry together.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let capped = exp.min(self.max);
        capped.mul_f64(0.8 + fastrand::f64() * 0.4)
    }
}

pub(super) fn is_rate_limited(status: u16, headers: &HeaderMap, message: &str) -> bool {
    crate::github::client::is_rate_limit(status, headers, message)
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// How long GitHub asks us to wait: `retry-after` seconds, else until
/// `x-ratelimit-reset` when no requests remain, else one minute.
pub fn rate_limit_wait(headers: &HeaderMap, now_ms: i64) -> Duration {
    if let Some(secs) =
        header_str(headers, "retry-after").and_then(|v| v.trim().parse::<u64>().ok())
    {
        return Duration::from_secs(secs);
    }
    if header_str(headers, "x-ratelimit-remaining") == Some("0") {
        if let Some(reset) =
            header_str(headers, "x-ratelimit-reset").and_then(|v| v.trim().parse::<i64>().ok())
        {
            let wait_ms = (reset * 1000 - now_ms).max(0) as u64;
            // One extra second: the reset time is rounded down to a second.
            return Duration::from_millis(wait_ms + 1000);
        }
    }
    Duration::from_secs(60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn rate_limit_waits_follow_githubs_documented_order() {
        let now = 1_700_000_000_000;
        assert_eq!(
            rate_limit_wait(&headers(&[("retry-after", "7")]), now),
            Duration::from_secs(7)
        );
        let reset = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000030"),
        ]);
        assert_eq!(rate_limit_wait(&reset, now), Duration::from_secs(31));
        assert_eq!(rate_limit_wait(&headers(&[]), now), Duration::from_secs(60));
    }

    #[test]
    fn only_rate_limit_403s_are_rate_limits() {
        assert!(is_rate_limited(429, &headers(&[]), ""));
        assert!(is_rate_limited(403, &headers(&[("retry-after", "1")]), ""));
        assert!(is_rate_limited(
            403,
            &headers(&[]),
            "You have exceeded a secondary rate limit"
        ));
        assert!(!is_rate_limited(
            403,
            &headers(&[]),
            "Resource not accessible by integration"
        ));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            max_attempts: 5,
            read_lag: Duration::ZERO,
        };
        assert!(b.delay(1) <= Duration::from_millis(120));
        assert!(b.delay(3) >= Duration::from_millis(320));
        assert!(b.delay(30) <= Duration::from_millis(1200));
    }
}
