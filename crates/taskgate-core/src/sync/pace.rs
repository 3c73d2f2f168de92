//! How many writes a plan's materialisation takes, and the note on its
//! story when that is more than an hour's write budget.
//!
//! Owns: the estimate of a plan's writes and where its note goes.
//! Must not: count what GitHub holds; the estimate works on the decision
//! and what taskgate recorded, as the reconciler does.
//!
//! The idea a reader needs: the first pass creates the missing issues and
//! the next pass links them, labels them and makes the branches. The
//! estimate runs that next pass as if GitHub had made the issues (numbers
//! invented, references resolved the way the executor resolves them), so
//! it counts what the plan really asks for, not a rule of thumb.

use std::collections::{BTreeMap, BTreeSet};

use super::decide::{pass, Known};
use super::{IssueRecord, StoryPlan};
use crate::config::load_config;
use crate::decide::Decision;
use crate::event::Change;
use crate::ids::{IssueId, IssueNumber};
use crate::pace::{render_plan_pace, Pacing};
use crate::plan::{check_plan, MemFiles};
use crate::story::{resolve_issue_refs, Marker};
use crate::Effect;

/// Adds to a plan's `decision` a comment on its story saying when the plan
/// will be complete on GitHub, when it needs more writes than `pacing`
/// allows in an hour (`now_s`: unix seconds). The comment goes right after
/// the story issue is created (or first, when it exists), so it is read
/// before the hours the rest takes.
pub fn announce_pace(decision: &mut Decision, known: &Known, pacing: &Pacing, now_s: i64) {
    let Some(plan) = decision.changes.iter().find_map(|c| match c {
        Change::StoryPlanned(plan) => Some(plan.clone()),
        _ => None,
    }) else {
        return;
    };
    let story_key = Marker::Story {
        story: plan.story.clone(),
    }
    .key();
    let mut issues = known.issues.clone();
    for change in &decision.changes {
        if let Change::IssueAdopted { marker, record, .. } = change {
            issues.insert(marker.clone(), record.clone());
        }
    }
    let writes = writes_needed(&plan, &decision.effects, &issues, known) + 1;
    let Some(body) = render_plan_pace(writes, pacing, now_s) else {
        return;
    };
    let note = Effect::CommentOnMarker {
        repo: plan.repo.clone(),
        marker: story_key.clone(),
        body,
        comment_marker: format!("plan-pace {}", plan.sha),
    };
    let after_story = decision
        .effects
        .iter()
        .position(|e| matches!(e, Effect::CreateIssue { marker, .. } if *marker == story_key))
        .map_or(0, |i| i + 1);
    decision.effects.insert(after_story, note);
}

/// The writes of `first` (a pass's effects) and of the pass after it.
fn writes_needed(
    plan: &StoryPlan,
    first: &[Effect],
    issues: &BTreeMap<String, IssueRecord>,
    known: &Known,
) -> u64 {
    let count = |effects: &[Effect]| {
        effects
            .iter()
            .filter(|e| !matches!(e, Effect::Reconcile { .. }))
            .count() as u64
    };
    // The issues that exist before the pass: known, or adopted by it.
    let mut numbers: BTreeMap<String, u64> = issues
        .iter()
        .map(|(k, r)| (k.clone(), r.number.get()))
        .collect();
    let mut issues = issues.clone();
    let mut labels: BTreeSet<String> = known.labels.clone();
    let mut branches: BTreeSet<String> = known.branches.clone();
    let mut created = Vec::new();
    for (i, effect) in first.iter().enumerate() {
        match effect {
            Effect::CreateIssue {
                marker,
                title,
                body,
                labels: on,
                ..
            } => {
                let invented = u64::MAX - i as u64;
                created.push((marker.clone(), body.clone()));
                issues.insert(
                    marker.clone(),
                    IssueRecord {
                        number: IssueNumber::new(invented),
                        id: IssueId::new(invented),
                        title: title.clone(),
                        body: body.clone(),
                        labels: on.iter().cloned().collect(),
                        open: true,
                        parent: None,
                        blocked_by: BTreeSet::new(),
                    },
                );
            }
            Effect::EnsureLabel { name, .. } => {
                labels.insert(name.clone());
            }
            Effect::CreateBranch { name, .. } => {
                branches.insert(name.clone());
            }
            _ => {}
        }
    }
    if created.is_empty() {
        // A pass that creates nothing is the whole of the work.
        return count(first);
    }
    // Bodies as the executor sends them: references resolved to the
    // issues that exist when each is created, i.e. those known and those
    // created before it. A phase created before its tasks names them in
    // an edit of its body, once they exist: one more write a parent.
    for (marker, body) in created {
        if let Some(record) = issues.get_mut(&marker) {
            record.body = resolve_issue_refs(&body, |key| numbers.get(key).copied());
            numbers.insert(marker, record.number.get());
        }
    }
    let config = load_config(plan.config.as_deref()).unwrap_or_default();
    let files = MemFiles(plan.files.clone());
    let report = check_plan(&plan.source, &plan.plan, &config, &files);
    let Some(parsed) = report.plan.as_ref() else {
        return count(first);
    };
    let next = pass(
        plan,
        parsed,
        &files,
        &Known {
            issues: &issues,
            branches: &branches,
            labels: &labels,
            states: known.states,
            starts: known.starts,
        },
    );
    count(first) + count(&next)
}
