//! What a tested commit changed since the commit its task tested before
//! (flaky tests of kind b), recorded once a run is over and
//! before its report is, since the decision on the report reads it
//! (`app::flaky`). From the run's git mirror for the `local` runner;
//! from GitHub's compare API for the `actions` runner, which leaves
//! taskgate no checkout.
//!
//! Owns: finding the task's previously tested commit and recording the
//! files changed since it (`store::commit_changes`). Must not: judge tests
//! (`core::flaky` does) or fail a run: best effort, since without the
//! list that pair of commits decides nothing, which the log says.

use octocrab::Octocrab;
use tracing::warn;

use crate::github::RepoClient;
use crate::runner::Mirror;
use std::collections::BTreeMap;

use crate::store::{store_view, AttemptRow, StoreError, MAX_CHANGED_FILES};
use taskgate_core::flaky::CommitPair;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::task::RunSubject;

store_view! {
    /// The store as `app::commit_changes` sees it.
    pub(crate) struct ChangesStore {
        async fn commit_changes(repo: &RepoName, pairs: Vec<CommitPair>) -> Result<BTreeMap<CommitPair, Option<Vec<String>>>, StoreError>;
        async fn previously_tested_commit(repo: &RepoName, story: &StoryId, task: &RunSubject, attempt: u32, sha: &str) -> Result<Option<String>, StoreError>;
        async fn record_commit_changes(repo: &RepoName, pair: &CommitPair, files: Option<Vec<String>>) -> Result<(), StoreError>;
    }
}

/// The commits whose changes `row`'s decision may need: the task's
/// previously tested commit and `row`'s, unless none was tested before or
/// the pair is recorded already.
async fn pair_to_list(store: &ChangesStore, row: &AttemptRow) -> Option<CommitPair> {
    let head = row.sha.0.clone();
    let base = store
        .previously_tested_commit(&row.repo, &row.story, &row.task, row.attempt, &head)
        .await;
    let base = match base {
        Ok(base) => base?,
        Err(e) => {
            warn!(error = %e, "no previously tested commit");
            return None;
        }
    };
    let pair = CommitPair { base, head };
    let known = store.commit_changes(&row.repo, vec![pair.clone()]).await;
    known.is_ok_and(|k| k.is_empty()).then_some(pair)
}

async fn record(
    store: &ChangesStore,
    row: &AttemptRow,
    pair: &CommitPair,
    files: Option<Vec<String>>,
) {
    if let Err(e) = store.record_commit_changes(&row.repo, pair, files).await {
        warn!(error = %e, "recording changed files failed");
    }
}

/// The diff of the two trees in the run's mirror (the earlier commit
/// fetched if the mirror lacks it).
pub(super) async fn record_from_mirror(
    store: &ChangesStore,
    row: &AttemptRow,
    mirror: &Mirror,
    url: String,
    token: Option<String>,
) {
    let Some(pair) = pair_to_list(store, row).await else {
        return;
    };
    let (m, p) = (mirror.clone(), pair.clone());
    let files = tokio::task::spawn_blocking(move || {
        m.fetch_commit(&url, token.as_deref(), &p.base)?;
        m.changed_files(&p.base, &p.head, MAX_CHANGED_FILES)
    })
    .await;
    match files {
        Ok(Ok(files)) => record(store, row, &pair, files).await,
        Ok(Err(e)) => warn!(error = %e, base = %pair.base, "no changed files from git"),
        Err(e) => warn!(error = %e, "listing changed files panicked"),
    }
}

/// GitHub's comparison of the two commits.
pub(super) async fn record_from_github(store: &ChangesStore, client: &Octocrab, row: &AttemptRow) {
    let Some(pair) = pair_to_list(store, row).await else {
        return;
    };
    let repo = RepoClient::new(client, &row.repo);
    match repo.changed_files(&pair.base, &pair.head).await {
        Ok(files) => record(store, row, &pair, files).await,
        Err(e) => warn!(error = %e, base = %pair.base, "no changed files from GitHub"),
    }
}
