//! What lands is what was shipped: a ship request pins
//! the story head it was made on, and nothing else is proven or landed on
//! the strength of it.
//!
//! Owns: the pinned head ([`pinned_head`]), what a story head that moves
//! after `ship` does to a queued or proving story ([`on_story_head_moved`]),
//! and the check that a proof's commit merges exactly the base and the
//! pinned head ([`proof_parents`]). Must not: read GitHub (the shell passes
//! the heads and the parents it read) or the clock.
//!
//! Ideas a reader needs:
//! - **One notion of "what was shipped"** for every route: the head
//!   recorded when `ship` was accepted ([`super::StoryRecord::pinned`]).
//!   The proof on `taskgate/ship-<n>` merges it, the merge queue enqueues
//!   it with `expectedHeadOid`, and a pull request landing merges it with
//!   `sha`. The story branch's head at the story's turn is only compared.
//! - **A moved head is a new story.** A push onto the story branch after
//!   `ship` (by a writer, an agent, anyone) takes the story out of the
//!   queue, and the story PR says so once: a person ships again, having
//!   seen what changed.

use super::decide::{comment, label_pr, ShipContext, ShipDecision};
use super::render_queue as render;
use super::rules::LandVia;
use super::{ShipProof, ShipState, StoryRecord};
use crate::ids::CommitSha;

/// The story head the ship request was made on. A record queued by a
/// taskgate from before the pin falls back on the head as last seen.
pub fn pinned_head(record: &StoryRecord) -> Option<&CommitSha> {
    record.pinned.as_ref().or(record.head.as_ref())
}

/// The story branch is at `head` now (a `synchronize` of the story PR, a
/// push to the story branch, or the head read at the story's turn). A
/// queued or proving story whose pinned head it is not leaves the queue:
/// the `ship` label goes and the story PR says why, once.
///
/// A story in GitHub's merge queue leaves it too (GitHub drops a PR whose
/// head moved; its `dequeued` then finds the story out already). A story
/// landing otherwise (`shipping`) keeps its course: what lands is the
/// tested commit, which merges the pinned head and nothing after it (a
/// fast-forward to it, or GitHub's merge with `sha` = the pinned head).
pub fn on_story_head_moved(
    record: &StoryRecord,
    head: &CommitSha,
    ctx: &ShipContext,
) -> ShipDecision {
    let in_merge_queue = super::merge_queue::in_queue(record).is_some();
    if !in_merge_queue && !matches!(record.state, ShipState::Queued | ShipState::Proving) {
        return ShipDecision::unchanged(record, "not waiting to land: the head may move");
    }
    let Some(pinned) = pinned_head(record).cloned() else {
        return ShipDecision::unchanged(record, "no head was pinned");
    };
    if pinned == *head {
        return ShipDecision::unchanged(record, "the story head is the one shipped");
    }
    let mut next = record.clone();
    next.state = ShipState::Shippable;
    next.queued_at_ms = None;
    next.shipped_by = None;
    next.proof = None;
    next.pinned = None;
    next.head = Some(head.clone());
    let mut effects = Vec::new();
    if let Some(pr) = next.pr {
        effects.extend(label_pr(ctx, pr, &[], &[&ctx.config.ship_label]));
        let note = render::story_changed(&pinned, head, &ctx.config.ship_label);
        let marker = format!(
            "story-changed pinned={} head={}",
            pinned.short(),
            head.short()
        );
        effects.push(comment(ctx, pr, note, marker));
    }
    effects.push(super::queue::advance(ctx));
    ShipDecision {
        effects,
        outcome: format!(
            "the story moved from {} to {} after ship: out of the queue",
            pinned.short(),
            head.short()
        ),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// Whether `commit`, with `parents`, is a proof of `proof`: exactly the
/// base and the pinned head merged ([`LandVia::FastForward`], a pull
/// request landing), the story squashed onto the base alone (a linear
/// landing), or the base itself when it holds the story already (nothing
/// to merge). Otherwise what is wrong.
pub fn proof_parents(
    proof: &ShipProof,
    commit: &CommitSha,
    parents: &[CommitSha],
) -> Result<(), UnexpectedParents> {
    if *commit == proof.base {
        return Ok(());
    }
    let expected: Vec<CommitSha> =
        if proof.landing.linear && proof.landing.via != LandVia::MergeQueue {
            vec![proof.base.clone()]
        } else {
            vec![proof.base.clone(), proof.head.clone()]
        };
    if parents == expected.as_slice() {
        return Ok(());
    }
    Err(UnexpectedParents {
        commit: commit.clone(),
        parents: parents.to_vec(),
        expected,
    })
}

/// A proof commit whose parents are not what [`proof_parents`] accepts;
/// its Display is the line the failed proof shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnexpectedParents {
    pub commit: CommitSha,
    pub parents: Vec<CommitSha>,
    /// The base alone, or the base and the shipped head.
    pub expected: Vec<CommitSha>,
}

impl std::fmt::Display for UnexpectedParents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render::unexpected_parents(
            &self.commit,
            &self.parents,
            &self.expected,
        ))
    }
}

impl std::error::Error for UnexpectedParents {}

/// Whether merge group `group` holds exactly the pinned head on its base:
/// its tree is the tree GitHub made merging `pinned` into the group's
/// base. Judged by the tree, not the parents, so that a squash (one
/// parent) and a rebase (a chain of new commits) are judged as a merge
/// is. Otherwise the gate's line saying why.
pub(super) fn group_holds_shipped(
    group: &super::merge_queue::MergeGroup,
    pinned: &CommitSha,
) -> Result<(), String> {
    use super::merge_queue::GroupReference;
    match &group.expected {
        GroupReference::Tree(tree) if *tree == group.tree => Ok(()),
        GroupReference::Tree(_) => Err(render::group_without_head(
            &group.commit,
            &group.base,
            pinned,
        )),
        other => Err(render::group_unjudged(
            &group.commit,
            &group.base,
            pinned,
            other,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::decide::tests::{head, names, octocat, shippable_with_pr, World};
    use crate::ship::{on_ship_request, start_proof, BranchRules, ShipVia};

    fn sha(c: char) -> CommitSha {
        crate::ids::sha(&c.to_string().repeat(40))
    }

    fn queued(w: &World) -> StoryRecord {
        on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Label), &w.ctx()).record
    }

    #[test]
    fn the_ship_request_pins_the_head_it_was_made_on() {
        let w = World::new();
        let q = queued(&w);
        assert_eq!(q.pinned, Some(head()));
        assert_eq!(pinned_head(&q), Some(&head()));
    }

    #[test]
    fn the_proof_merges_the_pinned_head_not_the_branch_head_read_at_its_turn() {
        let w = World::new();
        let mut q = queued(&w);
        // A synchronize the shell recorded without asking the core.
        q.head = Some(sha('e'));
        let d = start_proof(&q, (&sha('c'), &head()), &BranchRules::default(), &w.ctx());
        assert_eq!(d.record.state, ShipState::Proving);
        assert_eq!(d.record.proof.unwrap().head, head(), "the pinned head");
    }

    #[test]
    fn a_branch_head_that_moved_by_the_storys_turn_takes_it_out_of_the_queue() {
        let w = World::new();
        let d = start_proof(
            &queued(&w),
            (&sha('c'), &sha('e')),
            &BranchRules::default(),
            &w.ctx(),
        );
        assert_eq!(d.record.state, ShipState::Shippable);
        assert_eq!(d.record.proof, None);
        assert_eq!(
            names(&d.effects),
            ["label_issue", "post_comment", "advance_ship_queue"]
        );
    }

    #[test]
    fn a_push_after_ship_takes_a_queued_or_proving_story_out_once() {
        let w = World::new();
        let q = queued(&w);
        let d = on_story_head_moved(&q, &sha('e'), &w.ctx());
        assert_eq!(d.record.state, ShipState::Shippable);
        assert_eq!((&d.record.pinned, &d.record.shipped_by), (&None, &None));
        let [_, crate::Effect::PostComment { issue, body, .. }, _] = d.effects.as_slice() else {
            panic!("{:?}", d.effects)
        };
        assert_eq!(issue.get(), 9, "on the story PR");
        insta::assert_snapshot!(body, @"**Not shipped: the story changed after `ship`: ship again to land it.** It was shipped at `bbbbbbb`; its branch is now at `eeeeeee`. Nothing of it landed, and the `ship` label was removed. Look at what changed since `bbbbbbb` before you ship again.");
        // Said once: the story is no longer queued.
        let again = on_story_head_moved(&d.record, &sha('d'), &w.ctx());
        assert!(again.effects.is_empty());
        // The head that was shipped changes nothing.
        let same = on_story_head_moved(&q, &head(), &w.ctx());
        assert_eq!((same.record, same.effects), (q.clone(), vec![]));
        // Proving: out as well.
        let proving = start_proof(&q, (&sha('c'), &head()), &BranchRules::default(), &w.ctx());
        let d = on_story_head_moved(&proving.record, &sha('e'), &w.ctx());
        assert_eq!(d.record.state, ShipState::Shippable);
    }

    #[test]
    fn a_proof_commit_that_merges_anything_else_is_refused_before_it_runs() {
        use crate::ship::{on_proof_commit, ProofStep};
        let w = World::new();
        let q = queued(&w);
        let proving = start_proof(&q, (&sha('c'), &head()), &BranchRules::default(), &w.ctx());
        let (d, step) = on_proof_commit(
            &proving.record,
            1,
            &sha('f'),
            &[sha('c'), sha('e')],
            &w.ctx(),
        );
        assert_eq!(step, ProofStep::None, "nothing runs");
        assert_eq!(d.record.state, ShipState::Shippable);
        let failure = d.record.proof_failed.expect("refused");
        assert!(failure.failures[0].contains("not exactly the base and the shipped head"));
        assert!(
            names(&d.effects).contains(&"post_comment"),
            "said on the PR"
        );
    }

    #[test]
    fn a_proof_commit_must_merge_exactly_the_base_and_the_pinned_head() {
        let proof = ShipProof {
            round: 1,
            base: sha('c'),
            head: head(),
            commit: None,
            landing: Default::default(),
            ahead: vec![],
        };
        let m = sha('f');
        assert_eq!(proof_parents(&proof, &m, &[sha('c'), head()]), Ok(()));
        assert_eq!(proof_parents(&proof, &sha('c'), &[]), Ok(()), "the base");
        let why = proof_parents(&proof, &m, &[sha('c'), sha('e')]).unwrap_err();
        insta::assert_snapshot!(why, @"the proof commit `fffffff` has the parents `ccccccc`, `eeeeeee`, not exactly the base and the shipped head (`ccccccc`, `bbbbbbb`): nothing of it was tested or landed");
        assert!(proof_parents(&proof, &m, &[sha('c'), head(), sha('e')]).is_err());
        assert!(proof_parents(&proof, &m, &[head(), sha('c')]).is_err());
        let linear = ShipProof {
            landing: crate::ship::LandingPlan {
                linear: true,
                ..Default::default()
            },
            ..proof
        };
        assert_eq!(proof_parents(&linear, &m, &[sha('c')]), Ok(()));
        assert!(proof_parents(&linear, &m, &[sha('c'), head()]).is_err());
    }
}
