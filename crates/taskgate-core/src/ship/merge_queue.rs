//! Landing through GitHub's merge queue: where the default
//! branch's rules take changes through the queue, a ship enqueues the
//! story PR at the head that was shipped, and taskgate acts as the CI of
//! the merge group GitHub builds for it — the story's gates run on the
//! group's commit and `taskgate/ship-gate` reports there. GitHub lands
//! exactly that commit once the required checks pass on it.
//!
//! Owns: the transitions of a ship in the queue — enqueued (`shipping`),
//! its group proven (`proving`), proven (`shipping`, the gate green on the
//! group), and the group destroyed without merging (out of the queue,
//! said on the story PR). Must not: read GitHub (the shell passes the
//! group's commit and parents) or land anything (GitHub does).
//!
//! Ideas a reader needs:
//! - **What lands is what was shipped, tested.** The story PR is enqueued
//!   with `expectedHeadOid` the head pinned at `ship`; a group whose
//!   commit does not merge that head gets a red gate and never lands; a
//!   push to the story head takes the PR out of GitHub's queue.
//! - **GitHub, not taskgate, moves the branch**: a base that moves is
//!   GitHub's to handle (it rebuilds the groups: `invalidated`, then a new
//!   `checks_requested`), so a push to the default branch proves nothing
//!   again here.

use super::decide::{comment, gate, ShipContext, ShipDecision};
use super::landing::{out_of_queue, PullLanding};
use super::render_queue as render;
use super::rules::{LandVia, LandingPlan};
use super::{ProofStep, ShipProof, ShipState, StoryRecord};
use crate::config::MergeMethod;
use crate::effect::Effect;
use crate::ids::CommitSha;
use crate::story::markers::encode_value;

/// The proof of a ship that goes through the merge queue now.
pub(super) fn in_queue(record: &StoryRecord) -> Option<&ShipProof> {
    record.proof.as_ref().filter(|p| {
        p.landing.via == LandVia::MergeQueue
            && matches!(record.state, ShipState::Proving | ShipState::Shipping)
    })
}

/// The queued story's turn: its PR is enqueued at `head` (the story's
/// head now, pinned), once its gate is green there.
pub(super) fn enqueue(
    record: &StoryRecord,
    round: u32,
    (base, head): (&CommitSha, &CommitSha),
    landing: LandingPlan,
    ctx: &ShipContext,
) -> ShipDecision {
    let mut next = record.clone();
    next.state = ShipState::Shipping;
    next.proof = Some(ShipProof {
        round,
        base: base.clone(),
        head: head.clone(),
        commit: None,
        landing,
    });
    let Some(number) = record.pr else {
        let why = "the story has no pull request to put in the merge queue";
        return super::landing::on_land_failed(&next, round, why, ctx);
    };
    let title = render::ship_commit_message(ctx.title, ctx.story_issue, record.pr);
    let pull = PullLanding {
        number,
        head: head.clone(),
        base: base.clone(),
        method: MergeMethod::Merge,
        title: title.lines().next().unwrap_or_default().to_owned(),
        queue: true,
    };
    let note = render::enqueued(number, head, ctx.default_branch);
    let marker = format!(
        "enqueued story={} round={round} head={}",
        encode_value(ctx.story.as_str()),
        head.short()
    );
    ShipDecision {
        effects: vec![
            comment(ctx, ctx.story_issue, note, marker),
            Effect::LandShipCommit {
                repo: ctx.repo.clone(),
                story: ctx.story.to_owned(),
                branch: ctx.default_branch.to_owned(),
                commit: head.clone(),
                round,
                report_to: ctx.story_marker.to_owned(),
                revert: false,
                pull: Some(pull),
                car: None,
            },
        ],
        outcome: format!("enqueued #{number} at {} in the merge queue", head.short()),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// GitHub asks for checks on merge group `group` of the story PR, whose
/// commit has `parents`: the story's gates run on it, unless it does not
/// merge the head that was shipped (then its gate is red: it never lands).
pub fn on_merge_group_checks(
    record: &StoryRecord,
    group: &CommitSha,
    parents: &[CommitSha],
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let Some(proof) = in_queue(record) else {
        let d = ShipDecision::unchanged(record, "not shipping through the merge queue: ignored");
        return (d, ProofStep::None);
    };
    if proof.commit.as_ref() == Some(group) {
        let d = ShipDecision::unchanged(record, "this merge group is proving already");
        return (d, ProofStep::None);
    }
    if !super::pin::merges_pinned_head(parents, &proof.head) {
        let line = render::group_without_head(group, &proof.head);
        let d = ShipDecision {
            effects: gate(&mut record.clone(), group, &[line], ctx),
            outcome: format!("merge group {} lacks the shipped head: red", group.short()),
            ..ShipDecision::unchanged(record, "")
        };
        return (d, ProofStep::None);
    }
    let mut proof = proof.clone();
    proof.commit = Some(group.clone());
    let note = render::proving_group(&proof, group);
    let marker = format!(
        "proving-group story={} group={}",
        encode_value(ctx.story.as_str()),
        group.short()
    );
    let outcome = format!("proving merge group {}", group.short());
    super::queue::prove_at(record, proof, (note, marker, outcome), ctx)
}

/// GitHub destroyed merge group `group` for `reason` (`merged`,
/// `invalidated`, `dequeued`). Merged: the story PR's merge follows.
/// Invalidated: GitHub builds the group again and asks anew. Dequeued:
/// the story PR left the queue; nothing landed, and the story PR says so.
///
/// `story_head` is the story branch's head as read when the `dequeued`
/// came. GitHub drops a PR whose head moved, and its `destroyed` may reach
/// taskgate before the push that moved it: a head other than the pinned
/// one is then the reason said, as when the push comes first.
pub fn on_merge_group_destroyed(
    record: &StoryRecord,
    group: &CommitSha,
    reason: &str,
    story_head: Option<&CommitSha>,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(proof) = in_queue(record) else {
        return ShipDecision::unchanged(record, "not shipping through the merge queue: ignored");
    };
    if proof.commit.as_ref().is_some_and(|c| c != group) {
        return ShipDecision::unchanged(record, "an earlier merge group: ignored");
    }
    match reason {
        "merged" => {
            ShipDecision::unchanged(record, "the merge group merged: the PR's merge follows")
        }
        "invalidated" => ShipDecision::unchanged(
            record,
            "the merge group was invalidated: GitHub builds it again",
        ),
        _ => {
            if let Some(head) = story_head.filter(|h| super::pinned_head(record) != Some(*h)) {
                return super::on_story_head_moved(record, head, ctx);
            }
            let line = render::dequeued_line(group, reason);
            let note = render::dequeued(group, reason, &ctx.config.ship_label);
            out_of_queue(record, vec![line], note, "queue-dequeued", ctx)
        }
    }
}

#[cfg(test)]
mod tests;
