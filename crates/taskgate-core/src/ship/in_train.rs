//! What the ship train's actions do to each story of a car (issue 31):
//! the landing of a proven car (each story `shipping` on the car's commit,
//! one fast-forward asked on the first story), the landing's end (each
//! story PR told its batch), a landing GitHub refused because the default
//! branch moved (the stories wait in the queue again), and a refusal (the
//! usual report, with the batch it was tried in).
//!
//! Owns: [`on_car_landing`], [`on_car_proof_started`], [`on_car_landed`],
//! [`on_car_land_undone`], [`on_train_refused`] and their texts. Must not: decide what the train
//! does (`train::on_train_event` does) or read GitHub.
//!
//! The one idea a reader needs: **a story of a car lands the way a story
//! of the one-story queue does.** Its record is `shipping` with a
//! [`ShipProof`] at the car's commit before the fast-forward, so GitHub's
//! answers (the story PR merged, a rule's refusal, the base moved) are
//! read by the same transitions as today's landing
//! (`on_story_pr_merged`, `on_land_refused`, `on_land_failed`).

use super::decide::{comment, gate, ShipContext, ShipDecision};
use super::queue::refuse_with;
use super::rules::LandingPlan;
use super::train::{CarId, FailingTest, Refusal};
use super::{pinned_head, ProofFailure, ShipProof, ShipState, StoryRecord};
use crate::effect::Effect;
use crate::ids::{CommitSha, IssueNumber, StoryId};

/// A story of a batch, as the comments name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStory {
    pub story: StoryId,
    pub issue: IssueNumber,
    pub pr: Option<IssueNumber>,
}

/// A proven car about to land.
#[derive(Debug, Clone, Copy)]
pub struct CarLanding<'a> {
    pub car: CarId,
    pub base: &'a CommitSha,
    pub commit: &'a CommitSha,
    /// This story is the car's first: the fast-forward is asked on it.
    pub first: bool,
}

/// The story lands with its car: `shipping` at the car's commit. On the
/// car's first story, the ship gate turns green on that commit (a branch
/// protection requiring it finds it on what lands) and the default branch
/// is fast-forwarded to it (`Effect::LandShipCommit`, its answers told to
/// this story).
pub fn on_car_landing(
    record: &StoryRecord,
    landing: CarLanding<'_>,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(head) = pinned_head(record).cloned() else {
        return ShipDecision::unchanged(record, "no pinned head: not in a car");
    };
    if record.state != ShipState::Queued {
        // It left the queue meanwhile: the train hears it (`Dequeued`)
        // at the queue's next look, and rebuilds the batch without it.
        return ShipDecision::unchanged(record, "not queued: does not land");
    }
    let mut next = record.clone();
    let round = record.proof.as_ref().map_or(1, |p| p.round + 1);
    next.state = ShipState::Shipping;
    next.proof_failed = None;
    next.land_refused = None;
    next.proof = Some(ShipProof {
        round,
        base: landing.base.clone(),
        head,
        commit: Some(landing.commit.clone()),
        landing: LandingPlan::default(),
        ahead: vec![],
    });
    let mut effects = Vec::new();
    if landing.first {
        effects = gate(&mut next.clone(), landing.commit, &[], ctx);
        effects.push(Effect::LandShipCommit {
            repo: ctx.repo.clone(),
            story: ctx.story.to_owned(),
            branch: ctx.default_branch.to_owned(),
            commit: landing.commit.clone(),
            round,
            report_to: ctx.story_marker.to_owned(),
            revert: false,
            pull: None,
            car: Some(landing.car),
        });
    }
    ShipDecision {
        effects,
        outcome: format!(
            "landing with ship batch {} at {}",
            landing.car,
            landing.commit.short()
        ),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// A proof run started on a car whose first story this is: counted on
/// its record, as the one-story queue counts each proof it starts, so
/// that the queue's proof runs per landed story (`core::ship::figures`)
/// hold the train's runs too (each car's run on one story: the sum is
/// the train's).
pub fn on_car_proof_started(record: &StoryRecord) -> ShipDecision {
    let mut next = record.clone();
    next.proof_runs += 1;
    ShipDecision::unchanged(&next, "a proof run of its ship batch started")
}

/// The default branch was fast-forwarded to car `car`: the story PR is
/// told the batch it landed in, and whether the tree was proven by a run
/// of its own or already proven before (`reused`).
pub fn on_car_landed(
    record: &StoryRecord,
    (car, reused): (CarId, bool),
    batch: &[BatchStory],
    ctx: &ShipContext,
) -> ShipDecision {
    let (Some(pr), Some(proof)) = (record.pr, record.proof.as_ref()) else {
        return ShipDecision::unchanged(record, "no story PR to tell");
    };
    let commit = proof.commit.clone().unwrap_or_else(|| proof.head.clone());
    let note = landed_note(car, reused, &commit, batch, ctx);
    let marker = format!("car-landed car={car}");
    ShipDecision {
        effects: vec![comment(ctx, pr, note, marker)],
        outcome: format!("landed with ship batch {car}"),
        ..ShipDecision::unchanged(record, "")
    }
}

fn landed_note(
    car: CarId,
    reused: bool,
    commit: &CommitSha,
    batch: &[BatchStory],
    ctx: &ShipContext,
) -> String {
    let names: Vec<String> = batch.iter().map(name).collect();
    let with = match batch.len() {
        1 => "on its own".to_owned(),
        n => format!("with {n} stories: {}", names.join(", ")),
    };
    let proven = if reused {
        "Its tree had already been proven green with the same gates, so no new proof run was needed.".to_owned()
    } else {
        "Its gates passed on exactly that commit.".to_owned()
    };
    format!(
        "**Landed in ship batch {car}** ({with}). `{}` was fast-forwarded to `{}`, the batch's commit. {proven}",
        ctx.default_branch,
        commit.short(),
    )
}

/// `#issue (PR #pr)`, as a batch lists its stories.
fn name(s: &BatchStory) -> String {
    match s.pr {
        Some(pr) => format!("#{} (PR #{pr})", s.issue),
        None => format!("#{}", s.issue),
    }
}

/// The car's fast-forward was refused because the default branch moved:
/// the story waits in the queue again (the train rebuilds its car on the
/// new head).
pub fn on_car_land_undone(record: &StoryRecord) -> ShipDecision {
    if record.state != ShipState::Shipping {
        return ShipDecision::unchanged(record, "not landing: nothing to undo");
    }
    let mut next = record.clone();
    next.state = ShipState::Queued;
    ShipDecision::unchanged(&next, "the default branch moved: back in the train")
}

/// The train refused the story: today's refusal report (the gate, the
/// failing tests, the base), with the batch it was tried in; or, when it
/// does not merge on the default branch itself, the conflict.
pub fn on_train_refused(
    record: &StoryRecord,
    why: &Refusal,
    batch: &[BatchStory],
    ctx: &ShipContext,
) -> ShipDecision {
    if !matches!(record.state, ShipState::Queued | ShipState::Proving) {
        return ShipDecision::unchanged(record, "not in the queue: nothing to refuse");
    }
    let Some(head) = pinned_head(record).cloned() else {
        return ShipDecision::unchanged(record, "no pinned head: not in the queue");
    };
    let (failure, tried) = match why {
        Refusal::Failed {
            failing,
            base,
            commit,
            ..
        } => (
            ProofFailure {
                base: base.clone(),
                head,
                commit: Some(commit.clone()),
                failures: gate_lines(failing),
            },
            batch_line(ctx.story, batch),
        ),
        Refusal::Conflict { base } => (
            ProofFailure {
                base: base.clone(),
                head,
                commit: None,
                failures: vec!["it does not merge cleanly with the default branch".into()],
            },
            None,
        ),
        Refusal::Rules { message } => return super::landing::refuse_by_rules(record, message, ctx),
    };
    refuse_with(record, failure, tried, ctx)
}

/// Where the refused story was tried: the batch whose failure was
/// narrowed down to it (nothing when it was proven on its own).
fn batch_line(story: &StoryId, batch: &[BatchStory]) -> Option<String> {
    let others: Vec<String> = batch
        .iter()
        .filter(|s| s.story != *story)
        .map(name)
        .collect();
    if others.is_empty() {
        return None;
    }
    Some(format!(
        "It was tried in a ship batch of {} stories with {}; the failure was narrowed down to this story, and the others go on without it.",
        batch.len(),
        others.join(", ")
    ))
}

#[cfg(test)]
mod tests;

/// One line per failing gate: a gate with several failing cases names
/// them one after the other, with its line each time.
fn gate_lines(failing: &[FailingTest]) -> Vec<String> {
    let mut lines: Vec<String> = failing.iter().map(|t| t.name.clone()).collect();
    lines.dedup();
    lines
}
