//! The task side of comment commands: finding the task (or story) an issue
//! or pull request belongs to, and running the pure
//! review, retry and branch-todo transitions and read-only views on it.
//! The dispatcher (`app::commands`) checks permission and answers; this
//! only loads, calls the core and hands back its decision or its typed
//! [`Refusal`]. A decision that took effect carries its audit entry
//! (`core::audit`); a refusal carries none.

use super::{into_decision, on_trigger, Located, Runs};
use crate::store::StoreError;
use taskgate_core::audit::{self, task_object, AuditAction, AuditActor, AuditEntry, AuditVia};
use taskgate_core::ids::{IssueNumber, RepoName};
use taskgate_core::plan::TaskState;
use taskgate_core::refusal::{Refusal, Refused};
use taskgate_core::task::{
    self, GitHubReview, ReviewCommand, ReviewInputs, ReviewRefusal, Reviewer, Trigger,
};
use taskgate_core::Decision;

use crate::app::Handled;

/// The task side of the comment commands and the API's review: the
/// only task operations `app::commands` and the HTTP API reach.
#[derive(Clone)]
pub struct TaskCommands {
    runs: Runs,
}

impl Runs {
    /// The commands' handle on these runs.
    pub fn commands(&self) -> TaskCommands {
        TaskCommands { runs: self.clone() }
    }

    /// The check run's "Approve branch todo" button, pressed by `sender`
    /// (permission checked by the caller).
    pub(super) async fn approve_branch_clicked(
        &self,
        repo: &RepoName,
        located: &Located,
        sender: Option<&taskgate_core::Actor>,
    ) -> Result<Decision, StoreError> {
        let by = match sender {
            Some(user) => AuditActor::user(user.id, &user.login),
            None => AuditActor {
                id: None,
                login: "someone unknown",
            },
        };
        let (d, _) = self
            .approve_branch_audited(repo, located, by, AuditVia::Button)
            .await?;
        Ok(d)
    }

    /// Opens the proposed branch todo and, when it did, audits it.
    async fn approve_branch_audited(
        &self,
        repo: &RepoName,
        located: &Located,
        by: AuditActor<'_>,
        via: AuditVia,
    ) -> Result<(Decision, bool), StoreError> {
        let now = self.now();
        let (mut d, opened) = self.approve_branch(repo, located).await?;
        if opened {
            let entry = audit_task(repo, now, by, AuditAction::ApproveBranch, located, via);
            d.changes.push(entry.change());
        }
        Ok((d, opened))
    }
}

impl TaskCommands {
    /// `/approve`, `/revise`, `/reject`, `/pause`, `/resume` on a task's
    /// issue or pull request.
    pub async fn review_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        command: &ReviewCommand,
        by: Reviewer<'_>,
    ) -> Result<Handled, StoreError> {
        let actor = AuditActor::user(by.id, by.login);
        self.review(repo, issue, command, by, (actor, AuditVia::Command))
            .await
    }

    /// A review command as `by`, audited as `audited` when it takes effect.
    async fn review(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        command: &ReviewCommand,
        by: Reviewer<'_>,
        audited: (AuditActor<'_>, AuditVia),
    ) -> Result<Handled, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(Handled::NotMine);
        };
        let ctx = located.context(repo, self.runs.now());
        let role = role_of(&located);
        let inputs = review_inputs(&located, &role);
        let decided = task::on_review_command(&located.record, command, by, &ctx, &inputs);
        let (actor, via) = audited;
        let (action, reason) = audit::review_action(command, via);
        let audit = (actor, action, reason, via);
        Ok(self.audited(repo, &located, decided, audit).await?.into())
    }

    /// Whether `pr` is a task's pull request.
    pub async fn is_task_pull(&self, repo: &RepoName, pr: IssueNumber) -> Result<bool, StoreError> {
        Ok(self.runs.store.task_by_pull(repo, pr).await?.is_some())
    }

    /// A GitHub review of the task pull request `pr` by `by` (permission
    /// checked by the caller): not its own when `pr` is not a task's.
    pub async fn github_review(
        &self,
        repo: &RepoName,
        pr: IssueNumber,
        review: GitHubReview<'_>,
        by: Reviewer<'_>,
    ) -> Result<Handled, StoreError> {
        let Some(loc) = self.runs.store.task_by_pull(repo, pr).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(located) = self.runs.locate(repo, loc).await? else {
            return Ok(Handled::NotMine);
        };
        let ctx = located.context(repo, self.runs.now());
        let role = role_of(&located);
        let inputs = review_inputs(&located, &role);
        let decided = task::on_github_review(&located.record, review, by, &ctx, &inputs);
        let (action, reason) = match review {
            GitHubReview::Approved { .. } => (AuditAction::Approve, None),
            GitHubReview::ChangesRequested { body } => (AuditAction::Revise, Some(body)),
            GitHubReview::Dismissed { .. } => (AuditAction::ApprovalDismissed, None),
        };
        let audit = (
            AuditActor::user(by.id, by.login),
            action,
            reason,
            AuditVia::Review,
        );
        Ok(self.audited(repo, &located, decided, audit).await?.into())
    }

    /// A review decision as the processor's, audited when it took effect;
    /// an approval of a head merged past review completes the task
    /// (`core::task::merged_past`) and starts what waited for it.
    async fn audited(
        &self,
        repo: &RepoName,
        located: &Located,
        decided: Result<task::TaskDecision, ReviewRefusal>,
        (actor, action, reason, via): (AuditActor<'_>, AuditAction, Option<&str>, AuditVia),
    ) -> Result<Result<Decision, Refused>, StoreError> {
        let d = match decided {
            Ok(d) => d,
            Err(why) => {
                return Ok(Err(Refused {
                    decision: Decision::nothing(format!("task {}: {why}", located.loc.task)),
                    refusal: Refusal::Review(why),
                }))
            }
        };
        let completed = d.record.state == Some(TaskState::Completed)
            && located.record.state != Some(TaskState::Completed);
        let now = self.runs.now();
        let mut decision = into_decision(repo, located, d);
        let entry = audit_task(repo, now, actor, action, located, via);
        decision.changes.push(entry.because(reason).change());
        if completed {
            let story_head = located.record.merged_as.as_ref();
            for more in self
                .runs
                .after_completion(repo, located, story_head)
                .await?
            {
                decision.merge(more);
            }
        }
        Ok(Ok(decision))
    }

    /// [`TaskCommands::review_command`] for the API's accept and reject, whose
    /// refusal is only recorded: the decision either way. Audited as the
    /// API's (`api_accept`, `api_reject`), by `by.login` without a user id:
    /// the API knows a token, not a person.
    pub async fn on_review_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        command: &ReviewCommand,
        by: Reviewer<'_>,
    ) -> Result<Handled, StoreError> {
        let actor = AuditActor {
            id: None,
            login: by.login,
        };
        self.review(repo, issue, command, by, (actor, AuditVia::Api))
            .await
    }

    /// `/taskgate retry [gate]` on a task issue or its pull request.
    pub async fn retry_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        gate: Option<String>,
        by: taskgate_core::task::Doer,
    ) -> Result<Handled, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(Handled::NotMine);
        };
        let ctx = located.context(repo, self.runs.now());
        let d = on_trigger(
            &located.record,
            &Trigger::Retry {
                sha: None,
                gate,
                by,
            },
            &ctx,
        );
        if d.run.is_none() {
            return Ok(Handled::Refused(Refused {
                decision: Decision::nothing(format!("task {}: {}", located.loc.task, d.outcome)),
                refusal: Refusal::Retry(d.outcome),
            }));
        }
        Ok(Handled::Decided(self.runs.finish(repo, &located, d)))
    }

    /// `/taskgate approve-branch`: opens the branch todo manual mode
    /// proposed.
    pub async fn approve_branch_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        by: AuditActor<'_>,
    ) -> Result<Handled, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(Handled::NotMine);
        };
        let (d, opened) = (self.runs)
            .approve_branch_audited(repo, &located, by, AuditVia::Command)
            .await?;
        Ok(if opened {
            Handled::Decided(d)
        } else {
            Handled::Refused(Refused {
                decision: Decision::nothing(d.outcome),
                refusal: Refusal::NoBranchTodo,
            })
        })
    }

    /// `/status` (or `/explain` when `explain`) on a task's issue or pull
    /// request, or `/status` on a story issue. `None` elsewhere.
    pub async fn command_view(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        explain: bool,
    ) -> Result<Option<String>, StoreError> {
        if let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? {
            let render = if explain {
                task::render_explain
            } else {
                task::render_status
            };
            return Ok(Some(render(located.loc.task.as_str(), &located.record)));
        }
        if explain {
            return Ok(None);
        }
        let Some(story) = self.runs.store.story_by_issue(repo, issue).await? else {
            return Ok(None);
        };
        let Some(plan) = self.runs.store.story(repo, &story).await? else {
            return Ok(None);
        };
        let Some(parsed) = self.runs.store.plans().parse(&plan.plan) else {
            return Ok(None);
        };
        let records = self.runs.store.task_records(repo, &story).await?;
        let tasks: Vec<(String, String)> = parsed
            .walk()
            .into_iter()
            .filter(|r| !r.task.is_parent())
            .map(|r| {
                let id = r.task.id.value.as_str().to_owned();
                let state = records
                    .get(&id)
                    .and_then(|rec| rec.state)
                    .map(|s| s.name())
                    .unwrap_or("pending");
                (id, state.to_owned())
            })
            .collect();
        Ok(Some(task::render_story_status(story.as_str(), &tasks)))
    }
}

/// The role a task's `/revise` feedback goes to.
fn role_of(located: &Located) -> String {
    located
        .task
        .role
        .as_ref()
        .map(|r| r.value.clone())
        .unwrap_or_else(|| "coder".to_owned())
}

/// What the review transitions need of the task's role and config.
fn review_inputs<'a>(located: &'a Located, role: &'a str) -> ReviewInputs<'a> {
    let configured = located.config.roles.get(role);
    ReviewInputs {
        role,
        assignees: configured.map(|r| r.assignees.as_slice()).unwrap_or(&[]),
        agent_workflow: configured.and_then(|r| r.agent_workflow()),
        allow_self_approval: located.config.allow_self_approval,
    }
}

/// The audit entry of a decision on a located task.
fn audit_task(
    repo: &RepoName,
    now: i64,
    by: AuditActor<'_>,
    action: AuditAction,
    located: &Located,
    via: AuditVia,
) -> AuditEntry {
    let object = task_object(located.loc.issue, located.loc.task.as_str());
    AuditEntry::new(repo, now, by, action, object, via)
}
