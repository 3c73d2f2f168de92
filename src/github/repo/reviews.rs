//! What taskgate reads when GitHub refused a story PR's merge for its
//! reviews (issue 45 item 4): the pull request's reviews
//! (`GET /pulls/{n}/reviews`), the default branch's `CODEOWNERS` (the
//! first of `.github/`, the root, `docs/`, as GitHub reads it) and the
//! paths the story changes (`GET /compare`); and, for a team `CODEOWNERS`
//! names (`@org/team`), whether each approver is an active member of it
//! (`GET /orgs/{org}/teams/{team_slug}/memberships/{username}`), which
//! GitHub counts as the team's approval.
//!
//! Owns: those reads and their shapes, summed up as
//! `core::ship::ApprovalFacts`. Must not: count what is missing
//! (`core::ship::approvals`), or submit a review: taskgate never approves
//! its own pull request.

use serde::Deserialize;

use super::RepoClient;
use crate::github::client::GitHubError;
use taskgate_core::ids::IssueNumber;
use taskgate_core::ship::{
    team_questions, ApprovalFacts, ReviewFact, TeamMember, TeamQuestion, CODEOWNERS_PATHS,
};

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

/// GitHub's answer to a team membership: `active`, or `pending` until
/// the invitation is accepted.
#[derive(Deserialize)]
struct Membership {
    state: String,
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
        let mut facts = ApprovalFacts {
            reviews,
            codeowners,
            paths,
            team_members: vec![],
        };
        for q in team_questions(&facts) {
            if self.active_team_member(&q).await? {
                facts.team_members.push(TeamMember {
                    team: format!("{}/{}", q.org, q.team_slug),
                    login: q.login,
                });
            }
        }
        Ok(facts)
    }

    /// Whether GitHub says `q.login` is an active member of the team. Not
    /// a member (404) or not visible to the App (403: it lacks the
    /// organisation's `members` permission) is no.
    async fn active_team_member(&self, q: &TeamQuestion) -> Result<bool, GitHubError> {
        let path = format!(
            "/orgs/{}/teams/{}/memberships/{}",
            q.org, q.team_slug, q.login
        );
        let call = "GET /orgs/{org}/teams/{team_slug}/memberships/{username}";
        match self.get(&path).await {
            Ok(answer) => Ok(answer.answer::<Membership>(call)?.state == "active"),
            Err(GitHubError::Http { status: 404, .. }) => Ok(false),
            Err(GitHubError::Http { status: 403, .. }) => {
                tracing::warn!(team = %format!("{}/{}", q.org, q.team_slug),
                    "the App may not read team memberships (organisation permission `members: read`): a team's approval is not counted");
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}
