//! Whether taskgate may land on the default branch under its rules, how
//! (`core::ship::landing_plan` decides that, for the ship queue and here
//! alike), and what in the rules can still stop a landing, each with the
//! setting that lets taskgate through.

use super::checks::{could_not, default_branch, finding, repo_url};
use super::{Facts, Finding, Level, RepoFacts};
use crate::config::MergeMethod;
use crate::ship::{
    landing_plan, BranchRules, Bypass, LandVia, QueueGrouping, QueueMethod, ReviewFlags, RuleKind,
    Unlandable, SHIP_GATE,
};

fn queue_method_name(method: &QueueMethod) -> &str {
    match method {
        QueueMethod::Merge => "merge",
        QueueMethod::Squash => "squash",
        QueueMethod::Rebase => "rebase",
        QueueMethod::Other(word) => word,
    }
}

fn method_name(method: MergeMethod) -> &'static str {
    match method {
        MergeMethod::Merge => "a merge commit",
        MergeMethod::Squash => "a squash",
        MergeMethod::Rebase => "a rebase",
    }
}

/// The page of a ruleset, or of them all (and of classic protection).
fn rules_page(facts: &Facts, ruleset: Option<u64>) -> String {
    match ruleset {
        Some(id) => format!("{}/settings/rules/{id}", repo_url(facts)),
        None => format!("{}/settings/rules", repo_url(facts)),
    }
}

pub(super) fn landing(facts: &Facts, repo: &RepoFacts, out: &mut Vec<Finding>) {
    let branch = default_branch(facts);
    let topic = format!("Landing on `{branch}`");
    let rules = match &repo.landing {
        Err(why) => {
            out.push(could_not(
                Level::Warn,
                &topic,
                "read the branch's rules",
                why,
            ));
            return;
        }
        Ok(rules) => rules,
    };
    let plan = match landing_plan(rules) {
        Err(Unlandable::MergeQueue { ruleset }) => {
            out.push(
                finding(Level::Block, topic, format!("`{branch}` takes changes only through GitHub's merge queue, which does not require `{SHIP_GATE}`: it would land merge groups taskgate has not proven, so no story ships"))
                    .fix(format!("Require `{SHIP_GATE}` in the ruleset with the merge queue rule."))
                    .link("the ruleset", rules_page(facts, ruleset)),
            );
            return;
        }
        Err(Unlandable::QueueMethod { method, ruleset }) => {
            out.push(
                finding(Level::Block, topic, format!("`{branch}` takes changes through GitHub's merge queue, whose merge method `{method}` taskgate cannot judge: it could not tell whether a merge group holds exactly the story shipped, so no story ships"))
                    .fix("Set the merge method of the ruleset's merge queue rule to merge, squash or rebase.")
                    .link("the ruleset", rules_page(facts, ruleset)),
            );
            return;
        }
        // Never read here: the installation's events are checked on their own.
        Err(Unlandable::MergeGroupEvent) => crate::ship::LandingPlan {
            via: LandVia::MergeQueue,
            linear: false,
        },
        Ok(plan) => plan,
    };
    let how = match plan.via {
        LandVia::FastForward => format!("taskgate moves `{branch}` to each tested commit itself"),
        LandVia::PullRequest { method } => format!(
            "taskgate lands each story by merging its story pull request ({}), the landed tree checked against the tested one",
            method_name(method)
        ),
        LandVia::MergeQueue => format!(
            "taskgate puts each story pull request in GitHub's merge queue and proves its merge group, which GitHub lands (merge method {}: taskgate checks that the group's tree is its base with the story shipped merged; the App needs the `merge_group` event)",
            queue_method_name(&rules.queue.method)
        ),
    };
    let linear = if plan.linear {
        ", as one linear commit (the branch requires linear history)"
    } else {
        ""
    };
    out.push(finding(Level::Ok, topic.clone(), format!("{how}{linear}")));
    if plan.via == LandVia::MergeQueue && rules.queue.grouping == QueueGrouping::HeadGreen {
        out.push(
            finding(Level::Note, topic.clone(), "the merge queue's grouping is `HEADGREEN`: GitHub lands the merge groups ahead of a passing group on its strength. A story's proof then vouches for the whole tree it tested, the pull requests queued ahead of the story included; and a pull request queued right behind a story gets a red `taskgate/ship-gate`, since its group would land the story unproven")
                .fix("Choose `ALLGREEN` (\"Only merge pull requests that pass all required checks\") in the merge queue rule if every group must pass on its own.")
                .link("the ruleset", rules_page(facts, None)),
        );
    }
    out.extend(what_can_stop_it(facts, rules, &topic));
}

/// What a `pull_request` rule asks of a story PR's reviews, in words.
fn review_rules(approvals: u32, review: ReviewFlags) -> String {
    let reviews = if approvals == 1 { "review" } else { "reviews" };
    let mut asks = vec![format!("{approvals} approving {reviews}")];
    if review.code_owners {
        asks.push("a code owner's approval for each changed path (`CODEOWNERS`)".into());
    }
    if review.last_push {
        asks.push("the last push approved by someone other than its pusher".into());
    }
    if review.dismiss_stale {
        asks.push("approvals dismissed when the story branch moves".into());
    }
    format!(
        "story pull requests need {}: GitHub refuses taskgate's merge until then, and a ship waits for the approvals",
        asks.join("; ")
    )
}

/// The rules that can still hold a landing up, and the ship gate not
/// being required.
fn what_can_stop_it(facts: &Facts, rules: &BranchRules, topic: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in &rules.rules {
        if let RuleKind::PullRequest {
            approvals, review, ..
        } = r.rule
        {
            if (approvals > 0 || review.code_owners) && r.bypass == Bypass::Never {
                out.push(
                    finding(Level::Warn, topic, review_rules(approvals, review))
                        .fix("Approve a story pull request on GitHub (before or after shipping it: a ship waits for the approval and lands once it is given), or add the App as a bypass actor of the ruleset.")
                        .link("the ruleset", rules_page(facts, r.ruleset)),
                );
            }
        }
    }
    let others = rules.other_checks();
    if !others.is_empty() {
        let listed: Vec<String> = others.iter().map(|c| format!("`{c}`")).collect();
        out.push(finding(
            Level::Note,
            topic,
            format!(
                "{} must pass on a story pull request too: GitHub merges it only then",
                listed.join(", ")
            ),
        ));
    }
    if rules.classic {
        out.push(
            finding(Level::Note, topic, "classic branch protection is on, and the App sees only its required checks: reviews or push restrictions it asks for hold taskgate's merge up")
                .fix("Approve story pull requests before shipping them, or protect the branch with a ruleset that names the App as a bypass actor.")
                .link("branch protection", format!("{}/settings/branches", repo_url(facts))),
        );
    }
    let ship_gate_required = rules.rules.iter().any(|r| {
        matches!(&r.rule, RuleKind::RequiredChecks { contexts } if contexts.iter().any(|c| c == SHIP_GATE))
    });
    if !ship_gate_required {
        out.push(
            finding(Level::Note, topic, format!("`{SHIP_GATE}` is not a required check: a person can merge a story pull request taskgate has not proven"))
                .fix(format!("Require `{SHIP_GATE}` in a ruleset of the branch."))
                .link("rulesets", rules_page(facts, None)),
        );
    }
    out
}
