//! `/taskgate freeze <reason>` and `/taskgate unfreeze`, on any issue or
//! pull request of the repository.
//!
//! Owns: loading the repository's manual freeze and handing it, with the
//! commenter and the time, to `core::freeze`, and turning its decision or
//! refusal into the answer. Must not: decide (`core::freeze::on_freeze`
//! and `on_unfreeze` do: the freeze change and its audit entry, or the
//! typed refusal).

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use taskgate_core::audit::AuditActor;
use taskgate_core::commands::Command;
use taskgate_core::freeze;

impl Processor {
    pub(super) async fn command_freeze(
        &self,
        inv: &Invocation<'_>,
        command: &Command,
    ) -> Result<Answer, DecideError> {
        let current = self.store.commands().repo_freeze(inv.repo).await?;
        let now = self.store.clock().now_s();
        let by = AuditActor::from(inv.author);
        let result = match command {
            Command::Freeze { reason } => Ok(freeze::on_freeze(
                inv.repo,
                current.as_ref(),
                reason,
                by,
                now,
            )),
            _ => freeze::on_unfreeze(
                inv.repo,
                current.as_ref(),
                &inv.config.freeze_windows,
                by,
                now,
            ),
        };
        let result = match result {
            Ok(mut decision) => {
                // The stories' gates show the freeze; an unfreeze lets the
                // ship queue move on.
                let stories = self.store.commands().story_records(inv.repo).await?;
                let unfrozen = taskgate_core::freeze::unfrozen(&decision.changes)
                    .next()
                    .is_some();
                decision
                    .effects
                    .extend(taskgate_core::ship::on_freeze_changed(
                        inv.repo, &stories, unfrozen,
                    ));
                Ok(decision)
            }
            refused => refused,
        };
        Ok(Answer::of_result(command.name(), inv.syntax, result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::commands::Syntax;
    use taskgate_core::freeze::FreezeRefusal;
    use taskgate_core::refusal::{Refusal, Refused};
    use taskgate_core::Decision;

    #[test]
    fn an_unfreeze_refused_is_a_reply_and_stores_nothing() {
        let refused = Refused {
            refusal: Refusal::Freeze(FreezeRefusal::NotFrozen),
            decision: Decision::nothing("unfreeze refused: the repository is not frozen"),
        };
        let Answer::Reply(text, d) =
            Answer::of_result("unfreeze", &Syntax::default(), Err(refused))
        else {
            panic!("a refusal is a reply");
        };
        insta::assert_snapshot!(text, @"`/taskgate unfreeze` did nothing: the repository is not frozen.");
        assert!(d.changes.is_empty() && d.effects.is_empty());
    }
}
