//! Who says "done" on a task pull request (issue 50). A draft taskgate
//! opened is its own signal that work is under way; a draft someone made
//! (GitHub's "Convert to draft", or a draft a person opened) is theirs.
//! When a branch todo closes because its agent's push turned every gate
//! green, with no person's action since it opened, under `review: auto`,
//! taskgate marks its own draft ready and merges it in one effect
//! ([`ready_when_fixed`]), so the task completes as any proven task does.
//! A person's draft, a role's `agent: { …, ready: never }` or a person's
//! action during the todo leave the draft for a person.
//!
//! Owns: [`DraftOf`] and how pull request events set it ([`note_pull`]),
//! [`Doer`] (taskgate, an agent, a person: who did something, as the fix
//! rate counts it), "Convert to draft" ([`on_converted_to_draft`]) and
//! the rule of [`ready_when_fixed`]. Must not: do IO, or know logins
//! beyond the App's bot, which the shell names.

use serde::{Deserialize, Serialize};

use super::decide::{merge_pull, proven_at};
use super::{PullRef, TaskContext, TaskDecision, TaskRecord};
use crate::config::{AgentReady, RepoConfig, ReviewMode};
use crate::effect::Effect;
use crate::webhook::action::PullRequestAction;
use crate::Actor;

/// Whose signal a task PR's draft is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DraftOf {
    /// taskgate opened the PR as a draft: work is under way, and taskgate
    /// may mark it ready when an agent's fix is green.
    Taskgate,
    /// A person or an agent made it a draft: theirs to mark ready.
    Others,
}

/// Who did something to a task (pushed, asked for a retry, marked its PR
/// ready), as the fix rate counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doer {
    /// taskgate's own App.
    Taskgate,
    /// An account GitHub marks a bot (`type: Bot`): an agent's App,
    /// Copilot, `github-actions[bot]`.
    Agent,
    /// Anyone else; also a sender GitHub did not name.
    Person,
}

impl Doer {
    /// Who `actor` is, `app_bot` being the App's bot login (`<slug>[bot]`)
    /// when the shell knows it.
    pub fn of(actor: Option<&Actor>, app_bot: Option<&str>) -> Doer {
        match actor {
            Some(a) if app_bot.is_some_and(|bot| a.login.eq_ignore_ascii_case(bot)) => {
                Doer::Taskgate
            }
            Some(a) if a.is_bot => Doer::Agent,
            Some(_) | None => Doer::Person,
        }
    }
}

/// The record once a `pull_request` event of the task PR (`action`, with
/// the PR as the event shows it, sent by `by`) is known: whose draft it
/// is, and a person's ready for review counted as a person's action.
pub fn note_pull(
    record: &TaskRecord,
    action: &PullRequestAction,
    pull: PullRef,
    by: Doer,
) -> TaskRecord {
    let mut next = record.clone();
    let whose = |by: Doer| match by {
        Doer::Taskgate => DraftOf::Taskgate,
        Doer::Agent | Doer::Person => DraftOf::Others,
    };
    let first_sight = record.pr.is_none_or(|p| p.number != pull.number);
    next.draft_of = match action {
        PullRequestAction::Closed => record.draft_of,
        PullRequestAction::ConvertedToDraft => Some(whose(by)),
        PullRequestAction::Opened if pull.draft => Some(whose(by)),
        _ if !pull.draft => None,
        // Seen before its `opened`: taskgate's own when taskgate asked
        // for a draft and none was seen yet.
        _ if first_sight || record.draft_of.is_none() => Some(if record.pr_requested {
            DraftOf::Taskgate
        } else {
            DraftOf::Others
        }),
        _ => record.draft_of,
    };
    if *action == PullRequestAction::ReadyForReview && by == Doer::Person {
        next.note_person();
    }
    next
}

/// Someone made the task PR a draft: theirs to mark ready again; a ready
/// for review of taskgate's earlier is no longer one to recognise.
pub fn on_converted_to_draft(record: &TaskRecord, pull: PullRef) -> TaskDecision {
    let mut next = record.clone();
    next.pr = Some(pull);
    next.pr_requested = false;
    next.marked_ready = None;
    TaskDecision::unchanged(
        &next,
        "task pull request converted to draft: it waits to be marked ready",
    )
}

/// The open branch todo of role `role` just closed with the green run at
/// the head, `person` saying whether a person acted since it opened. Under
/// `review: auto`, taskgate's own draft is marked ready and merged in one
/// effect (the record then knows the PR ready and the `ready_for_review`
/// GitHub sends as taskgate's); `None` leaves the draft to a person.
pub(super) fn ready_when_fixed(
    record: &mut TaskRecord,
    role: &str,
    person: bool,
    ctx: &TaskContext,
    config: &RepoConfig,
) -> Option<Effect> {
    let ready = config.roles.get(role).map_or(AgentReady::Auto, |r| r.ready);
    let pr = record.pr?;
    let head = record.head.clone()?;
    let ours = record.draft_of == Some(DraftOf::Taskgate);
    if ctx.review != ReviewMode::Auto
        || person
        || !pr.draft
        || !ours
        || ready == AgentReady::Never
        || !proven_at(record, &head, ctx)
    {
        return None;
    }
    record.pr = Some(PullRef { draft: false, ..pr });
    record.draft_of = None;
    record.marked_ready = Some(head.clone());
    Some(merge_pull(pr.number, &head, ctx, true))
}

#[cfg(test)]
mod tests;
