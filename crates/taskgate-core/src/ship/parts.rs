//! Shipping a story whose tasks live in several repositories (issue 49,
//! step 6): its *parts* (one per repository, each with its story PR)
//! land one at a time in dependency order, each proven on its own default
//! branch's current head right before it lands. GitHub has no transaction
//! across repositories, so order and a stop make up for it
//! (docs/decisions/cross-repo.md).
//!
//! Owns: the parts' order ([`part_order`], from the plan's `depends_on`),
//! the state machine [`on_parts_event`] (`(state, event) -> (state,
//! effects)`), its effects as data ([`PartsEffect`]) and the texts the
//! story issue shows ([`render`]).
//! Must not: do IO, read GitHub or the store, or know today's one-repository
//! ship (`StoryRecord`): the shell (not wired yet, see the decision page)
//! turns [`PartsEffect`]s into proofs, landings and comments, and runner
//! and GitHub answers into [`PartsEvent`]s.
//!
//! Ideas a reader needs:
//! - **One part at a time.** A part is proven only once every part before
//!   it has landed, so its proof is on a default branch that already has
//!   its providers' landings, and a part never lands before one it depends
//!   on.
//! - **A failure stops everything.** A proof that fails, or a landing
//!   GitHub refuses, stops the ship: nothing more lands until a person
//!   ships again (the rest, after a fix) or rolls back what landed.
//! - **Freeze and approvals are per repository** and hold only the landing
//!   of that part: the part waits, proven, and lands when they allow it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::ids::{CommitSha, IssueNumber, RepoName};
use crate::plan::{Plan, Task};

pub mod render;

/// One repository's part, where it stands in the order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartNode {
    pub repo: RepoName,
    /// The parts it depends on (one of its tasks depends on one of theirs).
    pub after: BTreeSet<RepoName>,
}

/// Repositories whose parts depend on each other in a ring, though no
/// task depends on itself (`api-1` in A ← `web` in B ← `api-2` in A).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the parts of {} depend on each other in a cycle: no order lands each after what it depends on", .repos.iter().map(RepoName::as_str).collect::<Vec<_>>().join(", "))]
pub struct PartCycle {
    pub repos: Vec<RepoName>,
}

/// The story's parts in landing order: a part after every part it depends
/// on, otherwise in the order the plan first names their repositories
/// (`home` for a task without `repo:`).
pub fn part_order(plan: &Plan, home: &RepoName) -> Result<Vec<PartNode>, PartCycle> {
    let leaves = plan.leaves();
    let repo_of = |t: &Task| t.repo.as_ref().map_or(home, |r| &r.value).clone();
    let mut first_seen: Vec<RepoName> = Vec::new();
    for t in &leaves {
        let r = repo_of(t);
        if !first_seen.contains(&r) {
            first_seen.push(r);
        }
    }
    let mut after: BTreeMap<RepoName, BTreeSet<RepoName>> = first_seen
        .iter()
        .map(|r| (r.clone(), BTreeSet::new()))
        .collect();
    for t in &leaves {
        let own = repo_of(t);
        let waits = plan.incomplete_dependencies(t, |_| false);
        for dep in waits.iter().filter_map(|id| plan.task(id)) {
            let theirs = repo_of(dep);
            if theirs != own {
                after.entry(own.clone()).or_default().insert(theirs);
            }
        }
    }
    let mut order: Vec<PartNode> = Vec::new();
    let mut left = first_seen;
    while !left.is_empty() {
        let placed = |r: &RepoName| order.iter().any(|p| p.repo == *r);
        let Some(i) = left.iter().position(|r| after[r].iter().all(placed)) else {
            return Err(PartCycle { repos: left });
        };
        let repo = left.remove(i);
        order.push(PartNode {
            after: after[&repo].clone(),
            repo,
        });
    }
    Ok(order)
}

/// What may hold a proven part's landing, read from its repository now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartGates {
    /// Why nothing lands in the repository now (`freeze::frozen_because`,
    /// rendered); `None` when it is not frozen.
    pub frozen: Option<String>,
    /// The approvals the part's story PR still needs, one line each
    /// (`ship::missing_lines`); empty when it has them.
    pub approvals_missing: Vec<String>,
}

impl PartGates {
    fn hold(&self) -> Option<Hold> {
        match (&self.frozen, self.approvals_missing.is_empty()) {
            (Some(why), _) => Some(Hold::Frozen(why.clone())),
            (None, false) => Some(Hold::Approvals(self.approvals_missing.clone())),
            (None, true) => None,
        }
    }
}

/// Why a proven part waits to land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    Frozen(String),
    Approvals(Vec<String>),
}

/// Where one part stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum PartState {
    /// Not its turn (or not shipped yet).
    Waiting,
    /// Being proven on its default branch's current head.
    Proving,
    /// Proven at `sha`, its landing held.
    Held {
        sha: CommitSha,
        hold: Hold,
    },
    /// Proven at `sha`, landing.
    Landing {
        sha: CommitSha,
    },
    Landed {
        sha: CommitSha,
    },
    /// Its proof failed or its landing was refused: the ship stopped here.
    Failed {
        why: String,
    },
    /// Reverted after `/taskgate rollback`: the revert PR was asked for.
    RollingBack {
        sha: CommitSha,
    },
}

/// One part: its repository, its story PR, where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    pub repo: RepoName,
    pub story_pr: IssueNumber,
    pub after: BTreeSet<RepoName>,
    pub state: PartState,
}

/// The ship of a story's parts as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Not shipped (or shipped again after a stop: see [`PartsEvent::Ship`]).
    Idle,
    Shipping,
    /// A part failed: nothing more lands until a person ships or rolls back.
    Stopped,
    /// Every part landed.
    Landed,
    /// `/taskgate rollback` asked for the landed parts' reverts.
    RollingBack,
}

/// The parts of one story, in landing order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsState {
    pub phase: Phase,
    pub parts: Vec<Part>,
}

impl PartsState {
    /// A story not shipped yet: its parts in `order` with their story PRs.
    pub fn new(order: Vec<PartNode>, story_prs: impl Fn(&RepoName) -> IssueNumber) -> Self {
        let parts = order
            .into_iter()
            .map(|n| Part {
                story_pr: story_prs(&n.repo),
                repo: n.repo,
                after: n.after,
                state: PartState::Waiting,
            })
            .collect();
        PartsState {
            phase: Phase::Idle,
            parts,
        }
    }

    fn current(&self) -> Option<usize> {
        self.parts.iter().position(|p| {
            matches!(
                p.state,
                PartState::Proving | PartState::Held { .. } | PartState::Landing { .. }
            )
        })
    }

    fn index(&self, repo: &RepoName) -> Option<usize> {
        self.parts.iter().position(|p| p.repo == *repo)
    }
}

/// What happened to the story's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartsEvent {
    /// A person shipped the story (every part proven on its story branch;
    /// the shell checks that, as today's ship gate does). After a stop,
    /// it ships the parts not landed yet.
    Ship,
    /// The proof of `repo`'s part on its default branch's head passed, at
    /// the commit that would land.
    ProofPassed {
        repo: RepoName,
        sha: CommitSha,
    },
    ProofFailed {
        repo: RepoName,
        why: String,
    },
    Landed {
        repo: RepoName,
        sha: CommitSha,
    },
    /// GitHub refused the landing (rules, a conflicting push, the App
    /// removed from the repository).
    LandRefused {
        repo: RepoName,
        why: String,
    },
    /// A repository's freeze or its story PR's approvals changed.
    GatesChanged {
        repo: RepoName,
    },
    /// `/taskgate rollback` on the story issue.
    Rollback,
}

/// What the shell does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartsEffect {
    /// Prove `repo`'s part on its default branch's current head (today's
    /// proof on `taskgate/ship-<n>`, in that repository).
    Prove { repo: RepoName },
    /// Land the proven commit (today's fast-forward, in that repository).
    Land { repo: RepoName, sha: CommitSha },
    /// Open today's revert PR for what landed in `repo`.
    Revert { repo: RepoName, landed: CommitSha },
    /// Said once on the story issue.
    Comment { body: String },
}

/// The parts' next state and what to do, for `event`. `gates` reads a
/// repository's freeze and approvals now. Events about a part that is not
/// where the event says (a late or repeated answer) change nothing.
pub fn on_parts_event(
    state: &PartsState,
    event: &PartsEvent,
    gates: impl Fn(&RepoName) -> PartGates,
) -> (PartsState, Vec<PartsEffect>) {
    let mut next = state.clone();
    let mut effects = Vec::new();
    match event {
        PartsEvent::Ship => ship(&mut next, &mut effects),
        PartsEvent::ProofPassed { repo, sha } => {
            if let Some(i) = at(&next, repo, |s| matches!(s, PartState::Proving)) {
                land_or_hold(&mut next, i, sha.clone(), &gates(repo), &mut effects);
            }
        }
        PartsEvent::ProofFailed { repo, why } => {
            if let Some(i) = at(&next, repo, |s| matches!(s, PartState::Proving)) {
                stop(&mut next, i, why, &mut effects);
            }
        }
        PartsEvent::LandRefused { repo, why } => {
            if let Some(i) = at(&next, repo, |s| matches!(s, PartState::Landing { .. })) {
                stop(&mut next, i, why, &mut effects);
            }
        }
        PartsEvent::Landed { repo, sha } => {
            if let Some(i) = at(&next, repo, |s| matches!(s, PartState::Landing { .. })) {
                next.parts[i].state = PartState::Landed { sha: sha.clone() };
                prove_next(&mut next, &mut effects);
            }
        }
        PartsEvent::GatesChanged { repo } => {
            if let Some(i) = at(&next, repo, |s| matches!(s, PartState::Held { .. })) {
                if let PartState::Held { sha, hold } = next.parts[i].state.clone() {
                    let gates = gates(repo);
                    // Said once per hold: the same hold again says nothing.
                    if gates.hold() != Some(hold) {
                        land_or_hold(&mut next, i, sha, &gates, &mut effects);
                    }
                }
            }
        }
        PartsEvent::Rollback => rollback(&mut next, &mut effects),
    }
    (next, effects)
}

/// The index of `repo`'s part when the ship is under way and the part is
/// in a state `expected` accepts.
fn at(state: &PartsState, repo: &RepoName, expected: impl Fn(&PartState) -> bool) -> Option<usize> {
    let i = state.index(repo)?;
    (state.phase == Phase::Shipping && expected(&state.parts[i].state)).then_some(i)
}

fn ship(next: &mut PartsState, effects: &mut Vec<PartsEffect>) {
    match next.phase {
        // Already under way, landed, or being rolled back: once is enough.
        Phase::Shipping | Phase::Landed | Phase::RollingBack => {}
        Phase::Idle | Phase::Stopped => {
            for p in &mut next.parts {
                if matches!(p.state, PartState::Failed { .. }) {
                    p.state = PartState::Waiting;
                }
            }
            next.phase = Phase::Shipping;
            prove_next(next, effects);
        }
    }
}

/// The first part not landed is proven; none left: the story landed.
fn prove_next(next: &mut PartsState, effects: &mut Vec<PartsEffect>) {
    let waiting = next
        .parts
        .iter()
        .position(|p| !matches!(p.state, PartState::Landed { .. }));
    match waiting {
        Some(i) => {
            next.parts[i].state = PartState::Proving;
            effects.push(PartsEffect::Prove {
                repo: next.parts[i].repo.clone(),
            });
        }
        None => {
            next.phase = Phase::Landed;
            effects.push(PartsEffect::Comment {
                body: render::render_all_landed(next),
            });
        }
    }
}

fn land_or_hold(
    next: &mut PartsState,
    i: usize,
    sha: CommitSha,
    gates: &PartGates,
    effects: &mut Vec<PartsEffect>,
) {
    match gates.hold() {
        Some(hold) => {
            effects.push(PartsEffect::Comment {
                body: render::render_held(&next.parts[i], &hold),
            });
            next.parts[i].state = PartState::Held { sha, hold };
        }
        None => {
            effects.push(PartsEffect::Land {
                repo: next.parts[i].repo.clone(),
                sha: sha.clone(),
            });
            next.parts[i].state = PartState::Landing { sha };
        }
    }
}

fn stop(next: &mut PartsState, i: usize, why: &str, effects: &mut Vec<PartsEffect>) {
    next.parts[i].state = PartState::Failed {
        why: why.to_owned(),
    };
    next.phase = Phase::Stopped;
    effects.push(PartsEffect::Comment {
        body: render::render_stopped(next, i),
    });
}

/// The landed parts' reverts, newest first; only after a stop or once
/// every part landed (a ship under way is not raced).
fn rollback(next: &mut PartsState, effects: &mut Vec<PartsEffect>) {
    match next.phase {
        Phase::Stopped | Phase::Landed => {}
        Phase::Idle | Phase::Shipping | Phase::RollingBack => return,
    }
    let mut any = false;
    for p in next.parts.iter_mut().rev() {
        if let PartState::Landed { sha } = &p.state {
            effects.push(PartsEffect::Revert {
                repo: p.repo.clone(),
                landed: sha.clone(),
            });
            p.state = PartState::RollingBack { sha: sha.clone() };
            any = true;
        }
    }
    if any {
        next.phase = Phase::RollingBack;
    } else {
        effects.push(PartsEffect::Comment {
            body: render::render_nothing_landed(),
        });
    }
}

/// The current part, if the ship is under way.
pub fn current_part(state: &PartsState) -> Option<&Part> {
    state.current().map(|i| &state.parts[i])
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
