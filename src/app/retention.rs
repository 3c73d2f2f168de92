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

use std::time::Duration;

use tracing::{info, warn};

use crate::store::{unix_now_ms, Store};

/// How long decided deliveries and ended effects are kept unless set.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Rows forgotten per commit: each batch is one short transaction on the
/// writer, so the intake hardly notices a prune.
const BATCH: usize = 500;

/// Prunes now and then every `every`, keeping what is younger than `keep`.
pub async fn run(store: Store, keep: Duration, every: Duration) {
    loop {
        if let Err(e) = prune_once(&store, keep).await {
            warn!(error = %e, "pruning old deliveries failed; will try again");
        }
        tokio::time::sleep(every).await;
    }
}

/// Forgets everything decided more than `keep` ago; returns how many
/// deliveries and effects went.
pub async fn prune_once(
    store: &Store,
    keep: Duration,
) -> Result<(usize, usize), crate::store::StoreError> {
    let cutoff = unix_now_ms() - keep.as_millis() as i64;
    let mut deliveries = 0;
    loop {
        let n = store.prune_deliveries(cutoff, BATCH).await?;
        deliveries += n;
        if n < BATCH {
            break;
        }
        // Let the intake's commits in between batches.
        tokio::task::yield_now().await;
    }
    let mut effects = 0;
    loop {
        let n = store.prune_effects(cutoff, BATCH).await?;
        effects += n;
        if n < BATCH {
            break;
        }
        tokio::task::yield_now().await;
    }
    if deliveries + effects > 0 {
        info!(
            deliveries,
            effects, "forgot what was decided before the retention period"
        );
    }
    Ok((deliveries, effects))
}
