//! What shipping may read from the store: the narrow interface of
//! `app::ship` (`store::store_view!`). Its writes are its decisions'
//! changes, which the processor stores.

use std::collections::{BTreeMap, BTreeSet};

use crate::app::flaky::FlakyStore;
use crate::store::{store_view, StoreError};
use taskgate_core::freeze::Freeze;
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::ship::{StoryRecord, StoryRunRef, Train};
use taskgate_core::sync::{IssueRecord, StoryPlan};
use taskgate_core::task::{RunSubject, TaskRecord};

store_view! {
    /// The store as `app::ship` sees it.
    pub(crate) struct ShipStore {
        async fn issue_record(repo: &RepoName, marker: &str) -> Result<Option<IssueRecord>, StoreError>;
        async fn labels(repo: &RepoName) -> Result<BTreeSet<String>, StoreError>;
        async fn repo_freeze(repo: &RepoName) -> Result<Option<Freeze>, StoreError>;
        async fn story(repo: &RepoName, story: &StoryId) -> Result<Option<StoryPlan>, StoreError>;
        async fn story_by_issue(repo: &RepoName, number: IssueNumber) -> Result<Option<StoryId>, StoreError>;
        async fn story_record(repo: &RepoName, story: &StoryId) -> Result<Option<StoryRecord>, StoreError>;
        async fn story_records(repo: &RepoName) -> Result<Vec<(StoryId, StoryRecord)>, StoreError>;
        async fn story_run(repo: &RepoName, run_id: u64) -> Result<Option<StoryRunRef>, StoreError>;
        async fn task_record(repo: &RepoName, story: &StoryId, task: &RunSubject) -> Result<Option<TaskRecord>, StoreError>;
        async fn ship_train(repo: &RepoName) -> Result<Train, StoreError>;
        async fn task_records(repo: &RepoName, story: &StoryId) -> Result<BTreeMap<String, TaskRecord>, StoreError>;
    }
    /// What the flaky-test tracking reads: the train's flaky events
    /// quarantine as a task's do (`train/flaky.rs`).
    hands flaky: FlakyStore;
}
