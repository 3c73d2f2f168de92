//! GitHub's own reviews as review commands (issue 45): "Approve" is
//! `/approve` of the commit the reviewer saw, "Request changes" is
//! `/revise` with the review's text, a dismissal takes its approval back.
//!
//! Owns: [`on_github_review`] and the texts a review's refusal is answered
//! with. Must not: check permission (the shell does, as for a comment
//! command) or read GitHub.
//!
//! The one idea a reader needs: **a review approves its `commit_id`.** A
//! head pushed after it is not what the reviewer saw: the review approves
//! nothing and says so, and the next approval must be of the new head.

use super::{
    on_review_command, AnotherHead, Approval, ReviewCommand, ReviewInputs, ReviewRefusal, Reviewer,
};
use crate::effect::Effect;
use crate::ids::{CommitSha, IssueNumber, RepoName};
use crate::plan::TaskState;
use crate::task::{TaskContext, TaskDecision, TaskRecord};

/// The most of a review's text taken as `/revise` feedback (GitHub allows
/// 65,536 characters; an agent's workflow input is smaller).
pub const MAX_FEEDBACK: usize = 8_000;

/// A review of a task's pull request, as it acts on the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitHubReview<'a> {
    /// "Approve" of `commit`, by review `review`.
    Approved { commit: &'a CommitSha, review: u64 },
    /// "Request changes" with the review's text.
    ChangesRequested { body: &'a str },
    /// Review `review` was dismissed on GitHub.
    Dismissed { review: u64 },
}

/// What `review` by `by` does to the task: an approval, a revision, an
/// approval taken back; or why it did nothing.
pub fn on_github_review(
    record: &TaskRecord,
    review: GitHubReview,
    by: Reviewer,
    ctx: &TaskContext,
    inputs: &ReviewInputs,
) -> Result<TaskDecision, ReviewRefusal> {
    match review {
        GitHubReview::Approved { commit, review } => {
            approve_at(record, commit, review, by, ctx, inputs)
        }
        GitHubReview::ChangesRequested { body } => {
            let feedback = feedback_of(body);
            on_review_command(record, &ReviewCommand::Revise { feedback }, by, ctx, inputs)
        }
        GitHubReview::Dismissed { review } => take_back(record, review),
    }
}

fn approve_at(
    record: &TaskRecord,
    commit: &CommitSha,
    review: u64,
    by: Reviewer,
    ctx: &TaskContext,
    inputs: &ReviewInputs,
) -> Result<TaskDecision, ReviewRefusal> {
    let approvable = match &record.merged_unreviewed {
        Some(merged) => merged == commit,
        None => record.head.as_ref() == Some(commit),
    };
    if !approvable {
        return Err(ReviewRefusal::ReviewOfAnotherHead(Box::new(AnotherHead {
            reviewed: commit.short().to_owned(),
            head: record
                .merged_unreviewed
                .as_ref()
                .or(record.head.as_ref())
                .map(|h| h.short().to_owned())
                .unwrap_or_else(|| "none".into()),
        })));
    }
    // The review names its commit: when it was written does not matter.
    let by = Reviewer {
        written_at: None,
        ..by
    };
    let command = ReviewCommand::Approve {
        override_reason: None,
    };
    let mut d = on_review_command(record, &command, by, ctx, inputs)?;
    if let Some(approval) = d.record.approval.as_mut() {
        approval.review = Some(review);
    }
    Ok(d)
}

/// A dismissal on GitHub takes back the approval that review gave, while
/// the task has not completed.
fn take_back(record: &TaskRecord, review: u64) -> Result<TaskDecision, ReviewRefusal> {
    if record.state == Some(TaskState::Completed) {
        return Err(ReviewRefusal::Completed);
    }
    let Some(Approval { sha, login, .. }) = record
        .approval
        .as_ref()
        .filter(|a| a.review == Some(review))
    else {
        return Err(ReviewRefusal::DismissedNotCounted);
    };
    let mut next = record.clone();
    next.approval = None;
    Ok(TaskDecision::unchanged(
        &next,
        format!(
            "the approval of {} by {login} was dismissed on GitHub: taken back",
            sha.short()
        ),
    ))
}

/// A review's text as `/revise` feedback: what the reviewer wrote, capped.
fn feedback_of(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return "(the review asks for changes without saying which; see its comments on the pull request)".into();
    }
    if body.chars().count() <= MAX_FEEDBACK {
        return body.to_owned();
    }
    let mut cut: String = body.chars().take(MAX_FEEDBACK).collect();
    cut.push_str("\n\n… (cut here: the whole review is on the pull request)");
    cut
}

/// The one answer on pull request `pr` to review `review`: a redelivered
/// review is not answered twice (the marker).
pub fn answer_review(repo: &RepoName, pr: IssueNumber, review: u64, body: String) -> Effect {
    Effect::PostComment {
        repo: repo.clone(),
        issue: pr,
        body,
        marker: format!("review-answered review={review}"),
    }
}

/// The answer on the pull request to a review that changed nothing.
pub fn render_review_refused(login: &str, verdict: &str, why: &ReviewRefusal) -> String {
    format!(
        "@{} your review ({verdict}) changed nothing on this task: {why}.",
        crate::render::sanitize(login)
    )
}

/// The answer to a review by someone who may not approve (or revise) a
/// task here.
pub fn render_review_not_permitted(
    login: &str,
    verdict: &str,
    needs: crate::config::Permission,
    has: Option<crate::config::Permission>,
) -> String {
    format!(
        "@{login} your review ({verdict}) changed nothing on this task: a review counts as `approve` or `revise` only from someone with {} permission on the repository; @{login} has {}.",
        needs.name(),
        has.map(|p| p.name()).unwrap_or("none"),
        login = crate::render::sanitize(login),
    )
}

#[cfg(test)]
mod tests;
