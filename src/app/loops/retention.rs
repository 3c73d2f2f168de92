//! Retention: forgets deliveries and effects decided long ago, so the
//! database stops growing with every webhook.
//!
//! Owns: when to prune and how much at a time. Must not: touch anything
//! still undecided (a delivery not processed, an effect not performed) —
//! the store's prune statements leave those out — or decide anything.
//!
//! GitHub redelivers a webhook only from the past three days, so keeping
//! delivery ids for 30 days (the default) still answers every redelivery
//! with 200 and does nothing twice.
//!
//! Time is the store's clock: its cutoff, and the wait between prunes.

use std::time::Duration;

use tracing::{info, warn};

use crate::store::{store_view, StoreError};

store_view! {
    /// The store as retention sees it: whose turn it is, and the two prunes.
    pub struct RetentionStore {
        async fn our_turn(pass: &str, period: Duration) -> bool;
        async fn prune_deliveries(cutoff_ms: i64, limit: usize) -> Result<usize, StoreError>;
        async fn prune_effects(cutoff_ms: i64, limit: usize) -> Result<usize, StoreError>;
    }
}

/// How long decided deliveries and ended effects are kept unless set.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Rows forgotten per commit: each batch is one short transaction on the
/// writer, so the intake hardly notices a prune.
const BATCH: usize = 500;

/// Prunes now and then every `every`, keeping what is younger than `keep`.
pub async fn run(store: RetentionStore, keep: Duration, every: Duration) {
    loop {
        let next_ms = store.clock().now_ms() + every.as_millis() as i64;
        // One replica prunes for the cluster.
        if store.our_turn("retention", every).await {
            if let Err(e) = prune_once(&store, keep).await {
                warn!(error = %e, "pruning old deliveries failed; will try again");
            }
        }
        store.clock().sleep_until_ms(next_ms).await;
    }
}

/// Forgets everything decided more than `keep` ago; returns how many
/// deliveries and effects went.
pub async fn prune_once(
    store: &RetentionStore,
    keep: Duration,
) -> Result<(usize, usize), StoreError> {
    let cutoff = store.clock().now_ms() - keep.as_millis() as i64;
    let deliveries = in_batches(|| store.prune_deliveries(cutoff, BATCH)).await?;
    let effects = in_batches(|| store.prune_effects(cutoff, BATCH)).await?;
    if deliveries + effects > 0 {
        info!(
            deliveries,
            effects, "forgot what was decided before the retention period"
        );
    }
    Ok((deliveries, effects))
}

/// Runs `prune` (one batch of at most [`BATCH`] rows) until a batch comes
/// back short; returns how many rows went in all.
async fn in_batches<F, Fut>(mut prune: F) -> Result<usize, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, StoreError>>,
{
    let mut total = 0;
    loop {
        let n = prune().await?;
        total += n;
        if n < BATCH {
            return Ok(total);
        }
        // Let the intake's commits in between batches.
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn batches_run_until_one_comes_back_short() {
        let mut answers = vec![3, BATCH, BATCH].into_iter().rev();
        let mut calls = 0;
        let total = in_batches(|| {
            calls += 1;
            let n = answers.next().expect("asked once too often");
            async move { Ok(n) }
        })
        .await
        .unwrap();
        assert_eq!((total, calls), (2 * BATCH + 3, 3));
    }

    #[tokio::test]
    async fn a_prune_keeps_what_is_younger_than_the_retention() {
        use crate::store::{Disposition, NewDelivery};
        use taskgate_core::ids::DeliveryId;
        let dir = tempfile::tempdir().unwrap();
        let clock = crate::clock::Clock::movable();
        let store = crate::store::Store::open(&dir.path().join("t.db"))
            .unwrap()
            .with_clock(clock.clone());
        for id in ["a", "b", "c"] {
            let settled = NewDelivery {
                body_digest: None,
                delivery_id: DeliveryId::new(id),
                event: "issues".into(),
                action: Some("opened".into()),
                installation: None,
                payload: bytes::Bytes::from_static(b"{}"),
                disposition: Disposition::Settled {
                    outcome: "nothing to do".into(),
                },
            };
            store.record_delivery(settled).await.unwrap();
        }
        let view = RetentionStore::of(store.clone());
        assert_eq!(prune_once(&view, DEFAULT_RETENTION).await.unwrap(), (0, 0));
        // With nothing kept back, all but the newest go.
        clock.advance(Duration::from_millis(5));
        assert_eq!(prune_once(&view, Duration::ZERO).await.unwrap(), (2, 0));
        assert_eq!(store.delivery_count().await.unwrap(), 1);
    }
}
