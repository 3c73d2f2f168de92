//! The builder's settings for GitHub's limits on one repository (issue
//! 33): what the owner's plan allows.

use super::RepoHandle;
use crate::state::CheckRun;

impl RepoHandle {
    /// The repository has no draft pull requests, as a private repository
    /// on GitHub Free: `POST /pulls` with `draft: true` answers 422 "Draft
    /// pull requests are not supported in this repository."
    pub fn without_drafts(&self) -> &Self {
        self.write(|r, _| r.plan.drafts = false);
        self
    }
}

impl RepoHandle {
    /// Another App (`app_id`, `slug`) creates a queued check run `name` on
    /// `head_sha` carrying `external_id`: the App under test sees it in
    /// lists, and GitHub refuses it any change to it. Sends no webhook.
    pub fn add_check_run_of_app(
        &self,
        (app_id, slug): (u64, &str),
        name: &str,
        head_sha: &str,
        external_id: &str,
    ) -> u64 {
        self.write(|r, ids| {
            let id = ids.next();
            r.check_runs.push(CheckRun {
                id,
                name: name.into(),
                head_sha: head_sha.into(),
                status: "queued".into(),
                conclusion: None,
                details_url: None,
                external_id: Some(external_id.into()),
                title: None,
                summary: None,
                text: None,
                annotations: Vec::new(),
                actions: Vec::new(),
                started_at: Some(r.clock.now()),
                completed_at: None,
                other_app: Some((app_id, slug.into())),
            });
            id
        })
    }
}
