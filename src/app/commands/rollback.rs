//! `/taskgate rollback [--now <reason>]` on a shipped story's issue or
//! pull request: a revert of the story's landed commit, proven before it
//! lands unless `--now` (`core::ship::rollback`).
//!
//! Owns: handing the request to the ship side as the commenter and turning
//! its answer into the reply. Must not: decide (the ship core does: the
//! rollback, its audit entry, or why not).

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use taskgate_core::render;

impl Processor {
    pub(super) async fn command_rollback(
        &self,
        inv: &Invocation<'_>,
        now: Option<&str>,
    ) -> Result<Answer, DecideError> {
        let actor = (inv.author.id, inv.author.login.as_str());
        let result = (self.ship)
            .on_rollback_command(inv.repo, inv.issue(), actor, now)
            .await?;
        Ok(Answer::of("rollback", inv.syntax, result, || {
            Answer::reply(render::rollback_elsewhere(inv.syntax))
        }))
    }
}
