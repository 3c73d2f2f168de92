//! What a task's runs may read from the store: the narrow interface of
//! `app::task` (`store::store_view!`). Its writes are its decisions'
//! changes, which the processor stores.

use std::collections::BTreeMap;

use crate::app::flaky::FlakyStore;
use crate::store::{store_view, AttemptSummary, StoreError, TaskLocation};
use taskgate_core::flaky::CommitPair;
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::sync::{IssueRecord, StoryPlan};
use taskgate_core::task::{RunSubject, TaskRecord};

store_view! {
    /// The store as `app::task` sees it.
    pub(crate) struct TaskStore {
        async fn issue_record(repo: &RepoName, marker: &str) -> Result<Option<IssueRecord>, StoreError>;
        async fn issue_records(repo: &RepoName, prefix: &str) -> Result<BTreeMap<String, IssueRecord>, StoreError>;
        async fn story(repo: &RepoName, story: &StoryId) -> Result<Option<StoryPlan>, StoreError>;
        async fn story_by_issue(repo: &RepoName, number: IssueNumber) -> Result<Option<StoryId>, StoreError>;
        async fn task_by_issue(repo: &RepoName, number: IssueNumber) -> Result<Option<TaskLocation>, StoreError>;
        async fn task_by_pull(repo: &RepoName, number: IssueNumber) -> Result<Option<TaskLocation>, StoreError>;
        async fn task_record(repo: &RepoName, story: &StoryId, task: &RunSubject) -> Result<Option<TaskRecord>, StoreError>;
        async fn task_records(repo: &RepoName, story: &StoryId) -> Result<BTreeMap<String, TaskRecord>, StoreError>;
        async fn recent_attempts(repo: &RepoName, story: &StoryId, per_task: u32) -> Result<Vec<AttemptSummary>, StoreError>;
        async fn ship_train(repo: &RepoName) -> Result<taskgate_core::ship::Train, StoreError>;
        async fn commit_changes(repo: &RepoName, pairs: Vec<CommitPair>) -> Result<BTreeMap<CommitPair, Option<Vec<String>>>, StoreError>;
    }
    /// What the flaky-test tracking reads, handed to it with each report.
    hands flaky: FlakyStore;
}
