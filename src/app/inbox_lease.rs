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

use crate::store::{store_view, StoreError};
use taskgate_core::ids::InstallationId;

#[derive(Default)]
pub struct InboxLeases {
    /// When each lease this replica holds was last taken or renewed (ms).
    renewed: Mutex<HashMap<Option<InstallationId>, i64>>,
}

impl InboxLeases {
    /// Whether this replica may decide `installation`'s deliveries now.
    pub(crate) async fn holds(
        &self,
        store: &InboxStore,
        installation: Option<InstallationId>,
    ) -> bool {
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

    /// Whether this replica held `installation`'s lease when it last
    /// looked (it may have run out since): other replicas' deliveries of
    /// it are worth waking the processor for (`store::wakeups`).
    pub fn may_hold(&self, installation: Option<InstallationId>) -> bool {
        let renewed = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        renewed.contains_key(&installation)
    }
}

store_view! {
    /// The store as the inbox leases see it.
    pub(crate) struct InboxStore {
        async fn take_lease(name: &str, for_ms: i64) -> Result<bool, StoreError>;
    }
    facts {
        /// Whether replicas share the store (leases are needed).
        fn is_shared() -> bool;
        /// How long a lease holds unrenewed.
        fn lease_ms() -> i64;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::Clock;

    /// Two replicas on one database: one decides an installation's
    /// deliveries until its lease runs out unrenewed; another installation
    /// is the other replica's to take.
    #[tokio::test]
    async fn one_replica_at_a_time_decides_an_installation() {
        let held = crate::store::testing::postgres();
        let clock = Clock::movable();
        let a = InboxStore::of(held.store.clone().with_clock(clock.clone()));
        let b = InboxStore::of(held.store.as_replica("b").with_clock(clock.clone()));
        let (on_a, on_b) = (InboxLeases::default(), InboxLeases::default());
        let seven = Some(InstallationId::new(7));
        assert!(on_a.holds(&a, seven).await);
        assert!(!on_b.holds(&b, seven).await);
        assert!(on_b.holds(&b, Some(InstallationId::new(8))).await);
        // a goes quiet (it died): b takes the installation over.
        clock.advance(Duration::from_millis(a.lease_ms() as u64 + 1));
        assert!(on_b.holds(&b, seven).await);
        assert!(!on_a.holds(&a, seven).await);
    }

    #[tokio::test]
    async fn on_a_sqlite_file_the_one_process_holds_everything() {
        let held = crate::store::testing::sqlite();
        let (one, other) = (held.store.clone(), held.store.as_replica("b"));
        let (one, other) = (InboxStore::of(one), InboxStore::of(other));
        assert!(InboxLeases::default().holds(&one, None).await);
        assert!(InboxLeases::default().holds(&other, None).await);
    }
}
