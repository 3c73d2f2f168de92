//! A ship's proof in the shell: the story's gates run as the pseudo task
//! `@ship` on the tested merge commit (a rollback's as `@rollback` on the
//! revert), through the same transitions and failure loop as a task (its
//! check runs, attempts and, on a failure, a branch todo on the story
//! routed by kind).
//!
//! Owns: locating a story's proof (its gates and branch) and turning a
//! proof run's verdict into the [`ProofVerdict`] the ship queue lands or
//! refuses the ship on. Must not: land, refuse or queue anything itself
//! (`app::ship::queue` does), nor repeat the pseudo task's transitions
//! (`task/pseudo.rs`).

use super::pseudo::{PseudoSpec, PseudoTask};
use super::*;
use taskgate_core::ids::StoryId;
use taskgate_core::ship::{
    proof_failing_tests, proof_failures, proof_task, revert_branch, ship_branch, FailingTest,
    ProofVerdict,
};
use taskgate_core::sync::StoryPlan;
use taskgate_core::task::RunSubject;

/// Whose gates a story's ship proof runs.
enum ProofGates<'a> {
    /// Each of these stories': a ship train car's, whose run is recorded
    /// on its first story. None: the story's own (the one-story queue's).
    Of(&'a [StoryId]),
    /// Those its current attempt started with: a run is judged on the
    /// gates it ran, whatever the car (or the plan) is now.
    Attempt,
}

/// A story's proofs (a ship's, a rollback's) as the processor starts
/// them and hears of their runs: the only task operations the ship path
/// reaches.
#[derive(Clone)]
pub struct ShipProofs {
    runs: Runs,
}

impl Runs {
    /// The ship path's handle on these runs.
    pub fn proofs(&self) -> ShipProofs {
        ShipProofs { runs: self.clone() }
    }

    async fn proof_at(
        &self,
        repo: &RepoName,
        (story, subject): (&StoryId, &RunSubject),
        whose: ProofGates<'_>,
    ) -> Result<Option<PseudoTask>, StoreError> {
        let Some((stored, plan, story_issue)) = self.story_plan(repo, story).await? else {
            return Ok(None);
        };
        let files = MemFiles(stored.files.clone());
        let config = load_config(stored.config.as_deref()).unwrap_or_default();
        let rollback = *subject == RunSubject::RollbackProof;
        let gates = match whose {
            _ if rollback => crate::runner::rollback_gates(&config.rollback_gates),
            ProofGates::Of(stories) if !stories.is_empty() => {
                let stored = self.stored_stories(repo, stories).await?;
                crate::runner::stored_car_proof_gates(&stored, &config.ship_gates)
            }
            _ => crate::runner::proof_gates(&plan, &files, &config.ship_gates),
        };
        let spec = PseudoSpec {
            id: subject.clone(),
            task: proof_task(&plan.story, subject),
            gates: gates.into_iter().map(|g| g.gate).collect(),
            // A proof runs on the ship (or revert) branch.
            branch: if rollback {
                revert_branch(story_issue.number)
            } else {
                ship_branch(story_issue.number)
            },
            config,
        };
        let at = self
            .pseudo_task(repo, &stored, &plan, story_issue.number, spec)
            .await?;
        Ok(Some(match whose {
            ProofGates::Attempt => at.with_attempt_gates(),
            _ => at,
        }))
    }

    /// `at`'s current attempt is the proof of a ship train car (one still
    /// in the train: a dissolved car's run is cancelled).
    async fn train_car_run(&self, repo: &RepoName, at: &PseudoTask) -> Result<bool, StoreError> {
        let Some(commit) = at.attempt_commit() else {
            return Ok(false);
        };
        let train = self.store.ship_train(repo).await?;
        Ok(train.car_built_at(commit).is_some())
    }

    /// The stories of a car, as stored, in the car's order.
    async fn stored_stories(
        &self,
        repo: &RepoName,
        stories: &[StoryId],
    ) -> Result<Vec<StoryPlan>, StoreError> {
        let mut out = Vec::with_capacity(stories.len());
        for story in stories {
            out.extend(self.store.story(repo, story).await?);
        }
        Ok(out)
    }
}

impl ShipProofs {
    /// Starts the story's proof (a ship's or a rollback's) at
    /// `commit`, the merge with the base or the revert.
    /// A ship train car's proof (`gates_of` not empty) runs those
    /// stories' gates, recorded on `story`, the car's first.
    pub async fn start_ship_proof(
        &self,
        repo: &RepoName,
        proof: (&StoryId, &RunSubject),
        commit: &CommitSha,
        gates_of: &[StoryId],
    ) -> Result<Decision, StoreError> {
        let whose = ProofGates::Of(gates_of);
        let Some(at) = self.runs.proof_at(repo, proof, whose).await? else {
            return Ok(Decision::nothing("proof of an unknown story"));
        };
        // The ship train proves a failed commit once more before anyone
        // is blamed (a flake passes then): a retry of the same commit.
        let trigger = if at.tested_at(commit) {
            Trigger::Retry {
                sha: Some(commit.clone()),
                gate: None,
                by: taskgate_core::task::Doer::Taskgate,
            }
        } else {
            Trigger::Head {
                sha: commit.clone(),
                pr: None,
                pusher: None,
                source: HeadSource::Taskgate,
            }
        };
        Ok(self.runs.start_pseudo(repo, &at, &trigger))
    }

    /// Stops the story's ship proof running at `commit`, saying `why`
    /// (a ship train car dissolved).
    pub async fn stop_proof(
        &self,
        repo: &RepoName,
        story: &StoryId,
        commit: &CommitSha,
        why: &str,
    ) -> Result<Decision, StoreError> {
        let proof = (story, &RunSubject::ShipProof);
        let found = self.runs.proof_at(repo, proof, ProofGates::Attempt).await?;
        let Some(at) = found else {
            return Ok(Decision::nothing("proof of an unknown story"));
        };
        Ok(self.runs.stop_pseudo(repo, &at, commit, why))
    }

    /// A proof run's progress: the task transitions, the failure loop
    /// with the story as the parent of its todo, and the verdict for the
    /// ship queue once every gate has answered. A ship train car's run
    /// follows the failure loop only once the train has `blamed` its
    /// story on it: the car's first story is not the failure's cause
    /// until the train says so, and a first failure may be a flake.
    pub async fn proof_progress(
        &self,
        event: RunEvent,
        blamed: bool,
    ) -> Result<(Decision, Option<ProofVerdict>), StoreError> {
        let subject = event.task.clone();
        let proof = (&event.story, &subject);
        let found = (self.runs)
            .proof_at(&event.repo, proof, ProofGates::Attempt)
            .await?;
        let Some(mut at) = found else {
            return Ok((Decision::nothing("proof run of an unknown story"), None));
        };
        // Only a finished run's verdict follows the failure loop: the
        // train is read for that one, not for each run's waiting or start.
        let finished = matches!(event.progress, RunProgress::Finished { .. });
        if finished && !blamed && self.runs.train_car_run(&event.repo, &at).await? {
            at = at.without_failure_loop();
        }
        let run = self.runs.pseudo_progress(&event.repo, &at, &event.progress);
        let proof = (at.story.as_str(), &subject);
        let verdict = proof_verdict(&event.repo, proof, &event.progress, run.verdict, run.commit);
        Ok((run.decision, verdict))
    }
}

/// What the ship queue is told of a run of `proof` (its story and which
/// proof): its verdict once every gate has answered, or a failure
/// when the proof could not run (its commit gone: no proof). `None` while
/// it runs, or without an attempt.
fn proof_verdict(
    repo: &RepoName,
    (story, task): (&str, &RunSubject),
    progress: &RunProgress,
    verdict: Option<bool>,
    commit: Option<CommitSha>,
) -> Option<ProofVerdict> {
    let (passed, failures, tests) = match (verdict, progress) {
        (Some(passed), _) => {
            let report = finished_report(progress);
            let failures = report.as_ref().map(proof_failures);
            let tests = report.as_ref().map(proof_failing_tests);
            (
                passed,
                failures.unwrap_or_default(),
                tests.unwrap_or_default(),
            )
        }
        (None, RunProgress::Skipped { why, .. }) => {
            let line = format!("the proof could not run: {why}");
            let test = FailingTest {
                name: line.clone(),
                file: None,
                case: None,
            };
            (false, vec![line], vec![test])
        }
        (None, _) => return None,
    };
    Some(ProofVerdict {
        repo: repo.clone(),
        story: StoryId::new(story),
        task: task.clone(),
        commit: commit?,
        passed,
        failures,
        tests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROOF: (&str, &RunSubject) = ("s", &RunSubject::ShipProof);

    fn repo() -> RepoName {
        RepoName::parse("o/r").unwrap()
    }

    fn commit() -> Option<CommitSha> {
        Some(crate::testing::sha("c0ffee"))
    }

    #[test]
    fn a_proof_that_could_not_run_is_a_failed_proof_saying_why() {
        let gone = RunProgress::Skipped {
            attempt: 1,
            why: "the commit `c0ffee` is gone".into(),
        };
        let verdict = proof_verdict(&repo(), PROOF, &gone, None, commit()).unwrap();
        assert!(!verdict.passed);
        assert_eq!(verdict.commit, crate::testing::sha("c0ffee"));
        insta::assert_snapshot!(verdict.failures.join("\n"), @"the proof could not run: the commit `c0ffee` is gone");
    }

    #[test]
    fn a_passed_proof_is_a_verdict_without_failures() {
        let finished = RunProgress::Finished {
            attempt: 1,
            report: RunReport {
                version: 1,
                task: PROOF.1.clone(),
                sha: Some("c0ffee".into()),
                gates: vec![],
                duration_ms: 5,
                cancelled: false,
                runner_fault: None,
                tested: None,
            },
            workspace: "/w".into(),
        };
        let verdict = proof_verdict(&repo(), PROOF, &finished, Some(true), commit()).unwrap();
        assert!(verdict.passed);
        assert!(verdict.failures.is_empty());
    }

    #[test]
    fn a_proof_still_running_or_without_an_attempt_tells_the_ship_queue_nothing() {
        let started = RunProgress::Started { attempt: 1 };
        assert_eq!(
            proof_verdict(&repo(), PROOF, &started, None, commit()),
            None
        );
        let gone = RunProgress::Skipped {
            attempt: 1,
            why: "gone".into(),
        };
        assert_eq!(proof_verdict(&repo(), PROOF, &gone, None, None), None);
    }
}
