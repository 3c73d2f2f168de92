//! Failing fast: each started app's loops are watched, and every wait
//! ([`eventually`], `TestApp::settle`, the test's end) fails the test at
//! once, with the panic's message, when one of them stopped.
//!
//! Owns: the watch of the apps a test thread started, and the bounded poll
//! every test waits with. Must not: start anything.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use taskgate::app::loops::supervisor::Loops;

/// A started server's loops, looked at by every wait of the test that
/// started it.
pub(super) struct Watch {
    pub(super) loops: Arc<Loops>,
    pub(super) panics_expected: AtomicBool,
}

impl Watch {
    /// Panics with the message of the first loop that stopped.
    pub(super) fn check(&self) {
        if self.panics_expected.load(Ordering::SeqCst) {
            return;
        }
        let stopped = self.loops.ever_stopped();
        if let Some((name, why)) = stopped.first() {
            panic!("taskgate's background loop `{name}` stopped: {why}");
        }
    }
}

thread_local! {
    /// The apps this test thread started (a `#[tokio::test]` body runs on
    /// its own thread), for [`eventually`], which is given no app.
    pub(super) static WATCHED: RefCell<Vec<Weak<Watch>>> = const { RefCell::new(Vec::new()) };
}

/// Fails the test if a background loop of one of its apps has stopped.
pub fn assert_loops_alive() {
    let watches: Vec<Arc<Watch>> = WATCHED.with(|w| {
        let mut w = w.borrow_mut();
        w.retain(|watch| watch.strong_count() > 0);
        w.iter().filter_map(Weak::upgrade).collect()
    });
    for watch in watches {
        watch.check();
    }
}

/// Polls `check` until it holds, for at most 30 s (CI machines are slow);
/// fails at once if a background loop of the test's app stopped.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert_loops_alive();
        if check().await {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for: {what}");
        }
        // allowed sleep: the poll of `eventually`, bounded (30 s).
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
