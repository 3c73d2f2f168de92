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
//!   with `expectedHeadOid` the head pinned at `ship`; a group whose tree
//!   is not its base with that head merged (GitHub builds that merge on a
//!   branch of taskgate's own, its parents checked) gets a red gate and
//!   never lands, whatever the queue's merge method; a push to the story
//!   head takes the PR out of GitHub's queue.
//! - **A group's tree holds the groups ahead of it**: its gate names
//!   their pull requests, which the story's proof vouches for with it.
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
use crate::ids::{CommitSha, IssueNumber};
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
        ahead: vec![],
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

/// A merge group GitHub asks checks for, as the shell read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeGroup {
    /// The group's commit (`head_sha`): what is tested and what lands.
    pub commit: CommitSha,
    /// Its tree.
    pub tree: String,
    /// What it was built on (`base_sha`): the branch's head, or the group
    /// ahead of it.
    pub base: CommitSha,
    /// What GitHub made merging the shipped head into `base` on
    /// taskgate's own branch: the tree the group must have.
    pub expected: GroupReference,
    /// The pull requests of the groups ahead, nearest the branch first.
    pub ahead: Vec<IssueNumber>,
}

/// GitHub's merge of the shipped head into a group's base, made on a
/// branch of taskgate's own to know the tree the group must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupReference {
    /// The merge's tree; its parents were exactly the base and the head.
    Tree(String),
    /// The base holds the shipped head already: nothing to merge.
    Held,
    /// GitHub could not merge them (its words).
    Conflict(String),
    /// GitHub's merge came back with other parents (the branch moved
    /// between taskgate's calls): never adopted.
    OtherParents {
        commit: CommitSha,
        parents: Vec<CommitSha>,
    },
    /// Not read: the story is not in the queue.
    Unread,
}

/// The head a story in the merge queue was enqueued at: the one its
/// merge group must hold (the shell has GitHub merge it into the group's
/// base to know the tree it must have).
pub fn queued_head(record: &StoryRecord) -> Option<&CommitSha> {
    in_queue(record).map(|p| &p.head)
}

/// GitHub asks for checks on merge group `group` of the story PR: the
/// story's gates run on its commit when its tree is exactly its base with
/// the shipped head merged, whatever the queue's merge method (a merge
/// commit, a squash with one parent, a rebase's chain of commits); any
/// other tree gets a red gate and never lands.
pub fn on_merge_group_checks(
    record: &StoryRecord,
    group: &MergeGroup,
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let Some(proof) = in_queue(record) else {
        let d = ShipDecision::unchanged(record, "not shipping through the merge queue: ignored");
        return (d, ProofStep::None);
    };
    let commit = &group.commit;
    if proof.commit.as_ref() == Some(commit) {
        let d = ShipDecision::unchanged(record, "this merge group is proving already");
        return (d, ProofStep::None);
    }
    if let Err(why) = super::pin::group_holds_shipped(group, &proof.head) {
        let mut effects = gate(&mut record.clone(), commit, std::slice::from_ref(&why), ctx);
        set_gate_output(
            &mut effects,
            "Not the story that was shipped",
            render::group_refused(&why),
        );
        let d = ShipDecision {
            effects,
            outcome: format!(
                "merge group {} is not the shipped head on its base: red",
                commit.short()
            ),
            ..ShipDecision::unchanged(record, "")
        };
        return (d, ProofStep::None);
    }
    let mut proof = proof.clone();
    proof.commit = Some(commit.clone());
    proof.ahead = group.ahead.clone();
    let note = render::proving_group(&proof, commit);
    let marker = format!(
        "proving-group story={} group={}",
        encode_value(ctx.story.as_str()),
        commit.short()
    );
    let outcome = format!("proving merge group {}", commit.short());
    super::queue::prove_at(record, proof, (note, marker, outcome), ctx)
}

/// The gate written green on a proven merge group: the story's, with
/// what else the group's tree holds (the pull requests ahead).
pub(super) fn proven_group_gate(
    next: &mut StoryRecord,
    proof: &ShipProof,
    commit: &CommitSha,
    ctx: &ShipContext,
) -> Vec<Effect> {
    let mut effects = gate(next, commit, &[], ctx);
    let summary = render::proven_group(proof, commit, ctx.story_issue);
    set_gate_output(&mut effects, "Proven on this merge group", summary);
    effects
}

/// The gate written in `effects` says `title` and `summary` (a merge
/// group's gate speaks of the group, not of the story's tasks).
fn set_gate_output(effects: &mut [Effect], title: &str, summary: String) {
    for e in effects {
        if let Effect::UpdateCheckRun { update, .. } = e {
            if let Some(output) = &mut update.output {
                output.title = title.to_owned();
                output.summary = summary.clone();
            }
        }
    }
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
