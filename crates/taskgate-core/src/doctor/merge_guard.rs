//! Whether GitHub holds a red task pull request out of its story branch:
//! the merge guard (docs/decisions/agents.md). A person or an agent with
//! write access may merge a task pull request whose gates failed; only a
//! rule on the story branches that requires the gates' checks makes GitHub
//! refuse it. taskgate cannot add that rule (it needs the `administration`
//! permission, which the App does not ask for), so the doctor says whether
//! it is there, and how to add it.
//!
//! Owns: the finding for the rules of story branches. Must not: judge the
//! default branch's rules (`landing`).

use super::checks::{could_not, finding, repo_url};
use super::{Facts, Finding, Level, RepoFacts};
use crate::ship::{BranchRules, RuleKind, SHIP_GATE};
use crate::task::check_name;

/// The story branches' name pattern, as a ruleset targets it.
pub const STORY_BRANCHES: &str = "taskgate/story-*";

/// The branch name the rules of story branches are read for: GitHub
/// answers with the rules that would apply to a branch of that name,
/// whether or not it exists.
pub const STORY_BRANCH_PROBE: &str = "taskgate/story-1";

const TOPIC: &str = "Story branches";

pub(super) fn merge_guard(facts: &Facts, repo: &RepoFacts, out: &mut Vec<Finding>) {
    let rules = match &repo.story_branches {
        Err(why) => {
            let what = "read the rules of story branches";
            out.push(could_not(Level::Note, TOPIC, what, why));
            return;
        }
        Ok(rules) => rules,
    };
    let gates = gate_checks(rules);
    if gates.is_empty() {
        let example = check_name("<gate>");
        out.push(
            finding(Level::Note, TOPIC, format!("no rule on `{STORY_BRANCHES}` requires taskgate's gate checks: anyone with write access, an agent included, can merge a task pull request whose gates failed. taskgate then holds the task (a merge is not a proof) and says so on the pull request, but GitHub does not stop the merge"))
                .fix(format!("Add a ruleset targeting `{STORY_BRANCHES}` that requires the status checks `{example}` of the gates your plans use (taskgate cannot add it: that needs the `administration` permission, which the App does not ask for)."))
                .link("rulesets", format!("{}/settings/rules", repo_url(facts))),
        );
        return;
    }
    let listed: Vec<String> = gates.iter().map(|c| format!("`{c}`")).collect();
    out.push(finding(
        Level::Ok,
        TOPIC,
        format!(
            "GitHub merges a task pull request into its story branch only when {} pass{}",
            listed.join(", "),
            if gates.len() == 1 { "es" } else { "" }
        ),
    ));
}

/// The checks of taskgate's gates that the rules require (the ship gate
/// is the default branch's, never on a task's head).
fn gate_checks(rules: &BranchRules) -> Vec<&str> {
    let prefix = check_name("");
    let mut out: Vec<&str> = rules
        .rules
        .iter()
        .filter_map(|r| match &r.rule {
            RuleKind::RequiredChecks { contexts } => Some(contexts),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .filter(|c| c.starts_with(&prefix) && *c != SHIP_GATE)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
