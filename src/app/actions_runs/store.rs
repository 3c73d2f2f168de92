//! What the Actions runner's half may read and write in the store: the
//! narrow interface of `app::actions_runs` (`store::store_view!`).

use crate::app::commit_changes::ChangesStore;
use crate::store::{store_view, AttemptRow, StoreError};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::results::TestId;
use taskgate_core::sync::{IssueRecord, StoryPlan};
use taskgate_core::task::RunSubject;
use taskgate_core::AttemptRef;

store_view! {
    /// The store as `app::actions_runs` sees it.
    pub(crate) struct ActionsStore {
        async fn attempt(repo: &RepoName, story: &StoryId, task: &RunSubject, attempt: u32) -> Result<Option<AttemptRow>, StoreError>;
        async fn issue_record(repo: &RepoName, marker: &str) -> Result<Option<IssueRecord>, StoreError>;
        async fn put_workflow_run(repo: &RepoName, run_id: u64, attempt: &AttemptRef) -> Result<(), StoreError>;
        async fn quarantined_tests(repo: &RepoName, now_s: i64) -> Result<Vec<TestId>, StoreError>;
        async fn story(repo: &RepoName, story: &StoryId) -> Result<Option<StoryPlan>, StoreError>;
        async fn workflow_run_attempt(repo: &RepoName, run_id: u64) -> Result<Option<AttemptRow>, StoreError>;
        async fn workflow_runs_of_attempt(repo: &RepoName, attempt: &AttemptRef) -> Result<Vec<u64>, StoreError>;
    }
    /// What a run's commit changed, recorded for the flaky-test rules.
    hands changes: ChangesStore;
}
