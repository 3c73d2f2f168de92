//! The default branch's rules read again when a proven story lands
//! (issue 51 item 4): the shell reads them at the landing, one read per
//! landing, and asks [`landing_holds`] whether the landing the proof was
//! made for is still the one they allow. When it is not, nothing lands:
//! [`on_rules_changed`] puts the story back in the queue, proven again as
//! the rules now ask (a linear commit where linear history became
//! required, GitHub's merge queue where one appeared), and says so once
//! on its issue.
//!
//! Owns: the comparison and the story's way back to the queue, with its
//! note. Must not: read GitHub or keep rules (the shell's rules cache is
//! emptied when a change is seen, so the next proof reads them afresh).
//!
//! The idea a reader needs: **the proof is made for a landing.** A merge
//! commit proven for a fast-forward is not a linear commit, and a proof
//! made for the one-story queue is not a merge group; the rules decide
//! which proof is made (`rules::landing_plan`), so a rule that changed
//! between the proof and the landing voids the proof's way to land, never
//! the story. The story is proven again on its next turn, from the rules
//! read then.

use super::super::decide::{comment, ShipContext, ShipDecision};
use super::super::queue::advance;
use super::super::rules::{landing_plan, BranchRules, LandVia, LandingPlan, Unlandable};
use super::super::{ShipState, StoryRecord};
use super::PullLanding;
use crate::config::MergeMethod;
use crate::report::plain_text;
use crate::story::markers::encode_value;

/// How a landing effect lands: by the story PR (`pull`, merged or
/// enqueued), else a fast-forward.
pub fn planned_via(pull: Option<&PullLanding>) -> LandVia {
    match pull {
        None => LandVia::FastForward,
        Some(p) if p.queue => LandVia::MergeQueue,
        Some(p) => LandVia::PullRequest { method: p.method },
    }
}

/// Whether the rules read at the landing still land the proof the way it
/// was made to land (`planned`). A fast-forward's proof is a merge
/// commit: it holds only where the rules still ask for a fast-forward.
pub fn landing_holds(planned: LandVia, rules: &BranchRules) -> bool {
    landing_plan(rules).is_ok_and(|now| now.via == planned)
}

/// The rules read at the landing of round `round` (`rules`) no longer
/// allow the landing its proof was made for: nothing landed, and the
/// story waits at the head of the queue again (its place kept), to be
/// proven as they ask. Its issue says what changed.
pub fn on_rules_changed(
    record: &StoryRecord,
    round: u32,
    rules: &BranchRules,
    ctx: &ShipContext,
) -> ShipDecision {
    let Some(proof) = record.proof.as_ref().filter(|p| p.round == round) else {
        return ShipDecision::unchanged(record, "rules changed under an earlier round: ignored");
    };
    if !matches!(record.state, ShipState::Proving | ShipState::Shipping) {
        return ShipDecision::unchanged(record, "not landing: the rules may change");
    }
    let mut next = record.clone();
    next.state = ShipState::Queued;
    let note = render_rules_changed(ctx.default_branch, proof.landing, landing_plan(rules));
    let marker = format!(
        "rules-changed story={} round={round}",
        encode_value(ctx.story.as_str())
    );
    ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker), advance(ctx)],
        outcome: format!("the rules changed before the landing of round {round}: proving again"),
        ..ShipDecision::unchanged(&next, "")
    }
}

/// The note on the story issue: the landing the proof was made for, the
/// one the rules allow now, and what happens next.
fn render_rules_changed(
    branch: &str,
    was: LandingPlan,
    now: Result<LandingPlan, Unlandable>,
) -> String {
    let now = match now {
        Ok(plan) => landing_words(plan),
        Err(_) => {
            "no landing taskgate can prove (the queue says why when the story is next)".to_owned()
        }
    };
    format!(
        "**The rules of `{}` changed before the landing.** The proof was made to land as {}; the rules read at the landing allow {}. Nothing landed: the story waits at the head of the ship queue and is proven again as the rules now ask.",
        plain_text(branch),
        landing_words(was),
        now,
    )
}

/// A landing as a person reads it.
fn landing_words(plan: LandingPlan) -> String {
    let method = |m: MergeMethod| match m {
        MergeMethod::Merge => "a merge",
        MergeMethod::Squash => "a squash",
        MergeMethod::Rebase => "a rebase",
    };
    match plan.via {
        LandVia::FastForward => "a fast-forward to the proven merge commit".to_owned(),
        LandVia::PullRequest { method: m } if plan.linear => format!(
            "a linear commit, the story PR landed by {} (linear history is required)",
            method(m)
        ),
        LandVia::PullRequest { method: m } => format!("the story PR landed by {}", method(m)),
        LandVia::MergeQueue => "GitHub's merge queue, taskgate proving its merge group".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::rules::{BranchRule, Bypass, RuleKind};

    fn linear_bypassed() -> BranchRules {
        BranchRules {
            branch: "main".into(),
            rules: vec![BranchRule {
                rule: RuleKind::LinearHistory,
                ruleset: Some(3),
                bypass: Bypass::Always,
            }],
            ..BranchRules::default()
        }
    }

    #[test]
    fn a_fast_forward_holds_only_while_the_rules_still_ask_for_one() {
        let free = BranchRules::none("main");
        assert!(landing_holds(LandVia::FastForward, &free));
        assert!(
            !landing_holds(LandVia::FastForward, &linear_bypassed()),
            "linear history required since, even where taskgate may bypass it"
        );
        let squash = LandVia::PullRequest {
            method: MergeMethod::Squash,
        };
        assert!(landing_holds(squash, &linear_bypassed()));
        assert!(!landing_holds(squash, &free));
    }

    #[test]
    fn the_note_says_what_the_proof_was_made_for_and_what_the_rules_allow_now() {
        let was = LandingPlan::default();
        let now = landing_plan(&linear_bypassed());
        insta::assert_snapshot!(render_rules_changed("main", was, now));
    }

    #[test]
    fn a_landing_is_named_for_each_way_it_goes() {
        let words: Vec<String> = [
            LandingPlan::default(),
            LandingPlan {
                via: LandVia::PullRequest {
                    method: MergeMethod::Merge,
                },
                linear: false,
            },
            LandingPlan {
                via: LandVia::PullRequest {
                    method: MergeMethod::Rebase,
                },
                linear: true,
            },
            LandingPlan {
                via: LandVia::MergeQueue,
                linear: false,
            },
        ]
        .into_iter()
        .map(landing_words)
        .collect();
        insta::assert_snapshot!(words.join("\n"));
    }
}
