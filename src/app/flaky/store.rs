//! What the flaky-test tracking may read from the store: the narrow
//! interface of `app::flaky` (`store::store_view!`). Its writes are its
//! decisions' changes, which the processor stores.

use std::collections::{BTreeMap, BTreeSet};

use crate::store::{store_view, NewDelivery, Recorded, StoreError};
use taskgate_core::flaky::{CommitPair, FlakyEvent, Quarantine, TestRun};
use taskgate_core::ids::RepoName;
use taskgate_core::results::TestId;
use taskgate_core::sync::StoryPlan;

store_view! {
    /// The store as `app::flaky` sees it.
    pub(crate) struct FlakyStore {
        async fn a_story_of(repo: &RepoName) -> Result<Option<StoryPlan>, StoreError>;
        async fn commit_changes(repo: &RepoName, pairs: Vec<CommitPair>) -> Result<BTreeMap<CommitPair, Option<Vec<String>>>, StoreError>;
        async fn flaky_events_seen(repo: &RepoName, test: &TestId) -> Result<Vec<FlakyEvent>, StoreError>;
        async fn flaky_history(repo: &RepoName, tests: &[TestId], failing_now: &BTreeSet<TestId>) -> Result<Vec<TestRun>, StoreError>;
        async fn quarantines(repo: &RepoName) -> Result<Vec<Quarantine>, StoreError>;
    }
}

store_view! {
    /// What the run queue's periodic pass reaches of the flaky tracking:
    /// the quarantines that ran out, and recording each end for the
    /// processor (`record_ended_quarantines`).
    pub(crate) struct QuarantineEndsStore {
        async fn a_story_of(repo: &RepoName) -> Result<Option<StoryPlan>, StoreError>;
        async fn quarantines_ended_between(from_s: i64, to_s: i64) -> Result<Vec<(RepoName, Quarantine)>, StoreError>;
        async fn record_delivery(d: NewDelivery) -> Result<Recorded, StoreError>;
    }
}
