//! `check_run`: "Re-run" or one of the buttons on a check run.
//!
//! Owns: whether the check run is one of taskgate's gate check runs (made
//! by this App, with a gate's key), and which command a click asks for.
//! Must not: look anything up (whether the task exists is the shell's).

use super::action::CheckRunAction;
use crate::ids::{CommitSha, InstallationId, RepoName};
use crate::task::{parse_check_key, CheckKey};
use crate::{Actor, APPROVE_BRANCH_ACTION, RETRY_ACTION};

/// A check run webhook, in taskgate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub action: CheckRunAction,
    pub head_sha: CommitSha,
    /// The App that made the check run, when the payload names it.
    pub app: Option<u64>,
    /// What its maker keyed it with (taskgate: a [`CheckKey`]).
    pub external_id: Option<String>,
    /// The button pressed (`requested_action`): its identifier.
    pub button: Option<String>,
    /// Who pressed "Re-run" or the button.
    pub sender: Option<Actor>,
}

impl CheckRunEvent {
    /// The gate it checks, when it is taskgate's own: made by the App
    /// `app_id` (or by an App the payload does not name) and keyed by a
    /// gate. `None`: another App's check run, or not a gate's.
    pub fn gate_key(&self, app_id: u64) -> Option<CheckKey> {
        let ours = self.app.is_none_or(|id| id == app_id);
        (self.external_id.as_deref())
            .and_then(parse_check_key)
            .filter(|_| ours)
    }

    /// The command a click asks for: `retry` ("Re-run" or the Retry
    /// button) or `approve-branch` (its button); `None` for anything else.
    pub fn command(&self) -> Option<&'static str> {
        let button = self.button.as_deref();
        match self.action {
            CheckRunAction::Rerequested => Some("retry"),
            CheckRunAction::RequestedAction if button == Some(RETRY_ACTION) => Some("retry"),
            CheckRunAction::RequestedAction if button == Some(APPROVE_BRANCH_ACTION) => {
                Some("approve-branch")
            }
            CheckRunAction::RequestedAction | CheckRunAction::Other(_) => None,
        }
    }

    /// The click as GitHub labels it, for a reply.
    pub fn click_label(&self) -> &'static str {
        match self.action {
            CheckRunAction::Rerequested => "“Re-run”",
            _ => "A click on the check run's button",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::check_key;

    fn run(
        action: &str,
        app: Option<u64>,
        key: Option<&str>,
        button: Option<&str>,
    ) -> CheckRunEvent {
        CheckRunEvent {
            repo: RepoName::parse("o/r").unwrap(),
            installation: None,
            action: CheckRunAction::parse(action),
            head_sha: crate::ids::sha("abc"),
            app,
            external_id: key.map(str::to_owned),
            button: button.map(str::to_owned),
            sender: None,
        }
    }

    #[test]
    fn only_this_apps_gate_check_runs_are_taskgates() {
        let key = check_key(
            &crate::ids::StoryId::new("s"),
            &crate::task::RunSubject::Task("t".into()),
            2,
            "unit",
        );
        let ours = run("rerequested", Some(7), Some(&key), None).gate_key(7);
        assert_eq!(
            ours.map(|k| (k.task, k.attempt, k.gate)),
            Some((crate::task::RunSubject::Task("t".into()), 2, "unit".into()))
        );
        assert!(run("rerequested", None, Some(&key), None)
            .gate_key(7)
            .is_some());
        assert!(run("rerequested", Some(8), Some(&key), None)
            .gate_key(7)
            .is_none());
        assert!(run("rerequested", Some(7), Some("ci-42"), None)
            .gate_key(7)
            .is_none());
        assert!(run("rerequested", Some(7), None, None)
            .gate_key(7)
            .is_none());
    }

    #[test]
    fn re_run_and_the_retry_button_retry_and_the_approve_button_approves() {
        assert_eq!(
            run("rerequested", None, None, None).command(),
            Some("retry")
        );
        let retry = run("requested_action", None, None, Some(RETRY_ACTION));
        assert_eq!(retry.command(), Some("retry"));
        let approve = run("requested_action", None, None, Some(APPROVE_BRANCH_ACTION));
        assert_eq!(approve.command(), Some("approve-branch"));
        assert_eq!(
            run("requested_action", None, None, Some("x")).command(),
            None
        );
        assert_eq!(run("created", None, None, None).command(), None);
    }

    #[test]
    fn a_click_is_labelled_as_github_labels_it() {
        assert_eq!(
            run("rerequested", None, None, None).click_label(),
            "“Re-run”"
        );
        let button = run("requested_action", None, None, Some(RETRY_ACTION));
        assert_eq!(button.click_label(), "A click on the check run's button");
    }
}
