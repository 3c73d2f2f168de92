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
use taskgate_core::refusal::{Refusal, Refused};
use taskgate_core::task::{self, ReviewCommand, ReviewInputs, Reviewer, Trigger};
use taskgate_core::Decision;

/// A task command's result: `None` when the issue is not a task's.
pub type TaskCommand = Option<Result<Decision, Refused>>;

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
    ) -> Result<TaskCommand, StoreError> {
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
    ) -> Result<TaskCommand, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(None);
        };
        let now = self.runs.now();
        let ctx = located.context(repo, now);
        let role = located
            .task
            .role
            .as_ref()
            .map(|r| r.value.clone())
            .unwrap_or_else(|| "coder".to_owned());
        let configured = located.config.roles.get(&role);
        let inputs = ReviewInputs {
            role: &role,
            assignees: configured.map(|r| r.assignees.as_slice()).unwrap_or(&[]),
            agent_workflow: configured.and_then(|r| r.agent_workflow()),
            allow_self_approval: located.config.allow_self_approval,
        };
        Ok(Some(
            match task::on_review_command(&located.record, command, by, &ctx, &inputs) {
                Ok(d) => {
                    let (actor, via) = audited;
                    let (action, reason) = audit::review_action(command, via);
                    let mut decision = into_decision(repo, &located, d);
                    let entry = audit_task(repo, now, actor, action, &located, via);
                    decision.changes.push(entry.because(reason).change());
                    Ok(decision)
                }
                Err(why) => Err(Refused {
                    decision: Decision::nothing(format!("task {}: {why}", located.loc.task)),
                    refusal: Refusal::Review(why),
                }),
            },
        ))
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
    ) -> Result<Option<(Decision, bool)>, StoreError> {
        let actor = AuditActor {
            id: None,
            login: by.login,
        };
        Ok(self
            .review(repo, issue, command, by, (actor, AuditVia::Api))
            .await?
            .map(|r| match r {
                Ok(d) => (d, true),
                Err(refused) => (refused.decision, false),
            }))
    }

    /// `/taskgate retry [gate]` on a task issue or its pull request.
    pub async fn retry_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        gate: Option<String>,
    ) -> Result<TaskCommand, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(None);
        };
        let ctx = located.context(repo, self.runs.now());
        let d = on_trigger(&located.record, &Trigger::Retry { sha: None, gate }, &ctx);
        if d.run.is_none() {
            return Ok(Some(Err(Refused {
                decision: Decision::nothing(format!("task {}: {}", located.loc.task, d.outcome)),
                refusal: Refusal::Retry(d.outcome),
            })));
        }
        Ok(Some(Ok(self.runs.finish(repo, &located, d))))
    }

    /// `/taskgate approve-branch`: opens the branch todo manual mode
    /// proposed.
    pub async fn approve_branch_command(
        &self,
        repo: &RepoName,
        issue: IssueNumber,
        by: AuditActor<'_>,
    ) -> Result<TaskCommand, StoreError> {
        let Some(located) = self.runs.locate_issue_or_pull(repo, issue).await? else {
            return Ok(None);
        };
        let (d, opened) = (self.runs)
            .approve_branch_audited(repo, &located, by, AuditVia::Command)
            .await?;
        Ok(Some(if opened {
            Ok(d)
        } else {
            Err(Refused {
                decision: Decision::nothing(d.outcome),
                refusal: Refusal::NoBranchTodo,
            })
        }))
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
