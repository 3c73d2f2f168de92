//! Clicks on taskgate's check runs: GitHub's "Re-run all checks" (a
//! `check_suite` re-requested), "Re-run" and the Retry / Approve buttons
//! (a `check_run` requested action), each held to the permission its
//! command needs in the repository's config.
//!
//! Owns: turning a click into a task trigger, and the refusal said where
//! the task is when the sender lacks the permission. Must not: decide the
//! retry (`core::task::on_trigger` does) or store anything.

use super::*;
use taskgate_core::ids::InstallationId;

impl Runs {
    /// A check suite requested (nothing: the push runs) or re-requested
    /// ("Re-run all checks"): a retry of the task's head, held to what
    /// `/taskgate retry` is: the sender needs the `retry` permission of the
    /// repository's config, and only the head taskgate heard pushed to the
    /// task branch runs (a fork's commit, or any other, is not).
    pub async fn on_check_suite(
        &self,
        p: &CheckSuiteEvent,
        permissions: &crate::github::Permissions,
    ) -> Result<Decision, StoreError> {
        let repo = p.repo.clone();
        let Some(branch) = p.head_branch.as_deref() else {
            return Ok(Decision::nothing("check suite without a branch"));
        };
        let Some(located) = self.locate_branch(&repo, branch).await? else {
            return Ok(Decision::nothing("not a task branch"));
        };
        if !p.is_retry() {
            // GitHub asks for a suite on every push, taskgate's own branch
            // creations and merges included; the push itself (with the
            // commits it brings) is what starts a run.
            return Ok(Decision::nothing(format!(
                "check_suite.{}: runs start from the push",
                p.action
            )));
        }
        let by = (p.sender.as_ref(), p.installation);
        let click = Click {
            repo: &repo,
            what: "check_suite.rerequested: retry".to_owned(),
            label: "“Re-run all checks”",
            command: "retry",
            config: &located.config,
            tell: located.answered_on(),
            at: &p.head_sha,
        };
        if let Some(refused) = refuse_sender(by, click, permissions).await {
            return Ok(refused);
        }
        let ctx = located.context(&repo, self.now());
        let trigger = Trigger::Retry {
            sha: Some(p.head_sha.clone()),
            gate: None,
            by: self.doer(p.sender.as_ref()),
        };
        let d = on_trigger(&located.record, &trigger, &ctx);
        Ok(self.finish(&repo, &located, d))
    }

    /// "Re-run" on one of taskgate's check runs, or its Retry or Approve
    /// branch todo button.
    pub async fn on_check_run(
        &self,
        p: &CheckRunEvent,
        app_id: u64,
        permissions: &crate::github::Permissions,
    ) -> Result<Decision, StoreError> {
        let repo = p.repo.clone();
        let Some(key) = p.gate_key(app_id) else {
            return Ok(Decision::nothing("not a taskgate gate check run"));
        };
        let Some(command) = p.command() else {
            return Ok(Decision::nothing(format!(
                "check_run.{}: nothing to do",
                p.action
            )));
        };
        if let Some(milestone) = key.task.milestone() {
            return self
                .milestone_check_run(&repo, p, &key, milestone.as_str(), command, permissions)
                .await;
        }
        let found = match key.task.task() {
            Some(task) => self.task_location(&repo, &key.story, task).await?,
            None => None,
        };
        let Some(loc) = found else {
            return Ok(Decision::nothing("the check run's task is not known"));
        };
        let Some(located) = self.locate(&repo, loc).await? else {
            return Ok(Decision::nothing("the check run's task is not in the plan"));
        };
        // A click needs what the command needs (GitHub lets anyone with
        // write access press a button; the repo config may ask for more).
        let by = (p.sender.as_ref(), p.installation);
        let click = Click {
            repo: &repo,
            what: format!("check_run.{}: {command}", p.action),
            label: p.click_label(),
            command,
            config: &located.config,
            tell: located.answered_on(),
            at: &p.head_sha,
        };
        if let Some(refused) = refuse_sender(by, click, permissions).await {
            return Ok(refused);
        }
        if command == "approve-branch" {
            return self
                .approve_branch_clicked(&repo, &located, p.sender.as_ref())
                .await;
        }
        let ctx = located.context(&repo, self.now());
        let trigger = Trigger::Retry {
            sha: Some(p.head_sha.clone()),
            gate: Some(key.gate),
            by: self.doer(p.sender.as_ref()),
        };
        let d = on_trigger(&located.record, &trigger, &ctx);
        Ok(self.finish(&repo, &located, d))
    }
}

/// A click on one of taskgate's check runs, as `refuse_sender` judges it.
pub(super) struct Click<'a> {
    pub(super) repo: &'a RepoName,
    /// For the log: the event and the command (`check_run.rerequested: retry`).
    pub(super) what: String,
    /// As GitHub labels it, for the reply.
    pub(super) label: &'a str,
    pub(super) command: &'a str,
    pub(super) config: &'a taskgate_core::config::RepoConfig,
    /// Where the clicker is told of a refusal.
    pub(super) tell: IssueNumber,
    pub(super) at: &'a CommitSha,
}

impl Located {
    /// Where a click on this task's check runs is answered: its pull
    /// request, else its issue.
    pub(super) fn answered_on(&self) -> IssueNumber {
        self.record.pr.map_or(self.loc.issue, |p| p.number)
    }
}

/// Why a click on a check run's button, "Re-run" or "Re-run all checks"
/// is refused: its sender lacks what the command needs (GitHub lets anyone
/// with write access press a button; the repo config may ask for more), or
/// the payload names no sender. The sender is told where the check run's
/// task or story is, once per click and commit: GitHub shows nothing where
/// the click was made. `None`: allowed.
pub(super) async fn refuse_sender(
    (sender, installation): (Option<&taskgate_core::Actor>, Option<InstallationId>),
    click: Click<'_>,
    permissions: &crate::github::Permissions,
) -> Option<Decision> {
    let needs = click.config.required_permission(click.command);
    let has = match (sender, installation) {
        (Some(s), Some(i)) => permissions
            .level(i, click.repo, s.id, &s.login)
            .await
            .unwrap_or(None),
        _ => None,
    };
    if has >= Some(needs) {
        return None;
    }
    let mut refused = Decision::nothing(format!(
        "{} refused: the sender lacks {} permission",
        click.what,
        needs.name()
    ));
    if let Some(sender) = sender {
        let syntax = crate::app::commands::syntax_of(click.config);
        refused.effects.push(taskgate_core::render::click_refused(
            &taskgate_core::render::ClickRefused {
                repo: click.repo,
                issue: click.tell,
                click: click.label,
                command: click.command,
                needs,
                login: &sender.login,
                has,
                syntax: &syntax,
                at: click.at,
            },
        ));
    }
    Some(refused)
}
