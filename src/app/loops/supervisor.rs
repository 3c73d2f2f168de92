//! Supervised loops: the processor, the executor and the run queue are
//! restarted when they panic, and `/healthz` says which one is down.
//!
//! Owns: catching a loop's panic, counting it
//! (`taskgate_loop_restarts_total{loop}`), the backoff between restarts,
//! each loop's up/down state that `/healthz` reads, and the record of
//! every loop that ever stopped, with why ([`Loops`]). The tasks that are
//! not restarted (retention, redelivery, the webhook proxy) are
//! [`watched`]: their panic is recorded there too.
//! Must not: know what a loop does. A loop keeps its progress in the store,
//! so a restarted loop resumes from there, as after a process restart.
//!
//! A loop that keeps panicking is restarted after 100 ms, then 200 ms, …,
//! at most 30 s apart ([`Doubling`]); one that ran for a minute before its
//! panic starts the series again.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tracing::error;

use crate::metrics::Metrics;

/// Waits that double from `first` up to `most`: between restarts of a
/// loop, and between a processor's tries to store a decision.
#[derive(Debug, Clone)]
pub struct Doubling {
    first: Duration,
    most: Duration,
    failures: u32,
}

impl Doubling {
    /// 100 ms, 200 ms, 400 ms, … 30 s.
    pub fn new() -> Doubling {
        Doubling::between(Duration::from_millis(100), Duration::from_secs(30))
    }

    pub fn between(first: Duration, most: Duration) -> Doubling {
        Doubling {
            first,
            most,
            failures: 0,
        }
    }

    /// The wait after one more failure.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self
            .first
            .saturating_mul(1u32.checked_shl(self.failures).unwrap_or(u32::MAX))
            .min(self.most);
        self.failures = self.failures.saturating_add(1);
        wait
    }

    /// After a success: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

impl Default for Doubling {
    fn default() -> Self {
        Doubling::new()
    }
}

/// Which supervised loops are down, and why; shared with `/healthz`.
/// Also which loops ever stopped since the start, and why the first time.
#[derive(Default)]
pub struct Loops {
    down: Mutex<BTreeMap<&'static str, String>>,
    stopped: Mutex<BTreeMap<&'static str, String>>,
}

impl Loops {
    fn up(&self, name: &'static str) {
        self.lock().remove(name);
    }

    fn down(&self, name: &'static str, why: String) {
        self.lock().insert(name, why);
    }

    fn stopped(&self, name: &'static str, why: &str) {
        self.stopped
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .entry(name)
            .or_insert_with(|| why.to_owned());
    }

    /// Each loop that stopped (panicked, or returned) at least once since
    /// the start, with why it stopped the first time; restarted or not.
    pub fn ever_stopped(&self) -> Vec<(&'static str, String)> {
        self.stopped
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .iter()
            .map(|(name, why)| (*name, why.clone()))
            .collect()
    }

    /// Each loop that is down, with why: empty when all are running.
    pub fn down_now(&self) -> Vec<(&'static str, String)> {
        self.lock()
            .iter()
            .map(|(name, why)| (*name, why.clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, String>> {
        self.down
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// A loop ran this long before its panic: it was healthy, and the next
/// restart waits the shortest time again.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// Runs the loop `start` makes, and again each time it panics (or ends,
/// which a loop should not), counting each restart.
pub async fn supervise<F, Fut>(
    name: &'static str,
    loops: Arc<Loops>,
    metrics: Arc<Metrics>,
    mut start: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    metrics.loop_restarts_start(name);
    let mut backoff = Doubling::new();
    loop {
        loops.up(name);
        let started = tokio::time::Instant::now();
        let why = match CatchUnwind::new(start()).await {
            Ok(()) => "it returned".to_owned(),
            Err(panic) => format!("it panicked: {}", panic_message(&*panic)),
        };
        metrics.loop_restarted(name);
        loops.stopped(name, &why);
        if started.elapsed() >= HEALTHY_AFTER {
            backoff.reset();
        }
        let wait = backoff.next_wait();
        error!(
            task = name,
            why,
            restart_in_ms = wait.as_millis() as u64,
            "a loop stopped; restarting it"
        );
        loops.down(
            name,
            format!("{why}; restarting in {} ms", wait.as_millis()),
        );
        tokio::time::sleep(wait).await;
    }
}

/// Runs a task that is not restarted: when it panics, that is recorded in
/// `loops` ([`Loops::ever_stopped`]) and the task ends, as it would
/// unwatched.
pub async fn watched(name: &'static str, loops: Arc<Loops>, task: impl Future<Output = ()>) {
    if let Err(panic) = CatchUnwind::new(task).await {
        let why = format!("it panicked: {}", panic_message(&*panic));
        error!(task = name, why, "a task stopped");
        loops.stopped(name, &why);
    }
}

/// The text a panic was raised with.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// A future that answers `Err` with the panic instead of unwinding, polled
/// in the caller's task (so aborting the caller drops it too).
pub struct CatchUnwind<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> CatchUnwind<F> {
    pub fn new(inner: F) -> CatchUnwind<F> {
        CatchUnwind {
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_100_ms_to_30_s_and_start_again_after_a_success() {
        let mut backoff = Doubling::new();
        let waits: Vec<u128> = (0..12).map(|_| backoff.next_wait().as_millis()).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
        for _ in 0..100 {
            backoff.next_wait();
        }
        assert_eq!(backoff.next_wait(), Duration::from_secs(30));
        backoff.reset();
        assert_eq!(backoff.next_wait(), Duration::from_millis(100));
    }

    /// Polls `check` every 5 ms, for at most 5 s.
    async fn until(what: &str, check: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !check() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_panicking_loop_is_restarted_counted_and_reported_down_meanwhile() {
        use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
        let loops = Arc::new(Loops::default());
        let metrics = Arc::new(Metrics::new());
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let supervisor = tokio::spawn(supervise(
            "processor",
            loops.clone(),
            metrics.clone(),
            move || {
                let n = counted.fetch_add(1, SeqCst);
                async move {
                    if n < 2 {
                        panic!("delivery {n} broke it");
                    }
                    std::future::pending::<()>().await
                }
            },
        ));
        until("down after the first panic", || {
            !loops.down_now().is_empty()
        })
        .await;
        assert_eq!(
            loops.down_now(),
            [(
                "processor",
                "it panicked: delivery 0 broke it; restarting in 100 ms".to_owned()
            )]
        );
        // The second panic waits 200 ms; then it runs.
        until("running after two restarts", || {
            starts.load(SeqCst) == 3 && loops.down_now().is_empty()
        })
        .await;
        let text = metrics.render(&Default::default());
        assert!(
            text.contains("taskgate_loop_restarts_total{loop=\"processor\"} 2"),
            "{text}"
        );
        // Up again, and the first panic still on record.
        assert_eq!(
            loops.ever_stopped(),
            [("processor", "it panicked: delivery 0 broke it".to_owned())]
        );
        supervisor.abort();
    }

    #[tokio::test]
    async fn a_watched_task_that_panics_ends_and_is_on_record() {
        let loops = Arc::new(Loops::default());
        watched("retention", loops.clone(), async { panic!("disk gone") }).await;
        assert_eq!(
            loops.ever_stopped(),
            [("retention", "it panicked: disk gone".to_owned())]
        );
        assert!(
            loops.down_now().is_empty(),
            "not restarted, not reported down"
        );
    }
}
