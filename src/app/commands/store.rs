//! What the comment commands read from the store themselves: the narrow
//! interface of `app::commands` (`store::store_view!`).
//!
//! Owns: [`CommandsStore`], the list. Must not: add behaviour. A command
//! that changes a task or story goes through its family's handler (the
//! task runs', the ship's), which holds its own view; these are the reads
//! of the commands answered here (`freeze`, `unfreeze`, `unquarantine`).

use crate::store::{store_view, StoreError};
use taskgate_core::flaky::Quarantine;
use taskgate_core::freeze::Freeze;
use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::ship::StoryRecord;

store_view! {
    /// The store as the comment commands see it.
    pub(crate) struct CommandsStore {
        async fn quarantines(repo: &RepoName) -> Result<Vec<Quarantine>, StoreError>;
        async fn repo_freeze(repo: &RepoName) -> Result<Option<Freeze>, StoreError>;
        async fn story_records(repo: &RepoName) -> Result<Vec<(StoryId, StoryRecord)>, StoreError>;
    }
}
