//! A plan read from the default branch (or a comment) → a decision: a
//! failing `taskgate/plan` check run listing every problem, or the story's
//! plan saved and the first reconciliation pass queued.

use crate::CheckConclusion;
use std::collections::{BTreeMap, BTreeSet};

use super::reach::{repo_problems, Reach};
use super::{reconcile, IssueRecord, RepoView, StoryPlan};
use crate::config::{load_config, CONFIG_PATH};
use crate::decide::Decision;
use crate::event::Change;
use crate::ids::{CommentId, CommitSha, RepoName, StoryId};
use crate::plan::{
    check_plan, render_check_problems, render_check_report, MemFiles, Plan, PlanReport, Problem,
};
use crate::story::Marker;
use crate::IssueState;
use crate::{CheckRunSpec, Effect, Reaction};

/// The check run that reports plan problems.
pub const PLAN_CHECK: &str = "taskgate/plan";

/// `/taskgate plan` without the plan: one reply saying where it goes,
/// marked by the comment so a retry does not post it twice.
pub fn decide_plan_comment_without_yaml(
    repo: &RepoName,
    issue: crate::ids::IssueNumber,
    comment: CommentId,
    login: &str,
) -> Decision {
    Decision {
        outcome: "plan command without a yaml block".into(),
        changes: vec![],
        effects: vec![Effect::PostComment {
            repo: repo.clone(),
            issue,
            body: format!(
                "@{login} `/taskgate plan` needs the plan in the same comment, in a fenced code block marked `yaml`. Nothing was changed."
            ),
            marker: format!("plan-problems comment={comment}"),
        }],
    }
}

/// What taskgate knows of the repository besides the plan.
pub struct Known<'a> {
    pub issues: &'a BTreeMap<String, IssueRecord>,
    pub branches: &'a BTreeSet<String>,
    pub labels: &'a BTreeSet<String>,
    /// Task states decided by runs and reviews, by task id.
    pub states: &'a BTreeMap<crate::plan::TaskId, crate::plan::TaskState>,
    /// What each ready task's branch was started from, by task id.
    pub starts: &'a BTreeMap<crate::plan::TaskId, crate::story::BranchStart>,
}

/// Decides what a freshly read plan implies. `reach`: what the
/// installation reaches of the repositories the plan names
/// ([`super::reach::named_repos`]).
pub fn decide_plan(plan: StoryPlan, known: &Known, reach: &Reach) -> Decision {
    let config = match load_config(plan.config.as_deref()) {
        Ok(config) => config,
        Err(problems) => {
            let report = render_check_problems(CONFIG_PATH, &problems);
            return bad_plan(&plan, CONFIG_PATH, &problems, report);
        }
    };
    let files = MemFiles(plan.files.clone());
    let report = check_plan(&plan.source, &plan.plan, &config, &files);
    let Some(parsed) = report.plan.as_ref() else {
        let text = render_check_report(std::slice::from_ref(&report));
        return bad_plan(&plan, &plan.source, &report.problems, text);
    };
    if let Some((problems, text)) = unreachable(&plan, parsed, reach) {
        return bad_plan(&plan, &plan.source, &problems, text);
    }
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

/// A story's plan file was removed from the default branch (at `sha`):
/// the story is no longer planned, so its issue and its open task issues
/// are closed as not planned, saying why once on the story. Restoring the
/// file plans it again: the reconciler reopens what it wants open.
pub fn decide_removed_plan(
    repo: &RepoName,
    story: &StoryId,
    source: &str,
    sha: &CommitSha,
    known: &Known,
) -> Decision {
    let story_key = Marker::Story {
        story: story.clone(),
    }
    .key();
    let Some(story_issue) = known.issues.get(&story_key) else {
        return Decision::nothing(format!("plan {source} removed: it was never planned"));
    };
    let close = |marker: &str| Effect::UpdateIssue {
        repo: repo.clone(),
        marker: marker.to_owned(),
        title: None,
        body: None,
        labels: None,
        state: Some(IssueState::ClosedNotPlanned),
    };
    let task_prefix = format!("{story_key} task=");
    let open_tasks: Vec<&String> = known
        .issues
        .iter()
        .filter(|(key, record)| {
            key.starts_with(&task_prefix)
                && record.open
                && matches!(Marker::from_key(key), Some(Marker::Task { .. }))
        })
        .map(|(key, _)| key)
        .collect();
    let mut effects = vec![Effect::PostComment {
        repo: repo.clone(),
        issue: story_issue.number,
        body: retired_comment(source, sha, open_tasks.len()),
        marker: format!("retired {story_key} {sha}"),
    }];
    effects.extend(open_tasks.iter().map(|key| close(key)));
    if story_issue.open {
        effects.push(close(&story_key));
    }
    Decision {
        outcome: format!(
            "plan {source} removed: story {story} and {} open task(s) closed as not planned",
            open_tasks.len()
        ),
        changes: vec![Change::StoryRetired {
            repo: repo.clone(),
            story: story.clone(),
        }],
        effects,
    }
}

/// What the story issue says when its plan file is removed.
fn retired_comment(source: &str, sha: &CommitSha, open_tasks: usize) -> String {
    let tasks = match open_tasks {
        0 => String::new(),
        1 => " and its open task".into(),
        n => format!(" and its {n} open tasks"),
    };
    format!(
        "The plan file `{source}` was removed from the default branch in {}, so this story \
         is no longer planned: taskgate closes it{tasks} as not planned. Restoring the file \
         plans the story again and reopens what it still holds.",
        sha.short()
    )
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
pub fn decide_comment_plan(
    plan: StoryPlan,
    comment: &CommentPlan,
    known: &Known,
    reach: &Reach,
) -> Decision {
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
            let report = render_check_problems(CONFIG_PATH, &problems);
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
        let text = render_check_report(std::slice::from_ref(&report));
        return Decision {
            outcome: format!("plan in {} has problems; nothing changed", plan.source),
            changes: vec![],
            effects: vec![reply(problem_reply(&plan.source, &text), "plan-problems")],
        };
    };
    if let Some((_, text)) = unreachable(&plan, parsed, reach) {
        return Decision {
            outcome: format!(
                "plan in {} names repositories taskgate cannot plan in; nothing changed",
                plan.source
            ),
            changes: vec![],
            effects: vec![reply(problem_reply(&plan.source, &text), "plan-problems")],
        };
    }
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
        starts: known.starts,
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

/// The problems of a valid plan's `repo:` lines, with their report, if it
/// has any (`reach::repo_problems`): nothing is created for such a plan.
fn unreachable(plan: &StoryPlan, parsed: &Plan, reach: &Reach) -> Option<(Vec<Problem>, String)> {
    let problems = repo_problems(&plan.repo, parsed, reach);
    if problems.is_empty() {
        return None;
    }
    let text = render_check_report(&[PlanReport {
        file: plan.source.clone(),
        plan: None,
        problems: problems.clone(),
    }]);
    Some((problems, text))
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

/// A saved plan as a reconciliation pass uses it: its text checked
/// against its config and files (`None`: it no longer validates; its
/// config, if broken, read as the defaults).
pub fn checked_plan(plan: &StoryPlan) -> Option<Plan> {
    let config = load_config(plan.config.as_deref()).unwrap_or_default();
    let files = MemFiles(plan.files.clone());
    check_plan(&plan.source, &plan.plan, &config, &files).plan
}

/// The next reconciliation pass of a saved plan.
/// Follow-up passes after a plan's first one; a pass that creates nothing
/// ends the chain, so only creates GitHub keeps refusing reach this bound.
pub const MAX_RECONCILE_ROUNDS: u32 = 5;

///
/// `checked` is [`checked_plan`] of `plan`: the shell keeps it while the
/// text, config and files stay the same, so a pass over a 10,000-task plan
/// does not parse 0.7 MB of YAML again.
pub fn decide_reconcile(
    plan: &StoryPlan,
    checked: Option<&Plan>,
    known: &Known,
    round: u32,
) -> Decision {
    if round >= MAX_RECONCILE_ROUNDS {
        return Decision::nothing(format!(
            "gave up reconciling {} after {round} passes: GitHub keeps refusing to create its issues (see the failed effects)",
            plan.story
        ));
    }
    let files = MemFiles(plan.files.clone());
    match checked {
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

/// A ready task's branch was started (the executor's report): recorded on
/// the task's record. The first report wins: a repeated start only found
/// the branch up to date with what the first one did.
pub fn record_branch_start(
    repo: &RepoName,
    story: &StoryId,
    started: &crate::internal::BranchStarted,
    record: Option<crate::task::TaskRecord>,
) -> Option<Change> {
    let mut record = record.unwrap_or_default();
    if record.branch.is_some() {
        return None;
    }
    record.branch = Some(started.start.clone());
    Some(Change::TaskUpdated {
        repo: repo.clone(),
        story: story.clone(),
        task: started.task.clone().into(),
        record: Box::new(record),
    })
}

pub(super) fn pass(
    plan: &StoryPlan,
    parsed: &Plan,
    files: &MemFiles,
    known: &Known,
) -> Vec<Effect> {
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
            starts: known.starts,
        },
    )
}

fn bad_plan(plan: &StoryPlan, file: &str, problems: &[Problem], report: String) -> Decision {
    let errors = problems.iter().filter(|p| p.is_error()).count();
    let annotations = Problem::annotations(file, problems);
    Decision {
        outcome: format!("plan {} has {errors} error(s); nothing changed", plan.source),
        changes: vec![],
        effects: vec![Effect::CreateCheckRun {
            repo: plan.repo.clone(),
            check: CheckRunSpec {
                name: PLAN_CHECK.to_owned(),
                head_sha: plan.sha.clone(),
                conclusion: CheckConclusion::Failure,
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

#[cfg(test)]
mod removed_plan_tests {
    use super::*;
    use crate::ids::IssueNumber;
    use crate::sync::test_support::{
        closed_not_planned, record, story_key, task_key as task, todo_key,
    };

    #[test]
    fn a_removed_plan_closes_its_story_and_open_tasks_and_forgets_the_plan() {
        let story = story_key();
        let todo = todo_key("a");
        let issues: BTreeMap<String, IssueRecord> = [
            (story.clone(), 1, true),
            (task("a"), 2, true),
            (task("b"), 3, false),
            (task("c"), 4, true),
            (todo.clone(), 5, true),
        ]
        .into_iter()
        .map(|(k, n, open)| (k.clone(), record(n, &k, open)))
        .collect();
        let known = Known {
            issues: &issues,
            branches: &BTreeSet::new(),
            labels: &BTreeSet::new(),
            states: &BTreeMap::new(),
            starts: &BTreeMap::new(),
        };
        let repo = RepoName::parse("o/r").unwrap();
        let sha = crate::ids::sha(&"ab12cd34".repeat(5));
        let d = decide_removed_plan(
            &repo,
            &StoryId::new("file:s"),
            ".taskgate/stories/s.yml",
            &sha,
            &known,
        );
        // The open tasks and the story; a closed task and a branch todo are left.
        assert_eq!(
            closed_not_planned(&d.effects),
            [task("a"), task("c"), story.clone()]
        );
        assert!(matches!(
            d.changes.as_slice(),
            [Change::StoryRetired { story, .. }] if story == "file:s"
        ));
        let Effect::PostComment { issue, body, .. } = &d.effects[0] else {
            panic!("{:?}", d.effects);
        };
        assert_eq!(*issue, IssueNumber::new(1));
        insta::assert_snapshot!(body, @"The plan file `.taskgate/stories/s.yml` was removed from the default branch in ab12cd3, so this story is no longer planned: taskgate closes it and its 2 open tasks as not planned. Restoring the file plans the story again and reopens what it still holds.");

        // A file taskgate never planned from: nothing to do.
        let none = BTreeMap::new();
        let unknown = Known {
            issues: &none,
            ..known
        };
        let d = decide_removed_plan(
            &repo,
            &StoryId::new("file:s"),
            ".taskgate/stories/s.yml",
            &sha,
            &unknown,
        );
        assert!(d.effects.is_empty() && d.changes.is_empty(), "{d:?}");
    }
}
