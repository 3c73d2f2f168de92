//! What the run queue may read and write in the store: the narrow
//! interface of `app::loops::run_queue` (`store::store_view!`).
//!
//! Owns: [`RunQueueStore`], the list. Must not: add behaviour (each
//! method is the store's own). The run queue's writes are a claim on an
//! attempt and the internal deliveries it records (a run's progress, a
//! tick, a watch, a ship queue's or a quarantine's turn); everything else
//! it changes goes through the processor as those deliveries' decisions.

use crate::app::commit_changes::ChangesStore;
use crate::app::flaky::QuarantineEndsStore;
use crate::store::{store_view, AttemptRow, NewDelivery, Recorded, StoreError};
use taskgate_core::config::RunnerKind;
use taskgate_core::freeze::Freeze;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::results::TestId;
use taskgate_core::ship::Train;
use taskgate_core::sync::{IssueRecord, StoryPlan};
use taskgate_core::task::RunSubject;
use taskgate_core::AttemptRef;

store_view! {
    /// The store as the run queue sees it.
    pub(crate) struct RunQueueStore {
        async fn active_attempts(runner: RunnerKind) -> Result<Vec<AttemptRow>, StoreError>;
        async fn claim_attempt(repo: &RepoName, attempt: &AttemptRef) -> Result<bool, StoreError>;
        async fn issue_record(repo: &RepoName, marker: &str) -> Result<Option<IssueRecord>, StoreError>;
        async fn our_turn(pass: &str, period: std::time::Duration) -> bool;
        async fn quarantined_tests(repo: &RepoName, now_s: i64) -> Result<Vec<TestId>, StoreError>;
        async fn record_delivery(d: NewDelivery) -> Result<Recorded, StoreError>;
        async fn repo_freeze(repo: &RepoName) -> Result<Option<Freeze>, StoreError>;
        async fn ship_queues_waiting() -> Result<Vec<(RepoName, StoryId)>, StoreError>;
        async fn ship_train(repo: &RepoName) -> Result<Train, StoreError>;
        async fn story(repo: &RepoName, story: &StoryId) -> Result<Option<StoryPlan>, StoreError>;
        async fn tasks_with_open_todos() -> Result<Vec<(RepoName, StoryId, RunSubject)>, StoreError>;
    }
    facts {
        /// Whether replicas share the store (claims must be kept).
        fn is_shared() -> bool;
        /// How long a claim holds unrenewed.
        fn lease_ms() -> i64;
    }
    /// What a tested commit changed, for the flaky tracking.
    hands changes: ChangesStore;
    /// The quarantines that ran out, for the periodic pass.
    hands quarantine_ends: QuarantineEndsStore;
}
