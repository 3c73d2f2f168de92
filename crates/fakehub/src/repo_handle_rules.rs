//! `RepoHandle`'s branch rules: a test puts a ruleset or classic branch
//! protection on the repository, as its administrator would in GitHub's
//! settings. Seeding: no webhook. The rules then hold for every API
//! call that moves a branch (`state::rules`); a person's push through
//! the handle is an administrator's and is not checked.

use crate::state::Ruleset;
use crate::RepoHandle;

impl RepoHandle {
    /// Adds `ruleset` (a repository ruleset, or classic protection made
    /// with [`Ruleset::classic`]); returns its id.
    pub fn with_ruleset(&self, mut ruleset: Ruleset) -> u64 {
        let mut st = self.shared().lock();
        ruleset.id = st.next_id();
        let id = ruleset.id;
        st.repos
            .get_mut(self.key())
            .expect("repository exists")
            .rulesets
            .push(ruleset);
        id
    }

    /// Removes ruleset `id`, as an administrator deleting it.
    pub fn without_ruleset(&self, id: u64) {
        let mut st = self.shared().lock();
        let repo = st.repos.get_mut(self.key()).expect("repository exists");
        repo.rulesets.retain(|r| r.id != id);
    }
}

impl RepoHandle {
    /// The merge queue's entries, in order (`merge_queue`).
    pub fn merge_queue(&self) -> Vec<crate::QueueEntry> {
        let st = self.shared().lock();
        st.repos[self.key()].merge_queue.clone()
    }
}
