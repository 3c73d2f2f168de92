//! The task commands: `retry`, `approve-branch`, and the review family
//! (`approve`, `revise`, `reject`, `pause`, `resume`), on a task's issue
//! or pull request.
//!
//! Owns: turning a parsed [`Command`] into the call on `app::task` and its
//! result into the answer. Must not: decide (`core::task` does, and says
//! why it refused as a typed reason).

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use crate::intake::payload::{IssueCommentAction, IssueCommentPayload};
use taskgate_core::audit::AuditActor;
use taskgate_core::commands::Command;
use taskgate_core::render;
use taskgate_core::task::{Doer, ReviewCommand, Reviewer};
use taskgate_core::Decision;

/// The review transition a command asks for; `None` for the others.
fn review_of(command: &Command) -> Option<ReviewCommand> {
    Some(match command {
        Command::Approve { override_reason } => ReviewCommand::Approve {
            override_reason: override_reason.clone(),
        },
        Command::Revise { feedback } => ReviewCommand::Revise {
            feedback: feedback.clone(),
        },
        Command::Reject { reason } => ReviewCommand::Reject {
            reason: reason.clone(),
        },
        Command::Pause => ReviewCommand::Pause,
        Command::Resume => ReviewCommand::Resume,
        _ => return None,
    })
}

/// When the comment's commands were written (unix seconds): its
/// `created_at`, or its `updated_at` for an edit that added them.
fn written_at(payload: &IssueCommentPayload) -> Option<i64> {
    let comment = &payload.comment;
    let at = match payload.action {
        IssueCommentAction::Created => comment.created_at,
        _ => comment.updated_at.or(comment.created_at),
    };
    at.map(|t| t.timestamp())
}

impl Processor {
    pub(super) async fn command_task(
        &self,
        inv: &Invocation<'_>,
        command: &Command,
    ) -> Result<Answer, DecideError> {
        let (repo, issue) = (inv.repo, inv.issue());
        let result = match command {
            Command::Retry { gate } => {
                let by = Doer::of(Some(inv.author), self.context.bot_login.as_deref());
                self.task_commands
                    .retry_command(repo, issue, gate.clone(), by)
                    .await?
            }
            Command::ApproveBranch => {
                let by = AuditActor::from(inv.author);
                self.task_commands
                    .approve_branch_command(repo, issue, by)
                    .await?
            }
            other => {
                let review = review_of(other).expect("the dispatcher sends only task commands");
                let by = Reviewer {
                    id: inv.author.id,
                    login: &inv.author.login,
                    written_at: written_at(inv.payload),
                };
                self.task_commands
                    .review_command(repo, issue, &review, by)
                    .await?
            }
        };
        let name = command.name();
        Ok(Answer::of(name, inv.syntax, result, || {
            Answer::Reply(
                render::not_on_a_task(name, inv.syntax),
                Decision::nothing(format!("{name} outside a task")),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::commands::Syntax;
    use taskgate_core::refusal::{Refusal, Refused};
    use taskgate_core::task::ReviewRefusal;

    #[test]
    fn each_review_command_maps_to_its_transition() {
        assert_eq!(review_of(&Command::Pause), Some(ReviewCommand::Pause));
        assert_eq!(
            review_of(&Command::Reject {
                reason: "no".into()
            }),
            Some(ReviewCommand::Reject {
                reason: "no".into()
            })
        );
        assert_eq!(review_of(&Command::Retry { gate: None }), None);
        assert_eq!(review_of(&Command::ApproveBranch), None);
    }

    #[test]
    fn a_refusal_is_answered_with_its_typed_reason() {
        let refused = Refused {
            refusal: Refusal::Review(ReviewRefusal::NotPaused { state: "review" }),
            decision: Decision::nothing("task t: the task is review, not paused"),
        };
        let Answer::Reply(text, d) = Answer::of(
            "resume",
            &Syntax::default(),
            Some(Err(refused)),
            || unreachable!(),
        ) else {
            panic!("a refusal is a reply");
        };
        insta::assert_snapshot!(text, @"`/taskgate resume` did nothing: the task is review, not paused.");
        assert_eq!(d.outcome, "task t: the task is review, not paused");
    }

    #[test]
    fn done_is_a_plus_one() {
        let answer = Answer::of(
            "pause",
            &Syntax::default(),
            Some(Ok(Decision::nothing("task t: paused"))),
            || unreachable!(),
        );
        assert!(matches!(answer, Answer::Done(_)));
    }
}
