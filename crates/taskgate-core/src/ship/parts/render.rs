//! The story issue's comments about a ship across repositories: a part
//! held (freeze, approvals), the ship stopped by a failed part (which part,
//! why, what landed, and the two choices), every part landed.
//!
//! Owns: those texts. Must not: decide anything (the parent does).

use super::{Hold, Part, PartState, PartsState};
use crate::report::plain_text;

/// A proven part waits to land.
pub fn render_held(part: &Part, hold: &Hold) -> String {
    let repo = part.repo.as_str();
    match hold {
        Hold::Frozen(why) => format!(
            "**{repo}** (#{pr}) is proven and waits to land: {repo} is {why}. \
             Nothing after it lands before it does; it lands when the freeze ends.\n",
            pr = part.story_pr,
            why = plain_text(why),
        ),
        Hold::Approvals(missing) => {
            let mut out = format!(
                "**{repo}** (#{pr}) is proven and waits to land: its story PR still needs\n",
                pr = part.story_pr
            );
            for line in missing {
                out.push_str(&format!("- {}\n", plain_text(line)));
            }
            out.push_str("\nNothing after it lands before it does; it lands once approved.\n");
            out
        }
    }
}

/// The ship stopped at part `failed`.
pub fn render_stopped(state: &PartsState, failed: usize) -> String {
    let part = &state.parts[failed];
    let why = match &part.state {
        PartState::Failed { why } => plain_text(why),
        _ => String::from("(no reason recorded)"),
    };
    let mut out = format!(
        "**Shipping stopped at {repo}** (#{pr}): {why}\n\nNothing more lands.\n\n",
        repo = part.repo.as_str(),
        pr = part.story_pr,
    );
    out.push_str(&parts_table(state));
    let landed: Vec<&Part> = state
        .parts
        .iter()
        .filter(|p| matches!(p.state, PartState::Landed { .. }))
        .collect();
    if landed.is_empty() {
        out.push_str(
            "\nNothing of this story landed. Fix it, then ship again: \
             `/taskgate ship`.\n",
        );
        return out;
    }
    let names: Vec<&str> = landed.iter().map(|p| p.repo.as_str()).collect();
    out.push_str(&format!(
        "\n{} landed already. Choose one:\n\
         - **Fix and ship the rest**: fix {repo}'s part, then `/taskgate ship` \
         (the parts that landed stay; the rest land in order).\n\
         - **Roll back**: `/taskgate rollback` opens one revert PR in each repository \
         that landed ({}), newest first.\n",
        names.join(", "),
        names
            .iter()
            .rev()
            .copied()
            .collect::<Vec<_>>()
            .join(", then "),
        repo = part.repo.as_str(),
    ));
    out
}

/// Every part landed.
pub fn render_all_landed(state: &PartsState) -> String {
    let mut out = String::from("**Every part landed**, in this order:\n\n");
    out.push_str(&parts_table(state));
    out
}

/// `/taskgate rollback` after a stop that landed nothing.
pub fn render_nothing_landed() -> String {
    String::from("Nothing of this story landed: there is nothing to roll back.\n")
}

/// The parts in landing order, each with where it stands.
fn parts_table(state: &PartsState) -> String {
    let mut out = String::from("| part | story PR | state |\n|---|---|---|\n");
    for p in &state.parts {
        out.push_str(&format!(
            "| {} | #{} | {} |\n",
            p.repo.as_str(),
            p.story_pr,
            part_state(&p.state)
        ));
    }
    out
}

fn part_state(state: &PartState) -> String {
    let short = |sha: &crate::ids::CommitSha| sha.as_str()[..7].to_owned();
    match state {
        PartState::Waiting => "not landed".into(),
        PartState::Proving => "being proven".into(),
        PartState::Held { sha, .. } => format!("proven at `{}`, held", short(sha)),
        PartState::Landing { sha } => format!("landing `{}`", short(sha)),
        PartState::Landed { sha } => format!("landed `{}`", short(sha)),
        PartState::Failed { .. } => "**failed**".into(),
        PartState::RollingBack { sha } => format!("reverting `{}`", short(sha)),
    }
}
