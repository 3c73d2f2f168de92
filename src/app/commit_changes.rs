//! What a tested commit changed since the commit its task tested before
//! (flaky tests of kind b), and since its last green one (a branch todo's
//! evidence: `core::failure::evidence`), recorded once a run is over and
//! before its report is, since the decision on the report reads it
//! (`app::flaky`). From the run's git mirror for the `local` runner;
//! from GitHub's compare API for the `actions` runner, which leaves
//! taskgate no checkout.
//!
//! Owns: finding the task's previously tested and last green commits and
//! recording the files changed since each (`store::commit_changes`). Must not: judge tests
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
        async fn last_green_commit(repo: &RepoName, story: &StoryId, task: &RunSubject, attempt: u32, sha: &str) -> Result<Option<String>, StoreError>;
        async fn record_commit_changes(repo: &RepoName, pair: &CommitPair, files: Option<Vec<String>>) -> Result<(), StoreError>;
    }
}

/// The pairs of commits whose changes `row`'s decision may need, not
/// recorded yet: from the task's previously tested commit (flaky tests of
/// kind b) and from its last green one (the branch todo's evidence).
async fn pairs_to_list(store: &ChangesStore, row: &AttemptRow) -> Vec<CommitPair> {
    let head = row.sha.as_str().to_owned();
    let (r, story, task, n) = (&row.repo, &row.story, &row.task, row.attempt);
    let bases = [
        store
            .previously_tested_commit(r, story, task, n, &head)
            .await,
        store.last_green_commit(r, story, task, n, &head).await,
    ];
    let mut pairs: Vec<CommitPair> = Vec::new();
    for base in bases {
        match base {
            Ok(Some(base)) => {
                let pair = CommitPair {
                    base,
                    head: head.clone(),
                };
                if !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
            Ok(None) => {}
            Err(e) => warn!(error = %e, "no earlier commit to compare with"),
        }
    }
    let known = match store.commit_changes(&row.repo, pairs.clone()).await {
        Ok(known) => known,
        Err(e) => {
            warn!(error = %e, "reading recorded changes failed");
            return Vec::new();
        }
    };
    pairs.retain(|p| !known.contains_key(p));
    pairs
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
    for pair in pairs_to_list(store, row).await {
        let (m, p) = (mirror.clone(), pair.clone());
        let (url, token) = (url.clone(), token.clone());
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
}

/// GitHub's comparison of the two commits.
pub(super) async fn record_from_github(store: &ChangesStore, client: &Octocrab, row: &AttemptRow) {
    let repo = RepoClient::new(client, &row.repo);
    for pair in pairs_to_list(store, row).await {
        match repo.changed_files(&pair.base, &pair.head).await {
            Ok(files) => record(store, row, &pair, files).await,
            Err(e) => warn!(error = %e, base = %pair.base, "no changed files from GitHub"),
        }
    }
}
