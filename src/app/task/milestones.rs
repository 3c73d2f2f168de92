//! Integration milestones in the shell: when a story's tasks complete (a
//! task PR merged) or its branch moves (a push), the milestones whose tasks
//! are all complete run on the story branch's head; their progress goes
//! through the same transitions and failure loop as a task's
//! (`core::task::milestone`).
//!
//! Owns: which milestones are ready, locating one (its gate, on the story
//! branch), and the pushes, "Re-run" clicks and run events that start or
//! move one. Must not: repeat the pseudo task's transitions
//! (`task/pseudo.rs`) or read more into a milestone's verdict than its
//! failure loop does.

use super::pseudo::{PseudoSpec, PseudoTask};
use super::*;
use crate::app::Handled;
use taskgate_core::ids::StoryId;
use taskgate_core::plan::Plan;
use taskgate_core::task::milestone::{milestone_gate, milestone_task, ready_milestones};
use taskgate_core::task::RunSubject;

impl Runs {
    /// The story's plan and issue, if taskgate knows the story.
    pub(super) async fn story_plan(
        &self,
        repo: &RepoName,
        story: &StoryId,
    ) -> Result<
        Option<(
            taskgate_core::sync::StoryPlan,
            std::sync::Arc<Plan>,
            taskgate_core::sync::IssueRecord,
        )>,
        StoreError,
    > {
        let Some(stored) = self.store.story(repo, story).await? else {
            return Ok(None);
        };
        let Some(plan) = self.store.plans().parse(&stored.plan) else {
            return Ok(None);
        };
        let marker = Marker::Story {
            story: story.to_owned(),
        }
        .key();
        let Some(issue) = self.store.issue_record(repo, &marker).await? else {
            return Ok(None);
        };
        Ok(Some((stored, plan, issue)))
    }

    async fn milestone_at(
        &self,
        repo: &RepoName,
        stored: &taskgate_core::sync::StoryPlan,
        plan: &Plan,
        story_issue: &taskgate_core::sync::IssueRecord,
        id: &str,
    ) -> Result<Option<PseudoTask>, StoreError> {
        let Some(m) = plan.integration.iter().find(|m| m.id.value.as_str() == id) else {
            return Ok(None);
        };
        let spec = PseudoSpec {
            id: RunSubject::Milestone(m.id.value.clone()),
            task: milestone_task(m),
            gates: vec![milestone_gate(id)],
            // A milestone runs on the story branch.
            branch: story_branch(story_issue.number.get()),
            config: load_config(stored.config.as_deref()).unwrap_or_default(),
        };
        let at = self
            .pseudo_task(repo, stored, plan, story_issue.number, spec)
            .await?;
        Ok(Some(at))
    }

    /// Starts, at the story branch's `head`, every milestone whose tasks
    /// are all complete and that has not been tested there. `just` is a
    /// task state decided in this same delivery, not stored yet.
    pub(super) async fn start_ready_milestones(
        &self,
        repo: &RepoName,
        story: &StoryId,
        head: &CommitSha,
        just: Option<(&str, TaskState)>,
    ) -> Result<Vec<Decision>, StoreError> {
        let Some((stored, plan, story_issue)) = self.story_plan(repo, story).await? else {
            return Ok(vec![]);
        };
        if plan.integration.is_empty() {
            return Ok(vec![]);
        }
        let records = self.store.task_records(repo, story).await?;
        let state_of = |id: &taskgate_core::plan::TaskId| -> Option<TaskState> {
            match just {
                Some((task, state)) if task == id.as_str() => Some(state),
                _ => records.get(id.as_str()).and_then(|r| r.state),
            }
        };
        let mut decisions = Vec::new();
        for m in ready_milestones(&plan, &state_of) {
            let id = m.id.value.as_str();
            let Some(at) = self
                .milestone_at(repo, &stored, &plan, &story_issue, id)
                .await?
            else {
                continue;
            };
            let trigger = Trigger::Head {
                sha: head.clone(),
                pr: None,
                pusher: None,
                source: HeadSource::Taskgate,
            };
            decisions.push(self.start_pseudo(repo, &at, &trigger));
        }
        Ok(decisions)
    }

    /// A push to a story branch: its ready milestones run at the new head.
    /// Not its own for any other branch.
    pub(super) async fn on_story_push(&self, p: &PushEvent) -> Result<Handled, StoreError> {
        let Some(number) = p.story_branch().map(IssueNumber::get) else {
            return Ok(Handled::NotMine);
        };
        if p.deleted {
            return Ok(Handled::Decided(Decision::nothing("story branch deleted")));
        }
        if p.creates_branch_without_commits() {
            return Ok(Handled::Decided(Decision::nothing(
                "story branch created without new commits",
            )));
        }
        let repo = &p.repo;
        let story = taskgate_core::story::story_key_for_issue(number);
        // The story key is the issue's for comment plans; file plans are
        // found through the story issue's marker.
        let story = match self.store.story(repo, &story).await? {
            Some(_) => story,
            None => match self
                .store
                .story_by_issue(repo, IssueNumber::new(number))
                .await?
            {
                Some(story) => story,
                None => {
                    return Ok(Handled::Decided(Decision::nothing(
                        "not a known story's branch",
                    )))
                }
            },
        };
        let decisions = self
            .start_ready_milestones(repo, &story, &p.after, None)
            .await?;
        let mut all = Decision::nothing("story branch moved");
        for d in decisions {
            all.merge(d);
        }
        Ok(Handled::Decided(all))
    }

    /// "Re-run" (or the Retry button) on a milestone's check run: the
    /// milestone runs again at that commit, as a push to the story branch
    /// would run it, if its sender may `retry`.
    pub(super) async fn milestone_check_run(
        &self,
        repo: &RepoName,
        p: &CheckRunEvent,
        key: &task::CheckKey,
        milestone: &str,
        command: &str,
        permissions: &crate::github::Permissions,
    ) -> Result<Decision, StoreError> {
        if command != "retry" {
            return Ok(Decision::nothing(format!(
                "check_run.{}: a milestone opens its own todos; {command} does not apply",
                p.action
            )));
        }
        let Some((stored, plan, story_issue)) = self.story_plan(repo, &key.story).await? else {
            return Ok(Decision::nothing("the check run's story is not known"));
        };
        let Some(at) = self
            .milestone_at(repo, &stored, &plan, &story_issue, milestone)
            .await?
        else {
            return Ok(Decision::nothing("milestone no longer in the plan"));
        };
        let by = (p.sender.as_ref(), p.installation);
        let click = super::Click {
            repo,
            what: format!("check_run.{}: {command}", p.action),
            label: p.click_label(),
            command,
            config: &at.config,
            tell: story_issue.number,
            at: &p.head_sha,
        };
        if let Some(refused) = refuse_sender(by, click, permissions).await {
            return Ok(refused);
        }
        let trigger = Trigger::Retry {
            sha: Some(p.head_sha.clone()),
            gate: Some(key.gate.clone()),
            by: self.doer(p.sender.as_ref()),
        };
        Ok(self.start_pseudo(repo, &at, &trigger))
    }

    /// A milestone run's progress: the task transitions, then the failure
    /// loop with the story as the parent of its diagnostic todos.
    pub(super) async fn milestone_progress(&self, event: RunEvent) -> Result<Decision, StoreError> {
        let id = event.task.milestone().map_or("", |id| id.as_str());
        let found = self.story_plan(&event.repo, &event.story).await?;
        let Some((stored, plan, story_issue)) = found else {
            return Ok(Decision::nothing("milestone run of an unknown story"));
        };
        let Some(at) = self
            .milestone_at(&event.repo, &stored, &plan, &story_issue, id)
            .await?
        else {
            return Ok(Decision::nothing("milestone no longer in the plan"));
        };
        // A milestone's verdict only feeds its failure loop.
        let run = self.pseudo_progress(&event.repo, &at, &event.progress);
        Ok(run.decision)
    }
}
