//! The ship queue's series on `/metrics` (issue 31 item 7): the wait from
//! a ship request to its landing as a histogram (`histogram_quantile(0.5,
//! …)` and `0.95` read its p50 and p95), the stories landed (in all and in
//! the last hour) and the proof runs started for ships; their ratio is the
//! proof runs per landed story (docs/metrics.md).
//!
//! Owns: these series' names, help texts and encoding. Must not: count
//! anything itself: each scrape sets them from the sums the store keeps
//! beside the records (`Store::ship_queue_totals`, `core::ship::figures`),
//! so every replica says the same.

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use taskgate_core::ship::figures::QueueTotals;

/// The queue's series, set at each scrape.
pub(super) struct ShipQueueMetrics {
    wait: StoredHistogram,
    landed: StoredCounter,
    landed_last_hour: Gauge,
    proof_runs: StoredCounter,
}

/// A histogram's sum, count and buckets (upper bound, own count).
type HistogramParts = (f64, u64, Vec<(f64, u64)>);

/// A histogram whose buckets are read from the store at each scrape.
#[derive(Debug, Clone, Default)]
struct StoredHistogram(Arc<Mutex<HistogramParts>>);

impl TypedMetric for StoredHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for StoredHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// A counter kept in the store (a sum over records), set at each scrape.
#[derive(Debug, Clone, Default)]
struct StoredCounter(Arc<Mutex<u64>>);

impl TypedMetric for StoredCounter {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for StoredCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let v = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        encoder.encode_counter::<NoLabelSet, _, u64>(&v, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

impl ShipQueueMetrics {
    pub(super) fn register(registry: &mut Registry) -> ShipQueueMetrics {
        let wait = StoredHistogram::default();
        registry.register(
            "ship_queue_wait_seconds",
            "Each landed story's wait from its ship request to its landing (histogram_quantile reads p50 and p95)",
            wait.clone(),
        );
        let landed = StoredCounter::default();
        registry.register(
            "ship_landed",
            "Stories landed through the ship queue",
            landed.clone(),
        );
        let landed_last_hour = Gauge::default();
        registry.register(
            "ship_landed_last_hour",
            "Stories landed through the ship queue in the last hour",
            landed_last_hour.clone(),
        );
        let proof_runs = StoredCounter::default();
        registry.register(
            "ship_proof_runs",
            "Proof runs started for ships, every round (divide by ship_landed_total for the runs per landed story)",
            proof_runs.clone(),
        );
        ShipQueueMetrics {
            wait,
            landed,
            landed_last_hour,
            proof_runs,
        }
    }

    pub(super) fn set(&self, t: &QueueTotals) {
        let mut below = 0;
        // The encoder sums the buckets: each gets only its own count.
        let buckets: Vec<(f64, u64)> = (t.wait_buckets.iter())
            .map(|&(bound, cumulative)| {
                let own = cumulative - below;
                below = cumulative;
                (bound, own)
            })
            .collect();
        *self.wait.0.lock().unwrap_or_else(|e| e.into_inner()) =
            (t.wait_sum_s as f64, t.landed, buckets);
        *self.landed.0.lock().unwrap_or_else(|e| e.into_inner()) = t.landed;
        self.landed_last_hour.set(t.landed_last_hour as i64);
        *self.proof_runs.0.lock().unwrap_or_else(|e| e.into_inner()) = t.proof_runs;
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::{Metrics, Snapshot};
    use taskgate_core::ship::figures::QueueFigures;
    use taskgate_core::ship::StoryRecord;

    #[test]
    fn the_queue_series_come_from_the_figures() {
        let landed = |wait_s: i64| StoryRecord {
            landed_at_ms: Some(10_000_000),
            queue_wait_ms: Some(wait_s * 1000),
            proof_runs: 1,
            ..StoryRecord::default()
        };
        let records = [landed(30), landed(400), landed(5000)];
        let text = Metrics::new().render(&Snapshot {
            ship_queue: QueueFigures::of(&records, 10_000_500).totals(),
            ..Snapshot::default()
        });
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("taskgate_ship_") || l.contains(" taskgate_ship_"))
            .filter(|l| !l.contains("taskgate_ship_train_"))
            .collect();
        insta::assert_snapshot!(lines.join("\n"), @r#"
        # HELP taskgate_ship_queue_wait_seconds Each landed story's wait from its ship request to its landing (histogram_quantile reads p50 and p95).
        # TYPE taskgate_ship_queue_wait_seconds histogram
        taskgate_ship_queue_wait_seconds_sum 5430.0
        taskgate_ship_queue_wait_seconds_count 3
        taskgate_ship_queue_wait_seconds_bucket{le="60.0"} 1
        taskgate_ship_queue_wait_seconds_bucket{le="300.0"} 1
        taskgate_ship_queue_wait_seconds_bucket{le="600.0"} 2
        taskgate_ship_queue_wait_seconds_bucket{le="1200.0"} 2
        taskgate_ship_queue_wait_seconds_bucket{le="1800.0"} 2
        taskgate_ship_queue_wait_seconds_bucket{le="3600.0"} 2
        taskgate_ship_queue_wait_seconds_bucket{le="7200.0"} 3
        taskgate_ship_queue_wait_seconds_bucket{le="14400.0"} 3
        taskgate_ship_queue_wait_seconds_bucket{le="28800.0"} 3
        taskgate_ship_queue_wait_seconds_bucket{le="86400.0"} 3
        taskgate_ship_queue_wait_seconds_bucket{le="+Inf"} 3
        # HELP taskgate_ship_landed Stories landed through the ship queue.
        # TYPE taskgate_ship_landed counter
        taskgate_ship_landed_total 3
        # HELP taskgate_ship_landed_last_hour Stories landed through the ship queue in the last hour.
        # TYPE taskgate_ship_landed_last_hour gauge
        taskgate_ship_landed_last_hour 3
        # HELP taskgate_ship_proof_runs Proof runs started for ships, every round (divide by ship_landed_total for the runs per landed story).
        # TYPE taskgate_ship_proof_runs counter
        taskgate_ship_proof_runs_total 3
        "#);
    }
}
