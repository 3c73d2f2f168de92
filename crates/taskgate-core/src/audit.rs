//! The audit log: every human decision that took
//! effect, and every budget decision the failure loop makes for an agent
//! (`core::failure::budget`), as one plain record — who (by user id and login), when, what,
//! on which object, the reason given, and how it arrived.
//!
//! Owns: [`AuditEntry`], its [`AuditAction`]s and [`AuditVia`]s, the way
//! an object is named ([`task_object`], [`story_object`], [`REPOSITORY`]),
//! and which action a review command is ([`review_action`]).
//! Must not: read the clock (the time comes in from the shell, as `at_s`),
//! or store anything: an entry travels as [`Change::Audited`] in the same
//! decision as the change it records, so it is written in the same
//! transaction, once, and never for a refusal.
//!
//! Adding an entry for a decision is one expression:
//! `AuditEntry::new(repo, now_s, by, AuditAction::Ship, story_object(issue, key), AuditVia::Label).change()`.

use serde::{Deserialize, Serialize};

use super::event::{Actor, Change};
use super::task::ReviewCommand;
use crate::ids::{IssueNumber, RepoName, StoryId, UserId};

/// What a person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Approve,
    /// `approve --override <reason>`: accepted despite a red checker.
    Override,
    Revise,
    Reject,
    Pause,
    Resume,
    Ship,
    Freeze,
    Unfreeze,
    Rollback,
    /// `POST /api/tasks/{id}/accept`.
    ApiAccept,
    /// `POST /api/tasks/{id}/reject`.
    ApiReject,
    /// `approve-branch`: the proposed branch todo opened (manual mode).
    ApproveBranch,
    /// `unquarantine <test>`: a flaky test's quarantine lifted
    /// (`core::flaky`).
    Unquarantine,
    /// `accept-commits <commit>`: commits on a story branch that no task
    /// PR made, accepted by name (`core::ship::vet`).
    AcceptCommits,
    /// The failure loop counted a failed run toward a branch todo's
    /// attempts (`max_debug_attempts`).
    AttemptCounted,
    /// A budget was spent: a todo's attempts, its lifetime, the story's
    /// open todos, or the last level's attempts (escalated).
    BudgetSpent,
    /// A branch todo closed and taskgate stopped its agent.
    AgentStopped,
    /// A task pull request merged into the story branch before its gates
    /// passed (`core::task::merged_past`): recorded with who merged it.
    MergedPastGates,
    /// A task pull request under `review: human` merged into the story
    /// branch at a head no one approved (`core::task::merged_past`).
    MergedPastReview,
    /// An approval taken back: its GitHub review was dismissed.
    ApprovalDismissed,
}

impl AuditAction {
    pub const ALL: [AuditAction; 21] = [
        AuditAction::Approve,
        AuditAction::Override,
        AuditAction::Revise,
        AuditAction::Reject,
        AuditAction::Pause,
        AuditAction::Resume,
        AuditAction::Ship,
        AuditAction::Freeze,
        AuditAction::Unfreeze,
        AuditAction::Rollback,
        AuditAction::ApiAccept,
        AuditAction::ApiReject,
        AuditAction::ApproveBranch,
        AuditAction::Unquarantine,
        AuditAction::AcceptCommits,
        AuditAction::AttemptCounted,
        AuditAction::BudgetSpent,
        AuditAction::AgentStopped,
        AuditAction::MergedPastGates,
        AuditAction::MergedPastReview,
        AuditAction::ApprovalDismissed,
    ];

    /// The stored and served name (serde's): `approve`, `api_accept`, …
    pub fn name(self) -> &'static str {
        match self {
            AuditAction::Approve => "approve",
            AuditAction::Override => "override",
            AuditAction::Revise => "revise",
            AuditAction::Reject => "reject",
            AuditAction::Pause => "pause",
            AuditAction::Resume => "resume",
            AuditAction::Ship => "ship",
            AuditAction::Freeze => "freeze",
            AuditAction::Unfreeze => "unfreeze",
            AuditAction::Rollback => "rollback",
            AuditAction::ApiAccept => "api_accept",
            AuditAction::ApiReject => "api_reject",
            AuditAction::ApproveBranch => "approve_branch",
            AuditAction::Unquarantine => "unquarantine",
            AuditAction::AcceptCommits => "accept_commits",
            AuditAction::AttemptCounted => "attempt_counted",
            AuditAction::BudgetSpent => "budget_spent",
            AuditAction::AgentStopped => "agent_stopped",
            AuditAction::MergedPastGates => "merged_past_gates",
            AuditAction::MergedPastReview => "merged_past_review",
            AuditAction::ApprovalDismissed => "approval_dismissed",
        }
    }

    /// The action named `name` (as [`AuditAction::name`] writes it).
    pub fn from_name(name: &str) -> Option<AuditAction> {
        AuditAction::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// How the decision reached taskgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditVia {
    /// A comment command.
    Command,
    /// A label (`ship` on the story PR).
    Label,
    /// The HTTP API.
    Api,
    /// A check run's button.
    Button,
    /// A pull request merged on GitHub (by a person or an agent's
    /// account), not through taskgate.
    Merge,
    /// taskgate's failure loop, on its own (a run's verdict, a todo's
    /// lifetime): no person decided.
    Loop,
    /// A review on GitHub ("Approve", "Request changes", a dismissal).
    Review,
}

impl AuditVia {
    pub const ALL: [AuditVia; 7] = [
        AuditVia::Command,
        AuditVia::Label,
        AuditVia::Api,
        AuditVia::Button,
        AuditVia::Merge,
        AuditVia::Loop,
        AuditVia::Review,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AuditVia::Command => "command",
            AuditVia::Label => "label",
            AuditVia::Api => "api",
            AuditVia::Button => "button",
            AuditVia::Merge => "merge",
            AuditVia::Loop => "loop",
            AuditVia::Review => "review",
        }
    }

    pub fn from_name(name: &str) -> Option<AuditVia> {
        AuditVia::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl From<super::ship::ShipVia> for AuditVia {
    fn from(via: super::ship::ShipVia) -> AuditVia {
        match via {
            super::ship::ShipVia::Label => AuditVia::Label,
            super::ship::ShipVia::Command => AuditVia::Command,
            super::ship::ShipVia::Api => AuditVia::Api,
        }
    }
}

/// Who decided: a GitHub user by id (the login is for display), or the
/// HTTP API's token holder (no id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditActor<'a> {
    pub id: Option<UserId>,
    pub login: &'a str,
}

impl<'a> AuditActor<'a> {
    pub fn user(id: UserId, login: &'a str) -> AuditActor<'a> {
        AuditActor {
            id: Some(id),
            login,
        }
    }
}

impl<'a> From<&'a Actor> for AuditActor<'a> {
    fn from(actor: &'a Actor) -> AuditActor<'a> {
        AuditActor::user(actor.id, &actor.login)
    }
}

/// The login the HTTP API's decisions are recorded under: the API knows a
/// token, not a person.
pub const API_LOGIN: &str = "the HTTP API";

/// The login taskgate's own budget decisions are recorded under (no id).
pub const LOOP_LOGIN: &str = "taskgate";

/// One human decision that took effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub repo: RepoName,
    /// Unix seconds, from the shell's clock.
    pub at_s: i64,
    pub actor_id: Option<UserId>,
    pub actor_login: String,
    pub action: AuditAction,
    /// `task #12 (check)`, `story #3 (file:momentum)`, `repository`.
    pub object: String,
    pub reason: Option<String>,
    pub via: AuditVia,
}

impl AuditEntry {
    pub fn new(
        repo: &RepoName,
        at_s: i64,
        by: AuditActor<'_>,
        action: AuditAction,
        object: impl Into<String>,
        via: AuditVia,
    ) -> AuditEntry {
        AuditEntry {
            repo: repo.clone(),
            at_s,
            actor_id: by.id,
            actor_login: by.login.to_owned(),
            action,
            object: object.into(),
            reason: None,
            via,
        }
    }

    /// This entry with the reason the person gave (`None`: none given).
    pub fn because(self, reason: Option<impl Into<String>>) -> AuditEntry {
        AuditEntry {
            reason: reason.map(Into::into),
            ..self
        }
    }

    /// The state change that records this entry.
    pub fn change(self) -> Change {
        Change::Audited(self)
    }
}

/// The object of a decision about the whole repository (freeze, unfreeze).
pub const REPOSITORY: &str = "repository";

/// `task #12 (check)`: a task by its issue and plan id.
pub fn task_object(issue: IssueNumber, task: &str) -> String {
    format!("task #{issue} ({task})")
}

/// `story #3 (file:momentum)`: a story by its issue and key.
pub fn story_object(issue: IssueNumber, story: &StoryId) -> String {
    format!("story #{issue} ({story})")
}

/// The action a review command is, and the reason it carries: `approve
/// --override` is an override, and the API's approve and reject are its
/// own actions (`via` [`AuditVia::Api`]).
pub fn review_action(command: &ReviewCommand, via: AuditVia) -> (AuditAction, Option<&str>) {
    let api = via == AuditVia::Api;
    match command {
        ReviewCommand::Approve {
            override_reason: Some(reason),
        } => (AuditAction::Override, Some(reason)),
        ReviewCommand::Approve {
            override_reason: None,
        } if api => (AuditAction::ApiAccept, None),
        ReviewCommand::Approve {
            override_reason: None,
        } => (AuditAction::Approve, None),
        ReviewCommand::Revise { feedback } => (AuditAction::Revise, Some(feedback)),
        ReviewCommand::Reject { reason } if api => (AuditAction::ApiReject, Some(reason)),
        ReviewCommand::Reject { reason } => (AuditAction::Reject, Some(reason)),
        ReviewCommand::Pause => (AuditAction::Pause, None),
        ReviewCommand::Resume => (AuditAction::Resume, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> RepoName {
        RepoName::parse("acme/strategies").unwrap()
    }

    #[test]
    fn names_are_serdes_and_read_back() {
        for action in AuditAction::ALL {
            let json = serde_json::to_string(&action).unwrap();
            assert_eq!(json, format!("\"{}\"", action.name()));
            assert_eq!(AuditAction::from_name(action.name()), Some(action));
        }
        for via in AuditVia::ALL {
            let json = serde_json::to_string(&via).unwrap();
            assert_eq!(json, format!("\"{}\"", via.name()));
            assert_eq!(AuditVia::from_name(via.name()), Some(via));
        }
        assert_eq!(AuditAction::from_name("ApiAccept"), None);
        assert_eq!(AuditAction::ApproveBranch.name(), "approve_branch");
    }

    #[test]
    fn an_entry_is_one_expression_with_its_reason_and_its_change() {
        let e = AuditEntry::new(
            &repo(),
            1_795_000_000,
            AuditActor::user(UserId::new(7), "alice"),
            AuditAction::Freeze,
            REPOSITORY,
            AuditVia::Command,
        )
        .because(Some("release in progress"));
        assert_eq!(e.actor_id, Some(UserId::new(7)));
        assert_eq!(e.actor_login, "alice");
        assert_eq!(e.reason.as_deref(), Some("release in progress"));
        assert_eq!(e.clone().change(), Change::Audited(e));
        let none = AuditEntry::new(
            &repo(),
            0,
            AuditActor {
                id: None,
                login: API_LOGIN,
            },
            AuditAction::ApiAccept,
            task_object(IssueNumber::new(12), "check"),
            AuditVia::Api,
        )
        .because(None::<String>);
        assert_eq!(none.reason, None);
        assert_eq!(none.object, "task #12 (check)");
        assert_eq!(
            story_object(IssueNumber::new(3), &StoryId::new("file:momentum")),
            "story #3 (file:momentum)"
        );
    }

    #[test]
    fn each_review_command_is_its_action_with_its_reason() {
        let approve = |r: Option<&str>| ReviewCommand::Approve {
            override_reason: r.map(str::to_owned),
        };
        let c = AuditVia::Command;
        assert_eq!(
            review_action(&approve(None), c),
            (AuditAction::Approve, None)
        );
        assert_eq!(
            review_action(&approve(Some("flaky CI")), c),
            (AuditAction::Override, Some("flaky CI"))
        );
        let revise = ReviewCommand::Revise {
            feedback: "use v2".into(),
        };
        assert_eq!(
            review_action(&revise, c),
            (AuditAction::Revise, Some("use v2"))
        );
        let reject = ReviewCommand::Reject {
            reason: "not needed".into(),
        };
        assert_eq!(
            review_action(&reject, c),
            (AuditAction::Reject, Some("not needed"))
        );
        assert_eq!(
            review_action(&ReviewCommand::Pause, c),
            (AuditAction::Pause, None)
        );
        assert_eq!(
            review_action(&ReviewCommand::Resume, c),
            (AuditAction::Resume, None)
        );
        // Through the API, accept and reject are the API's own actions.
        let api = AuditVia::Api;
        assert_eq!(
            review_action(&approve(None), api),
            (AuditAction::ApiAccept, None)
        );
        assert_eq!(
            review_action(&reject, api),
            (AuditAction::ApiReject, Some("not needed"))
        );
    }

    #[test]
    fn a_ship_is_audited_as_it_arrived() {
        use crate::ship::ShipVia;
        assert_eq!(AuditVia::from(ShipVia::Label), AuditVia::Label);
        assert_eq!(AuditVia::from(ShipVia::Command), AuditVia::Command);
        assert_eq!(AuditVia::from(ShipVia::Api), AuditVia::Api);
    }
}
