//! Owns: the stream's figures ([`Figures`]), read after the run from what
//! GitHub holds (workflow dispatches, pull requests, the default branch's
//! history) and what the harness saw (arrivals, refusals, re-queues), with
//! taskgate's own counts beside them (the story records and `/metrics`),
//! and the row of `docs/benchmarks.md` they make.
//! Must not: judge them (the tests and the bench do).

use std::collections::BTreeSet;

use taskgate_core::task::RunSubject;

use super::ShipStream;
use crate::support::{metric, REPO};

/// What one stream through one queue came to.
#[derive(Debug, Clone)]
pub struct Figures {
    pub queue: &'static str,
    pub landed: usize,
    /// Landed stories per hour of clock time, from the stream's start to
    /// the last landing.
    pub landed_per_hour: f64,
    /// Ship proofs dispatched (GitHub's record), cancelled ones included.
    pub proof_runs: usize,
    /// The same as taskgate counts it (its story records, `/metrics`).
    pub proof_runs_metric: f64,
    pub landed_metric: f64,
    /// Each landed story's wait, from its first ship to its landing, in
    /// minutes, ascending.
    pub waits_min: Vec<f64>,
    /// Refusals of stories that were not broken (a flaky one included).
    pub innocents_refused: usize,
    pub broken_landed: usize,
    pub broken_refused: usize,
    pub broken: usize,
    /// Refusals of flaky stories.
    pub flaky_ejections: usize,
    pub human_requeues: usize,
    pub clock_hours: f64,
    pub steps: usize,
}

impl Figures {
    pub fn runs_per_landed(&self) -> f64 {
        self.proof_runs as f64 / self.landed.max(1) as f64
    }

    /// The `p`-th quantile of the waits (nearest rank), in minutes.
    pub fn wait(&self, p: f64) -> f64 {
        let i = ((self.waits_min.len() as f64 - 1.0) * p).round() as usize;
        self.waits_min.get(i).copied().unwrap_or(0.0)
    }

    pub const HEADER: &'static str = "| queue | landed | landed per hour | proof runs per landed | wait p50 (min) | wait p95 (min) | innocents refused | broken landed | flaky ejections | human re-queues |\n|---|---|---|---|---|---|---|---|---|---|";

    /// This stream's row under [`Figures::HEADER`].
    pub fn row(&self) -> String {
        format!(
            "| {} | {} | {:.1} | {:.2} | {:.0} | {:.0} | {} | {} | {} | {} |",
            self.queue,
            self.landed,
            self.landed_per_hour,
            self.runs_per_landed(),
            self.wait(0.5),
            self.wait(0.95),
            self.innocents_refused,
            self.broken_landed,
            self.flaky_ejections,
            self.human_requeues,
        )
    }
}

impl ShipStream {
    /// The figures of the stream so far.
    pub async fn figures(&self) -> Figures {
        let ship = RunSubject::ShipProof.key();
        let proof_runs = self
            .repo()
            .dispatches()
            .iter()
            .filter(|d| d.inputs["task"] == ship.as_str())
            .count();
        let mut waits_min: Vec<f64> = self
            .stories
            .iter()
            .filter_map(|t| Some((t.landed_ms? - self.t0_ms - t.spec.at_ms) as f64 / 60_000.0))
            .collect();
        waits_min.sort_by(f64::total_cmp);
        let last_landing = self.stories.iter().filter_map(|t| t.landed_ms).max();
        let landed = waits_min.len();
        let hours = last_landing.map_or(0.0, |at| (at - self.t0_ms) as f64 / 3_600_000.0);
        let count = |f: &dyn Fn(&super::Tracked) -> usize| self.stories.iter().map(f).sum();
        let metrics = self.app.metrics().await;
        Figures {
            queue: self.queue.name(),
            landed,
            landed_per_hour: if hours > 0.0 {
                landed as f64 / hours
            } else {
                0.0
            },
            proof_runs,
            proof_runs_metric: metric(&metrics, "taskgate_ship_proof_runs_total "),
            landed_metric: metric(&metrics, "taskgate_ship_landed_total "),
            waits_min,
            innocents_refused: count(&|t| {
                if t.spec.broken {
                    0
                } else {
                    t.refusals as usize
                }
            }),
            broken_landed: count(&|t| usize::from(t.spec.broken && t.landed_ms.is_some())),
            broken_refused: count(&|t| usize::from(t.spec.broken && t.refusals > 0)),
            broken: count(&|t| usize::from(t.spec.broken)),
            flaky_ejections: count(&|t| if t.spec.flaky { t.refusals as usize } else { 0 }),
            human_requeues: count(&|t| t.requeues as usize),
            clock_hours: (self.app.clock.now_ms() - self.t0_ms) as f64 / 3_600_000.0,
            steps: self.steps,
        }
    }

    /// The commits the default branch held since the stream started that
    /// no passing ship proof ran on: none, if what lands is what was
    /// proven. "Held" is every head GitHub announced for it in a push
    /// webhook: a batch lands several stories' merges in one fast-forward,
    /// and the merges inside it were never the branch's head, so only the
    /// batch's last commit, which its proof ran on, counts.
    pub fn landed_unproven(&self) -> Vec<String> {
        let repo = self.app.fake.repo(REPO);
        let proven: BTreeSet<&str> = self
            .player
            .played
            .iter()
            .filter(|p| p.subject == RunSubject::ShipProof && p.passed)
            .map(|p| p.sha.as_str())
            .collect();
        let mut heads: BTreeSet<String> = self
            .app
            .fake
            .hook_deliveries()
            .iter()
            .filter(|d| d["event"] == "push")
            .filter_map(|d| self.app.fake.hook_delivery(d["id"].as_u64()?))
            .filter(|d| d["request"]["payload"]["ref"] == "refs/heads/main")
            .filter_map(|d| Some(d["request"]["payload"]["after"].as_str()?.to_owned()))
            .collect();
        let mut unproven = Vec::new();
        let mut at = repo.branch_sha("main");
        heads.extend(at.clone());
        let heads: BTreeSet<&str> = heads.iter().map(String::as_str).collect();
        while let Some(sha) = at {
            if sha == self.main_at_start {
                break;
            }
            if heads.contains(sha.as_str()) && !proven.contains(sha.as_str()) {
                unproven.push(sha.clone());
            }
            at = repo.commit(&sha).and_then(|c| c.parents.first().cloned());
        }
        unproven
    }
}
