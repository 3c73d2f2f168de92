//! `/taskgate unquarantine <test id>`, on any issue or pull request of the
//! repository.
//!
//! Owns: loading the repository's quarantines and handing them, with the
//! commenter and the time, to `core::flaky::on_unquarantine`, and turning
//! its decision or refusal into the answer. Must not: decide (the core
//! lifts the quarantine, audits it and rewrites the "Flaky tests" issue,
//! or says which quarantined ids are closest).

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use taskgate_core::audit::AuditActor;
use taskgate_core::flaky;

impl Processor {
    pub(super) async fn command_unquarantine(
        &self,
        inv: &Invocation<'_>,
        test: &str,
    ) -> Result<Answer, DecideError> {
        let quarantines = self.store.commands().quarantines(inv.repo).await?;
        let now = self.store.clock().now_s();
        let prefix = format!("/{}", inv.syntax.prefix);
        let by = AuditActor::from(inv.author);
        Ok(
            match flaky::on_unquarantine(inv.repo, &quarantines, test, by, &prefix, now) {
                Ok(decision) => Answer::Done(decision),
                Err(refusal) => Answer::Reply(
                    refusal.to_string(),
                    taskgate_core::Decision::nothing("unquarantine refused: not quarantined"),
                ),
            },
        )
    }
}
