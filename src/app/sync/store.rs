//! What plan sync may read from the store: the narrow interface of
//! `app::sync` (`store::store_view!`). Its writes are its decisions'
//! changes, which the processor stores.

use std::collections::{BTreeMap, BTreeSet};

use crate::app::resync::ResyncStore;
use crate::store::{store_view, RepoConfigRecord, StoreError};
use taskgate_core::ids::{InstallationId, RepoName, StoryId};
use taskgate_core::sync::{IssueRecord, StoryPlan};
use taskgate_core::task::{RunSubject, TaskRecord};
use taskgate_core::Effect;

store_view! {
    /// The store as `app::sync` sees it.
    pub(crate) struct SyncStore {
        async fn branches(repo: &RepoName) -> Result<BTreeSet<String>, StoreError>;
        async fn issue_records(repo: &RepoName, prefix: &str) -> Result<BTreeMap<String, IssueRecord>, StoreError>;
        async fn labels(repo: &RepoName) -> Result<BTreeSet<String>, StoreError>;
        async fn latest_story_config(repo: &RepoName) -> Result<Option<Option<String>>, StoreError>;
        async fn repo_config(repo: &RepoName) -> Result<Option<RepoConfigRecord>, StoreError>;
        async fn story(repo: &RepoName, story: &StoryId) -> Result<Option<StoryPlan>, StoreError>;
        async fn story_issues(repo: &RepoName, story: &StoryId) -> Result<BTreeMap<String, IssueRecord>, StoreError>;
        async fn story_sources(repo: &RepoName) -> Result<Vec<String>, StoreError>;
        async fn task_record(repo: &RepoName, story: &StoryId, task: &RunSubject) -> Result<Option<TaskRecord>, StoreError>;
        async fn task_records(repo: &RepoName, story: &StoryId) -> Result<BTreeMap<String, TaskRecord>, StoreError>;
        async fn record_first_config(installation: InstallationId, repo: &RepoName, record: RepoConfigRecord, effects: Vec<Effect>) -> Result<bool, StoreError>;
    }
    /// A repository with no record has it rebuilt from GitHub first.
    hands resync: ResyncStore;
}
