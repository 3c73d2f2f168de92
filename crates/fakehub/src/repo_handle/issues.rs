//! `RepoHandle`'s sub-issue links: a person arranges issues into a
//! hierarchy, as in GitHub's issue sidebar. Seeding: no webhook (this App
//! is not subscribed to `sub_issues`), and no limit is checked: a test
//! builds the hierarchy it needs, GitHub's limits then hold for the API.

use crate::RepoHandle;

impl RepoHandle {
    /// Makes issue `child` a sub-issue of issue `parent` (by number).
    pub fn link_sub_issue(&self, parent: u64, child: u64) {
        let mut st = self.shared().lock();
        let repo = st.repos.get_mut(self.key()).expect("repository exists");
        let parent_id = repo.issues[&parent].id;
        let child_id = repo.issues[&child].id;
        repo.issues
            .get_mut(&parent)
            .expect("parent exists")
            .sub_issues
            .push(child_id);
        repo.issues.get_mut(&child).expect("child exists").parent = Some(parent_id);
    }
}
