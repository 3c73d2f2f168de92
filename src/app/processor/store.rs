//! What the processor may read and write in the store: the narrow
//! interface of `app::processor` (`store::store_view!`).
//!
//! Owns: [`ProcessorStore`], the list. Must not: add behaviour (each
//! method is the store's own). The processor's writes are the inbox's: a
//! delivery's decision stored with its changes and effects, a batch
//! marked unchanged, one put off. The handlers it routes to hold their
//! own views; the comment commands' reads are [`CommandsStore`], and the
//! inbox leases' [`InboxStore`], handed on.

use crate::app::commands::CommandsStore;
use crate::app::inbox_lease::InboxStore;
use crate::store::{store_view, PendingDelivery, StoreError};
use taskgate_core::ids::InstallationId;
use taskgate_core::{Change, Effect};

store_view! {
    /// The store as the processor sees it.
    pub(crate) struct ProcessorStore {
        async fn complete_delivery(seq: i64, status: &'static str, outcome: String, installation: Option<InstallationId>, changes: Vec<Change>, effects: Vec<Effect>) -> Result<usize, StoreError>;
        async fn complete_unchanged(outcomes: Vec<(i64, String)>) -> Result<usize, StoreError>;
        async fn defer_delivery(seq: i64, tries: u32, retry_at_ms: i64, why: String) -> Result<(), StoreError>;
        async fn next_retry_at_ms() -> Result<Option<i64>, StoreError>;
        async fn pending_deliveries_after(limit: usize, after_seq: i64, needs_payload: fn(&str, Option<&str>) -> bool) -> Result<Vec<PendingDelivery>, StoreError>;
    }
    /// Whether this replica decides an installation's deliveries now.
    hands inbox: InboxStore;
    /// What the comment commands read.
    hands commands: CommandsStore;
}
