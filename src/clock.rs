//! The clock: "now" as seconds since the Unix epoch, injected so tests can
//! move time on (a branch todo's lifetime bound) without sleeping.
//!
//! Owns: the [`Clock`] type and the system clock.
//! Must not: import anything from the crate; every layer may take a clock.

use std::sync::Arc;

/// Seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| chrono::Utc::now().timestamp())
}
