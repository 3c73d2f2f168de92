//! Which queue a repository ships through when it asks for the ship train
//! (`ship_train`, issue 31): the train lands a batch as **one fast-forward**
//! to the commit its proof passed on, which is valid only where the default
//! branch's rules let taskgate move the branch itself. Elsewhere the
//! repository ships through the one-story queue, which lands the way the
//! rules ask (the story PR's merge, its squash, GitHub's merge queue), and
//! each story says so once on its issue.
//!
//! Owns: [`train_unfit`] (the rules that keep the train off a branch) and
//! [`start_proof_serially`] (the one-story queue's start, with that note).
//! Must not: read GitHub (the shell passes the rules in) or decide the
//! landing itself (`rules::landing_plan`).
//!
//! Why not teach the train the other landings: a batch merged through the
//! story PRs would land each story's PR separately, so the branch would pass
//! through trees no proof ran on (only the batch's last tree was proven); a
//! squash of a batch would be one commit for several stories, which their
//! PRs cannot be marked merged by; and GitHub's merge queue batches by
//! itself. As Mergify and bors do, a batch is only landed where a
//! fast-forward is allowed.

use super::decide::{comment, ShipContext, ShipDecision};
use super::queue::start_proof;
use super::render_queue as render;
use super::rules::{landing_plan, BranchRules, LandVia};
use super::{ShipState, StoryRecord};
use crate::ids::CommitSha;

/// Why a batch fast-forward is not how `rules` let the default branch
/// move, or `None` when it is (the train may ship this repository).
pub fn train_unfit(rules: &BranchRules) -> Option<&'static str> {
    match landing_plan(rules) {
        Ok(plan) => match plan.via {
            LandVia::FastForward => None,
            LandVia::MergeQueue => {
                Some("the default branch moves only through GitHub's merge queue")
            }
            LandVia::PullRequest { .. } if plan.linear => {
                Some("the default branch's rules require linear history")
            }
            LandVia::PullRequest { .. } => {
                Some("the default branch's rules require each story PR to be merged")
            }
        },
        // No landing at all: the one-story queue refuses with the fix.
        Err(_) => Some("the default branch's rules allow no landing taskgate tests"),
    }
}

/// The one-story queue's [`start_proof`] for a repository that asked for
/// the train but whose rules keep it off (`why`, from [`train_unfit`]):
/// each story says why on its issue when it starts, once.
pub fn start_proof_serially(
    record: &StoryRecord,
    heads: (&CommitSha, &CommitSha),
    rules: &BranchRules,
    ctx: &ShipContext,
    why: &str,
) -> ShipDecision {
    let note = render::ships_serially(why);
    start_saying_why(record, heads, rules, ctx, (why, note))
}

/// The one-story queue's [`start_proof`] while the train is off because
/// GitHub refused to build a batch (`off`): each story says so on its
/// issue when it starts, once, with the setting that lets batches run.
pub fn start_proof_train_off(
    record: &StoryRecord,
    heads: (&CommitSha, &CommitSha),
    rules: &BranchRules,
    ctx: &ShipContext,
    off: &super::TrainOff,
) -> ShipDecision {
    let because = format!("GitHub refused to build `{}`", off.branch);
    let note = render::batch_branch_refused(off);
    start_saying_why(record, heads, rules, ctx, (&because, note))
}

/// [`start_proof`], and `note` on the story's issue when it starts and
/// its record does not say `because` yet.
fn start_saying_why(
    record: &StoryRecord,
    heads: (&CommitSha, &CommitSha),
    rules: &BranchRules,
    ctx: &ShipContext,
    (because, note): (&str, String),
) -> ShipDecision {
    let mut d = start_proof(record, heads, rules, ctx);
    let started = d.record.state != ShipState::Queued && landing_plan(rules).is_ok();
    if started && record.serial_because.as_deref() != Some(because) {
        d.effects.push(comment(
            ctx,
            ctx.story_issue,
            note,
            "ship-serial".to_owned(),
        ));
        d.record.serial_because = Some(because.to_owned());
    }
    d
}

/// A car of the train proven at `commit` while the repository is frozen
/// (`frozen`): nothing lands. The story stays queued and the batch is
/// formed again when the freeze lifts, as the one-story queue's proven
/// story waits at the head of its queue; its issue says so, once per
/// proven commit.
pub fn held_by_freeze(
    record: &StoryRecord,
    (car, commit): (super::CarId, &CommitSha),
    frozen: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let note = render::batch_proven_but_frozen(car, commit, frozen);
    let marker = format!("proven-frozen commit={}", commit.short());
    ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker)],
        outcome: format!(
            "ship batch {car} proven at {} but frozen: waits",
            commit.short()
        ),
        ..ShipDecision::unchanged(record, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::{BranchRule, Bypass, RuleKind};

    fn with(rule: RuleKind, bypass: Bypass) -> BranchRules {
        BranchRules {
            branch: "main".into(),
            rules: vec![BranchRule {
                rule,
                ruleset: Some(1),
                bypass,
            }],
            ..BranchRules::default()
        }
    }

    #[test]
    fn the_train_ships_only_where_taskgate_may_fast_forward_the_branch() {
        assert_eq!(train_unfit(&BranchRules::default()), None, "no rules");
        let pr = || RuleKind::PullRequest {
            approvals: 0,
            methods: vec![],
            review: Default::default(),
        };
        assert_eq!(train_unfit(&with(pr(), Bypass::Always)), None, "bypassed");
        assert_eq!(
            train_unfit(&with(pr(), Bypass::Never)),
            Some("the default branch's rules require each story PR to be merged")
        );
        assert_eq!(
            train_unfit(&with(RuleKind::LinearHistory, Bypass::Always)),
            Some("the default branch's rules require linear history"),
            "linear history is honoured even where taskgate may bypass it"
        );
        let queue = with(RuleKind::MergeQueue, Bypass::Always);
        assert_eq!(
            train_unfit(&queue),
            Some("the default branch's rules allow no landing taskgate tests"),
            "a merge queue without the ship gate required"
        );
        let mut queue = queue;
        queue.rules.push(BranchRule {
            rule: RuleKind::RequiredChecks {
                contexts: vec![crate::ship::SHIP_GATE.into()],
            },
            ruleset: Some(1),
            bypass: Bypass::Never,
        });
        assert_eq!(
            train_unfit(&queue),
            Some("the default branch moves only through GitHub's merge queue")
        );
    }
}
