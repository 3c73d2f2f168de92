//! The ship train's numbers in `/metrics` (issue 31): batch sizes,
//! proof runs, bisection runs, flaky retries, reused proofs, landed and
//! refused stories, and innocents refused, summed over every
//! repository's train (`core::ship::TrainStats`) at each scrape.
//!
//! Owns: these metrics' names, help texts and encoding. Must not: read
//! the store (the web layer hands the stats in) or count anything itself:
//! the train counts as it decides.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use taskgate_core::ship::TrainStats;

/// The upper bounds of the batch-size histogram's buckets (a car holds
/// 1 to 100 stories, `ship_batch_max`).
const BATCH_BUCKETS: [u32; 8] = [1, 2, 3, 4, 8, 16, 32, 100];

/// Every repository's train stats, summed.
pub fn sum(all: &[TrainStats]) -> TrainStats {
    let mut total = TrainStats::default();
    for s in all {
        total.proof_runs += s.proof_runs;
        total.reused_proofs += s.reused_proofs;
        total.flaky_retries += s.flaky_retries;
        total.bisection_runs += s.bisection_runs;
        total.landed += s.landed;
        total.refused += s.refused;
        total.innocents_refused += s.innocents_refused;
        for (size, n) in &s.batch_sizes {
            *total.batch_sizes.entry(*size).or_default() += n;
        }
    }
    total
}

/// Cars proven, by stories per car, as a histogram (from the stored
/// counts at each scrape).
#[derive(Debug, Default, Clone)]
struct BatchSizes(Arc<Mutex<BTreeMap<u32, u64>>>);

impl TypedMetric for BatchSizes {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for BatchSizes {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let sizes = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let count: u64 = sizes.values().sum();
        let sum: f64 = sizes.iter().map(|(s, n)| f64::from(*s) * *n as f64).sum();
        // Each bucket's own count: the encoder makes them cumulative.
        let mut below = 0;
        let mut buckets: Vec<(f64, u64)> = BATCH_BUCKETS
            .iter()
            .map(|&le| {
                let within = sizes.range(below + 1..=le).map(|(_, n)| n).sum();
                below = le;
                (f64::from(le), within)
            })
            .collect();
        buckets.push((
            f64::INFINITY,
            sizes.range(below + 1..).map(|(_, n)| n).sum(),
        ));
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The train's metrics, registered after the others.
pub(super) struct TrainMetrics {
    batch_sizes: BatchSizes,
    counts: Vec<(Gauge, Field)>,
}

/// Reads one count of the stats.
type Field = fn(&TrainStats) -> u64;

/// Each count's name, help text and field.
const COUNTS: [(&str, &str, Field); 7] = [
    (
        "ship_train_proof_runs",
        "Proof runs the ship train started (a batch, its retry on the same commit, the cars a failed batch was split into)",
        |s| s.proof_runs,
    ),
    (
        "ship_train_reused_proofs",
        "Batches proven without a run: their tree had passed the same gates before (docs/decisions/ship-queue.md, \"Proofs reused by tree\")",
        |s| s.reused_proofs,
    ),
    (
        "ship_train_flaky_retries",
        "Failed trees that passed when proven again: flaky events, nobody blamed",
        |s| s.flaky_retries,
    ),
    (
        "ship_train_bisection_runs",
        "Proof runs of the cars a failed batch was split into, to find the stories that broke it",
        |s| s.bisection_runs,
    ),
    (
        "ship_train_landed",
        "Stories the ship train landed",
        |s| s.landed,
    ),
    (
        "ship_train_refused",
        "Stories the ship train refused (their own failure confirmed, or no clean merge with the default branch)",
        |s| s.refused,
    ),
    (
        "ship_train_innocents_refused",
        "Stories refused for a failure on a base that was neither the default branch's head nor a batch proven green ahead of them (the failure may have been the base's); should stay 0",
        |s| s.innocents_refused,
    ),
];

impl TrainMetrics {
    pub(super) fn register(registry: &mut Registry) -> TrainMetrics {
        let batch_sizes = BatchSizes::default();
        registry.register(
            "ship_train_batch_size",
            "Stories per batch the ship train proved (each batch once, at its first proof or reused proof)",
            batch_sizes.clone(),
        );
        let counts = COUNTS
            .iter()
            .map(|(name, help, field)| {
                let gauge = Gauge::default();
                registry.register(*name, *help, gauge.clone());
                (gauge, *field)
            })
            .collect();
        TrainMetrics {
            batch_sizes,
            counts,
        }
    }

    /// Every train metric from the summed stats of this scrape.
    pub(super) fn set(&self, stats: &TrainStats) {
        *self.batch_sizes.0.lock().unwrap_or_else(|e| e.into_inner()) = stats.batch_sizes.clone();
        for (gauge, field) in &self.counts {
            gauge.set(field(stats) as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metrics, Snapshot};

    #[test]
    fn the_trains_of_every_repository_are_summed_into_the_ship_train_metrics() {
        let a = TrainStats {
            proof_runs: 3,
            reused_proofs: 1,
            flaky_retries: 1,
            bisection_runs: 2,
            landed: 4,
            refused: 1,
            batch_sizes: [(3, 1), (2, 1), (1, 1)].into(),
            innocents_refused: 0,
        };
        let b = TrainStats {
            proof_runs: 1,
            landed: 1,
            batch_sizes: [(1, 1)].into(),
            ..TrainStats::default()
        };
        let text = Metrics::new().render(&Snapshot {
            trains: sum(&[a, b]),
            ..Snapshot::default()
        });
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("taskgate_ship_train_"))
            .collect();
        insta::assert_snapshot!(lines.join("\n"), @r#"
        taskgate_ship_train_batch_size_sum 7.0
        taskgate_ship_train_batch_size_count 4
        taskgate_ship_train_batch_size_bucket{le="1.0"} 2
        taskgate_ship_train_batch_size_bucket{le="2.0"} 3
        taskgate_ship_train_batch_size_bucket{le="3.0"} 4
        taskgate_ship_train_batch_size_bucket{le="4.0"} 4
        taskgate_ship_train_batch_size_bucket{le="8.0"} 4
        taskgate_ship_train_batch_size_bucket{le="16.0"} 4
        taskgate_ship_train_batch_size_bucket{le="32.0"} 4
        taskgate_ship_train_batch_size_bucket{le="100.0"} 4
        taskgate_ship_train_batch_size_bucket{le="+Inf"} 4
        taskgate_ship_train_proof_runs 4
        taskgate_ship_train_reused_proofs 1
        taskgate_ship_train_flaky_retries 1
        taskgate_ship_train_bisection_runs 2
        taskgate_ship_train_landed 5
        taskgate_ship_train_refused 1
        taskgate_ship_train_innocents_refused 0
        "#);
    }
}
