//! `pull_request_review`: a person's review of a pull request on GitHub,
//! as a domain event (issue 45).
//!
//! Owns: [`ReviewEvent`] and what its verdict is ([`ReviewVerdict`]),
//! typed once from GitHub's `state` spelling. Must not: decide what a
//! review does to a task (`core::task::review::github`).

use crate::ids::{CommitSha, IssueNumber, RepoName};
use crate::Actor;

use super::action::PullRequestReviewAction;

/// What a submitted review says, from its `state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewVerdict {
    /// "Approve".
    Approved,
    /// "Request changes".
    ChangesRequested,
    /// "Comment" (or any state GitHub adds later): changes nothing.
    Commented,
    /// Dismissed on GitHub (the state of a `dismissed` delivery's review).
    Dismissed,
}

impl ReviewVerdict {
    /// GitHub's `state`, in either case (webhooks write `approved`, the
    /// REST API `APPROVED`).
    pub fn parse(state: &str) -> ReviewVerdict {
        match state.to_ascii_lowercase().as_str() {
            "approved" => ReviewVerdict::Approved,
            "changes_requested" => ReviewVerdict::ChangesRequested,
            "dismissed" => ReviewVerdict::Dismissed,
            _ => ReviewVerdict::Commented,
        }
    }
}

/// A review of pull request `pr`, at the commit its reviewer saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewEvent {
    pub repo: RepoName,
    pub action: PullRequestReviewAction,
    pub pr: IssueNumber,
    /// The pull request is open (a review of a closed one acts on nothing).
    pub pr_open: bool,
    /// The review's database id: a dismissal names it.
    pub review: u64,
    pub verdict: ReviewVerdict,
    /// The commit reviewed (`commit_id`).
    pub commit: CommitSha,
    pub body: String,
    /// The reviewer.
    pub author: Actor,
    /// Who acted: the reviewer for `submitted`, who dismissed for
    /// `dismissed`.
    pub sender: Option<Actor>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reviews_state_is_read_in_either_case() {
        assert_eq!(ReviewVerdict::parse("approved"), ReviewVerdict::Approved);
        assert_eq!(ReviewVerdict::parse("APPROVED"), ReviewVerdict::Approved);
        assert_eq!(
            ReviewVerdict::parse("changes_requested"),
            ReviewVerdict::ChangesRequested
        );
        assert_eq!(ReviewVerdict::parse("DISMISSED"), ReviewVerdict::Dismissed);
        assert_eq!(ReviewVerdict::parse("commented"), ReviewVerdict::Commented);
        assert_eq!(ReviewVerdict::parse("pending"), ReviewVerdict::Commented);
    }
}
