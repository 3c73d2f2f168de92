//! The ship queue on a stream of stories (issue 31, "Benchmark"), through
//! the real taskgate against the fake GitHub on the movable clock: each
//! story built and shipped with `/taskgate ship` at its arrival, each
//! proof a workflow run that takes ten minutes of clock time, the figures
//! read back from GitHub and the store (`support::ship_stream`).
//!
//! `bench_ship_stream` is the benchmark (ignored: run it by name, below);
//! the small stream beside it keeps the harness and its counting honest on
//! every run of the suite.

use std::time::{Duration, Instant};

use crate::support::ship_stream::{stream, Queue, ShipStream, StreamStory};

/// A ship proof's job on GitHub Actions.
const PROOF: Duration = Duration::from_secs(10 * 60);

/// The stream of the core's model (`cargo bench -p taskgate-core --bench
/// ship_train`): 100 stories, 9 broken, 4 flaky once.
const SEED: u64 = 0x5eed_2026;

/// Six stories a minute apart, the third broken.
fn six_with_one_broken() -> Vec<StreamStory> {
    (0..6)
        .map(|i| StreamStory {
            key: format!("s{i}"),
            at_ms: i * 60_000,
            broken: i == 2,
            flaky: false,
            test_file: format!("tests/s{i}.rs"),
        })
        .collect()
}

#[tokio::test]
async fn a_small_stream_on_the_serial_queue_lands_what_was_proven_and_refuses_the_broken_story() {
    let mut s = ShipStream::build(Queue::Serial, six_with_one_broken(), PROOF).await;
    s.run(Duration::from_secs(6 * 3600))
        .await
        .unwrap_or_else(|stuck| panic!("{stuck}"));
    let f = s.figures().await;

    assert_eq!(f.landed, 5, "{f:#?}");
    assert_eq!((f.broken_refused, f.broken_landed), (1, 0), "{f:#?}");
    assert_eq!(f.innocents_refused, 0, "{f:#?}");
    assert_eq!(f.human_requeues, 0, "{f:#?}");
    assert_eq!(
        f.proof_runs, 6,
        "one proof per story, one at a time: {f:#?}"
    );
    assert_eq!(
        (f.landed_metric, f.proof_runs_metric),
        (5.0, 6.0),
        "/metrics counts as GitHub saw: {f:#?}"
    );
    assert!(
        s.landed_unproven().is_empty(),
        "main holds only commits a passing proof ran on: {:?}",
        s.landed_unproven()
    );
    // One proof at a time, each ten minutes of clock time: six proofs,
    // the last landing an hour after the first ship.
    assert!((4.9..=5.0).contains(&f.landed_per_hour), "{f:#?}");
    assert!((10.0..10.5).contains(&f.wait(0.0)), "{f:#?}");
}

/// The stream through one queue (`TASKGATE_BENCH_QUEUE=serial|train|split`,
/// serial unless said; `TASKGATE_BENCH_STORIES`, 100 unless said), its
/// figures printed as a row of docs/benchmarks.md. Not a test: run it with
/// `cargo test --locked --test it bench_ship_stream -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn bench_ship_stream() {
    let queue = Queue::from_env();
    let n = std::env::var("TASKGATE_BENCH_STORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let specs = stream(n, SEED);
    let (broken, flaky) = (
        specs.iter().filter(|s| s.broken).count(),
        specs.iter().filter(|s| s.flaky).count(),
    );
    let started = Instant::now();
    let mut s = ShipStream::build(queue, specs, PROOF).await;
    let built = started.elapsed();
    let result = s.run(Duration::from_secs(48 * 3600)).await;
    let f = s.figures().await;
    println!(
        "{n} stories ({broken} broken, {flaky} flaky once), proofs of {} min, queue {}",
        PROOF.as_secs() / 60,
        queue.name()
    );
    println!(
        "{}\n{}",
        crate::support::ship_stream::figures::Figures::HEADER,
        f.row()
    );
    println!(
        "clock: {:.1} h in {} steps; wall: {:.0} s building, {:.0} s streaming; \
         proof runs {} (taskgate counts {}), landed {} (taskgate counts {}), broken refused {}/{}",
        f.clock_hours,
        f.steps,
        built.as_secs_f64(),
        (started.elapsed() - built).as_secs_f64(),
        f.proof_runs,
        f.proof_runs_metric,
        f.landed,
        f.landed_metric,
        f.broken_refused,
        f.broken,
    );
    if let Err(stuck) = result {
        panic!("{stuck}");
    }
    assert!(
        s.landed_unproven().is_empty(),
        "main holds commits no passing proof ran on: {:?}",
        s.landed_unproven()
    );
}
