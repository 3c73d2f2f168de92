//! The files a push to the default branch changed, as plan sync needs
//! them: each path's last word in the push (there at `after`, or removed).
//!
//! Owns: where that is read from. The payload's commits, unless GitHub may
//! have capped them: a push webhook lists at most 2048 commits and says
//! nothing else when it did (no `size`, unlike the Events API), so a push
//! that lists exactly that many asks GitHub's compare (`before...after`).
//! When the comparison is capped too (300 files), or there is no `before`
//! to compare with (the branch was created), the config and every plan
//! file at `after` are read again, and a story planned from a file no
//! longer there is retired. Must not: decide (`core::sync`,
//! `core::config::push`).

use std::collections::BTreeMap;

use super::{is_plan_file, SyncError, Syncer, STORIES_DIR};
use crate::github::RepoClient;
use taskgate_core::config::CONFIG_PATH;
use taskgate_core::ids::{InstallationId, RepoName};
use taskgate_core::webhook::PushEvent;

/// The commits a push webhook lists at most: "The array includes a maximum
/// of 2048 commits" (GitHub's description of the push event's `commits`,
/// `fixtures/openapi/webhooks-subset.json`).
pub const PUSH_COMMITS_MAX: usize = 2048;

/// Each changed path: `true` when it is there at the push's head.
pub(super) type Pushed = BTreeMap<String, bool>;

/// The paths the push's commits name, each with its last word.
fn from_payload(push: &PushEvent) -> Pushed {
    let mut present = Pushed::new();
    for c in &push.commits {
        for path in c.added.iter().chain(&c.modified) {
            present.insert(path.clone(), true);
        }
        for path in &c.removed {
            present.insert(path.clone(), false);
        }
    }
    present
}

impl Syncer {
    /// What `push` changed on `repo`'s default branch (see the module's
    /// header for where it comes from).
    pub(super) async fn pushed(
        &self,
        installation: InstallationId,
        repo: &RepoName,
        push: &PushEvent,
    ) -> Result<Pushed, SyncError> {
        if push.commits.len() < PUSH_COMMITS_MAX {
            return Ok(from_payload(push));
        }
        let client = self.github.installation_client(installation).await?;
        let github = RepoClient::new(&client, repo);
        let (before, after) = (push.before.as_str(), push.after.as_str());
        if !push.created && before.bytes().any(|b| b != b'0') {
            if let Some(paths) = github.changed_paths(before, after).await? {
                return Ok(paths.into_iter().collect());
            }
        }
        // Everything again: the config, every plan file there, and the
        // files stories were planned from, gone if no longer there.
        let mut present = Pushed::new();
        present.insert(CONFIG_PATH.to_owned(), true);
        let dir = STORIES_DIR.trim_end_matches('/');
        for path in github.dir_files(dir, after).await? {
            present.insert(path, true);
        }
        for source in self.store.story_sources(repo).await? {
            if is_plan_file(&source) {
                present.entry(source).or_insert(false);
            }
        }
        Ok(present)
    }
}
