//! The ship trains a read-only page shows its stories with: each
//! repository's read once per answer, however many of its stories the
//! page lists (a story proving in a batch is shown `proving`,
//! `core::ship::shown_record`).
//!
//! Owns: [`TrainsRead`]. Must not: write, or keep a train past the answer
//! (what a person sees is what is stored now).

use std::collections::BTreeMap;

use crate::store::{Store, StoreError};
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::ship::{shown_record, StoryRecord, Train};

/// The trains read so far for one answer.
#[derive(Default)]
pub struct TrainsRead(BTreeMap<RepoName, Train>);

impl TrainsRead {
    /// `record` as the pages show it: `proving` while the story's batch
    /// proves (stored, it stays queued).
    pub async fn shown(
        &mut self,
        store: &Store,
        (repo, story): (&RepoName, &StoryId),
        record: &StoryRecord,
    ) -> Result<StoryRecord, StoreError> {
        if !self.0.contains_key(repo) {
            let train = store.ship_train(repo).await?;
            self.0.insert(repo.clone(), train);
        }
        Ok(shown_record(&self.0[repo], story, record))
    }

    /// Every train read for this answer, by repository.
    pub fn read(&self) -> impl Iterator<Item = (&RepoName, &Train)> {
        self.0.iter()
    }
}
