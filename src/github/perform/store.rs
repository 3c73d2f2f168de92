//! What performing an effect may read and write in the store: the narrow
//! interface of `github::perform` (`store::store_view!`).
//!
//! Owns: [`PerformStore`], the list. Must not: add behaviour (each method
//! is the store's own). Its writes are what GitHub answered that later
//! effects and decisions need (an issue's number, a check run's or a
//! workflow run's id, a branch or label made, no drafts here) and the
//! internal deliveries that report an effect's result to the processor.

use std::collections::BTreeSet;

use crate::store::{store_view, AttemptRow, NewDelivery, Recorded, StoreError};
use taskgate_core::ids::{CommitSha, EffectId, RepoName, StoryId};
use taskgate_core::ship::StoryRunRef;
use taskgate_core::sync::IssueRecord;
use taskgate_core::task::{RunSubject, TaskRecord};
use taskgate_core::AttemptRef;

store_view! {
    /// The store as performing an effect sees it.
    pub struct PerformStore {
        async fn add_branch(repo: &RepoName, name: &str) -> Result<(), StoreError>;
        async fn add_label(repo: &RepoName, name: &str) -> Result<(), StoreError>;
        async fn attempt(repo: &RepoName, story: &StoryId, task: &RunSubject, attempt: u32) -> Result<Option<AttemptRow>, StoreError>;
        async fn check_run_id(repo: &RepoName, key: &str) -> Result<Option<u64>, StoreError>;
        async fn claim_check_run_update(repo: &RepoName, key: &str, effect: EffectId) -> Result<bool, StoreError>;
        async fn drafts_unavailable(repo: &RepoName) -> Result<bool, StoreError>;
        async fn issue_record(repo: &RepoName, marker: &str) -> Result<Option<IssueRecord>, StoreError>;
        async fn labels(repo: &RepoName) -> Result<BTreeSet<String>, StoreError>;
        async fn put_attempt_base(repo: &RepoName, attempt: &AttemptRef, base: &CommitSha) -> Result<(), StoreError>;
        async fn put_check_run(repo: &RepoName, key: &str, id: u64) -> Result<(), StoreError>;
        async fn put_issue_record(repo: &RepoName, marker: &str, record: IssueRecord) -> Result<(), StoreError>;
        async fn put_story_run(repo: &RepoName, run_id: u64, run: &StoryRunRef) -> Result<(), StoreError>;
        async fn put_workflow_run(repo: &RepoName, run_id: u64, attempt: &AttemptRef) -> Result<(), StoreError>;
        async fn record_delivery(d: NewDelivery) -> Result<Recorded, StoreError>;
        async fn remember_no_drafts(repo: &RepoName, now_ms: i64) -> Result<(), StoreError>;
        async fn story_run(repo: &RepoName, run_id: u64) -> Result<Option<StoryRunRef>, StoreError>;
        async fn task_record(repo: &RepoName, story: &StoryId, task: &RunSubject) -> Result<Option<TaskRecord>, StoreError>;
        async fn workflow_run_attempt(repo: &RepoName, run_id: u64) -> Result<Option<AttemptRow>, StoreError>;
        async fn workflow_runs_of_attempt(repo: &RepoName, attempt: &AttemptRef) -> Result<Vec<u64>, StoreError>;
    }
}
