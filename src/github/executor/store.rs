//! What the executor may read and write in the store: the narrow
//! interface of `github::executor` (`store::store_view!`).
//!
//! Owns: [`ExecutorStore`], the list. Must not: add behaviour (each method
//! is the store's own). The executor's writes are the outbox's own: an
//! effect claimed, settled or put off, an installation paused, a write
//! slot taken. Performing an effect reaches the store through
//! [`PerformStore`], handed on.

use std::collections::HashMap;

use crate::github::perform::PerformStore;
use crate::store::{store_view, Claimed, DueEffects, Settlement, StoreError, WriteSlot};
use taskgate_core::ids::{EffectId, InstallationId};
use taskgate_core::pace::Pacing;

store_view! {
    /// The store as the executor sees it.
    pub struct ExecutorStore {
        async fn claim_effect_attempt(id: EffectId, claim_ms: i64) -> Result<Option<Claimed>, StoreError>;
        async fn due_by_installation(now_ms: i64, per_installation: usize) -> Result<DueEffects, StoreError>;
        async fn earlier_pending_due_ms(installation: InstallationId, before: EffectId) -> Result<Option<i64>, StoreError>;
        async fn effect_retry_at(id: EffectId, due_ms: i64, error: String, failed: bool) -> Result<(), StoreError>;
        async fn installation_pauses() -> Result<HashMap<InstallationId, i64>, StoreError>;
        async fn pause_installation(installation: InstallationId, wait_ms: i64) -> Result<(), StoreError>;
        async fn settle_effect(id: EffectId, attempt: u32, settlement: Settlement) -> Result<bool, StoreError>;
        async fn take_write_slot(installation: InstallationId, now_ms: i64, pacing: Pacing, max_wait_ms: i64) -> Result<WriteSlot, StoreError>;
    }
    facts {
        /// How long a claim on an effect holds.
        fn effect_claim_ms() -> i64;
    }
    /// What performing an effect reads and records.
    hands perform: PerformStore;
}
