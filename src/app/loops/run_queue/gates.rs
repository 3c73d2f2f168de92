//! The gates a queued run runs, resolved from the stored plans: a leaf
//! task's own, an integration milestone's, a ship's proof (every leaf's
//! and milestone's of the story), a rollback's, or a ship train car's
//! proof (every story's of the car, as the train stored them).
//!
//! Owns: turning an attempt's gate names into the commands to run.
//! Must not: decide which gates an attempt runs (the task transitions
//! and the train did, when it started).

use super::{RunError, RunQueue};
use crate::runner::{plan_gates, GateSpec};
use crate::store::AttemptRow;
use taskgate_core::plan::{MemFiles, Plan};
use taskgate_core::sync::StoryPlan;
use taskgate_core::task::RunSubject;

impl RunQueue {
    /// The gates of the attempt `row` of a story stored as `plan`, in
    /// the attempt's own names.
    pub(super) async fn row_gates(
        &self,
        row: &AttemptRow,
        plan: &StoryPlan,
    ) -> Result<Vec<GateSpec>, RunError> {
        let config =
            || taskgate_core::config::load_config(plan.config.as_deref()).unwrap_or_default();
        let resolved = match self.car_stories(row).await? {
            Some(stories) => crate::runner::stored_car_proof_gates(&stories, &config().ship_gates),
            None => {
                let parsed = (self.store.plans().parse(&plan.plan))
                    .ok_or_else(|| RunError::Setup("the stored plan no longer parses".into()))?;
                let files = MemFiles(plan.files.clone());
                resolve_gates(&parsed, &row.task, &files, plan.config.as_deref()).ok_or_else(
                    || RunError::Setup(format!("task {} is not in the plan", row.task)),
                )?
            }
        };
        let gates: Vec<GateSpec> = resolved
            .into_iter()
            .filter(|g| row.gates.contains(&g.gate))
            .collect();
        let missing: Vec<&str> = (row.gates.iter())
            .filter(|name| !gates.iter().any(|g| g.gate == **name))
            .map(String::as_str)
            .collect();
        if row.task == RunSubject::ShipProof && !missing.is_empty() {
            // Running part of a proof proves nothing: its car left the
            // train (its verdict would be ignored), or the plan changed.
            return Err(RunError::Gone(format!(
                "its gates {} are gone: the ship batch it proves left the train, or the plan changed, before it ran",
                missing.join(", ")
            )));
        }
        Ok(gates)
    }

    /// The stories of the ship train car built at the attempt's commit,
    /// as stored, when the attempt is that car's proof of more than its
    /// first story.
    async fn car_stories(&self, row: &AttemptRow) -> Result<Option<Vec<StoryPlan>>, RunError> {
        if row.task != RunSubject::ShipProof {
            return Ok(None);
        }
        let setup = |e: crate::store::StoreError| RunError::Setup(format!("store: {e}"));
        let train = self.store.ship_train(&row.repo).await.map_err(setup)?;
        let Some(car) = train.car_built_at(&row.sha) else {
            return Ok(None);
        };
        if car.gates_of.is_empty() || car.gates_of == [row.story.clone()] {
            return Ok(None);
        }
        let mut stories = Vec::with_capacity(car.gates_of.len());
        for story in &car.gates_of {
            stories.extend(self.store.story(&row.repo, story).await.map_err(setup)?);
        }
        Ok(Some(stories))
    }
}

/// The gates of `task` as the plan and its files resolve them: a leaf
/// task's own, an integration milestone's (a pseudo task of one gate), or
/// a ship's proof (every leaf's and every milestone's).
pub(super) fn resolve_gates(
    plan: &Plan,
    task: &RunSubject,
    files: &MemFiles,
    config: Option<&str>,
) -> Option<Vec<GateSpec>> {
    let config = || taskgate_core::config::load_config(config).unwrap_or_default();
    let resolved = match task {
        RunSubject::RollbackProof => {
            return Some(crate::runner::rollback_gates(&config().rollback_gates))
        }
        RunSubject::ShipProof => {
            return Some(crate::runner::proof_gates(
                plan,
                files,
                &config().ship_gates,
            ))
        }
        RunSubject::Milestone(id) => plan
            .integration
            .iter()
            .find(|m| m.id.value == *id)
            .map(taskgate_core::task::milestone::milestone_task),
        // An agent's fix pull request runs its task's gates.
        RunSubject::Task(id) | RunSubject::FixPull { task: id, .. } => plan
            .walk()
            .into_iter()
            .find(|r| r.task.id.value == *id)
            .map(|r| r.task.clone()),
    }?;
    Some(plan_gates(&resolved, files))
}
