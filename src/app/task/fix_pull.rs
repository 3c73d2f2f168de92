//! An agent's own pull request for a branch todo, in the shell (issue 50
//! item 4): Copilot's pull request from `copilot/<slug>` into the task
//! branch, linking the todo. The core decides what it is
//! (`core::task::fix_pull`); here it is found, run and merged.
//!
//! Owns: finding the task of such a pull request (by its base, or by the
//! todo it links), its run as the pseudo task `@fix/<pull>/<task>` (the
//! task's gates on its head, check runs there, no failure loop: the todo's
//! attempts are counted by the task branch's runs), and the merge of the
//! head those gates proved (`PUT .../merge` with that `sha`) when the run
//! is green under `review: auto`. Must not: decide whether it is adopted
//! (the core does), nor close the todo: the merge pushes the task branch,
//! whose own run closes it as any push does.

use super::pseudo::{PseudoSpec, PseudoTask};
use super::*;
use locate::Located;
use taskgate_core::config::ReviewMode;
use taskgate_core::story::Marker;
use taskgate_core::task::{FixPull, FixPullFacts, RunSubject, TodoTask};
use taskgate_core::Effect;

impl Runs {
    /// A pull request whose head is not a task branch: an agent's fix for
    /// an open todo of the task its base (or its link) names, or nothing.
    pub(super) async fn on_other_pull(&self, e: &PullRequestEvent) -> Result<Decision, StoreError> {
        let repo = &e.repo;
        let author = e.author.as_ref().map_or("", |a| a.login.as_str());
        let facts = FixPullFacts {
            head: &e.head.name,
            base: &e.base,
            from_fork: e.from_fork(),
            author,
            closes: &e.closes,
        };
        let base = self.locate_branch(repo, &e.base).await?;
        let linked = match &base {
            None => self.located_by_todo(repo, &e.closes).await?,
            Some(_) => None,
        };
        let base_todo = match &base {
            Some(l) => Some(self.todo_task(repo, l).await?),
            None => None,
        };
        let linked_todo = match &linked {
            Some(l) => Some(self.todo_task(repo, l).await?),
            None => None,
        };
        let base_view = base_todo.as_ref().map(OwnedTodoTask::view);
        let linked_view = linked_todo.as_ref().map(OwnedTodoTask::view);
        let decided =
            taskgate_core::task::decide_fix_pull(&facts, base_view.as_ref(), linked_view.as_ref());
        match decided {
            FixPull::NotAFix(why) => Ok(Decision::nothing(format!("not an agent's fix: {why:?}"))),
            FixPull::WrongBase { todo, want } => Ok(say_once(
                repo,
                e.number,
                "fix-pull-base",
                taskgate_core::task::render_wrong_base(todo, &e.base, &want),
            )),
            FixPull::LeftToPeople => Ok(Decision::nothing(
                "a pull request into a task branch that is not the agent's fix: its merge is tested",
            )),
            FixPull::Fix { merge, .. } => match &base {
                Some(located) => self.run_fix(e, located, merge).await,
                None => Ok(Decision::nothing("an agent's fix without its base task")),
            },
        }
    }

    /// Runs the task's gates on a fix pull request's new head; under
    /// `review: human`, says once that a person merges it.
    async fn run_fix(
        &self,
        e: &PullRequestEvent,
        located: &Located,
        merge: bool,
    ) -> Result<Decision, StoreError> {
        use taskgate_core::webhook::action::PullRequestAction as A;
        let repo = &e.repo;
        // `edited`: a person moved its base to the task branch (the
        // head it had then is tested once, as any new head).
        if !matches!(
            e.action,
            A::Opened | A::Synchronize | A::Reopened | A::ReadyForReview | A::Edited
        ) {
            return Ok(Decision::nothing(format!(
                "agent's fix pull request: {} asks for no run",
                e.action
            )));
        }
        let Some(at) = self
            .fix_pseudo(repo, located, e.number, &e.head.name)
            .await?
        else {
            return Ok(Decision::nothing(
                "agent's fix of a task whose story is gone",
            ));
        };
        let trigger = Trigger::Head {
            sha: e.head.sha.clone(),
            pr: None,
            pusher: None,
            // The fix's record is this pull request's alone, so an
            // `opened` after any other event of it is late.
            source: HeadSource::Webhook {
                before: e.before.clone(),
                opened: e.action == A::Opened,
            },
        };
        let mut decision = self.start_pseudo(repo, &at, &trigger);
        if let Some(pusher) = e.pusher() {
            let d = taskgate_core::task::on_fix_pushed(&located.record, &self.pusher(pusher));
            if d.record != located.record {
                decision.merge(self.finish(repo, located, d));
            }
        }
        if !merge {
            decision.merge(say_once(
                repo,
                e.number,
                "fix-pull-person",
                taskgate_core::task::render_left_to_a_person(&located.branch),
            ));
        }
        Ok(decision)
    }

    /// A fix pull request's run progressed: on a green verdict under
    /// `review: auto`, the head the gates passed at is merged into the
    /// task branch (GitHub refuses the merge if the head moved since).
    pub(super) async fn fix_pull_progress(&self, event: RunEvent) -> Result<Decision, StoreError> {
        let Some((task, pull)) = event.task.fix_pull() else {
            return Ok(Decision::nothing("not an agent's fix pull request"));
        };
        let Some(loc) = self.task_location(&event.repo, &event.story, task).await? else {
            return Ok(Decision::nothing("run of an unknown task's fix"));
        };
        let Some(located) = self.locate(&event.repo, loc).await? else {
            return Ok(Decision::nothing(
                "run of a fix of a task no longer in the plan",
            ));
        };
        let Some(at) = self.fix_pseudo(&event.repo, &located, pull, "").await? else {
            return Ok(Decision::nothing("run of a fix of a story that is gone"));
        };
        let at = at.without_failure_loop();
        let progress = self.pseudo_progress(&event.repo, &at, &event.progress);
        let mut decision = progress.decision;
        let review = located
            .config
            .effective_review(&located.settings, located.task.review);
        if let (Some(true), Some(sha), ReviewMode::Auto) =
            (progress.verdict, progress.commit, review)
        {
            decision.effects.push(Effect::MergePullRequest {
                repo: event.repo.clone(),
                number: pull,
                sha,
                method: located.config.merge_method,
                title: format!("{} (agent's fix #{})", located.task.title, pull.get()),
                report_to: located.loc.marker.clone(),
                ready_first: false,
                fix_into: Some(located.branch.clone()),
            });
            decision.outcome = format!(
                "{}; agent's fix #{} merged at its proven head",
                decision.outcome,
                pull.get()
            );
        }
        Ok(decision)
    }

    /// The pseudo task of pull request `pull` fixing `located`'s todo,
    /// on its head branch `branch` (any text once it runs: the runner
    /// fetches by sha).
    async fn fix_pseudo(
        &self,
        repo: &RepoName,
        located: &Located,
        pull: IssueNumber,
        branch: &str,
    ) -> Result<Option<PseudoTask>, StoreError> {
        let Some((stored, plan, story_issue)) = self.story_plan(repo, &located.loc.story).await?
        else {
            return Ok(None);
        };
        let spec = PseudoSpec {
            id: RunSubject::FixPull {
                task: located.loc.task.clone(),
                pull,
            },
            task: located.task.clone(),
            gates: located.gates.clone(),
            branch: branch.to_owned(),
            config: located.config.clone(),
        };
        let at = self
            .pseudo_task(repo, &stored, &plan, story_issue.number, spec)
            .await?;
        Ok(Some(at))
    }

    /// What the core needs of a task for a fix pull request: its branch,
    /// state, open todo's issue, that todo's agent and the review mode.
    async fn todo_task(&self, repo: &RepoName, l: &Located) -> Result<OwnedTodoTask, StoreError> {
        let open = l.record.failure.open.as_ref();
        let open_todo = match open {
            Some(todo) => self
                .store
                .issue_record(repo, &todo.marker)
                .await?
                .map(|r| r.number),
            None => None,
        };
        let agent = open
            .and_then(|todo| l.config.roles.get(&todo.role))
            .and_then(|role| role.agent.clone());
        Ok(OwnedTodoTask {
            branch: l.branch.clone(),
            state: l.record.state,
            open_todo,
            agent,
            review: l.config.effective_review(&l.settings, l.task.review),
        })
    }

    /// The task whose branch todo is one of `closes`, if any.
    async fn located_by_todo(
        &self,
        repo: &RepoName,
        closes: &[IssueNumber],
    ) -> Result<Option<Located>, StoreError> {
        if closes.is_empty() {
            return Ok(None);
        }
        let records = self.store.issue_records(repo, "story=").await?;
        for (marker, record) in records {
            if !closes.contains(&record.number) || !record.open {
                continue;
            }
            let Some(Marker::BranchTodo { story, task, .. }) = Marker::from_key(&marker) else {
                continue;
            };
            let Some(loc) = self.task_location(repo, &story, &task).await? else {
                continue;
            };
            if let Some(located) = self.locate(repo, loc).await? {
                return Ok(Some(located));
            }
        }
        Ok(None)
    }
}

/// [`TodoTask`] with what it borrows owned.
struct OwnedTodoTask {
    branch: String,
    state: Option<TaskState>,
    open_todo: Option<IssueNumber>,
    agent: Option<taskgate_core::config::AgentRoute>,
    review: ReviewMode,
}

impl OwnedTodoTask {
    fn view(&self) -> TodoTask<'_> {
        TodoTask {
            branch: &self.branch,
            state: self.state,
            open_todo: self.open_todo,
            agent: self.agent.as_ref(),
            review: self.review,
        }
    }
}

/// One comment on pull request `number`, kept under `key`: said once,
/// edited in place when said again.
fn say_once(repo: &RepoName, number: IssueNumber, key: &str, body: String) -> Decision {
    Decision {
        changes: vec![],
        effects: vec![Effect::UpsertComment {
            repo: repo.clone(),
            issue: number,
            marker: format!("{key} {}", number.get()),
            body,
        }],
        outcome: format!("said on #{}: {key}", number.get()),
    }
}
