//! Relations inside a parsed plan: unique ids, dependencies that exist, are
//! not on oneself or one's own ancestor/descendant, and form no cycle (the
//! cycle is named); depth and sub-issue limits; every leaf that requires
//! testing has something to run; roles known to the repository config.
//!
//! A parent "waits for" its children, and a child inherits its ancestors'
//! dependencies; cycles are searched in that graph, so `data → signals` plus
//! `entry (in signals) → data` is a cycle even though no single edge says so.

use std::collections::{HashMap, HashSet};

use super::discover::{effective_tests, EffectiveTests, RepoFiles};
use super::yaml::did_you_mean;
use super::{Plan, Pos, Problem, ProblemKind, Spanned, TaskId, TaskRef};
use crate::config::RepoConfig;

/// GitHub's cap on sub-issues under one issue.
pub const MAX_CHILDREN: usize = 100;

/// Every problem in the plan's relations; empty when it is sound.
pub fn validate_plan(plan: &Plan, config: &RepoConfig, repo: &dyn RepoFiles) -> Vec<Problem> {
    let mut out = Vec::new();
    if plan.tasks.is_empty() {
        out.push(Problem::new(None, ProblemKind::EmptyPlan));
        return out;
    }
    let refs = plan.walk();

    check_unique_ids(plan, &refs, &mut out);
    // Index of the first task with each id (duplicates already reported).
    let mut index: HashMap<&TaskId, usize> = HashMap::new();
    for (i, r) in refs.iter().enumerate() {
        index.entry(&r.task.id.value).or_insert(i);
    }
    let ancestors: Vec<Vec<usize>> = refs
        .iter()
        .map(|r| ancestors_of(r, &refs, &index))
        .collect();

    check_shape(plan, &refs, config, &mut out);

    let graph = Graph {
        refs: &refs,
        index: &index,
        ancestors: &ancestors,
    };
    let deps = graph.check_dependencies(&mut out);
    graph.check_milestone_dependencies(plan, &mut out);
    out.extend(find_cycles(&refs, &index, &ancestors, &deps));

    check_testing_and_roles(&refs, config, repo, &mut out);
    out
}

/// Unique ids across tasks and milestones.
fn check_unique_ids(plan: &Plan, refs: &[TaskRef], out: &mut Vec<Problem>) {
    let mut first: HashMap<&TaskId, Pos> = HashMap::new();
    let ids = refs
        .iter()
        .map(|r| &r.task.id)
        .chain(plan.integration.iter().map(|m| &m.id));
    for id in ids {
        if let Some(line) = first.get(&id.value).map(|p| p.line) {
            out.push(Problem::new(
                Some(id.pos),
                ProblemKind::DuplicateId {
                    id: id.value.clone(),
                    first_line: line,
                },
            ));
        } else {
            first.insert(&id.value, id.pos);
        }
    }
}

/// The plan's tasks, by index in walk order, with what the dependency
/// checks need to know about each.
struct Graph<'r, 'p> {
    refs: &'r [TaskRef<'p>],
    index: &'r HashMap<&'p TaskId, usize>,
    ancestors: &'r [Vec<usize>],
}

impl Graph<'_, '_> {
    /// A dependency on a task that does not exist, with the nearest name.
    fn unknown(&self, task: &TaskId, dep: &Spanned<TaskId>) -> Problem {
        let task_names = self.refs.iter().map(|r| r.task.id.as_str());
        Problem::new(
            Some(dep.pos),
            ProblemKind::UnknownDependency {
                task: task.clone(),
                dependency: dep.value.clone(),
                suggestion: did_you_mean(dep.as_str(), task_names),
            },
        )
    }

    /// Each task's dependencies: the valid ones become edges for the
    /// cycle search, the rest problems (unknown, on itself, on its own
    /// ancestor or descendant).
    fn check_dependencies(&self, out: &mut Vec<Problem>) -> Vec<Vec<(usize, Pos)>> {
        let mut deps: Vec<Vec<(usize, Pos)>> = vec![Vec::new(); self.refs.len()];
        for (i, r) in self.refs.iter().enumerate() {
            let task = &r.task.id.value;
            for dep in &r.task.depends_on {
                let Some(&j) = self.index.get(&dep.value) else {
                    out.push(self.unknown(task, dep));
                    continue;
                };
                let relation = if i == j {
                    out.push(Problem::new(
                        Some(dep.pos),
                        ProblemKind::SelfDependency { task: task.clone() },
                    ));
                    continue;
                } else if self.ancestors[i].contains(&j) {
                    "ancestor"
                } else if self.ancestors[j].contains(&i) {
                    "descendant"
                } else {
                    deps[i].push((j, dep.pos));
                    continue;
                };
                out.push(Problem::new(
                    Some(dep.pos),
                    ProblemKind::HierarchyDependency {
                        task: task.clone(),
                        dependency: dep.value.clone(),
                        relation: relation.into(),
                    },
                ));
            }
        }
        deps
    }

    /// Integration milestones wait only for tasks that exist.
    fn check_milestone_dependencies(&self, plan: &Plan, out: &mut Vec<Problem>) {
        for m in &plan.integration {
            for dep in m
                .after
                .iter()
                .filter(|d| !self.index.contains_key(&d.value))
            {
                out.push(self.unknown(&m.id.value, dep));
            }
        }
    }
}

/// Testing and roles: a parent has no acceptance of its own, every task
/// has something to run, and every role it names exists.
fn check_testing_and_roles(
    refs: &[TaskRef],
    config: &RepoConfig,
    repo: &dyn RepoFiles,
    out: &mut Vec<Problem>,
) {
    let roles: Vec<&str> = config.role_names().collect();
    let known = roles.join(", ");
    for r in refs {
        let t = r.task;
        if t.is_parent() && !t.acceptance.is_empty() {
            out.push(Problem::new(
                Some(t.id.pos),
                ProblemKind::ParentWithAcceptance {
                    task: t.id.value.clone(),
                },
            ));
        }
        if effective_tests(t, repo) == EffectiveTests::Missing {
            out.push(Problem::new(
                Some(t.id.pos),
                ProblemKind::NoTestCommand {
                    task: t.id.value.clone(),
                },
            ));
        }
        let named = t.role.iter().map(|r| (r, format!("task `{}`", t.id.value)));
        let routed = t
            .failure_routing
            .iter()
            .map(|(k, r)| (r, format!("task `{}` (failure_routing.{k})", t.id.value)));
        for (role, context) in named.chain(routed) {
            if !roles.contains(&role.as_str()) {
                out.push(Problem::new(
                    Some(role.pos),
                    ProblemKind::UnknownRole {
                        role: role.value.clone(),
                        context,
                        known: known.clone(),
                        suggestion: did_you_mean(role, roles.iter().copied()),
                    },
                ));
            }
        }
    }
}

fn ancestors_of(r: &TaskRef, refs: &[TaskRef], index: &HashMap<&TaskId, usize>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut parent = r.parent;
    while let Some(p) = parent.and_then(|p| index.get(p)) {
        if out.contains(p) {
            break; // duplicate ids can make the chain loop; already reported
        }
        out.push(*p);
        parent = refs[*p].parent;
    }
    out
}

/// Depth and children limits.
fn check_shape(plan: &Plan, refs: &[TaskRef], config: &RepoConfig, out: &mut Vec<Problem>) {
    let limit = config.effective_limits(&plan.settings).max_plan_depth as usize;
    for r in refs.iter().filter(|r| r.depth == limit + 1) {
        out.push(Problem::new(
            Some(r.task.id.pos),
            ProblemKind::TooDeep {
                task: r.task.id.value.clone(),
                depth: r.depth,
                limit,
            },
        ));
    }
    let too_many = |parent: String, count: usize, pos: Pos| {
        Problem::new(
            Some(pos),
            ProblemKind::TooManyChildren {
                parent,
                count,
                limit: MAX_CHILDREN,
            },
        )
    };
    if plan.tasks.len() > MAX_CHILDREN {
        out.push(too_many(
            "the story".into(),
            plan.tasks.len(),
            plan.tasks[MAX_CHILDREN].id.pos,
        ));
    }
    for r in refs.iter().filter(|r| r.task.tasks.len() > MAX_CHILDREN) {
        out.push(too_many(
            format!("task `{}`", r.task.id.value),
            r.task.tasks.len(),
            r.task.id.pos,
        ));
    }
}

/// Cycles in the "waits for" graph, each named once, starting from the task
/// written first, with the position of its first edge.
fn find_cycles(
    refs: &[TaskRef],
    index: &HashMap<&TaskId, usize>,
    ancestors: &[Vec<usize>],
    deps: &[Vec<(usize, Pos)>],
) -> Vec<Problem> {
    let n = refs.len();
    let edges: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            let mut e: Vec<usize> = deps[i].iter().map(|(j, _)| *j).collect();
            e.extend(
                refs[i]
                    .task
                    .tasks
                    .iter()
                    .filter_map(|c| index.get(&c.id.value).copied()),
            );
            for a in &ancestors[i] {
                e.extend(
                    deps[*a]
                        .iter()
                        .map(|(j, _)| *j)
                        .filter(|j| !ancestors[i].contains(j)),
                );
            }
            e
        })
        .collect();

    #[derive(Clone, Copy, PartialEq)]
    enum Color {
        White,
        Gray,
        Black,
    }
    let mut color = vec![Color::White; n];
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut cycles = Vec::new();
    for start in 0..n {
        if color[start] != Color::White {
            continue;
        }
        // Iterative DFS: (node, next edge to follow).
        let mut stack = vec![(start, 0usize)];
        color[start] = Color::Gray;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&to) = edges[node].get(*next) {
                *next += 1;
                match color[to] {
                    Color::White => {
                        color[to] = Color::Gray;
                        stack.push((to, 0));
                    }
                    Color::Gray => {
                        let from = stack.iter().position(|(s, _)| *s == to).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[from..].iter().map(|(s, _)| *s).collect();
                        let min = (0..cycle.len()).min_by_key(|k| cycle[*k]).unwrap_or(0);
                        cycle.rotate_left(min);
                        if seen.insert(cycle.clone()) {
                            cycles.push(cycle);
                        }
                    }
                    Color::Black => {}
                }
            } else {
                color[node] = Color::Black;
                stack.pop();
            }
        }
    }
    cycles
        .into_iter()
        .map(|cycle| {
            let second = cycle.get(1).copied().unwrap_or(cycle[0]);
            let pos = deps[cycle[0]]
                .iter()
                .find(|(j, _)| *j == second)
                .map(|(_, p)| *p)
                .unwrap_or(refs[cycle[0]].task.id.pos);
            let mut ids: Vec<TaskId> = cycle
                .iter()
                .map(|i| refs[*i].task.id.value.clone())
                .collect();
            ids.push(ids[0].clone());
            Problem::new(Some(pos), ProblemKind::DependencyCycle { cycle: ids })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{check_plan, report_for, MemFiles};
    use crate::config::RepoConfig;

    /// A leaf with a test, for plans whose point is elsewhere.
    fn leaf(id: &str, extra: &str) -> String {
        format!("  - {{ id: {id}, title: T, acceptance: {{ tests: [\"true\"] }}{extra} }}\n")
    }

    #[test]
    fn duplicate_ids_point_at_the_second_one() {
        let src = format!("story: s\ntasks:\n{}{}", leaf("a", ""), leaf("a", ""));
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:4:11: error: duplicate id `a` (first defined at line 3)
        plan.yml: 1 error
        ");
    }

    #[test]
    fn unknown_dependency_suggests_the_closest_id() {
        let src = format!(
            "story: s\ntasks:\n{}{}",
            leaf("indicators", ""),
            leaf("entry", ", depends_on: [indicatrs]")
        );
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:4:74: error: task `entry` depends on unknown task `indicatrs` (did you mean `indicators`?)
        plan.yml: 1 error
        ");
    }

    #[test]
    fn self_dependency() {
        let src = format!("story: s\ntasks:\n{}", leaf("a", ", depends_on: [a]"));
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:3:70: error: task `a` depends on itself
        plan.yml: 1 error
        ");
    }

    #[test]
    fn cycle_is_named_from_its_first_task() {
        let src = format!(
            "story: s\ntasks:\n{}{}{}",
            leaf("a", ", depends_on: [b]"),
            leaf("b", ", depends_on: [c]"),
            leaf("c", ", depends_on: [a]")
        );
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:3:70: error: dependency cycle: `a` → `b` → `c` → `a`
        plan.yml: 1 error
        ");
    }

    #[test]
    fn a_cycle_across_repositories_is_found_as_in_one() {
        // Ids are unique across the plan, whatever repository a task is in.
        let src = format!(
            "story: s\ntasks:\n{}{}",
            leaf("api", ", repo: acme/api, depends_on: [web]"),
            leaf("web", ", repo: acme/web, depends_on: [api]")
        );
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:3:88: error: dependency cycle: `api` → `web` → `api`
        plan.yml: 1 error
        ");
    }

    #[test]
    fn cycle_through_a_parent_is_found() {
        // data waits for signals, which waits for entry, which waits for data.
        let src = "story: s\ntasks:\n  - { id: data, depends_on: [signals], acceptance: { tests: [x] } }\n  - id: signals\n    tasks:\n      - { id: entry, depends_on: [data], acceptance: { tests: [x] } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:30: error: dependency cycle: `data` → `signals` → `entry` → `data`
        plan.yml: 1 error
        ");
    }

    #[test]
    fn depending_on_an_ancestor_or_a_descendant() {
        let src = "story: s\ntasks:\n  - id: p\n    depends_on: [c]\n    tasks:\n      - { id: c, depends_on: [p], acceptance: { tests: [x] } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:4:18: error: task `p` depends on `c`, its own descendant; a parent completes when its children do, so this can never be ready
        plan.yml:6:31: error: task `c` depends on `p`, its own ancestor; a parent completes when its children do, so this can never be ready
        plan.yml: 2 errors
        ");
    }

    #[test]
    fn depth_over_the_limit() {
        let src = "story: s\ntasks:\n  - id: a\n    tasks:\n      - id: b\n        tasks:\n          - id: c\n            tasks:\n              - { id: d, acceptance: { tests: [x] } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:9:23: error: task `d` is at depth 4, deeper than the limit of 3
        plan.yml: 1 error
        ");
        let deeper = src.replace("story: s\n", "story: s\nsettings: { max_depth: 4 }\n");
        assert!(report_for(&deeper).ends_with(": ok (4 tasks, 0 milestones)\n"));
    }

    #[test]
    fn more_than_a_hundred_children() {
        let children: String = (0..101).map(|i| leaf(&format!("t{i}"), "")).collect();
        let src = format!("story: s\ntasks:\n{children}");
        insta::assert_snapshot!(report_for(&src), @r"
        plan.yml:103:11: error: the story has 101 child tasks; GitHub allows at most 100 sub-issues per issue
        plan.yml: 1 error
        ");
    }

    #[test]
    fn empty_plans() {
        insta::assert_snapshot!(report_for(""), @r"
        plan.yml: error: the plan is empty: it needs a `story` and at least one task
        plan.yml: 1 error
        ");
        insta::assert_snapshot!(report_for("story: s\ntasks: []\n"), @r"
        plan.yml: error: the plan is empty: it needs a `story` and at least one task
        plan.yml: 1 error
        ");
    }

    #[test]
    fn timeouts_out_of_range() {
        let src = "story: s\ntasks:\n  - { id: a, acceptance: { tests: [{ cmd: x, timeout_seconds: 0 }] } }\nintegration:\n  - { id: i, after: [a], cmd: y, timeout_seconds: 99999 }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:63: error: `timeout_seconds` is 0, outside the allowed range 1..=21600
        plan.yml:5:51: error: `timeout_seconds` is 99999, outside the allowed range 1..=21600
        plan.yml: 2 errors
        ");
    }

    #[test]
    fn unknown_keys_suggest_the_right_one() {
        let src =
            "story: s\nsetings: {}\ntasks:\n  - { id: a, tittle: A, acceptance: { test: [x] } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:2:1: error: unknown key `setings` in the plan (did you mean `settings`?)
        plan.yml:4:11: error: task `a` requires testing but has no tests and no test command could be discovered (add `acceptance.tests`, a Makefile target `test-a`, or `requires_testing: false`)
        plan.yml:4:14: error: unknown key `tittle` in task `a` (did you mean `title`?)
        plan.yml:4:39: error: unknown key `test` in `acceptance` of task `a` (did you mean `tests`?)
        plan.yml: 4 errors
        ");
    }

    #[test]
    fn leaf_without_tests_uses_discovery_or_fails() {
        let src = "story: s\ntasks:\n  - { id: a, title: A }\n  - { id: b, title: B, requires_testing: false }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:11: error: task `a` requires testing but has no tests and no test command could be discovered (add `acceptance.tests`, a Makefile target `test-a`, or `requires_testing: false`)
        plan.yml: 1 error
        ");
        let repo = MemFiles::new(&[("Makefile", "test-a:\n\tpytest\n")]);
        assert!(check_plan("plan.yml", src, &RepoConfig::default(), &repo).is_ok());
    }

    #[test]
    fn parent_with_acceptance_and_unknown_roles() {
        let src = "story: s\ntasks:\n  - id: p\n    role: codr\n    acceptance: { tests: [x] }\n    tasks:\n      - { id: c, acceptance: { tests: [x] }, failure_routing: { timeout: qa } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:9: error: parent task `p` has acceptance criteria, but parent tasks have no branch to test; move them to a child task or to `integration`
        plan.yml:4:11: warning: task `p` names unknown role `codr` (did you mean `coder`?); known roles: architect, coder, debugger, tester
        plan.yml:7:74: warning: task `c` (failure_routing.timeout) names unknown role `qa`; known roles: architect, coder, debugger, tester
        plan.yml: 1 error, 2 warnings
        ");
    }

    #[test]
    fn milestone_after_unknown_task_and_bad_ids() {
        let src = "story: s\nintegration:\n  - { id: it, after: [dta], cmd: x }\ntasks:\n  - { id: \"da ta\", acceptance: { tests: [x] } }\n  - { id: data, acceptance: { tests: [x] } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:23: error: task `it` depends on unknown task `dta` (did you mean `data`?)
        plan.yml:5:11: error: `da ta` is not a valid id: use letters, digits, `-` and `_` (it becomes part of branch names)
        plan.yml: 2 errors
        ");
    }
}
