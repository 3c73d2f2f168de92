//! A plan read from the default branch (or a comment) → a decision: a
//! failing `taskgate/plan` check run listing every problem, or the story's
//! plan saved and the first reconciliation pass queued.

use std::collections::{BTreeMap, BTreeSet};

use super::{reconcile, IssueRecord, RepoView, StoryPlan};
use crate::core::config::{load_config, CONFIG_PATH};
use crate::core::decide::Decision;
use crate::core::event::Change;
use crate::core::plan::{
    check_plan, render_problems, render_validation_report, MemFiles, Plan, Problem,
};
use crate::core::story::Marker;
use crate::core::{CheckAnnotation, CheckRunSpec, Effect, Reaction};
use crate::ids::CommentId;

/// The check run that reports plan problems.
pub const PLAN_CHECK: &str = "taskgate/plan";

/// What taskgate knows of the repository besides the plan.
pub struct Known<'a> {
    pub issues: &'a BTreeMap<String, IssueRecord>,
    pub branches: &'a BTreeSet<String>,
    pub labels: &'a BTreeSet<String>,
    /// Task states decided by runs and reviews, by task id.
    pub states: &'a BTreeMap<crate::core::plan::TaskId, crate::core::plan::TaskState>,
}

/// Decides what a freshly read plan implies.
pub fn decide_plan(plan: StoryPlan, known: &Known) -> Decision {
    let config = match load_config(plan.config.as_deref()) {
        Ok(config) => config,
        Err(problems) => {
            let report = render_problems(CONFIG_PATH, &problems);
            return bad_plan(&plan, CONFIG_PATH, &problems, report);
        }
    };
    let files = MemFiles(plan.files.clone());
    let report = check_plan(&plan.source, &plan.plan, &config, &files);
    let Some(parsed) = report.plan.as_ref() else {
        let text = render_validation_report(std::slice::from_ref(&report));
        return bad_plan(&plan, &plan.source, &report.problems, text);
    };
    let effects = pass(&plan, parsed, &files, known);
    Decision {
        outcome: format!(
            "plan {} is valid: {} effect(s) queued",
            plan.source,
            effects.len()
        ),
        changes: vec![Change::StoryPlanned(plan)],
        effects,
    }
}

/// A plan posted with `/taskgate plan` on an existing issue.
pub struct CommentPlan {
    pub comment: CommentId,
    /// The commented issue as it is now: it becomes the story's issue.
    pub issue: IssueRecord,
}

/// Decides what a plan posted in a comment implies: problems are answered
/// in a reply; a valid plan adopts the issue as the story (its original
/// description is kept in a comment, since the body becomes the story tree).
pub fn decide_comment_plan(plan: StoryPlan, comment: &CommentPlan, known: &Known) -> Decision {
    let issue = comment.issue.number;
    let reply = |body: String, what: &str| Effect::PostComment {
        repo: plan.repo.clone(),
        issue,
        body,
        marker: format!("{what} comment={}", comment.comment),
    };
    let config = match load_config(plan.config.as_deref()) {
        Ok(config) => config,
        Err(problems) => {
            let report = render_problems(CONFIG_PATH, &problems);
            return Decision {
                outcome: format!("{CONFIG_PATH} has problems; plan not applied"),
                changes: vec![],
                effects: vec![reply(problem_reply(CONFIG_PATH, &report), "plan-problems")],
            };
        }
    };
    let files = MemFiles(plan.files.clone());
    let report = check_plan(&plan.source, &plan.plan, &config, &files);
    let Some(parsed) = report.plan.as_ref() else {
        let text = render_validation_report(std::slice::from_ref(&report));
        return Decision {
            outcome: format!("plan in {} has problems; nothing changed", plan.source),
            changes: vec![],
            effects: vec![reply(problem_reply(&plan.source, &text), "plan-problems")],
        };
    };
    let story_key = Marker::Story {
        story: plan.story.clone(),
    }
    .key();
    let mut issues = known.issues.clone();
    let mut changes = vec![];
    let mut effects = vec![Effect::ReactToComment {
        repo: plan.repo.clone(),
        comment: comment.comment,
        reaction: Reaction::PlusOne,
    }];
    if let std::collections::btree_map::Entry::Vacant(slot) = issues.entry(story_key.clone()) {
        let original = comment.issue.body.trim();
        if !original.is_empty() {
            effects.push(reply(
                format!("This issue is now the story of a taskgate plan, and its description shows the task tree. The original description, kept here:\n\n{}", quote(original)),
                "original-description",
            ));
        }
        changes.push(Change::IssueAdopted {
            repo: plan.repo.clone(),
            marker: story_key.clone(),
            record: comment.issue.clone(),
        });
        slot.insert(comment.issue.clone());
    }
    let adopted = Known {
        issues: &issues,
        branches: known.branches,
        labels: known.labels,
        states: known.states,
    };
    effects.extend(pass(&plan, parsed, &files, &adopted));
    let outcome = format!(
        "plan in {} is valid: {} effect(s) queued",
        plan.source,
        effects.len()
    );
    changes.insert(0, Change::StoryPlanned(plan));
    Decision {
        outcome,
        changes,
        effects,
    }
}

fn problem_reply(file: &str, report: &str) -> String {
    format!(
        "taskgate could not use this plan; nothing was created or changed. Fix the problems below and post `/taskgate plan` again.\n\n```text\n{}\n```",
        report.trim_end().replace(file, "plan").replace("```", "'''")
    )
}

/// `text` as a Markdown block quote.
fn quote(text: &str) -> String {
    text.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The next reconciliation pass of a saved plan.
/// Follow-up passes after a plan's first one; a pass that creates nothing
/// ends the chain, so only creates GitHub keeps refusing reach this bound.
pub const MAX_RECONCILE_ROUNDS: u32 = 5;

pub fn decide_reconcile(plan: &StoryPlan, known: &Known, round: u32) -> Decision {
    if round >= MAX_RECONCILE_ROUNDS {
        return Decision::nothing(format!(
            "gave up reconciling {} after {round} passes: GitHub keeps refusing to create its issues (see the failed effects)",
            plan.story
        ));
    }
    let config = load_config(plan.config.as_deref()).unwrap_or_default();
    let files = MemFiles(plan.files.clone());
    let report = check_plan(&plan.source, &plan.plan, &config, &files);
    match report.plan.as_ref() {
        Some(parsed) => {
            let mut effects = pass(plan, parsed, &files, known);
            for effect in &mut effects {
                if let Effect::Reconcile { round: next, .. } = effect {
                    *next = round + 1;
                }
            }
            Decision {
                outcome: format!(
                    "reconciled {}: {} effect(s) queued",
                    plan.story,
                    effects.len()
                ),
                changes: vec![],
                effects,
            }
        }
        // A saved plan was valid when saved; a newer taskgate may judge it
        // differently. Do nothing rather than half-apply it.
        None => Decision {
            outcome: format!(
                "saved plan {} no longer validates; nothing done",
                plan.story
            ),
            ..Decision::default()
        },
    }
}

fn pass(plan: &StoryPlan, parsed: &Plan, files: &MemFiles, known: &Known) -> Vec<Effect> {
    reconcile(
        &plan.story,
        parsed,
        files,
        &RepoView {
            repo: &plan.repo,
            base_sha: &plan.sha,
            issues: known.issues,
            branches: known.branches,
            labels: known.labels,
            states: known.states,
        },
    )
}

fn bad_plan(plan: &StoryPlan, file: &str, problems: &[Problem], report: String) -> Decision {
    let errors = problems.iter().filter(|p| p.is_error()).count();
    let annotations = problems
        .iter()
        .filter_map(|p| {
            p.pos.map(|pos| CheckAnnotation {
                path: file.to_owned(),
                line: pos.line as u32,
                message: p.message.clone(),
            })
        })
        .collect();
    Decision {
        outcome: format!("plan {} has {errors} error(s); nothing changed", plan.source),
        changes: vec![],
        effects: vec![Effect::CreateCheckRun {
            repo: plan.repo.clone(),
            check: CheckRunSpec {
                name: PLAN_CHECK.to_owned(),
                head_sha: plan.sha.clone(),
                conclusion: "failure".to_owned(),
                title: format!("{errors} problem(s) in {file}; nothing was created or changed"),
                summary: format!(
                    "taskgate read `{file}` and found problems. Fix them and push again; until then the story stays as it was.\n\n```text\n{}\n```",
                    report.trim_end().replace("```", "'''")
                ),
                annotations,
            },
        }],
    }
}
