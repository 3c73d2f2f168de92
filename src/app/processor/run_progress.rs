//! Where a run's progress goes, whichever runner ran it: the local run
//! queue's internal run events and the Actions runner's workflow runs
//! (`app::actions_runs`) take the same path.
//!
//! Owns: [`Processor::run_progress`] and the processor's
//! [`AttemptProgress`]. Must not: decide anything itself: a proof's
//! progress goes to the story's proof (`task::ShipProofs`) and its verdict
//! to the ship queue, which lands or refuses; a task's or a milestone's
//! to the task runs.

use super::Processor;
use crate::app::actions_runs::{ActionsError, AttemptProgress};
use crate::app::task::RunEvent;
use taskgate_core::Decision;

impl Processor {
    /// A run's progress: a ship's or a rollback's proof ends in the ship
    /// queue, any other run in its task.
    pub(super) async fn run_progress(&self, run: RunEvent) -> Result<Decision, ActionsError> {
        if !run.task.is_proof() {
            return Ok(self.runs.on_progress(run).await?);
        }
        let (story, again) = (run.story.clone(), run.clone());
        let (mut decision, verdict) = self.proofs.proof_progress(run, false).await?;
        if let Some(verdict) = verdict {
            let outcome = self.ship.on_proof_verdict(verdict).await?;
            if outcome.refused.contains(&story) {
                // The ship train blamed the run's story on it: the same
                // progress, decided again from the same store, with its
                // failure loop (the todo).
                decision = self.proofs.proof_progress(again, true).await?.0;
            }
            decision.merge(self.with_proof_run(outcome).await?);
        }
        Ok(decision)
    }
}

/// The Actions runner's runs end where the local runner's do: a ship
/// proof run on GitHub Actions lands or refuses its ship.
impl AttemptProgress for Processor {
    fn now(&self) -> i64 {
        self.runs.now()
    }

    async fn on_progress(&self, event: RunEvent) -> Result<Decision, ActionsError> {
        self.run_progress(event).await
    }
}
