//! The parts of a story whose tasks span repositories (issue 49,
//! `docs/decisions/cross-repo.md`): each repository touched is a part.
//! The home's part is the story branch `taskgate/story-<n>`; another
//! repository's part has the branch `taskgate/part-<n>-<home owner>-<home
//! name>` (`n` the story issue's number in the home) and its own story PR.
//!
//! Owns: which repositories a plan's tasks touch ([`parts_of`]), each
//! part's branch name ([`part_branch`]), the story body's "Parts" section
//! ([`render_parts`]) and what `ship` answers while shipping across
//! repositories does not exist ([`render_ship_across_repositories_refused`]).
//! Must not: do IO, or decide where a task's effects go (`core::sync`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::body::TaskView;
use super::branches::{story_branch, BranchName};
use crate::ids::{IssueNumber, RepoName};
use crate::plan::{Plan, TaskId, TaskState};

/// One repository's part of a story, as the story issue shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartView {
    pub repo: RepoName,
    /// Leaf tasks complete, of `total`.
    pub done: usize,
    pub total: usize,
    /// The part's story PR, once opened.
    pub pull: Option<IssueNumber>,
}

/// The repository a task lives in: its `repo`, else the home.
pub fn task_repo<'a>(home: &'a RepoName, task: &'a crate::plan::Task) -> &'a RepoName {
    task.repo.as_ref().map(|r| &r.value).unwrap_or(home)
}

/// The parts of `plan`'s story: the home first, then every other
/// repository its leaf tasks name, by name. Empty for a story whose tasks
/// all live in the home: it has no parts to list.
pub fn parts_of(
    home: &RepoName,
    plan: &Plan,
    tasks: &BTreeMap<TaskId, TaskView>,
    pulls: &BTreeMap<RepoName, IssueNumber>,
) -> Vec<PartView> {
    let mut counts: BTreeMap<&RepoName, (usize, usize)> = BTreeMap::new();
    for leaf in plan.leaves() {
        let done = tasks
            .get(&leaf.id.value)
            .is_some_and(|v| v.state == TaskState::Completed);
        let count = counts.entry(task_repo(home, leaf)).or_default();
        count.0 += usize::from(done);
        count.1 += 1;
    }
    if counts.keys().all(|r| *r == home) {
        return Vec::new();
    }
    let (own, others): (Vec<_>, Vec<_>) = counts.into_iter().partition(|(r, _)| *r == home);
    let own = if own.is_empty() {
        vec![(home, (0, 0))]
    } else {
        own
    };
    own.into_iter()
        .chain(others)
        .map(|(repo, (done, total))| PartView {
            repo: repo.clone(),
            done,
            total,
            pull: pulls.get(repo).copied(),
        })
        .collect()
}

/// `taskgate/part-12-acme-payments-api`: the part branch of the story
/// whose issue is `story_issue` in `home`, in another repository.
pub fn part_branch(story_issue: IssueNumber, home: &RepoName) -> String {
    BranchName::Part {
        story: story_issue,
        home: home.as_str().replace('/', "-"),
    }
    .to_string()
}

/// The story branch of `repo`'s part: the story branch in the home, the
/// part branch elsewhere.
pub fn branch_of_part(story_issue: IssueNumber, home: &RepoName, repo: &RepoName) -> String {
    if repo == home {
        story_branch(story_issue.get())
    } else {
        part_branch(story_issue, home)
    }
}

/// The story body's "Parts" section: one row per repository, with its
/// branch (once the story issue has a number), story PR and progress.
/// Empty for a story without parts.
pub fn render_parts(
    home: &RepoName,
    story_issue: Option<IssueNumber>,
    parts: &[PartView],
) -> String {
    if parts.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "### Parts\n\nThis story's tasks live in several repositories; each has its own story \
         branch and story PR.\n\n| Repository | Story branch | Story PR | Tasks complete |\n\
         |---|---|---|---|\n",
    );
    for part in parts {
        let name = if part.repo == *home {
            format!("`{}` (home)", part.repo)
        } else {
            format!("`{}`", part.repo)
        };
        let branch = story_issue
            .map(|n| format!("`{}`", branch_of_part(n, home, &part.repo)))
            .unwrap_or_else(|| "—".into());
        let pull = part
            .pull
            .map(|n| format!("{}#{n}", part.repo))
            .unwrap_or_else(|| "not opened yet".into());
        writeln!(
            out,
            "| {name} | {branch} | {pull} | {}/{} |",
            part.done, part.total
        )
        .ok();
    }
    out.push('\n');
    out
}

/// What `ship` (the command or the label) answers, once, on a story whose
/// tasks span repositories, while landing parts in order does not exist
/// (issue 49 step 6): nothing is merged, and what to do instead.
pub fn render_ship_across_repositories_refused(home: &RepoName, parts: &[PartView]) -> String {
    let names: Vec<String> = parts.iter().map(|p| format!("`{}`", p.repo)).collect();
    format!(
        "taskgate cannot ship this story yet: its tasks span {} repositories ({}), and \
         shipping across repositories (each part proven on its default branch, then landed in \
         dependency order) is not available yet. Nothing was merged or deployed.\n\n\
         Until it is, merge each part's story PR yourself, the repositories your other parts \
         depend on first, or plan each repository's tasks as a story of its own there and ship \
         those. The story stays planned in `{home}`; its tasks keep being tested.",
        parts.len(),
        names.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    const PLAN: &str = "story: Checkout v2\ntasks:\n  - { id: api, acceptance: { tests: [x] } }\n  - { id: web, repo: acme/web, depends_on: [api], acceptance: { tests: [x] } }\n  - { id: docs, repo: acme/docs, acceptance: { tests: [x] } }\n  - { id: style, repo: Acme/Web, acceptance: { tests: [x] } }\n";

    fn views(completed: &[&str]) -> BTreeMap<TaskId, TaskView> {
        completed
            .iter()
            .map(|id| {
                let view = TaskView {
                    issue: None,
                    state: TaskState::Completed,
                    marker: None,
                    branch: None,
                };
                (TaskId::new(*id), view)
            })
            .collect()
    }

    #[test]
    fn a_part_branch_names_the_story_issue_and_its_home() {
        let home = repo("acme/payments-api");
        let name = part_branch(IssueNumber::new(12), &home);
        assert_eq!(name, "taskgate/part-12-acme-payments-api");
        let parsed = BranchName::parse(&format!("refs/heads/{name}"));
        assert_eq!(
            parsed,
            BranchName::Part {
                story: IssueNumber::new(12),
                home: "acme-payments-api".into()
            }
        );
        assert_eq!(parsed.to_string(), name);
        // Its number is the home's story issue, not an issue of this
        // repository: it locates nothing here.
        assert_eq!(parsed.issue(), None);
        for not_ours in [
            "taskgate/part-12",
            "taskgate/part-12-",
            "taskgate/part-x-a-b",
        ] {
            assert!(
                matches!(BranchName::parse(not_ours), BranchName::NotOurs(_)),
                "{not_ours}"
            );
        }
        assert_eq!(
            branch_of_part(IssueNumber::new(12), &home, &home),
            "taskgate/story-12"
        );
        assert_eq!(
            branch_of_part(IssueNumber::new(12), &home, &repo("acme/web")),
            name
        );
    }

    #[test]
    fn a_story_in_one_repository_has_no_parts() {
        let plan = parse_plan("story: s\ntasks:\n  - { id: a, repo: Acme/API, acceptance: { tests: [x] } }\n  - { id: b, acceptance: { tests: [x] } }\n").0.unwrap();
        let parts = parts_of(&repo("acme/api"), &plan, &BTreeMap::new(), &BTreeMap::new());
        assert!(parts.is_empty());
        assert_eq!(
            render_parts(&repo("acme/api"), Some(IssueNumber::new(1)), &parts),
            ""
        );
    }

    #[test]
    fn the_story_body_lists_each_repositorys_part_with_its_branch_pull_and_progress() {
        let home = repo("acme/payments-api");
        let plan = parse_plan(PLAN).0.unwrap();
        let pulls = BTreeMap::from([(home.clone(), IssueNumber::new(40))]);
        let parts = parts_of(&home, &plan, &views(&["api", "style"]), &pulls);
        let names: Vec<&str> = parts.iter().map(|p| p.repo.as_str()).collect();
        assert_eq!(names, ["acme/payments-api", "acme/docs", "acme/web"]);
        insta::assert_snapshot!(render_parts(&home, Some(IssueNumber::new(12)), &parts), @r"
        ### Parts

        This story's tasks live in several repositories; each has its own story branch and story PR.

        | Repository | Story branch | Story PR | Tasks complete |
        |---|---|---|---|
        | `acme/payments-api` (home) | `taskgate/story-12` | acme/payments-api#40 | 1/1 |
        | `acme/docs` | `taskgate/part-12-acme-payments-api` | not opened yet | 0/1 |
        | `acme/web` | `taskgate/part-12-acme-payments-api` | not opened yet | 1/2 |
        ");
    }

    #[test]
    fn the_story_issue_shows_its_parts_under_the_progress_line() {
        let home = repo("acme/payments-api");
        let plan = parse_plan(PLAN).0.unwrap();
        let mut views = views(&["api"]);
        for (id, n) in [("api", 13), ("web", 2), ("docs", 5), ("style", 3)] {
            let view = views.entry(TaskId::new(id)).or_insert(TaskView {
                issue: None,
                state: TaskState::Ready,
                marker: None,
                branch: None,
            });
            view.issue = Some(n);
        }
        let parts = parts_of(&home, &plan, &views, &BTreeMap::new());
        let section = render_parts(&home, Some(IssueNumber::new(12)), &parts);
        let story = "file:checkout".into();
        let body = crate::story::body::render_story_body_with_parts(
            &story,
            &plan,
            &views,
            &crate::plan::NoFiles,
            &section,
        );
        // The task list still names each task `#n`: a task elsewhere becomes
        // `owner/name#n` once the reconciler has part views
        // (docs/decisions/cross-repo.md, "Next", 2).
        insta::assert_snapshot!(body);
        // A story in one repository renders as it always did.
        assert_eq!(
            crate::story::body::render_story_body_with_parts(
                &story,
                &plan,
                &views,
                &crate::plan::NoFiles,
                ""
            ),
            crate::story::render_story_body(&story, &plan, &views, &crate::plan::NoFiles)
        );
    }

    #[test]
    fn ship_on_a_story_across_repositories_is_refused_with_what_to_do() {
        let home = repo("acme/payments-api");
        let plan = parse_plan(PLAN).0.unwrap();
        let parts = parts_of(&home, &plan, &BTreeMap::new(), &BTreeMap::new());
        insta::assert_snapshot!(render_ship_across_repositories_refused(&home, &parts), @r"
        taskgate cannot ship this story yet: its tasks span 3 repositories (`acme/payments-api`, `acme/docs`, `acme/web`), and shipping across repositories (each part proven on its default branch, then landed in dependency order) is not available yet. Nothing was merged or deployed.

        Until it is, merge each part's story PR yourself, the repositories your other parts depend on first, or plan each repository's tasks as a story of its own there and ship those. The story stays planned in `acme/payments-api`; its tasks keep being tested.
        ");
    }
}
