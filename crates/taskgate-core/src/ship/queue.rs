//! The ship queue and the proof on the current base (SPEC §7): a shipped
//! story waits its turn, is merged with the default branch's head on
//! `taskgate/ship-<issue>`, its gates run on that merge commit, and only
//! that commit lands, by fast-forwarding the default branch to it.
//!
//! Owns: the transitions `queued → proving → shipping` and back, the
//! choice of the next story to prove ([`next_in_queue`]), and what a
//! failed or out-of-date proof does to the story.
//! Must not: read GitHub or the clock (the shell passes the base and head
//! commits and the time in), or run anything (the proof's run is the
//! runs' pseudo task `@ship`, started by the shell on [`ProofStep::Run`]).
//!
//! Ideas a reader needs:
//! - **The tested tree is the tree that lands.** The landing is a
//!   fast-forward (`force: false`), which GitHub refuses when the default
//!   branch moved after the proof: then the story is proven again on the
//!   new base, at most [`MAX_PROOF_ROUNDS`] times, and each round says so.
//! - **One story proves at a time per repository.** Its proof is built on
//!   the base the story before it left, so stories shipped together land
//!   one after another, each proven on the base it lands on.
//! - **A freeze holds the queue**: nothing starts proving and nothing
//!   lands while the repository is frozen; a proof that passes during a
//!   freeze waits at the head of the queue and is proven again after.

use super::decide::{comment, gate, label_pr, ShipContext, ShipDecision};
use super::landing::PullLanding;
use super::render_queue as render;
use super::rules::{landing_plan, BranchRules, LandVia, LandingPlan};
use super::{Priority, ProofFailure, ShipProof, ShipState, StoryRecord};
use crate::effect::Effect;
use crate::ids::{CommitSha, StoryId};
use crate::story::markers::encode_value;

/// How many times a ship is proven on a base that moved under it before
/// taskgate gives up and says so.
pub const MAX_PROOF_ROUNDS: u32 = 3;

/// The branch the proving merge commit is built on.
pub fn ship_branch(story_issue: crate::ids::IssueNumber) -> String {
    format!("taskgate/ship-{story_issue}")
}

/// What the shell does after a proof transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofStep {
    /// Nothing more.
    None,
    /// Run the story's gates (the `@ship` pseudo task) at this commit.
    Run(CommitSha),
}

/// The story that proves next in a repository, given every story's
/// record: none while one is proving or landing, or while frozen. A proof
/// under way is never interrupted, not even by a hotfix: the hotfix is
/// next. Among the stories waiting, hotfixes first, then high, then
/// normal, each in the order they were shipped ([`queue_order`]).
pub fn next_in_queue(
    stories: &[(StoryId, StoryRecord)],
    frozen: bool,
) -> Option<&(StoryId, StoryRecord)> {
    let busy = stories
        .iter()
        .any(|(_, r)| matches!(r.state, ShipState::Proving | ShipState::Shipping));
    if busy || frozen {
        return None;
    }
    queue_order(stories).into_iter().next()
}

/// The repository's ship queue in the order it lands: the story proving
/// or landing first, then the stories waiting by priority (hotfix, high,
/// normal) and, within one priority, by when each was shipped.
pub fn queue_order(stories: &[(StoryId, StoryRecord)]) -> Vec<&(StoryId, StoryRecord)> {
    let mut queue: Vec<&(StoryId, StoryRecord)> =
        stories.iter().filter(|(_, r)| in_queue(r.state)).collect();
    queue.sort_by_key(|(story, r)| {
        (
            r.state == ShipState::Queued,
            std::cmp::Reverse(priority_of(r)),
            r.queued_at_ms.unwrap_or(i64::MAX),
            story.clone(),
        )
    });
    queue
}

/// The priority a story was shipped with (normal before it was shipped).
fn priority_of(record: &StoryRecord) -> Priority {
    record
        .shipped_by
        .as_ref()
        .map_or(Priority::Normal, |b| b.priority)
}

/// How a priority is written: `normal`, `high`, `hotfix`.
pub fn priority_name(priority: Priority) -> &'static str {
    match priority {
        Priority::Normal => "normal",
        Priority::High => "high",
        Priority::Hotfix => "hotfix",
    }
}

fn in_queue(state: ShipState) -> bool {
    matches!(
        state,
        ShipState::Queued | ShipState::Proving | ShipState::Shipping
    )
}

/// The stories ahead of one joining the queue now with `priority`: those
/// under way, and those waiting with the same priority or a higher one.
pub fn queue_length(stories: &[(StoryId, StoryRecord)], priority: Priority) -> usize {
    stories
        .iter()
        .filter(|(_, r)| {
            in_queue(r.state) && (r.state != ShipState::Queued || priority_of(r) >= priority)
        })
        .count()
}

/// The queued story's turn: `taskgate/ship-<issue>` is reset to `base`
/// and the pinned head (what was shipped) merged into it, the proof built
/// and later landed as the default branch's `rules` allow (a linear
/// commit where they require linear history); refused at once where they
/// leave taskgate no way to land (a merge queue). `branch_head` is the
/// story branch's head read now: one that is not the pinned head takes
/// the story out of the queue instead (`pin`).
pub fn start_proof(
    record: &StoryRecord,
    (base, branch_head): (&CommitSha, &CommitSha),
    rules: &BranchRules,
    ctx: &ShipContext,
) -> ShipDecision {
    if record.state != ShipState::Queued {
        return ShipDecision::unchanged(
            record,
            format!("story is {}: not waiting in the queue", record.state.name()),
        );
    }
    let Some(head) = super::pin::pinned_head(record).cloned() else {
        return super::pin::on_story_head_moved(record, branch_head, ctx);
    };
    if head != *branch_head {
        return super::pin::on_story_head_moved(record, branch_head, ctx);
    }
    let head = &head;
    let round = record.proof.as_ref().map_or(1, |p| p.round + 1);
    let landing = match landing_plan(rules) {
        Ok(plan) => plan,
        Err(why) => {
            let mut proving = record.clone();
            proving.state = ShipState::Shipping;
            proving.proof = Some(ShipProof {
                round,
                base: base.clone(),
                head: head.clone(),
                commit: None,
                landing: LandingPlan::default(),
                ahead: vec![],
            });
            return super::landing::refuse_unlandable(&proving, &why, ctx);
        }
    };
    if landing.via == LandVia::MergeQueue {
        return super::merge_queue::enqueue(record, round, (base, head), landing, ctx);
    }
    let mut next = record.clone();
    next.state = ShipState::Proving;
    next.proof = Some(ShipProof {
        round,
        base: base.clone(),
        head: head.clone(),
        commit: None,
        landing,
        ahead: vec![],
    });
    let effects = vec![Effect::PrepareShipCommit {
        repo: ctx.repo.clone(),
        story: ctx.story.to_owned(),
        branch: ship_branch(ctx.story_issue),
        base: base.clone(),
        head: head.clone(),
        message: render::ship_commit_message(ctx.title, ctx.story_issue, record.pr),
        round,
        linear: landing.linear,
    }];
    ShipDecision {
        outcome: format!(
            "proving round {round}: {} merged with base {}",
            head.short(),
            base.short()
        ),
        effects,
        ..ShipDecision::unchanged(&next, "")
    }
}

/// GitHub made the proving merge commit, whose parents are `parents`:
/// its gates run next, if it merges exactly the base and the pinned head
/// (`pin::proof_parents`); otherwise the ship is refused before anything
/// runs.
pub fn on_proof_commit(
    record: &StoryRecord,
    round: u32,
    commit: &CommitSha,
    parents: &[CommitSha],
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let Some(proof) = current(record, round, ShipState::Proving) else {
        return (
            ShipDecision::unchanged(record, "a proving commit of an earlier round: ignored"),
            ProofStep::None,
        );
    };
    if proof.commit.is_some() {
        return (
            ShipDecision::unchanged(record, "the proving commit is known already"),
            ProofStep::None,
        );
    }
    if let Err(line) = super::pin::proof_parents(proof, commit, parents) {
        let d = on_proof_failed(record, None, round, vec![line.to_string()], ctx);
        return (d, ProofStep::None);
    }
    let mut proof = proof.clone();
    proof.commit = Some(commit.clone());
    let note = render::proving(&proof, ctx.story_issue);
    let marker = format!(
        "proving story={} round={round} commit={}",
        encode_value(ctx.story.as_str()),
        commit.short()
    );
    let outcome = format!("proving round {round} at {}", commit.short());
    prove_at(record, proof, (note, marker, outcome), ctx)
}

/// The story proves `proof` at its commit (a proving commit of its own,
/// or GitHub's merge group): recorded, said once on the story issue, and
/// the story's gates run there.
pub(super) fn prove_at(
    record: &StoryRecord,
    proof: ShipProof,
    (note, marker, outcome): (String, String, String),
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let commit = proof.commit.clone().expect("a proof at a commit");
    let mut next = record.clone();
    next.state = ShipState::Proving;
    next.proof = Some(proof);
    next.proof_runs += 1;
    let d = ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker)],
        outcome,
        ..ShipDecision::unchanged(&next, "")
    };
    (d, ProofStep::Run(commit))
}

/// The proof's gates passed at `commit`: it lands, unless the repository
/// froze meanwhile (then the story waits at the head of the queue).
pub fn on_proof_passed(
    record: &StoryRecord,
    commit: &CommitSha,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(proof) = proven_at(record, commit) else {
        return ShipDecision::unchanged(record, "a proof of another commit passed: ignored");
    };
    let mut next = record.clone();
    next.proof_failed = None;
    next.land_refused = None;
    if let Some(frozen) = ctx.frozen {
        // A freeze is nobody's failure: the next proof starts at round 1.
        next.state = ShipState::Queued;
        next.proof = None;
        let note = render::proven_but_frozen(commit, frozen);
        let marker = format!("proven-frozen commit={}", commit.short());
        return ShipDecision {
            effects: vec![comment(ctx, ctx.story_issue, note, marker)],
            outcome: format!("proven at {} but frozen: waits", commit.short()),
            ..ShipDecision::unchanged(&next, "")
        };
    }
    next.state = ShipState::Shipping;
    let round = proof.round;
    // The gate on the tested commit too: a branch protection that
    // requires `taskgate/ship-gate` finds it on what lands. The record
    // keeps the mark of the story head's gate, which a refused landing
    // turned red.
    let mut effects = match proof.landing.via {
        LandVia::FastForward => gate(&mut next.clone(), commit, &[], ctx),
        LandVia::MergeQueue => {
            super::merge_queue::proven_group_gate(&mut next.clone(), proof, commit, ctx)
        }
        // Through the story PR GitHub judges the PR's head: its gate is
        // written again without the last refusal (cleared above), green
        // unless something else holds the story, so a ship refused for
        // its reviews lands once they are given.
        LandVia::PullRequest { .. } if next.head.as_ref() == Some(&proof.head) => {
            let blockers = super::decide::gate_blockers(&next, &next.missing);
            gate(&mut next, &proof.head, &blockers, ctx)
        }
        LandVia::PullRequest { .. } => vec![],
    };
    if proof.landing.via == LandVia::MergeQueue {
        // The green gate on the merge group is the landing: GitHub's
        // queue moves the branch to exactly this commit.
        return ShipDecision {
            effects,
            outcome: format!(
                "merge group {} proven: GitHub's merge queue lands it",
                commit.short()
            ),
            ..ShipDecision::unchanged(&next, "")
        };
    }
    let pull = match (proof.landing.via, record.pr) {
        (LandVia::PullRequest { method }, Some(number)) => Some(PullLanding {
            number,
            head: proof.head.clone(),
            base: proof.base.clone(),
            method,
            title: render::ship_commit_message(ctx.title, ctx.story_issue, record.pr)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            queue: false,
        }),
        _ => None,
    };
    effects.push(Effect::LandShipCommit {
        repo: ctx.repo.clone(),
        story: ctx.story.to_owned(),
        branch: ctx.default_branch.to_owned(),
        commit: commit.clone(),
        round,
        report_to: ctx.story_marker.to_owned(),
        revert: false,
        pull,
        car: None,
    });
    ShipDecision {
        effects,
        accepted: false,
        refused: None,
        outcome: format!(
            "proven at {}: landing on {}",
            commit.short(),
            ctx.default_branch
        ),
        record: next,
    }
}

/// The proof's gates failed at `commit` (`failures`: one line each), or
/// the story did not merge with the base (`commit` is `None`). The ship
/// is refused: nothing lands, the ship label goes, the gate turns red.
pub fn on_proof_failed(
    record: &StoryRecord,
    commit: Option<&CommitSha>,
    round: u32,
    failures: Vec<String>,
    ctx: &ShipContext,
) -> ShipDecision {
    let matches = match commit {
        Some(c) => proven_at(record, c).is_some(),
        None => current(record, round, ShipState::Proving).is_some(),
    };
    let (true, Some(proof)) = (matches, record.proof.clone()) else {
        return ShipDecision::unchanged(record, "a failure of an earlier proof: ignored");
    };
    let failure = ProofFailure {
        base: proof.base.clone(),
        head: proof.head.clone(),
        commit: commit.cloned(),
        failures,
    };
    let mut d = refuse(record, failure, ctx);
    if let (LandVia::MergeQueue, Some(group)) = (proof.landing.via, commit) {
        // Red on the merge group too: GitHub's queue takes it out.
        let lines = render::proof_failure_lines(d.record.proof_failed.as_ref().expect("refused"));
        d.effects
            .extend(gate(&mut record.clone(), group, &lines, ctx));
    }
    d
}

/// The ship ends without landing: back to `shippable`, the label off,
/// the refusal told on the story PR and the gate red with why.
fn refuse(record: &StoryRecord, failure: ProofFailure, ctx: &ShipContext) -> ShipDecision {
    refuse_with(record, failure, None, ctx)
}

/// [`refuse`], the report followed by `more` (the ship train's batch).
pub(super) fn refuse_with(
    record: &StoryRecord,
    failure: ProofFailure,
    more: Option<String>,
    ctx: &ShipContext,
) -> ShipDecision {
    let mut next = record.clone();
    next.state = ShipState::Shippable;
    next.queued_at_ms = None;
    next.shipped_by = None;
    next.proof = None;
    let mut effects = Vec::new();
    let blockers = render::proof_failure_lines(&failure);
    next.proof_failed = Some(failure.clone());
    if let Some(pr) = next.pr {
        effects.extend(label_pr(ctx, pr, &[], &[&ctx.config.ship_label]));
        let mut note = render::proof_refused(&failure, &ctx.config.ship_label);
        if let Some(more) = more {
            note = format!("{note}\n\n{more}");
        }
        effects.push(comment(
            ctx,
            pr,
            note,
            format!(
                "proof-refused base={} head={}",
                failure.base.short(),
                failure.head.short()
            ),
        ));
    }
    if let Some(head) = next.head.clone() {
        effects.extend(gate(&mut next, &head, &blockers, ctx));
    }
    effects.push(advance(ctx));
    ShipDecision {
        effects,
        outcome: format!(
            "ship refused: the story fails on base {}",
            failure.base.short()
        ),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// GitHub refused the fast-forward (the base moved after the proof), or a
/// push moved the base during it: prove again on the new base, or give
/// up after [`MAX_PROOF_ROUNDS`].
pub fn on_base_moved(record: &StoryRecord, round: u32, ctx: &ShipContext) -> ShipDecision {
    let Some(proof) = record.proof.clone().filter(|p| p.round == round) else {
        return ShipDecision::unchanged(record, "the base moved under an earlier round: ignored");
    };
    if !matches!(record.state, ShipState::Proving | ShipState::Shipping) {
        return ShipDecision::unchanged(record, "not proving: the base may move");
    }
    if proof.landing.via == LandVia::MergeQueue {
        return ShipDecision::unchanged(record, "the merge queue rebuilds its groups itself");
    }
    if round >= MAX_PROOF_ROUNDS {
        let failure = ProofFailure {
            base: proof.base.clone(),
            head: proof.head.clone(),
            commit: proof.commit.clone(),
            failures: vec![render::base_kept_moving(round)],
        };
        return refuse(record, failure, ctx);
    }
    let mut next = record.clone();
    // Back to the head of the queue (its place is kept): the shell starts
    // the next round on the base as it is now.
    next.state = ShipState::Queued;
    let note = render::base_moved(&proof, MAX_PROOF_ROUNDS);
    let marker = format!(
        "base-moved story={} round={round}",
        encode_value(ctx.story.as_str())
    );
    ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker), advance(ctx)],
        outcome: format!("the base moved during round {round}: proving again"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The audit log's record of a ship request that was taken; a priority
/// other than normal is its reason (`priority high`).
pub fn ship_audit(by: &super::Shipper, ctx: &ShipContext) -> crate::audit::AuditEntry {
    use crate::audit::{story_object, AuditAction, AuditActor, AuditEntry, API_LOGIN};
    let actor = match by.user {
        Some(id) => AuditActor::user(id, &by.login),
        None => AuditActor {
            id: None,
            login: API_LOGIN,
        },
    };
    AuditEntry::new(
        ctx.repo,
        ctx.now_ms.div_euclid(1000),
        actor,
        AuditAction::Ship,
        story_object(ctx.story_issue, ctx.story),
        by.via.into(),
    )
    .because(
        (by.priority != Priority::Normal)
            .then(|| format!("priority {}", priority_name(by.priority))),
    )
}

/// What a freeze or an unfreeze of the repository asks of its stories:
/// each gate that can change is written again (it shows the freeze), and
/// after an unfreeze the queue moves on.
pub fn on_freeze_changed(
    repo: &crate::ids::RepoName,
    stories: &[(StoryId, StoryRecord)],
    unfrozen: bool,
) -> Vec<Effect> {
    let mut effects: Vec<Effect> = stories
        .iter()
        .filter(|(_, r)| {
            r.pr.is_some() && matches!(r.state, ShipState::Building | ShipState::Shippable)
        })
        .map(|(story, _)| Effect::Reconcile {
            repo: repo.clone(),
            story: story.clone(),
            round: 0,
        })
        .collect();
    if unfrozen {
        effects.push(Effect::AdvanceShipQueue { repo: repo.clone() });
    }
    effects
}

/// Asks for the repository's queue to be looked at once this decision is
/// stored.
pub(super) fn advance(ctx: &ShipContext) -> Effect {
    Effect::AdvanceShipQueue {
        repo: ctx.repo.clone(),
    }
}

fn current(record: &StoryRecord, round: u32, state: ShipState) -> Option<&ShipProof> {
    record
        .proof
        .as_ref()
        .filter(|p| p.round == round && record.state == state)
}

fn proven_at<'a>(record: &'a StoryRecord, commit: &CommitSha) -> Option<&'a ShipProof> {
    record
        .proof
        .as_ref()
        .filter(|p| p.commit.as_ref() == Some(commit) && record.state == ShipState::Proving)
}

#[cfg(test)]
mod tests;
