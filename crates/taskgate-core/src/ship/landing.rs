//! How a proven story lands under the default branch's rules, and what
//! follows when it cannot: the rules' refusal said once on the story PR
//! (the rule, the branch, the setting that lets taskgate through, with a
//! link), the `ship` label taken off and the ship gate red with why; any
//! other landing failure takes the story out of the queue with a report.
//! Either way the queue moves on.
//!
//! Owns: [`PullLanding`] (what the executor needs to merge the story PR),
//! [`on_land_refused`], [`on_land_failed`], [`refuse_unlandable`] and
//! their texts. Must not: read GitHub's answers beyond the typed
//! violations (`rules::violations`), or land anything itself.

use serde::{Deserialize, Serialize};

use super::approvals::{await_approvals, only_reviews, ApprovalFacts};
use super::decide::{comment, gate, label_pr, ShipContext, ShipDecision};
use super::queue::advance;
use super::rules::{violations, Unlandable, Violation};
use super::{ProofStep, ShipState, StoryRecord, SHIP_GATE};
use crate::config::MergeMethod;
use crate::ids::{CommitSha, IssueNumber};
use crate::report::plain_text;

/// Merging the story PR in place of a fast-forward: its number, the head
/// that was proven (pinned with GitHub's `sha`), the base it was proven
/// on (the merge waits for nothing: a base that moved is proven again),
/// and the method the rules allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullLanding {
    pub number: IssueNumber,
    pub head: CommitSha,
    pub base: CommitSha,
    pub method: MergeMethod,
    pub title: String,
    /// Enqueue it in GitHub's merge queue (GraphQL `enqueuePullRequest`,
    /// `expectedHeadOid` the proven head) rather than merge it.
    #[serde(default)]
    pub queue: bool,
}

/// Why the last ship did not land although its proof passed: shown on the
/// ship gate of `head` until the story moves on or lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandRefusal {
    pub head: CommitSha,
    /// One line per reason, as the gate lists them.
    pub lines: Vec<String>,
}

/// GitHub's rules refused the landing of round `round` (`message`: what
/// GitHub said, read into violations). Refused for reviews alone, the
/// story waits for an approval (`approvals::await_approvals`, with what
/// the shell read of the story PR's reviews in `facts`).
pub fn on_land_refused(
    record: &StoryRecord,
    round: u32,
    violations: &[Violation],
    (message, facts): (&str, Option<&ApprovalFacts>),
    ctx: &ShipContext,
) -> ShipDecision {
    if !landing(record, round) {
        return ShipDecision::unchanged(record, "a refusal of an earlier landing: ignored");
    }
    if only_reviews(violations) && record.pr.is_some() {
        let facts = facts.cloned().unwrap_or_default();
        return await_approvals(record, violations, &facts, ctx);
    }
    refused_for(record, violations, message, ctx)
}

/// GitHub refused to merge the story into a ship train's batch for what
/// it changes (`message`, read into violations): refused as a landing
/// is, with the same note and fix.
pub(super) fn refuse_by_rules(
    record: &StoryRecord,
    message: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    refused_for(record, &violations(message), message, ctx)
}

fn refused_for(
    record: &StoryRecord,
    violations: &[Violation],
    message: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let lines = violations
        .iter()
        .map(|v| rule_line(v, ctx.default_branch))
        .collect();
    let note = refused_note(ctx, violations, message);
    out_of_queue(record, lines, note, "land-refused", ctx)
}

/// The rules of the default branch leave taskgate no way to land a tested
/// tree (a merge queue that would not wait for its gate, or whose
/// `merge_group` webhooks the installation does not receive): refused
/// before anything is enqueued or proven, the same way.
pub fn refuse_unlandable(
    record: &StoryRecord,
    why: &Unlandable,
    ctx: &ShipContext,
) -> ShipDecision {
    let violation = match why {
        Unlandable::MergeQueue { .. } => Violation::QueueWithoutGate,
        Unlandable::MergeGroupEvent => Violation::MergeGroupEvent,
        Unlandable::QueueMethod { method, .. } => Violation::QueueMethod(method.clone()),
    };
    let line = rule_line(&violation, ctx.default_branch);
    let note = refused_note(ctx, std::slice::from_ref(&violation), "");
    out_of_queue(record, vec![line], note, "unlandable", ctx)
}

/// The landing (or the proof's commit) of round `round` failed for some
/// other reason than a rule: GitHub answered 404, or 5xx past the retries.
pub fn on_land_failed(
    record: &StoryRecord,
    round: u32,
    why: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let matches = record.proof.as_ref().is_some_and(|p| p.round == round)
        && matches!(record.state, ShipState::Proving | ShipState::Shipping);
    if !matches {
        return ShipDecision::unchanged(record, "a failure of an earlier landing: ignored");
    }
    let line = format!(
        "taskgate could not land it on `{}`: {}",
        plain_text(ctx.default_branch),
        plain_text(why)
    );
    let note = format!(
        "**Not shipped: landing on `{}` failed.** {} The story left the ship queue and the `{}` label was removed; ship again to retry.",
        plain_text(ctx.default_branch),
        sentence(&format!("GitHub answered: {}", plain_text(why))),
        plain_text(&ctx.config.ship_label),
    );
    out_of_queue(record, vec![line], note, "land-failed", ctx)
}

/// The story PR merged as `commit`, whose tree is not the tree that was
/// proven (the default branch moved between taskgate's look and GitHub's
/// merge). It is what landed, so a rollback reverts it; it is proven at
/// once: the story's gates run on it (the `@ship` pseudo task).
pub fn on_landed_untested(
    record: &StoryRecord,
    round: u32,
    commit: &CommitSha,
    ctx: &ShipContext,
) -> (ShipDecision, ProofStep) {
    let Some(proof) = record.proof.as_ref().filter(|p| p.round == round) else {
        let d = ShipDecision::unchanged(record, "an earlier landing: ignored");
        return (d, ProofStep::None);
    };
    let mut next = record.clone();
    next.landed = Some(commit.clone());
    next.landed_proving = Some(commit.clone());
    let note = format!(
        "**What landed was not what was proven.** The story PR merged as `{}` while `{}` moved under the merge, so its tree is not the tree proven on `{}`. taskgate proves the landed commit now: the story's gates run on `{}`, and if they fail it is rolled back.",
        commit.short(),
        plain_text(ctx.default_branch),
        proof.base.short(),
        commit.short(),
    );
    let marker = format!("landed-untested commit={}", commit.short());
    let d = ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker)],
        outcome: format!("landed untested as {}: proving it", commit.short()),
        ..ShipDecision::unchanged(&next, "")
    };
    (d, ProofStep::Run(commit.clone()))
}

/// The proof of a landed commit that was not the proven tree ended: green
/// is said on the story; red starts the rollback (the revert PR, proven
/// and landed like a ship), said with the failing gates.
pub fn on_landed_proven(
    record: &StoryRecord,
    commit: &CommitSha,
    (passed, failures): (bool, &[String]),
    ctx: &ShipContext,
) -> ShipDecision {
    if record.landed_proving.as_ref() != Some(commit) {
        return ShipDecision::unchanged(record, "not the landed commit under proof: ignored");
    }
    let mut next = record.clone();
    next.landed_proving = None;
    if passed {
        let note = format!(
            "**Proven after landing.** The story's gates passed on the landed commit `{}`.",
            commit.short()
        );
        let marker = format!("landed-proven commit={}", commit.short());
        return ShipDecision {
            effects: vec![comment(ctx, ctx.story_issue, note, marker)],
            outcome: format!("landed commit {} proven after landing", commit.short()),
            ..ShipDecision::unchanged(&next, "")
        };
    }
    let because = format!(
        "the story's gates failed on the landed commit `{}`, whose tree is not the tree that was proven ({})",
        commit.short(),
        failures.join("; ")
    );
    let ask = super::RollbackAsk {
        by: None,
        because,
        now: None,
    };
    match super::start_rollback(&next, ask, ctx) {
        Ok(d) => d,
        Err(why) => {
            let note = format!(
                "**The landed commit `{}` fails the story's gates**, and taskgate cannot roll it back: {}.",
                commit.short(),
                plain_text(&why.to_string())
            );
            let marker = format!("landed-red commit={}", commit.short());
            ShipDecision {
                effects: vec![comment(ctx, ctx.story_issue, note, marker)],
                outcome: format!("landed commit {} red; no rollback", commit.short()),
                ..ShipDecision::unchanged(&next, "")
            }
        }
    }
}

/// The story proves or lands round `round` now.
fn landing(record: &StoryRecord, round: u32) -> bool {
    matches!(record.state, ShipState::Proving | ShipState::Shipping)
        && record.proof.as_ref().is_some_and(|p| p.round == round)
}

/// Out of the queue, shippable again: the label off, `note` on the story
/// PR (once: its marker names the head and the kind), the gate red with
/// `lines`, and the queue moves on.
pub(super) fn out_of_queue(
    record: &StoryRecord,
    lines: Vec<String>,
    note: String,
    kind: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    out_of_queue_noting(record, lines, Some(note), kind, ctx)
}

/// Out of the queue as [`out_of_queue`], saying nothing on the story PR
/// (the caller says what it needs to, once).
pub(super) fn out_of_queue_keep(
    record: &StoryRecord,
    lines: Vec<String>,
    kind: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    out_of_queue_noting(record, lines, None, kind, ctx)
}

fn out_of_queue_noting(
    record: &StoryRecord,
    lines: Vec<String>,
    note: Option<String>,
    kind: &str,
    ctx: &ShipContext,
) -> ShipDecision {
    let mut next = record.clone();
    let round = record.proof.as_ref().map_or(0, |p| p.round);
    next.state = ShipState::Shippable;
    next.queued_at_ms = None;
    next.shipped_by = None;
    next.proof = None;
    let mut effects = Vec::new();
    if let Some(head) = next.head.clone() {
        next.land_refused = Some(LandRefusal {
            head: head.clone(),
            lines: lines.clone(),
        });
        if let Some(pr) = next.pr {
            effects.extend(label_pr(ctx, pr, &[], &[&ctx.config.ship_label]));
            if let Some(note) = note {
                let marker = format!("{kind} head={} round={round}", head.short());
                effects.push(comment(ctx, pr, note, marker));
            }
        }
        let mut blockers = next.missing.clone();
        blockers.extend(lines);
        effects.extend(gate(&mut next, &head, &blockers, ctx));
    }
    effects.push(advance(ctx));
    ShipDecision {
        effects,
        outcome: format!("ship not landed ({kind}): out of the queue"),
        ..ShipDecision::unchanged(&next, "")
    }
}

const RULESETS_DOC: &str = "https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-rulesets/creating-rulesets-for-a-repository#granting-bypass-permissions-for-your-ruleset";
const MERGE_QUEUE_DOC: &str = "https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue";
const CHECKS_DOC: &str = "https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-protected-branches/about-protected-branches#require-status-checks-before-merging";
const APP_EVENTS_DOC: &str = "https://docs.github.com/en/apps/using-github-apps/approving-updated-permissions-for-a-github-app";
pub(crate) const WORKFLOWS_DOC: &str = "https://docs.github.com/en/apps/maintaining-github-apps/modifying-a-github-app-registration#changing-the-permissions-of-a-github-app";

/// The gate's line for one violation: the rule and the branch.
pub(super) fn rule_line(v: &Violation, branch: &str) -> String {
    let branch = plain_text(branch);
    match v {
        Violation::PullRequestRequired => {
            format!("`{branch}` takes changes through a pull request only, and taskgate may not bypass that rule")
        }
        Violation::Reviews(said) => format!(
            "`{branch}` requires approving reviews on the story PR ({})",
            plain_text(said)
        ),
        Violation::RequiredCheck { said, .. } => {
            format!("`{branch}` requires a check that has not passed: {}", plain_text(said))
        }
        Violation::LinearHistory => format!("`{branch}` requires linear history"),
        Violation::ForcePush => format!("`{branch}` may not be force-pushed"),
        Violation::MergeQueue => {
            format!("`{branch}` takes changes through GitHub's merge queue only")
        }
        Violation::QueueWithoutGate => format!(
            "`{branch}` takes changes through GitHub's merge queue, which does not require `{SHIP_GATE}`: it would land merge groups without waiting for taskgate's proof"
        ),
        Violation::MergeGroupEvent => format!(
            "`{branch}` takes changes through GitHub's merge queue, and taskgate's installation does not receive the `merge_group` event: taskgate would never be asked to prove a merge group, and the queue would wait for it forever"
        ),
        Violation::QueueMethod(method) => format!(
            "`{branch}` takes changes through GitHub's merge queue, whose merge method `{}` taskgate cannot judge: it could not tell whether a merge group holds exactly the shipped story",
            plain_text(method)
        ),
        Violation::WorkflowsPermission { file } => format!(
            "the story changes `{}`, and taskgate's installation lacks the `workflows` permission",
            plain_text(file)
        ),
        Violation::Other(said) => format!("`{branch}`: {}", plain_text(said)),
    }
}

/// What to change so taskgate may land, with the page that says how.
pub(super) fn fix(v: &Violation, branch: &str) -> String {
    let branch = plain_text(branch);
    match v {
        Violation::PullRequestRequired | Violation::ForcePush | Violation::Other(_) => format!(
            "add the taskgate App to the bypass list of the ruleset on `{branch}` ([GitHub's docs]({RULESETS_DOC}))"
        ),
        Violation::Reviews(_) => format!(
            "approve the story PR, or add the taskgate App to the ruleset's bypass list ([GitHub's docs]({RULESETS_DOC}))"
        ),
        Violation::RequiredCheck { context, .. } => format!(
            "make `{}` run and pass on the story PR's head, or take it out of the required checks of `{branch}` ([GitHub's docs]({CHECKS_DOC}))",
            plain_text(context)
        ),
        Violation::LinearHistory => format!(
            "allow squash merges on the repository (taskgate squashes where history must be linear) ([GitHub's docs]({RULESETS_DOC}))"
        ),
        Violation::MergeQueue => format!(
            "ship again: taskgate reads the rules of `{branch}` again and enqueues the story PR in the merge queue ([GitHub's docs]({MERGE_QUEUE_DOC}))"
        ),
        Violation::QueueWithoutGate => format!(
            "add `{SHIP_GATE}` to the required status checks of `{branch}`, so the merge queue waits for taskgate's proof of each merge group ([GitHub's docs]({MERGE_QUEUE_DOC}))"
        ),
        Violation::MergeGroupEvent => format!(
            "accept the `merge_group` event in the taskgate installation's settings (GitHub asks the owner to review the App's updated permissions and events) ([GitHub's docs]({APP_EVENTS_DOC}))"
        ),
        Violation::QueueMethod(_) => format!(
            "set the merge method of the merge queue rule on `{branch}` to merge, squash or rebase ([GitHub's docs]({MERGE_QUEUE_DOC}))"
        ),
        Violation::WorkflowsPermission { .. } => format!(
            "grant the taskgate App the `Workflows: Read and write` repository permission and accept it on the installation ([GitHub's docs]({WORKFLOWS_DOC}))"
        ),
    }
}

fn refused_note(ctx: &ShipContext, violations: &[Violation], message: &str) -> String {
    let branch = ctx.default_branch;
    let rules: Vec<String> = violations
        .iter()
        .map(|v| format!("- {}", sentence(&rule_line(v, branch))))
        .collect();
    let fixes: Vec<String> = violations
        .iter()
        .map(|v| format!("- {}.", fix(v, branch)))
        .collect();
    let said = if message.trim().is_empty() {
        String::new()
    } else {
        format!(
            "\n\nGitHub said: {}",
            plain_text(&message.split_whitespace().collect::<Vec<_>>().join(" "))
        )
    };
    let workflows = |v: &Violation| matches!(v, Violation::WorkflowsPermission { .. });
    let queue = |v: &Violation| matches!(v, Violation::MergeGroupEvent | Violation::QueueMethod(_));
    let headline = if !violations.is_empty() && violations.iter().all(queue) {
        format!(
            "taskgate cannot ship through the merge queue of `{}`",
            plain_text(branch)
        )
    } else if !violations.is_empty() && violations.iter().all(workflows) {
        "GitHub does not let taskgate change the story's workflow files".to_owned()
    } else {
        format!("the rules of `{}` refused taskgate", plain_text(branch))
    };
    format!(
        "**Not shipped: {headline}.** Nothing landed and the `{}` label was removed.\n\n{}{said}\n\nTo let taskgate land this story:\n{}\n\nThen ship again.",
        plain_text(&ctx.config.ship_label),
        rules.join("\n"),
        fixes.join("\n"),
    )
}

fn sentence(s: &str) -> String {
    if s.ends_with(['.', '!', '?']) {
        s.to_owned()
    } else {
        format!("{s}.")
    }
}

mod rules_changed;
pub use rules_changed::{landing_holds, on_rules_changed, planned_via};

#[cfg(test)]
mod tests;
