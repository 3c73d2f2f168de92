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
use taskgate_core::render;
use taskgate_core::task::{Doer, ReviewCommand, Reviewer};
use taskgate_core::Decision;

/// What a task command asks of its task, as the dispatcher read it from
/// the parsed [`Command`](taskgate_core::commands::Command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TaskCommand {
    /// `retry [gate]`.
    Retry { gate: Option<String> },
    /// `approve-branch`.
    ApproveBranch,
    /// `approve`, `revise`, `reject`, `pause`, `resume`.
    Review(ReviewCommand),
}

impl TaskCommand {
    /// The command's name, for answers.
    fn name(&self) -> &'static str {
        match self {
            TaskCommand::Retry { .. } => "retry",
            TaskCommand::ApproveBranch => "approve-branch",
            TaskCommand::Review(review) => review.name(),
        }
    }
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
        command: TaskCommand,
    ) -> Result<Answer, DecideError> {
        let (repo, issue) = (inv.repo, inv.issue());
        let name = command.name();
        let result = match command {
            TaskCommand::Retry { gate } => {
                let by = Doer::of(Some(inv.author), self.context.bot_login.as_deref());
                self.task_commands
                    .retry_command(repo, issue, gate, by)
                    .await?
            }
            TaskCommand::ApproveBranch => {
                let by = AuditActor::from(inv.author);
                self.task_commands
                    .approve_branch_command(repo, issue, by)
                    .await?
            }
            TaskCommand::Review(review) => {
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
    use crate::app::Handled;
    use taskgate_core::commands::Syntax;
    use taskgate_core::refusal::{Refusal, Refused};
    use taskgate_core::task::ReviewRefusal;

    #[test]
    fn a_task_command_answers_under_the_name_it_was_written_with() {
        let names: Vec<_> = [
            TaskCommand::Retry { gate: None },
            TaskCommand::ApproveBranch,
            TaskCommand::Review(ReviewCommand::Reject {
                reason: "no".into(),
            }),
            TaskCommand::Review(ReviewCommand::Resume),
        ]
        .iter()
        .map(TaskCommand::name)
        .collect();
        assert_eq!(names, ["retry", "approve-branch", "reject", "resume"]);
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
            Handled::Refused(refused),
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
            Handled::Decided(Decision::nothing("task t: paused")),
            || unreachable!(),
        );
        assert!(matches!(answer, Answer::Done(_)));
    }
}
