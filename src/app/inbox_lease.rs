//! Which installations' deliveries this replica decides.
//!
//! Owns: the `inbox:<installation>` leases (`store::leases`) and when each
//! was last renewed. Must not: decide anything.
//!
//! A story's decisions must be taken in the order its deliveries arrived,
//! each on the state the one before left. With several replicas on one
//! PostgreSQL database, one replica at a time holds an installation's
//! deliveries: it renews its lease a third of the way through, and a
//! replica that died lets go when the lease runs out. A delivery is marked
//! processed only while it is still `received`, so even two replicas that
//! both believed they held it could not store two decisions for it. On a
//! SQLite file one process holds every installation, with no writes.

use std::collections::HashMap;
use std::sync::Mutex;

use tracing::warn;

use crate::ids::InstallationId;
use crate::store::Store;

#[derive(Default)]
pub struct InboxLeases {
    /// When each lease this replica holds was last taken or renewed (ms).
    renewed: Mutex<HashMap<Option<InstallationId>, i64>>,
}

impl InboxLeases {
    /// Whether this replica may decide `installation`'s deliveries now.
    pub async fn holds(&self, store: &Store, installation: Option<InstallationId>) -> bool {
        if !store.is_shared() {
            return true;
        }
        let (now, lease) = (store.clock().now_ms(), store.lease_ms());
        let fresh = |renewed: &HashMap<_, i64>| {
            renewed
                .get(&installation)
                .is_some_and(|at| now - at < lease / 3)
        };
        if fresh(&self.renewed.lock().unwrap_or_else(|p| p.into_inner())) {
            return true;
        }
        let name = match installation {
            Some(id) => format!("inbox:{id}"),
            None => "inbox:none".to_owned(),
        };
        let held = match store.take_lease(&name, lease).await {
            Ok(held) => held,
            Err(e) => {
                warn!(error = %e, lease = %name, "could not take the lease; leaving its deliveries");
                false
            }
        };
        let mut renewed = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        if held {
            renewed.insert(installation, now);
        } else {
            renewed.remove(&installation);
        }
        held
    }
}
