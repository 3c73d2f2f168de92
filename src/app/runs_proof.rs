//! A ship's proof in the shell: the story's gates run as the pseudo task
//! `@ship` on the tested merge commit, through the same transitions and
//! failure loop as a task (its check runs, attempts and, on a failure, a
//! branch todo on the story routed by kind). Its verdict goes to the ship
//! queue, which lands the commit or refuses the ship.

use super::*;
use crate::core::ship::{proof_failures, proof_task, ship_branch, ProofVerdict};
use crate::core::task::milestone::milestone_limits;

/// A story's proof with everything its transitions need.
struct ProofAt {
    story: String,
    /// `@ship` or `@rollback`.
    id: String,
    task: Task,
    gates: Vec<String>,
    installation: InstallationId,
    story_marker: String,
    story_issue: IssueNumber,
    branch: String,
    config: RepoConfig,
    settings: crate::core::plan::Settings,
    record: TaskRecord,
}

impl ProofAt {
    fn context<'a>(&'a self, repo: &'a RepoName, now: i64) -> TaskContext<'a> {
        TaskContext {
            repo,
            installation: self.installation,
            story: &self.story,
            task: &self.id,
            title: &self.task.title,
            task_marker: &self.story_marker,
            task_issue: self.story_issue,
            branch: &self.branch,
            // Not a task's branch: no pull request is opened for it.
            story_branch: &self.branch,
            gates: &self.gates,
            waiting_for: &[],
            review: crate::core::config::ReviewMode::Human,
            merge_method: self.config.merge_method,
            now,
        }
    }
}

impl Runs {
    async fn proof_at(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
    ) -> Result<Option<ProofAt>, StoreError> {
        let Some((stored, plan, story_issue)) = self.story_plan(repo, story).await? else {
            return Ok(None);
        };
        let files = MemFiles(stored.files.clone());
        let config = load_config(stored.config.as_deref()).unwrap_or_default();
        let gates = if task == crate::core::ship::ROLLBACK_TASK {
            crate::runner::rollback_gates(&config.rollback_gates)
        } else {
            crate::runner::proof_gates(&plan, &files, &config.ship_gates)
        };
        let gates = gates.into_iter().map(|g| g.gate).collect();
        let record = self
            .store
            .task_record(repo, story, task)
            .await?
            .unwrap_or(TaskRecord {
                // A proof runs on the ship branch: it never opens a PR.
                pr_requested: true,
                ..TaskRecord::default()
            });
        let branch = if task == crate::core::ship::ROLLBACK_TASK {
            crate::core::ship::revert_branch(story_issue.number)
        } else {
            ship_branch(story_issue.number)
        };
        Ok(Some(ProofAt {
            story: story.to_owned(),
            id: task.to_owned(),
            task: proof_task(&plan.story, task),
            gates,
            installation: stored.installation,
            story_marker: Marker::Story {
                story: story.to_owned(),
            }
            .key(),
            story_issue: story_issue.number,
            branch,
            config,
            settings: plan.settings.clone(),
            record,
        }))
    }

    /// Starts the story's proof (`task`: `@ship` or `@rollback`) at
    /// `commit`, the merge with the base or the revert.
    pub async fn start_ship_proof(
        &self,
        repo: &RepoName,
        story: &str,
        task: &str,
        commit: &CommitSha,
    ) -> Result<Decision, StoreError> {
        let Some(at) = self.proof_at(repo, story, task).await? else {
            return Ok(Decision::nothing("proof of an unknown story"));
        };
        let ctx = at.context(repo, self.now());
        let trigger = Trigger::Head {
            sha: commit.clone(),
            pr: None,
            pusher: None,
        };
        let d = on_trigger(&at.record, &trigger, &ctx);
        Ok(record_decision(repo, &at.story, &at.id, &at.record, d))
    }

    /// A proof run's progress: the task transitions, the failure loop
    /// with the story as the parent of its todo, and the verdict for the
    /// ship queue once every gate has answered.
    pub async fn proof_progress(
        &self,
        event: RunEvent,
    ) -> Result<(Decision, Option<ProofVerdict>), String> {
        let found = self
            .proof_at(&event.repo, &event.story, &event.task)
            .await
            .map_err(|e| e.to_string())?;
        let Some(at) = found else {
            return Ok((Decision::nothing("proof run of an unknown story"), None));
        };
        let ctx = at.context(&event.repo, self.now());
        let progress = event.progress;
        let report = match &progress {
            RunProgress::Finished { report, .. } => Some(report.clone()),
            _ => None,
        };
        let mut d = on_run_progress(&at.record, &progress, &ctx);
        let commit = d.record.current.as_ref().map(|a| a.sha.clone());
        // A proof that could not run (its commit gone) is no proof.
        let skipped = match &progress {
            RunProgress::Skipped { why, .. } => Some(why.clone()),
            _ => None,
        };
        let verdict = match (d.verdict, skipped, commit) {
            (Some(passed), _, Some(commit)) => Some(ProofVerdict {
                repo: event.repo.clone(),
                story: at.story.clone(),
                task: at.id.clone(),
                commit,
                passed,
                failures: report.as_ref().map(proof_failures).unwrap_or_default(),
            }),
            (None, Some(why), Some(commit)) => Some(ProofVerdict {
                repo: event.repo.clone(),
                story: at.story.clone(),
                task: at.id.clone(),
                commit,
                passed: false,
                failures: vec![format!("the proof could not run: {why}")],
            }),
            _ => None,
        };
        if let (Some(report), Some(_)) = (&report, d.verdict) {
            let inputs = LoopInputs {
                task: &at.task,
                config: &at.config,
                limits: milestone_limits(&at.config.effective_limits(&at.settings)),
                auto_fix: true,
                open_todos_in_story: 0,
            };
            d = task::follow_verdict(d, report, &ctx, &inputs);
        }
        let mut decision = record_decision(&event.repo, &at.story, &at.id, &at.record, d);
        attach_report(&mut decision, progress.attempt(), report);
        Ok((decision, verdict))
    }
}
