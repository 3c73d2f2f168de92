//! A pull request that adds or changes a plan (or `.github/taskgate.yml`):
//! its `taskgate/plan` check run on the head, with the problems the default
//! branch's sync would report, or what merging it would create and change.
//!
//! Owns: [`decide_plan_preview`] and the dry run behind it, which runs the
//! reconciler's passes over a copy of what taskgate knows, pretending each
//! issue it creates was created, so the summary is what the sync would do.
//! Must not: create, change or record anything: its only effect is the
//! check run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::decide::{pass, Known, PLAN_CHECK};
use super::reach::{repo_problems, Reach};
use super::{IssueRecord, StoryPlan};
use crate::config::{load_config, CONFIG_PATH};
use crate::decide::Decision;
use crate::ids::{CommitSha, IssueId, IssueNumber, RepoName};
use crate::plan::{check_plan, render_check_problems, render_check_report, MemFiles, Problem};
use crate::story::Marker;
use crate::{CheckAnnotation, CheckConclusion, CheckRunSpec, Effect};

/// What a pull request's head holds, and what taskgate knows of each story.
pub struct PlanPreview<'a> {
    pub repo: RepoName,
    /// The pull request's head: where the check run goes.
    pub head: CommitSha,
    pub number: IssueNumber,
    /// `.github/taskgate.yml` at the head (`None`: there is none).
    pub config: Option<String>,
    /// Each plan file the pull request adds or changes, read at the head,
    /// with what taskgate knows of its story.
    pub plans: Vec<(StoryPlan, Known<'a>)>,
    /// What the installation reaches of the repositories the plans name
    /// besides this one ([`super::reach::named_repos`]).
    pub reach: Reach,
}

/// What merging would do to one story.
#[derive(Debug, Default)]
struct Tally {
    story: Option<String>,
    tasks: Vec<String>,
    updated: usize,
    closed: usize,
    parents: usize,
    blockers: usize,
    unblocked: usize,
}

/// The check run on the pull request's head.
pub fn decide_plan_preview(p: &PlanPreview) -> Decision {
    let check = |conclusion, title: String, summary: String, annotations| Effect::CreateCheckRun {
        repo: p.repo.clone(),
        check: CheckRunSpec {
            name: PLAN_CHECK.to_owned(),
            head_sha: p.head.clone(),
            conclusion,
            title,
            summary,
            annotations,
        },
    };
    let decision = |outcome: String, effect| Decision {
        outcome,
        changes: vec![],
        effects: vec![effect],
    };
    let config = match load_config(p.config.as_deref()) {
        Ok(config) => config,
        Err(problems) => {
            let text = render_check_problems(CONFIG_PATH, &problems);
            let title = format!("{} problem(s) in {CONFIG_PATH}", problems.len());
            let effect = check(
                CheckConclusion::Failure,
                title,
                refused(&text),
                Problem::annotations(CONFIG_PATH, &problems),
            );
            return decision(
                format!("pull #{}: {CONFIG_PATH} has problems", p.number),
                effect,
            );
        }
    };
    let mut problems: Vec<CheckAnnotation> = Vec::new();
    let mut texts = Vec::new();
    let mut tallies = Vec::new();
    for (plan, known) in &p.plans {
        let files = MemFiles(plan.files.clone());
        let mut report = check_plan(&plan.source, &plan.plan, &config, &files);
        if let Some(parsed) = &report.plan {
            report
                .problems
                .extend(repo_problems(&plan.repo, parsed, &p.reach));
        }
        match &report.plan {
            Some(parsed) if report.is_ok() => {
                let effects = dry_run(plan, parsed, &files, known);
                tallies.push((plan.source.clone(), tally(&effects, known)));
            }
            _ => {
                texts.push(render_check_report(std::slice::from_ref(&report)));
                problems.extend(Problem::annotations(&plan.source, &report.problems));
            }
        }
    }
    if !texts.is_empty() {
        let errors = problems.len();
        let title = format!("{errors} problem(s) in the plans this pull request changes");
        let effect = check(
            CheckConclusion::Failure,
            title,
            refused(&texts.concat()),
            problems,
        );
        return decision(format!("pull #{}: plans have problems", p.number), effect);
    }
    let (title, summary) = would_do(&tallies);
    let effect = check(CheckConclusion::Success, title, summary, vec![]);
    decision(format!("pull #{}: plans checked", p.number), effect)
}

fn refused(text: &str) -> String {
    format!(
        "Merging this pull request as it is would change nothing: taskgate would refuse these files, as below. Fix them and push again.\n\n```text\n{}\n```",
        text.trim_end().replace("```", "'''")
    )
}

/// The reconciler's passes over a copy of `known`, each issue it creates
/// recorded as created (with a made-up number), until a pass creates none:
/// every effect the sync would queue, creates, links and updates alike.
fn dry_run(
    plan: &StoryPlan,
    parsed: &crate::plan::Plan,
    files: &MemFiles,
    known: &Known,
) -> Vec<Effect> {
    let mut issues: BTreeMap<String, IssueRecord> = known.issues.clone();
    let mut all = Vec::new();
    for _ in 0..super::MAX_RECONCILE_ROUNDS {
        let view = Known {
            issues: &issues,
            ..*known
        };
        let effects = pass(plan, parsed, files, &view);
        let mut created = false;
        let mut next = issues.len() as u64 + 1_000_000;
        for effect in &effects {
            if let Effect::CreateIssue {
                marker,
                title,
                body,
                labels,
                ..
            } = effect
            {
                next += 1;
                issues.insert(
                    marker.clone(),
                    IssueRecord {
                        number: IssueNumber::new(next),
                        id: IssueId::new(next),
                        title: title.clone(),
                        body: body.clone(),
                        labels: labels.iter().cloned().collect::<BTreeSet<_>>(),
                        open: true,
                        parent: None,
                        blocked_by: BTreeSet::new(),
                    },
                );
                created = true;
            }
        }
        all.extend(effects);
        if !created {
            break;
        }
    }
    all
}

fn tally(effects: &[Effect], known: &Known) -> Tally {
    let mut t = Tally::default();
    for effect in effects {
        match effect {
            Effect::CreateIssue { marker, title, .. } => match Marker::from_key(marker) {
                Some(Marker::Story { .. }) => t.story = Some(title.clone()),
                Some(Marker::Task { task, .. }) => t.tasks.push(format!("`{task}` {title}")),
                _ => {}
            },
            Effect::UpdateIssue { marker, state, .. } if known.issues.contains_key(marker) => {
                if matches!(state, Some(s) if *s != crate::IssueState::Open) {
                    t.closed += 1;
                } else {
                    t.updated += 1;
                }
            }
            Effect::LinkSubIssue { .. } => t.parents += 1,
            Effect::AddBlockedBy { .. } => t.blockers += 1,
            Effect::RemoveBlockedBy { .. } => t.unblocked += 1,
            _ => {}
        }
    }
    t
}

/// `n thing`, `n things`.
fn count(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// What merging would do to one story, a line each.
fn lines(t: &Tally) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(story) = &t.story {
        lines.push(format!("create the story issue \"{story}\""));
    }
    if !t.tasks.is_empty() {
        let issues = count(t.tasks.len(), "task issue");
        lines.push(format!("create {issues}: {}", t.tasks.join(", ")));
    }
    if t.parents > 0 {
        lines.push(format!("add {}", count(t.parents, "sub-issue link")));
    }
    if t.blockers > 0 {
        lines.push(format!("add {}", count(t.blockers, "blocked-by link")));
    }
    if t.unblocked > 0 {
        lines.push(format!("remove {}", count(t.unblocked, "blocked-by link")));
    }
    if t.updated > 0 {
        let n = count(t.updated, "existing issue");
        lines.push(format!("update {n} (title, text, labels)"));
    }
    if t.closed > 0 {
        let n = count(t.closed, "task issue");
        lines.push(format!("close {n} no longer in the plan"));
    }
    if lines.is_empty() {
        lines.push("change nothing: GitHub already matches this plan".into());
    }
    lines
}

/// The title and summary of a check run for plans that are fine.
fn would_do(tallies: &[(String, Tally)]) -> (String, String) {
    let mut summary = String::from("Merging this pull request would, on GitHub:\n");
    let (mut stories, mut tasks, mut links, mut changed) = (0, 0, 0, 0);
    for (file, t) in tallies {
        writeln!(summary, "\n**`{file}`**\n").ok();
        for line in lines(t) {
            writeln!(summary, "- {line}").ok();
        }
        stories += usize::from(t.story.is_some());
        tasks += t.tasks.len();
        links += t.parents + t.blockers + t.unblocked;
        changed += t.updated + t.closed;
    }
    if tallies.is_empty() {
        summary = format!("`{CONFIG_PATH}` is valid; no plan changed.\n");
    }
    summary.push_str("\nNothing is created or changed before the merge.");
    let title = if tallies.is_empty() {
        format!("{CONFIG_PATH} is valid; no plan changed")
    } else if stories + tasks + links + changed == 0 {
        "The plans are valid; merging changes nothing on GitHub".to_owned()
    } else {
        format!(
            "Merging creates {}, {} and {}, and changes {}",
            count(stories, "story"),
            count(tasks, "task issue"),
            count(links, "link"),
            count(changed, "issue")
        )
        .replace("storys", "stories")
    };
    (title, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::StoryId;
    use crate::sync::test_support::{record, story_key, task_key};

    fn story_plan(text: &str) -> StoryPlan {
        StoryPlan {
            repo: RepoName::parse("o/r").unwrap(),
            story: StoryId::from("file:s"),
            installation: crate::ids::InstallationId::new(1),
            source: ".taskgate/stories/s.yml".into(),
            plan: text.into(),
            config: None,
            files: BTreeMap::new(),
            sha: crate::ids::sha(&"b".repeat(40)),
        }
    }

    fn preview(text: &str, issues: &BTreeMap<String, IssueRecord>) -> (String, String, String) {
        let empty = Default::default();
        let (states, starts) = (Default::default(), Default::default());
        let known = Known {
            issues,
            branches: &empty,
            labels: &empty,
            states: &states,
            starts: &starts,
        };
        let p = PlanPreview {
            repo: RepoName::parse("o/r").unwrap(),
            head: crate::ids::sha(&"c".repeat(40)),
            number: IssueNumber::new(7),
            config: None,
            plans: vec![(story_plan(text), known)],
            reach: Reach::default(),
        };
        let d = decide_plan_preview(&p);
        assert!(d.changes.is_empty(), "a preview records nothing");
        let [Effect::CreateCheckRun { check, .. }] = d.effects.as_slice() else {
            panic!("one check run: {:?}", d.effects)
        };
        assert_eq!(check.name, PLAN_CHECK);
        assert_eq!(check.head_sha.as_str(), "c".repeat(40));
        let notes: Vec<String> = check
            .annotations
            .iter()
            .map(|a| format!("{}:{} {}", a.path, a.line, a.message))
            .collect();
        (
            format!("{:?}: {}", check.conclusion, check.title),
            check.summary.clone(),
            notes.join("\n"),
        )
    }

    const PLAN: &str = "story: Reports\ntasks:\n  - { id: data, title: Data, acceptance: { tests: [x] } }\n  - { id: export, title: Export, depends_on: [data], acceptance: { tests: [y] } }\n";

    #[test]
    fn a_new_plan_says_what_merging_creates() {
        let (title, summary, _) = preview(PLAN, &BTreeMap::new());
        insta::assert_snapshot!(format!("{title}\n\n{summary}"));
    }

    #[test]
    fn a_changed_plan_says_what_merging_changes() {
        let issues: BTreeMap<String, IssueRecord> = [
            (story_key(), 1, true),
            (task_key("data"), 2, true),
            (task_key("gone"), 3, true),
        ]
        .into_iter()
        .map(|(k, n, open)| (k.clone(), record(n, &k, open)))
        .collect();
        let (title, summary, _) = preview(PLAN, &issues);
        insta::assert_snapshot!(format!("{title}\n\n{summary}"));
    }

    #[test]
    fn a_broken_config_fails_the_check_at_its_place_and_a_fine_one_alone_says_so() {
        let mut p = PlanPreview {
            repo: RepoName::parse("o/r").unwrap(),
            head: crate::ids::sha(&"c".repeat(40)),
            number: IssueNumber::new(7),
            config: Some("limits:\n  max_debug_attempts: 11\n".into()),
            plans: vec![],
            reach: Reach::default(),
        };
        let shown = |p: &PlanPreview| match decide_plan_preview(p).effects.as_slice() {
            [Effect::CreateCheckRun { check, .. }] => {
                format!(
                    "{:?}: {}\n\n{}",
                    check.conclusion, check.title, check.summary
                )
            }
            other => panic!("one check run: {other:?}"),
        };
        insta::assert_snapshot!(shown(&p));
        p.config = Some("limits:\n  max_debug_attempts: 5\n".into());
        insta::assert_snapshot!(shown(&p));
    }

    #[test]
    fn a_broken_plan_gets_its_problems_with_lines_columns_and_pointers() {
        let broken = "story: Reports\ntasks:\n  - { id: data, depends_on: [dta], acceptance: { tests: [x] } }\n";
        let (title, summary, notes) = preview(broken, &BTreeMap::new());
        insta::assert_snapshot!(format!("{title}\n\n{summary}\n\n{notes}"));
    }
}
