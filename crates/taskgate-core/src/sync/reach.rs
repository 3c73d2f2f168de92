//! Where a plan's tasks may live (issue 49, `docs/decisions/cross-repo.md`):
//! a task's `repo:` must be of the plan's owner and among the repositories
//! the App's installation reaches. Until plan sync creates issues and
//! branches in other repositories, a reachable one is refused too, saying
//! so: a plan that names another repository creates nothing anywhere.
//!
//! Owns: which repositories a plan names besides its own
//! ([`named_repos`]), and the problems of a plan's `repo:` lines given what
//! the installation reaches ([`repo_problems`]).
//! Must not: ask GitHub. The shell lists the installation's repositories
//! (`app::sync::reach`) only when [`named_repos`] is not empty.

use std::collections::BTreeSet;

use crate::ids::RepoName;
use crate::plan::{parse_plan, Plan, Problem, ProblemKind};

/// What the plan's installation reaches, as far as the plan needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The installation's repositories (`GET /installation/repositories`);
    /// empty when the plan names none but its own, so nothing was asked.
    pub installed: BTreeSet<RepoName>,
}

/// The repositories a plan's text names in `repo:` other than `home`
/// (none for a plan that does not parse: its problems are said first).
pub fn named_repos(home: &RepoName, plan_text: &str) -> BTreeSet<RepoName> {
    match parse_plan(plan_text).0 {
        Some(plan) => others(home, &plan).into_iter().cloned().collect(),
        None => BTreeSet::new(),
    }
}

fn others<'p>(home: &RepoName, plan: &'p Plan) -> Vec<&'p RepoName> {
    plan.walk()
        .into_iter()
        .filter_map(|t| t.task.repo.as_ref())
        .map(|r| &r.value)
        .filter(|r| *r != home)
        .collect()
}

/// The owner part of `owner/name`.
fn owner(repo: &RepoName) -> &str {
    repo.as_str().split('/').next().unwrap_or_default()
}

/// One problem per task whose `repo:` names another repository: of another
/// owner, outside the installation, or (until plan sync reaches other
/// repositories) not supported yet. A task naming `home` is fine.
pub fn repo_problems(home: &RepoName, plan: &Plan, reach: &Reach) -> Vec<Problem> {
    plan.walk()
        .into_iter()
        .filter_map(|t| {
            let repo = t.task.repo.as_ref()?;
            let named = &repo.value;
            let kind = if named == home {
                return None;
            } else if owner(named) != owner(home) {
                ProblemKind::RepoOfAnotherOwner {
                    repo: named.to_string(),
                    owner: owner(home).to_owned(),
                }
            } else if !reach.installed.contains(named) {
                ProblemKind::RepoNotInstalled {
                    repo: named.to_string(),
                }
            } else {
                ProblemKind::RepoNotYetSupported {
                    repo: named.to_string(),
                    home: home.to_string(),
                }
            };
            Some(Problem::new(Some(repo.pos), kind))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::render_problems;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    const PLAN: &str = "story: Checkout v2\ntasks:\n  - { id: api, repo: acme/payments-api, acceptance: { tests: [x] } }\n  - { id: web, repo: acme/web, depends_on: [api], acceptance: { tests: [x] } }\n  - { id: docs, repo: acme/docs, acceptance: { tests: [x] } }\n  - { id: lib, repo: other/lib, acceptance: { tests: [x] } }\n  - { id: own, repo: ACME/Payments-API, acceptance: { tests: [x] } }\n";

    #[test]
    fn a_plan_names_the_repositories_other_than_its_own() {
        let named = named_repos(&repo("acme/payments-api"), PLAN);
        let named: Vec<&str> = named.iter().map(RepoName::as_str).collect();
        assert_eq!(named, ["acme/docs", "acme/web", "other/lib"]);
        assert!(named_repos(&repo("acme/x"), "story: s\ntasks: [{ id: a }]\n").is_empty());
        assert!(named_repos(&repo("acme/x"), "story: [").is_empty());
    }

    #[test]
    fn each_other_repository_is_refused_at_its_line_with_the_fix() {
        let home = repo("acme/payments-api");
        let plan = parse_plan(PLAN).0.unwrap();
        let reach = Reach {
            installed: [repo("acme/payments-api"), repo("acme/web")].into(),
        };
        let problems = repo_problems(&home, &plan, &reach);
        insta::assert_snapshot!(render_problems("plan.yml", &problems), @r"
        plan.yml:4:22: error: tasks in another repository (`acme/web`) are not supported yet: taskgate does not create issues, branches or pull requests there. Leave `repo` out (or name `acme/payments-api`) to plan the task here
        plan.yml:5:23: error: taskgate cannot reach `acme/docs`: install the App on acme/docs (or add it to the installation's repositories)
        plan.yml:6:22: error: `repo: other/lib` is of another owner: tasks may only name repositories of owner acme, the plan's owner
        ");
    }

    #[test]
    fn naming_the_plans_own_repository_is_fine() {
        let plan = parse_plan(
            "story: s\ntasks:\n  - { id: a, repo: Acme/API, acceptance: { tests: [x] } }\n",
        )
        .0
        .unwrap();
        assert!(repo_problems(&repo("acme/api"), &plan, &Reach::default()).is_empty());
    }
}
