//! Locating the task an event is about: by its issue or pull request, its
//! branch, or its story and id; with its plan as last synced from the
//! default branch, its gates, its config and its record.
//!
//! Owns: [`Located`], what a task's transitions need, and what the failure
//! loop needs of its story ([`LoopInputs`]). Must not: decide anything
//! (the pure `core::task` does), nor locate pseudo tasks (milestones and
//! proofs: `task/pseudo.rs`).

use super::*;
use std::collections::BTreeMap;

use taskgate_core::failure::RunLinks;
use taskgate_core::ids::{StoryId, TaskId};
use taskgate_core::task::RunSubject;

/// Attempts per task read to find the check runs of the one that finished
/// (a newer push may have queued another since).
const RECENT_ATTEMPTS: u32 = 3;

/// A task with everything its transitions need.
pub(super) struct Located {
    pub(super) loc: TaskLocation,
    /// The task as what its runs test (`loc.task`, a plan task).
    pub(super) subject: RunSubject,
    pub(super) settings: taskgate_core::plan::Settings,
    pub(super) installation: InstallationId,
    pub(super) task: Task,
    pub(super) gates: Vec<String>,
    pub(super) config: RepoConfig,
    pub(super) branch: String,
    pub(super) story_branch: String,
    pub(super) record: TaskRecord,
    /// Issues of the dependencies not complete yet: the task is pending.
    pub(super) waiting_for: Vec<IssueNumber>,
}

impl Located {
    pub(super) fn context<'a>(&'a self, repo: &'a RepoName, now: i64) -> TaskContext<'a> {
        TaskContext {
            repo,
            installation: self.installation,
            story: &self.loc.story,
            task: &self.subject,
            title: &self.task.title,
            task_marker: &self.loc.marker,
            task_issue: self.loc.issue,
            branch: &self.branch,
            story_branch: &self.story_branch,
            gates: &self.gates,
            waiting_for: &self.waiting_for,
            review: self
                .config
                .effective_review(&self.settings, self.task.review),
            merge_method: self.config.merge_method,
            runner: self.config.runner,
            runner_workflow: &self.config.runner_workflow,
            now,
        }
    }
}

impl Runs {
    pub(super) async fn locate(
        &self,
        repo: &RepoName,
        loc: TaskLocation,
    ) -> Result<Option<Located>, StoreError> {
        let Some(plan) = self.store.story(repo, &loc.story).await? else {
            return Ok(None);
        };
        let Some(parsed) = self.store.plans().parse(&plan.plan) else {
            return Ok(None);
        };
        let Some(task) = parsed.walk().into_iter().find_map(|r| {
            (r.task.id.value == loc.task && !r.task.is_parent()).then(|| r.task.clone())
        }) else {
            return Ok(None);
        };
        let config = load_config(plan.config.as_deref()).unwrap_or_default();
        let files = MemFiles(plan.files.clone());
        let gates = crate::runner::plan_gates(&task, &files)
            .into_iter()
            .map(|g| g.gate)
            .collect();
        let story_key = Marker::Story {
            story: loc.story.clone(),
        }
        .key();
        let Some(story_issue) = self.store.issue_record(repo, &story_key).await? else {
            return Ok(None);
        };
        let records = self.store.task_records(repo, &loc.story).await?;
        let record = records.get(loc.task.as_str()).cloned().unwrap_or_default();
        let complete = |id: &taskgate_core::plan::TaskId| {
            records
                .get(id.as_str())
                .is_some_and(|r| r.state == Some(TaskState::Completed))
        };
        let mut waiting_for = Vec::new();
        for dep in parsed.incomplete_dependencies(&task, complete) {
            let marker = Marker::Task {
                story: loc.story.clone(),
                task: dep,
            }
            .key();
            if let Some(issue) = self.store.issue_record(repo, &marker).await? {
                waiting_for.push(issue.number);
            }
        }
        Ok(Some(Located {
            waiting_for,
            settings: parsed.settings.clone(),
            branch: task_branch(loc.issue.get(), loc.task.as_str()),
            subject: RunSubject::Task(loc.task.clone()),
            story_branch: story_branch(story_issue.number.get()),
            installation: plan.installation,
            loc,
            task,
            gates,
            config,
            record,
        }))
    }

    /// The task whose issue, or whose pull request, is `number`.
    pub(super) async fn locate_issue_or_pull(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<Located>, StoreError> {
        let loc = match self.store.task_by_issue(repo, number).await? {
            Some(loc) => Some(loc),
            None => self.store.task_by_pull(repo, number).await?,
        };
        match loc {
            Some(loc) => self.locate(repo, loc).await,
            None => Ok(None),
        }
    }

    pub(super) async fn locate_branch(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> Result<Option<Located>, StoreError> {
        let Some(issue) = task_issue_of_branch(branch) else {
            return Ok(None);
        };
        let Some(loc) = self.store.task_by_issue(repo, issue).await? else {
            return Ok(None);
        };
        let located = self.locate(repo, loc).await?;
        // Only the task's own branch: `taskgate/task-14-other` is not it.
        Ok(located.filter(|l| branch.strip_prefix("refs/heads/").unwrap_or(branch) == l.branch))
    }

    pub(super) async fn task_location(
        &self,
        repo: &RepoName,
        story: &StoryId,
        task: &TaskId,
    ) -> Result<Option<TaskLocation>, StoreError> {
        let marker = Marker::Task {
            story: story.to_owned(),
            task: task.to_owned(),
        }
        .key();
        Ok(self
            .store
            .issue_record(repo, &marker)
            .await?
            .map(|r| TaskLocation {
                story: story.to_owned(),
                task: task.to_owned(),
                marker,
                issue: r.number,
            }))
    }

    /// What the failure loop needs of the story: limits, manual mode, and
    /// how many other tasks have a branch todo open.
    pub(super) async fn loop_inputs<'a>(
        &self,
        repo: &RepoName,
        located: &'a Located,
    ) -> Result<LoopInputs<'a>, StoreError> {
        let open_todos_in_story = self
            .store
            .task_records(repo, &located.loc.story)
            .await?
            .iter()
            .filter(|(task, r)| **task != located.loc.task.as_str() && r.failure.open.is_some())
            .count() as u32;
        Ok(LoopInputs {
            task: &located.task,
            config: &located.config,
            limits: located.config.effective_limits(&located.settings),
            auto_fix: located.config.effective_auto_fix(&located.settings),
            open_todos_in_story,
            links: RunLinks {
                repo_url: Some(format!("{}/{repo}", self.web_base)),
                check_runs: BTreeMap::new(),
                changed_since_green: None,
            },
        })
    }

    /// The files the commit of the attempt `d` finished changed since the
    /// task's last green commit, when the runner recorded them
    /// (`app::commit_changes`).
    pub(super) async fn changed_since_green(
        &self,
        repo: &RepoName,
        located: &Located,
        d: &TaskDecision,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let (Some(green), Some(current)) = (&located.record.failure.last_green, &d.record.current)
        else {
            return Ok(None);
        };
        let pair = taskgate_core::flaky::CommitPair {
            base: green.as_str().to_owned(),
            head: current.sha.as_str().to_owned(),
        };
        let mut known = self.store.commit_changes(repo, vec![pair.clone()]).await?;
        Ok(known.remove(&pair).flatten())
    }

    /// Where GitHub shows the check runs of `attempt` recorded so far, by
    /// gate: `<web>/<o>/<r>/runs/<id>`, the check run's `html_url`.
    pub(super) async fn check_run_links(
        &self,
        repo: &RepoName,
        located: &Located,
        attempt: u32,
    ) -> Result<BTreeMap<String, String>, StoreError> {
        let attempts = self
            .store
            .recent_attempts(repo, &located.loc.story, RECENT_ATTEMPTS)
            .await?;
        Ok(attempts
            .into_iter()
            .filter(|a| a.task == located.loc.task.as_str() && a.attempt == attempt)
            .flat_map(|a| a.checks)
            .map(|(gate, id)| (gate, format!("{}/{repo}/runs/{id}", self.web_base)))
            .collect())
    }
}
