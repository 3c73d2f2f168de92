//! What taskgate reads when GitHub refused a story PR's merge for its
//! reviews (issue 45 item 4): the pull request's reviews
//! (`GET /pulls/{n}/reviews`), the default branch's `CODEOWNERS` (the
//! first of `.github/`, the root, `docs/`, as GitHub reads it) and the
//! paths the story changes (`GET /compare`).
//!
//! Owns: those reads and their shapes, summed up as
//! `core::ship::ApprovalFacts`. Must not: count what is missing
//! (`core::ship::approvals`), or submit a review: taskgate never approves
//! its own pull request.

use serde::Deserialize;

use super::RepoClient;
use crate::github::client::GitHubError;
use taskgate_core::ids::IssueNumber;
use taskgate_core::ship::{ApprovalFacts, ReviewFact, CODEOWNERS_PATHS};

/// Pages of reviews read at most (100 a page).
const MAX_PAGES: usize = 10;

#[derive(Deserialize)]
struct ListedReview {
    user: Option<ListedUser>,
    state: String,
}

#[derive(Deserialize)]
struct ListedUser {
    login: String,
}

impl RepoClient<'_> {
    /// Pull request `number`'s reviews, oldest first (a deleted user's
    /// review, with no `user`, is left out).
    pub async fn pull_reviews(&self, number: IssueNumber) -> Result<Vec<ReviewFact>, GitHubError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = self.path(&format!("pulls/{number}/reviews?per_page=100&page={page}"));
            let items: Vec<ListedReview> = self
                .get(&path)
                .await?
                .answer(&format!("GET /pulls/{number}/reviews"))?;
            let last = items.len() < 100;
            out.extend(items.into_iter().filter_map(|r| {
                Some(ReviewFact {
                    login: r.user?.login,
                    state: r.state,
                })
            }));
            if last {
                break;
            }
        }
        Ok(out)
    }

    /// The facts a review refusal of pull request `number` (from `head`
    /// into `branch`) is explained with.
    pub async fn approval_facts(
        &self,
        number: IssueNumber,
        branch: &str,
        head: &str,
    ) -> Result<ApprovalFacts, GitHubError> {
        let reviews = self.pull_reviews(number).await?;
        let mut codeowners = None;
        for path in CODEOWNERS_PATHS {
            if let Some(text) = self.file(path, branch).await? {
                codeowners = Some(text);
                break;
            }
        }
        let paths = match &codeowners {
            Some(_) => self.changed_files(branch, head).await?.unwrap_or_default(),
            None => vec![],
        };
        Ok(ApprovalFacts {
            reviews,
            codeowners,
            paths,
        })
    }
}
