//! Prometheus metrics (`GET /metrics`), via the `prometheus-client` crate.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

pub struct Metrics {
    registry: Registry,
    deliveries: Family<Labels, Counter>,
    processing_seconds: Histogram,
    outbox_depth: Gauge,
    github_calls: Family<Labels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("taskgate");
        let deliveries = Family::<Labels, Counter>::default();
        registry.register(
            "deliveries",
            "Webhook deliveries by event and outcome (accepted, duplicate, ignored, rejected, error)",
            deliveries.clone(),
        );
        let processing_seconds =
            Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0]);
        registry.register(
            "delivery_processing_seconds",
            "Time from a delivery being recorded to its decision being stored",
            processing_seconds.clone(),
        );
        let outbox_depth = Gauge::default();
        registry.register(
            "outbox_depth",
            "Effects waiting to be performed on GitHub",
            outbox_depth.clone(),
        );
        let github_calls = Family::<Labels, Counter>::default();
        registry.register(
            "github_calls",
            "GitHub API calls by effect and outcome: 2xx, the HTTP status of a failure, or none (no answer)",
            github_calls.clone(),
        );
        Metrics {
            registry,
            deliveries,
            processing_seconds,
            outbox_depth,
            github_calls,
        }
    }

    pub fn delivery(&self, event: &str, outcome: &'static str) {
        self.deliveries
            .get_or_create(&vec![
                ("event", event.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
    }

    pub fn processed(&self, seconds: f64) {
        self.processing_seconds.observe(seconds);
    }

    pub fn github_call(&self, effect: &'static str, status: String) {
        self.github_calls
            .get_or_create(&vec![("effect", effect.to_owned()), ("status", status)])
            .inc();
    }

    pub fn render(&self, outbox_depth: i64) -> String {
        self.outbox_depth.set(outbox_depth);
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}
