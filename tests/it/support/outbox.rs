//! Effects put in the outbox directly, as a decided delivery leaves them,
//! for tests that measure the executor alone.
//!
//! Owns: one pending delivery recorded and completed with the effects.
//! Must not: start anything (the test's app runs them).

use taskgate::store::{Disposition, NewDelivery, Recorded, Store};
use taskgate_core::ids::{DeliveryId, InstallationId};
use taskgate_core::Effect;

/// Queues `effects` as the outcome of a delivery `name` of `installation`.
pub async fn queue_effects(store: &Store, installation: u64, name: &str, effects: Vec<Effect>) {
    let recorded = store
        .record_delivery(NewDelivery {
            body_digest: None,
            delivery_id: DeliveryId::new(name.to_owned()),
            event: "issue_comment".into(),
            action: Some("created".into()),
            installation: Some(InstallationId::new(installation)),
            payload: b"{}".to_vec().into(),
            disposition: Disposition::Pending,
        })
        .await
        .unwrap();
    let Recorded::New { seq } = recorded else {
        panic!("{name} recorded twice")
    };
    let installation = Some(InstallationId::new(installation));
    let queued = store
        .complete_delivery(
            seq,
            "processed",
            "queued".into(),
            installation,
            vec![],
            effects,
        )
        .await
        .unwrap();
    assert!(queued > 0);
}
