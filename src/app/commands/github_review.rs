//! GitHub's reviews of a task pull request (`pull_request_review`), as
//! review commands (issue 45): "Approve" is `approve` of the commit the
//! reviewer saw, "Request changes" is `revise`, a dismissal takes the
//! approval back. An approval of a story PR whose ship waits for one
//! ships it again (`app::ship`, issue 45 item 4).
//!
//! Owns: the reviewer's permission (the same as the command's, and
//! `allow_self_approval` in the core) and where a review is answered: once,
//! on its pull request, when it changed nothing; a review that could not
//! matter (a comment, a closed or unknown pull request, a dismissed review
//! that never approved) is only logged. Must not: decide (`core::task`).

use crate::app::processor::{DecideError, Processor};
use crate::intake::payload::{PullRequestReviewAction, PullRequestReviewPayload};
use crate::intake::translate;
use taskgate_core::ids::InstallationId;
use taskgate_core::refusal::Refusal;
use taskgate_core::task::{self, GitHubReview, ReviewRefusal, Reviewer};
use taskgate_core::webhook::{ReviewEvent, ReviewVerdict};
use taskgate_core::Decision;

use crate::app::Handled;

impl Processor {
    /// A review submitted or dismissed on a pull request.
    pub(in crate::app) async fn on_review(
        &self,
        installation: InstallationId,
        p: &PullRequestReviewPayload,
    ) -> Result<Decision, DecideError> {
        let e = translate::review(p)?;
        let Some(review) = acted_on(&e) else {
            return Ok(Decision::nothing(format!(
                "pull_request_review.{} ({:?}): changes nothing",
                e.action, e.verdict
            )));
        };
        if taskgate_core::is_own(&e.author, "", &self.context) {
            return Ok(Decision::nothing("taskgate's own review"));
        }
        if !e.pr_open {
            return Ok(Decision::nothing(
                "review of a closed pull request: ignored",
            ));
        }
        if let GitHubReview::Approved { .. } = review {
            // A story PR's approval: a ship that waited for it goes on.
            let approved = (self.ship)
                .on_story_approved(&e.repo, e.pr, &e.author.login)
                .await?;
            if let Some(d) = approved.taken() {
                return Ok(d);
            }
        }
        if !self.task_commands.is_task_pull(&e.repo, e.pr).await? {
            return Ok(Decision::nothing(
                "review of a pull request that is not a task's: ignored",
            ));
        }
        let verdict = verdict_name(&review);
        if let Some(refused) = self.review_not_permitted(installation, &e, &review).await? {
            let answer = task::answer_review(&e.repo, e.pr, e.review, refused);
            let refused = Decision::nothing(format!("{verdict} review: not permitted"));
            return Ok(answered(refused, answer));
        }
        let by = Reviewer {
            id: e.author.id,
            login: &e.author.login,
            written_at: None,
        };
        let decided = self
            .task_commands
            .github_review(&e.repo, e.pr, review, by)
            .await?;
        Ok(match decided {
            Handled::NotMine => Decision::nothing("review of a task no longer in the plan"),
            Handled::Decided(decision) => decision,
            Handled::Refused(refused) => {
                match refused.refusal {
                    // Nothing the reviewer needs to hear: logged only.
                    Refusal::Review(
                        ReviewRefusal::DismissedNotCounted | ReviewRefusal::Completed,
                    ) if matches!(review, GitHubReview::Dismissed { .. }) => refused.decision,
                    Refusal::Review(why) => {
                        let text = task::render_review_refused(&e.author.login, verdict, &why);
                        let answer = task::answer_review(&e.repo, e.pr, e.review, text);
                        answered(refused.decision, answer)
                    }
                    _ => refused.decision,
                }
            }
        })
    }

    /// The reviewer's answer when they lack the permission the command
    /// the review stands for needs; `None` when they have it (a dismissal
    /// only takes back, and GitHub let its author dismiss).
    async fn review_not_permitted(
        &self,
        installation: InstallationId,
        e: &ReviewEvent,
        review: &GitHubReview<'_>,
    ) -> Result<Option<String>, DecideError> {
        let command = match review {
            GitHubReview::Approved { .. } => "approve",
            GitHubReview::ChangesRequested { .. } => "revise",
            GitHubReview::Dismissed { .. } => return Ok(None),
        };
        let config = self.syncer.repo_config(&e.repo).await?;
        let needs = config.required_permission(command);
        let verdict = verdict_name(review);
        let has = match (self.permissions)
            .level(installation, &e.repo, e.author.id, &e.author.login)
            .await
        {
            Ok(has) => has,
            Err(err) => {
                tracing::warn!(error = %err, user = %e.author.id, "reading a permission failed");
                None
            }
        };
        Ok((has < Some(needs))
            .then(|| task::render_review_not_permitted(&e.author.login, verdict, needs, has)))
    }
}

/// What a review does, when it does anything: a submitted approval or
/// change request, or a dismissal.
fn acted_on(e: &ReviewEvent) -> Option<GitHubReview<'_>> {
    match (&e.action, &e.verdict) {
        (PullRequestReviewAction::Submitted, ReviewVerdict::Approved) => {
            Some(GitHubReview::Approved {
                commit: &e.commit,
                review: e.review,
            })
        }
        (PullRequestReviewAction::Submitted, ReviewVerdict::ChangesRequested) => {
            Some(GitHubReview::ChangesRequested { body: &e.body })
        }
        (PullRequestReviewAction::Dismissed, _) => {
            Some(GitHubReview::Dismissed { review: e.review })
        }
        _ => None,
    }
}

/// The review as GitHub's button names it.
fn verdict_name(review: &GitHubReview) -> &'static str {
    match review {
        GitHubReview::Approved { .. } => "Approve",
        GitHubReview::ChangesRequested { .. } => "Request changes",
        GitHubReview::Dismissed { .. } => "dismissed",
    }
}

/// `decision` with the review's answer posted.
fn answered(mut decision: Decision, answer: taskgate_core::Effect) -> Decision {
    decision.effects.push(answer);
    decision
}
