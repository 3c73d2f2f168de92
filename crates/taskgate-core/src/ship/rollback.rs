//! Rollback: a shipped story's landing reverted on the
//! default branch, by a revert pull request taskgate opens. It starts when
//! the post-deploy validation fails, or on `/taskgate rollback` from a
//! maintainer; the revert is proven like a ship before it lands, unless a
//! maintainer says `--now <reason>` (recorded in the audit log).
//!
//! Owns: the rollback's transitions and texts. Must not: build commits or
//! read GitHub (the executor's `PrepareRevert` makes the revert commit R:
//! the tree before the story on top of the landed commit, merged with the
//! default branch's head when it moved since), or run anything (the
//! runs' pseudo task `@rollback` runs the repository's `rollback_gates`).
//!
//! Ideas a reader needs:
//! - **What is reverted is what landed**: the tested merge commit the story
//!   landed as (`StoryRecord::landed`). A story taskgate did not land (one
//!   merged past the gate) has nothing it can revert for sure: refused.
//! - **A revert is not held by a freeze.** A freeze stops new work from
//!   landing; taking a broken story out is how an incident ends.
//! - **It lands by fast-forward** like a ship, so what lands is what was
//!   tested; a moved base is merged again, at most `MAX_PROOF_ROUNDS` times.

use serde::{Deserialize, Serialize};

use super::decide::{comment, label_pr, ShipContext, ShipDecision};
use super::queue::MAX_PROOF_ROUNDS;
use super::{ProofStep, ShipState, Shipper, StoryRecord};
use crate::effect::Effect;
use crate::ids::{CommitSha, IssueNumber};
use crate::report::plain_text;
use crate::story::labels;

/// The branch the revert commit is built on, and the revert PR's head.
pub fn revert_branch(story_issue: IssueNumber) -> String {
    format!("taskgate/revert-{story_issue}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollbackState {
    /// The revert commit is being built.
    Preparing,
    /// The rollback gates run on the revert commit.
    Proving,
    /// The default branch is being moved to the revert commit.
    Landing,
    /// The revert landed.
    Landed,
    /// The revert could not be built, or its gates failed: nothing
    /// landed; the revert PR (if any) is left to people.
    Refused,
}

/// Who or what asked for the rollback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackAsk {
    /// The maintainer, for `/taskgate rollback`; `None` for a failed
    /// validation.
    pub by: Option<Shipper>,
    /// Why, for people: "post-deploy validation run 12 failed".
    pub because: String,
    /// `--now <reason>`: lands without running the rollback gates.
    pub now: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rollback {
    pub state: RollbackState,
    pub ask: RollbackAsk,
    /// The landed commit this reverts.
    pub reverts: CommitSha,
    pub round: u32,
    /// The revert commit, once made.
    pub commit: Option<CommitSha>,
    /// The revert PR asked for (its number arrives with its webhook).
    #[serde(default)]
    pub pr_requested: bool,
    pub pr: Option<IssueNumber>,
    /// Why it was refused, when it was.
    #[serde(default)]
    pub refused: Option<String>,
}

/// Why a story cannot be rolled back now (`/taskgate rollback` does
/// nothing, a red landed commit is only said).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RollbackRefusal {
    #[error("the story is being rolled back already")]
    UnderWay,
    #[error("the story was rolled back already")]
    RolledBack,
    #[error("taskgate did not land this story, so there is no landed commit it can revert")]
    NotLanded,
}

/// Why `/taskgate rollback` does nothing.
pub fn rollback_refusal(record: &StoryRecord) -> Option<RollbackRefusal> {
    if let Some(r) = &record.rollback {
        if r.state != RollbackState::Refused {
            return Some(RollbackRefusal::UnderWay);
        }
    }
    match (&record.landed, record.state) {
        (_, ShipState::RolledBack) => Some(RollbackRefusal::RolledBack),
        (None, _) => Some(RollbackRefusal::NotLanded),
        (Some(_), _) => None,
    }
}

/// Starts a rollback: the revert commit is built next. `Err` says why not.
pub fn start_rollback(
    record: &StoryRecord,
    ask: RollbackAsk,
    ctx: &ShipContext,
) -> Result<ShipDecision, RollbackRefusal> {
    if let Some(why) = rollback_refusal(record) {
        return Err(why);
    }
    let reverts = record.landed.clone().expect("checked by rollback_refusal");
    let round = 1;
    let mut next = record.clone();
    let note = format!(
        "**Rolling back** `{}`, because {}. taskgate builds a revert of it on `{}`{}.",
        reverts.short(),
        plain_text(&ask.because),
        revert_branch(ctx.story_issue),
        match &ask.now {
            Some(reason) => format!(
                " and lands it at once, without its gates (`--now`: {})",
                plain_text(reason)
            ),
            None => ", proves it like a ship, and lands it".to_owned(),
        }
    );
    next.rollback = Some(Rollback {
        state: RollbackState::Preparing,
        ask,
        reverts: reverts.clone(),
        round,
        commit: None,
        pr_requested: false,
        pr: None,
        refused: None,
    });
    let effects = vec![
        comment(
            ctx,
            ctx.story_issue,
            note,
            format!("rollback reverts={}", reverts.short()),
        ),
        prepare(ctx, &reverts, round),
    ];
    Ok(ShipDecision {
        effects,
        outcome: format!("rolling back {}", reverts.short()),
        ..ShipDecision::unchanged(&next, "")
    })
}

fn prepare(ctx: &ShipContext, reverts: &CommitSha, round: u32) -> Effect {
    Effect::PrepareRevert {
        repo: ctx.repo.clone(),
        story: ctx.story.to_owned(),
        branch: revert_branch(ctx.story_issue),
        reverts: reverts.clone(),
        onto: ctx.default_branch.to_owned(),
        message: format!(
            "Revert story #{}: {}\n\nThis reverts {}, the commit the story landed as.",
            ctx.story_issue,
            plain_text(ctx.title),
            reverts.as_str()
        ),
        round,
    }
}

fn in_state(record: &StoryRecord, state: RollbackState, round: u32) -> Option<&Rollback> {
    record
        .rollback
        .as_ref()
        .filter(|r| r.state == state && r.round == round)
}

/// The revert commit exists: its PR is opened (once), then it lands at
/// once (`--now`, or no rollback gates) or its gates run.
pub fn on_revert_commit(
    record: &StoryRecord,
    round: u32,
    commit: &CommitSha,
    has_gates: bool,
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let Some(r) = in_state(record, RollbackState::Preparing, round) else {
        return (
            ShipDecision::unchanged(record, "a revert commit of another round: ignored"),
            ProofStep::None,
        );
    };
    let mut r = r.clone();
    let mut next = record.clone();
    r.commit = Some(commit.clone());
    let mut effects = Vec::new();
    if !r.pr_requested {
        r.pr_requested = true;
        effects.push(Effect::CreatePullRequest {
            repo: ctx.repo.clone(),
            head: revert_branch(ctx.story_issue),
            base: ctx.default_branch.to_owned(),
            title: format!("Revert {}", plain_text(ctx.title)),
            body: revert_pr_body(&r, record.pr, ctx),
            draft: false,
        });
    }
    let step = if r.ask.now.is_some() || !has_gates {
        r.state = RollbackState::Landing;
        effects.push(land(ctx, commit, round));
        ProofStep::None
    } else {
        r.state = RollbackState::Proving;
        ProofStep::Run(commit.clone())
    };
    next.rollback = Some(r);
    let d = ShipDecision {
        effects,
        outcome: format!("revert commit {} made", commit.short()),
        ..ShipDecision::unchanged(&next, "")
    };
    (d, step)
}

fn revert_pr_body(r: &Rollback, story_pr: Option<IssueNumber>, ctx: &ShipContext) -> String {
    let story_pr = story_pr.map(|n| format!(" (PR #{n})")).unwrap_or_default();
    format!(
        "Rolls story #{}{story_pr} back: this reverts `{}`, the commit it landed as, because {}.\n\nOpened by taskgate. {}",
        ctx.story_issue,
        r.reverts.short(),
        plain_text(&r.ask.because),
        match &r.ask.now {
            Some(reason) => format!("A maintainer asked for it to land at once (`--now`: {}).", plain_text(reason)),
            None => "It lands by itself once the repository's `rollback_gates` pass on it.".to_owned(),
        }
    )
}

fn land(ctx: &ShipContext, commit: &CommitSha, round: u32) -> Effect {
    Effect::LandShipCommit {
        repo: ctx.repo.clone(),
        story: ctx.story.to_owned(),
        branch: ctx.default_branch.to_owned(),
        commit: commit.clone(),
        round,
        report_to: ctx.story_marker.to_owned(),
        revert: true,
        pull: None,
        car: None,
    }
}

/// The rollback gates passed on the revert commit: it lands.
pub fn on_revert_passed(
    record: &StoryRecord,
    commit: &CommitSha,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(r) = record
        .rollback
        .as_ref()
        .filter(|r| r.state == RollbackState::Proving && r.commit.as_ref() == Some(commit))
    else {
        return ShipDecision::unchanged(record, "a revert proof of another commit: ignored");
    };
    let mut r = r.clone();
    r.state = RollbackState::Landing;
    let effects = vec![land(ctx, commit, r.round)];
    let mut next = record.clone();
    next.rollback = Some(r);
    ShipDecision {
        effects,
        outcome: format!("revert {} proven: landing", commit.short()),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The revert could not be built (a conflict), or its gates failed, or
/// the base kept moving: nothing lands, and people are told.
pub fn on_revert_failed(
    record: &StoryRecord,
    round: u32,
    why: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(r) = record.rollback.as_ref().filter(|r| {
        r.round == round && !matches!(r.state, RollbackState::Landed | RollbackState::Refused)
    }) else {
        return ShipDecision::unchanged(record, "a failure of an earlier revert: ignored");
    };
    let mut r = r.clone();
    r.state = RollbackState::Refused;
    r.refused = Some(why.to_owned());
    let note = format!(
        "**The rollback did not land.** {} Nothing changed on `{}`; a person decides what follows (fix the revert on `{}` and ship it by hand, or `/taskgate rollback --now <reason>`).",
        plain_text(why),
        ctx.default_branch,
        revert_branch(ctx.story_issue)
    );
    let mut next = record.clone();
    next.rollback = Some(r);
    ShipDecision {
        effects: vec![comment(
            ctx,
            ctx.story_issue,
            note,
            format!("rollback-refused round={round}"),
        )],
        outcome: format!("rollback refused: {why}"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// GitHub refused the fast-forward: the base moved. The revert is merged
/// with the new base and proven again, a bounded number of times.
pub fn on_revert_base_moved(record: &StoryRecord, round: u32, ctx: &ShipContext) -> ShipDecision {
    let Some(r) = in_state(record, RollbackState::Landing, round) else {
        return ShipDecision::unchanged(record, "the base moved under an earlier revert: ignored");
    };
    if round >= MAX_PROOF_ROUNDS {
        let why = format!("The default branch moved during each of {round} attempts to land it.");
        return on_revert_failed(record, round, &why, ctx);
    }
    let mut r = r.clone();
    r.round += 1;
    r.state = RollbackState::Preparing;
    r.commit = None;
    let effects = vec![prepare(ctx, &r.reverts, r.round)];
    let mut next = record.clone();
    next.rollback = Some(r);
    ShipDecision {
        effects,
        outcome: format!(
            "the base moved: the revert is made again (round {})",
            round + 1
        ),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The revert PR was merged (GitHub saw its head land): the story is
/// rolled back.
pub fn on_revert_merged(record: &StoryRecord, pr: IssueNumber, ctx: &ShipContext) -> ShipDecision {
    let Some(r) = record
        .rollback
        .as_ref()
        .filter(|r| r.state != RollbackState::Landed)
    else {
        return ShipDecision::unchanged(record, "revert PR merged again: nothing to do");
    };
    let mut r = r.clone();
    r.state = RollbackState::Landed;
    r.pr = Some(pr);
    let mut next = record.clone();
    next.state = ShipState::RolledBack;
    let mut effects = Vec::new();
    if let Some(story_pr) = next.pr {
        effects.extend(label_pr(ctx, story_pr, &[labels::ROLLED_BACK], &[]));
    }
    effects.push(comment(
        ctx,
        ctx.story_issue,
        format!(
            "**Rolled back.** The revert #{pr} landed on `{}`: the story's changes (`{}`) are gone from it.",
            ctx.default_branch,
            r.reverts.short()
        ),
        format!("rolled-back pr={pr}"),
    ));
    next.rollback = Some(r);
    ShipDecision {
        effects,
        outcome: format!("revert #{pr} landed: rolled back"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The revert PR appeared: it is labelled, once.
pub fn on_revert_pr_seen(record: &StoryRecord, pr: IssueNumber, ctx: &ShipContext) -> ShipDecision {
    let Some(r) = record.rollback.as_ref().filter(|r| r.pr.is_none()) else {
        return ShipDecision::unchanged(record, "revert PR known already");
    };
    let mut r = r.clone();
    r.pr = Some(pr);
    let mut next = record.clone();
    next.rollback = Some(r);
    ShipDecision {
        effects: label_pr(ctx, pr, &[labels::ROLLBACK, labels::NEEDS_FIX], &[]),
        outcome: format!("revert PR #{pr} labelled"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The audit log's record of a rollback asked for by a person.
pub fn rollback_audit(ask: &RollbackAsk, ctx: &ShipContext) -> Option<crate::audit::AuditEntry> {
    use crate::audit::{story_object, AuditAction, AuditActor, AuditEntry, AuditVia};
    let by = ask.by.as_ref()?;
    let actor = AuditActor {
        id: by.user,
        login: &by.login,
    };
    Some(
        AuditEntry::new(
            ctx.repo,
            ctx.now_ms.div_euclid(1000),
            actor,
            AuditAction::Rollback,
            story_object(ctx.story_issue, ctx.story),
            AuditVia::Command,
        )
        .because(ask.now.clone()),
    )
}

#[cfg(test)]
mod tests;
