//! The builder's settings for GitHub's limits on one repository (issue
//! 33): what the owner's plan allows.

use super::RepoHandle;

impl RepoHandle {
    /// The repository has no draft pull requests, as a private repository
    /// on GitHub Free: `POST /pulls` with `draft: true` answers 422 "Draft
    /// pull requests are not supported in this repository."
    pub fn without_drafts(&self) -> &Self {
        self.write(|r, _| r.plan.drafts = false);
        self
    }
}
