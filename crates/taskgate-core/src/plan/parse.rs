//! YAML text → [`Plan`], reporting every structural problem (syntax, unknown
//! keys, wrong types, values out of range) with its `line:column`. Relations
//! between tasks (ids, dependencies, depth) are [`super::validate`]'s job.

use std::collections::BTreeMap;

use super::yaml::{self, as_str, Fields, Node, Pointers, Value};
use super::{
    Acceptance, Metric, MetricOp, Milestone, Plan, Pos, Problem, ProblemKind, Settings, Spanned,
    Task, TaskId, TestSpec, DEFAULT_GATE,
};
use crate::config::{ReviewMode, FAILURE_KINDS};
use crate::ids::RepoName;
use crate::results::{ReportGlobs, TestId};
use crate::schema::plan as schema;

/// Parses a plan. The plan is returned whenever its shape could be read, even
/// with problems, so that validation can report more of them in one go.
/// Each problem carries its JSON pointer.
pub fn parse_plan(src: &str) -> (Option<Plan>, Vec<Problem>) {
    let (plan, mut problems, pointers) = parse_plan_located(src);
    if let Some(pointers) = pointers {
        pointers.attach(&mut problems);
    }
    (plan, problems)
}

/// [`parse_plan`], with the document's [`Pointers`] (when it was read as a
/// tree) for the problems found later (validation).
pub(crate) fn parse_plan_located(src: &str) -> (Option<Plan>, Vec<Problem>, Option<Pointers>) {
    let root = match yaml::load(src) {
        Ok(Some(root)) => root,
        Ok(None) => return (None, vec![Problem::new(None, ProblemKind::EmptyPlan)], None),
        Err(p) => return (None, vec![*p], None),
    };
    let (plan, problems) = read_plan(&root);
    (plan, problems, Some(Pointers::of(&root)))
}

fn read_plan(root: &Node) -> (Option<Plan>, Vec<Problem>) {
    let mut problems = Vec::new();
    let Some(f) = Fields::of(root, "the plan", &schema::PLAN, &mut problems) else {
        return (None, problems);
    };
    let story = f.str("story", &mut problems).unwrap_or_else(|| {
        if f.get("story").is_none() {
            problems.push(missing(f.pos, "story", "the plan"));
        }
        String::new()
    });
    let settings = f
        .get("settings")
        .map(|n| parse_settings(n, &mut problems))
        .unwrap_or_default();
    let integration = seq(f.get("integration"), "integration", &mut problems)
        .iter()
        .filter_map(|n| parse_milestone(n, &mut problems))
        .collect();
    let tasks = parse_tasks(f.get("tasks"), &mut problems);
    (
        Some(Plan {
            story,
            settings,
            integration,
            tasks,
        }),
        problems,
    )
}

fn missing(pos: Pos, field: &str, context: &str) -> Problem {
    Problem::new(
        Some(pos),
        ProblemKind::MissingField {
            field: field.into(),
            context: context.into(),
        },
    )
}

/// The items of a list field (absent or null → empty).
fn seq<'n>(node: Option<&'n Node>, field: &str, problems: &mut Vec<Problem>) -> &'n [Node] {
    match node.map(|n| (n, &n.value)) {
        None | Some((_, Value::Null)) => &[],
        Some((_, Value::Seq(items))) => items,
        Some((n, _)) => {
            problems.push(yaml::wrong_type(n, field, "a list"));
            &[]
        }
    }
}

fn parse_review(f: &Fields, problems: &mut Vec<Problem>) -> Option<ReviewMode> {
    f.choice_of("review", problems).map(|s| match s.as_str() {
        "human" => ReviewMode::Human,
        _ => ReviewMode::Auto,
    })
}

fn parse_settings(node: &Node, problems: &mut Vec<Problem>) -> Settings {
    let Some(f) = Fields::of(node, "settings", &schema::SETTINGS, problems) else {
        return Settings::default();
    };
    Settings {
        review: parse_review(&f, problems),
        auto_fix: f.bool("auto_fix", problems),
        max_debug_attempts: f.bounded("max_debug_attempts", problems).map(|v| v as u32),
        max_branch_depth: f.bounded("max_branch_depth", problems).map(|v| v as u32),
        branch_timeout_seconds: f.bounded("branch_timeout_seconds", problems),
        max_concurrent_branches: f
            .bounded("max_concurrent_branches", problems)
            .map(|v| v as u32),
        max_depth: f.bounded("max_depth", problems).map(|v| v as u32),
    }
}

fn parse_id(f: &Fields, context: &str, problems: &mut Vec<Problem>) -> Option<Spanned<TaskId>> {
    let Some(node) = f.get("id") else {
        problems.push(missing(f.pos, "id", context));
        return None;
    };
    let id = as_str(node, "id", problems)?;
    if !crate::schema::is_id(&id) {
        problems.push(Problem::new(
            Some(node.pos),
            ProblemKind::InvalidId { id: id.clone() },
        ));
    }
    Some(Spanned {
        value: TaskId::new(id),
        pos: node.pos,
    })
}

fn ids(f: &Fields, key: &str, problems: &mut Vec<Problem>) -> Vec<Spanned<TaskId>> {
    f.str_list(key, problems)
        .into_iter()
        .map(|(s, pos)| Spanned {
            value: TaskId::new(s),
            pos,
        })
        .collect()
}

fn timeout(f: &Fields, problems: &mut Vec<Problem>) -> Option<u64> {
    f.bounded("timeout_seconds", problems)
}

fn parse_milestone(node: &Node, problems: &mut Vec<Problem>) -> Option<Milestone> {
    let f = Fields::of(
        node,
        "an integration milestone",
        &schema::MILESTONE,
        problems,
    )?;
    let id = parse_id(&f, "an integration milestone", problems)?;
    let context = format!("integration milestone `{}`", id.value);
    let cmd = f.str("cmd", problems);
    if f.get("cmd").is_none() {
        problems.push(missing(f.pos, "cmd", &context));
    }
    Some(Milestone {
        after: ids(&f, "after", problems),
        cmd: cmd.unwrap_or_default(),
        timeout_seconds: timeout(&f, problems),
        id,
    })
}

fn parse_tasks(node: Option<&Node>, problems: &mut Vec<Problem>) -> Vec<Task> {
    seq(node, "tasks", problems)
        .iter()
        .filter_map(|n| parse_task(n, problems))
        .collect()
}

fn parse_task(node: &Node, problems: &mut Vec<Problem>) -> Option<Task> {
    // Read the id first so that unknown keys can name the task.
    let id_hint = match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _, _)| k == "id")
            .and_then(|(_, _, n)| match &n.value {
                Value::Str(s) => Some(s.clone()),
                Value::Int(i) => Some(i.to_string()),
                _ => None,
            }),
        _ => None,
    };
    let context = match &id_hint {
        Some(id) => format!("task `{id}`"),
        None => "a task".to_string(),
    };
    let f = Fields::of(node, &context, &schema::TASK, problems)?;
    let id = parse_id(&f, &context, problems)?;
    let mut failure_routing = BTreeMap::new();
    if let Some(n) = f.get("failure_routing") {
        match &n.value {
            Value::Map(entries) => {
                for (kind, kind_pos, role) in entries {
                    if !FAILURE_KINDS.contains(&kind.as_str()) {
                        problems.push(Problem::new(
                            Some(*kind_pos),
                            ProblemKind::UnknownFailureKind {
                                kind: kind.clone(),
                                suggestion: yaml::did_you_mean(kind, FAILURE_KINDS.iter().copied()),
                            },
                        ));
                    } else if let Some(r) = as_str(role, kind, problems) {
                        failure_routing.insert(
                            kind.clone(),
                            Spanned {
                                value: r,
                                pos: role.pos,
                            },
                        );
                    }
                }
            }
            Value::Null => {}
            _ => problems.push(yaml::wrong_type(
                n,
                "failure_routing",
                "a mapping of failure kind to role",
            )),
        }
    }
    let repo = f.get("repo").and_then(|n| parse_repo(n, problems));
    let role = f.get("role").and_then(|n| {
        as_str(n, "role", problems).map(|r| Spanned {
            value: r,
            pos: n.pos,
        })
    });
    Some(Task {
        title: f
            .str("title", problems)
            .unwrap_or_else(|| id.value.as_str().to_owned()),
        description: f.str("description", problems),
        repo,
        role,
        depends_on: ids(&f, "depends_on", problems),
        tasks: parse_tasks(f.get("tasks"), problems),
        acceptance: f
            .get("acceptance")
            .map(|n| parse_acceptance(n, &context, problems))
            .unwrap_or_default(),
        failure_routing,
        requires_testing: f.bool("requires_testing", problems).unwrap_or(true),
        max_retries: f.bounded("max_retries", problems).map(|v| v as u32),
        review: parse_review(&f, problems),
        id,
    })
}

/// A task's `repo:`, normalised (GitHub's names are case-insensitive).
fn parse_repo(node: &Node, problems: &mut Vec<Problem>) -> Option<Spanned<RepoName>> {
    let text = as_str(node, "repo", problems)?;
    match RepoName::parse(&text) {
        Ok(value) if crate::schema::is_repo_name(&text) => Some(Spanned {
            value,
            pos: node.pos,
        }),
        _ => {
            problems.push(Problem::new(
                Some(node.pos),
                ProblemKind::InvalidRepo { repo: text },
            ));
            None
        }
    }
}

fn parse_acceptance(node: &Node, context: &str, problems: &mut Vec<Problem>) -> Acceptance {
    let Some(f) = Fields::of(
        node,
        &format!("`acceptance` of {context}"),
        &schema::ACCEPTANCE,
        problems,
    ) else {
        return Acceptance::default();
    };
    let tests = seq(f.get("tests"), "tests", problems)
        .iter()
        .filter_map(|n| parse_test(n, context, problems))
        .collect();
    let metrics = seq(f.get("metrics"), "metrics", problems)
        .iter()
        .filter_map(|n| parse_metric(n, context, problems))
        .collect();
    Acceptance {
        tests,
        expected_artifacts: f
            .str_list("expected_artifacts", problems)
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
        metrics,
        required_tests: required_tests(&f, problems),
    }
}

/// `required_tests:` ids: non-empty, each once.
fn required_tests(f: &Fields, problems: &mut Vec<Problem>) -> Vec<TestId> {
    let mut seen: BTreeMap<String, Pos> = BTreeMap::new();
    let mut out = Vec::new();
    for (id, pos) in f.str_list("required_tests", problems) {
        if id.trim().is_empty() {
            problems.push(Problem::new(Some(pos), ProblemKind::EmptyRequiredTest));
            continue;
        }
        if let Some(first) = seen.get(&id) {
            problems.push(Problem::new(
                Some(pos),
                ProblemKind::DuplicateRequiredTest {
                    id,
                    first_line: first.line,
                },
            ));
            continue;
        }
        seen.insert(id.clone(), pos);
        out.push(TestId::new(id));
    }
    out
}

/// A test's `reports:` paths or globs: inside the workspace, valid globs.
fn reports(f: &Fields, problems: &mut Vec<Problem>) -> Vec<String> {
    f.str_list("reports", problems)
        .into_iter()
        .filter_map(|(glob, pos)| match report_glob_problem(&glob) {
            Some(reason) => {
                problems.push(Problem::new(
                    Some(pos),
                    ProblemKind::BadReportGlob { glob, reason },
                ));
                None
            }
            None => Some(glob),
        })
        .collect()
}

/// Why a `reports:` entry cannot be used, if it cannot.
fn report_glob_problem(glob: &str) -> Option<String> {
    if glob.trim().is_empty() {
        return Some("it is empty".into());
    }
    if glob.starts_with('/') || glob.starts_with('~') || glob.contains('\\') {
        return Some(
            "it must be relative to the workspace (no leading `/` or `~`, no `\\`)".into(),
        );
    }
    if glob.split('/').any(|part| part == "..") {
        return Some("it must stay inside the workspace (no `..`)".into());
    }
    ReportGlobs::new(&[glob]).err().map(|e| match e {
        crate::results::ReportError::BadGlob { reason, .. } => reason,
        other => other.to_string(),
    })
}

fn parse_test(node: &Node, context: &str, problems: &mut Vec<Problem>) -> Option<TestSpec> {
    // A bare string is a command in the default gate.
    if let Value::Str(cmd) = &node.value {
        return Some(TestSpec {
            cmd: cmd.clone(),
            timeout_seconds: None,
            gate: DEFAULT_GATE.into(),
            reports: Vec::new(),
        });
    }
    let f = Fields::of(
        node,
        &format!("a test of {context}"),
        &schema::TEST,
        problems,
    )?;
    let Some(cmd) = f.str("cmd", problems) else {
        if f.get("cmd").is_none() {
            problems.push(missing(f.pos, "cmd", &format!("a test of {context}")));
        }
        return None;
    };
    let gate = match f.get("gate") {
        None => DEFAULT_GATE.to_string(),
        Some(n) => {
            let g = as_str(n, "gate", problems)?;
            if !crate::schema::is_id(&g) {
                problems.push(Problem::new(Some(n.pos), ProblemKind::InvalidId { id: g }));
                return None;
            }
            g
        }
    };
    Some(TestSpec {
        cmd,
        timeout_seconds: timeout(&f, problems),
        gate,
        reports: reports(&f, problems),
    })
}

fn parse_metric(node: &Node, context: &str, problems: &mut Vec<Problem>) -> Option<Metric> {
    let what = format!("a metric of {context}");
    let f = Fields::of(node, &what, &schema::METRIC, problems)?;
    for key in schema::METRIC.keys() {
        if f.get(key).is_none() {
            problems.push(missing(f.pos, key, &what));
        }
    }
    let name = f.str("name", problems);
    let operator = f.choice_of("operator", problems).and_then(|s| {
        MetricOp::ALL
            .iter()
            .find(|(sym, _)| *sym == s)
            .map(|(_, op)| *op)
    });
    let value = f.get("value").and_then(|n| match n.value {
        Value::Int(i) => Some(i as f64),
        Value::Float(x) => Some(x),
        _ => {
            problems.push(yaml::wrong_type(n, "value", "a number"));
            None
        }
    });
    Some(Metric {
        name: name?,
        operator: operator?,
        value: value?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::report_for;
    use super::*;

    #[test]
    fn syntax_errors_point_at_line_and_column() {
        insta::assert_snapshot!(report_for("story: s\ntasks:\n  - id: a\n    title: [unclosed\n"), @r"
        plan.yml:5:1: error: YAML syntax error: while parsing a flow sequence, expected ',' or ']'
        plan.yml: 1 error
        ");
        insta::assert_snapshot!(report_for("story: s\nstory: t\n"), @r"
        plan.yml:2:1: error: YAML syntax error: duplicated key in mapping
        plan.yml: 1 error
        ");
    }

    #[test]
    fn wrong_types_missing_fields_and_bad_values() {
        let src = "tasks:\n  - id: a\n    requires_testing: maybe\n    review: humane\n    depends_on: { x: 1 }\n    acceptance:\n      tests: [{ timeout_seconds: 5 }]\n      metrics: [{ name: m, operator: '=>', value: high }]\n  - title: no id\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:1:1: error: `story` is missing in the plan
        plan.yml:2:9: error: task `a` requires testing but has no tests and no test command could be discovered (add `acceptance.tests`, a Makefile target `test-a`, or `requires_testing: false`)
        plan.yml:3:23: error: `requires_testing` should be true or false, found a string
        plan.yml:4:13: error: `review: humane` is not valid; expected one of: auto, human (did you mean `human`?)
        plan.yml:5:17: error: `depends_on` should be a list of strings, found a mapping
        plan.yml:7:15: error: `cmd` is missing in a test of task `a`
        plan.yml:8:38: error: `operator: =>` is not valid; expected one of: >=, <=, >, <, ==, !=
        plan.yml:8:51: error: `value` should be a number, found a string
        plan.yml:9:5: error: `id` is missing in a task
        plan.yml: 9 errors
        ");
    }

    #[test]
    fn unknown_failure_kind_in_routing() {
        let src = "story: s\ntasks:\n  - { id: a, acceptance: { tests: [x] }, failure_routing: { spec_mismatc: architect } }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:3:61: error: unknown failure kind `spec_mismatc` (did you mean `spec_mismatch`?)
        plan.yml: 1 error
        ");
    }

    #[test]
    fn aliases_are_resolved_within_saphyrs_expansion_budget() {
        let src = "story: s\ntasks:\n  - &t { id: a, acceptance: { tests: [x] } }\n  - { id: b, acceptance: *t }\n";
        let (plan, problems) = parse_plan(src);
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("unknown key `id` in `acceptance`")),
            "{problems:?}"
        );
        assert_eq!(plan.unwrap().tasks.len(), 2);
        // A "billion laughs" document fails instead of exhausting memory.
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            bomb += &format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n", p = i - 1);
        }
        let (_, problems) = parse_plan(&bomb);
        assert!(
            problems[0].message.starts_with("YAML syntax error"),
            "{problems:?}"
        );
    }

    #[test]
    fn deep_nesting_and_alias_bombs_in_bytes_are_refused_with_their_place() {
        // 30,000 levels of block sequences overflowed the loader's stack.
        let deep = format!("story: s\ntasks:\n{}x\n", "- ".repeat(30_000));
        assert!(parse_plan(&deep).0.is_none());
        insta::assert_snapshot!(report_for(&deep), @r"
        plan.yml:3:127: error: YAML syntax error: nested more than 64 levels deep
        plan.yml: 1 error
        ");
        // 35 KB that aliases grow to ~3 GB: within saphyr's node budget,
        // far past any byte budget.
        let big = "x".repeat(32 << 10);
        let many = |name: &str| vec![format!("*{name}"); 300].join(", ");
        let bomb = format!(
            "story: s\na: &a \"{big}\"\nb: &b [{}]\nc: [{}]\ntasks: [{{id: a, acceptance: {{tests: [x]}}}}]\n",
            many("a"),
            many("b")
        );
        let (plan, problems) = parse_plan(&bomb);
        assert!(plan.is_none());
        assert_eq!(
            problems[0].message,
            "YAML syntax error: aliases expand this document past 4 MiB"
        );
        // Anchors a plan uses stay well inside both.
        let ok = "story: s\ntasks:\n  - &t { id: a, acceptance: { tests: [x] } }\n  - { id: b, acceptance: { tests: [y] } }\n";
        assert!(parse_plan(ok).0.is_some());
    }

    #[test]
    fn shorthand_forms_are_accepted() {
        let src = "story: s\ntasks:\n  - { id: 7, depends_on: b, acceptance: { tests: [\"make check\"] } }\n  - { id: b, acceptance: { tests: [x] } }\n";
        let (plan, problems) = parse_plan(src);
        assert!(problems.is_empty(), "{problems:?}");
        let plan = plan.unwrap();
        let t = &plan.tasks[0];
        assert_eq!(t.id.value, TaskId::new("7"));
        assert_eq!(t.title, "7", "title defaults to the id");
        assert_eq!(t.depends_on[0].value, TaskId::new("b"));
        assert_eq!(
            t.acceptance.tests[0],
            TestSpec {
                cmd: "make check".into(),
                timeout_seconds: None,
                gate: "test".into(),
                reports: vec![],
            }
        );
        assert!(t.requires_testing);
    }

    #[test]
    fn reports_and_required_tests_are_read() {
        let src = "story: s\ntasks:\n  - id: a\n    acceptance:\n      tests:\n        - { cmd: pytest, reports: [junit.xml, 'build/**/TEST-*.xml'] }\n      required_tests: ['tests/test_x.py::test_y', pkg.Test.works]\n";
        let (plan, problems) = parse_plan(src);
        assert!(problems.is_empty(), "{problems:?}");
        let a = &plan.unwrap().tasks[0].acceptance;
        assert_eq!(a.tests[0].reports, ["junit.xml", "build/**/TEST-*.xml"]);
        let ids: Vec<&str> = a.required_tests.iter().map(TestId::as_str).collect();
        assert_eq!(ids, ["tests/test_x.py::test_y", "pkg.Test.works"]);
    }

    #[test]
    fn bad_report_globs_and_required_tests_point_at_their_line() {
        let src = "story: s\ntasks:\n  - id: a\n    acceptance:\n      tests:\n        - cmd: pytest\n          reports:\n            - /tmp/junit.xml\n            - ../other/junit.xml\n            - 'out/[x.xml'\n            - ''\n            - ok.xml\n      required_tests:\n        - t1\n        - ''\n        - t1\n";
        let (plan, _) = parse_plan(src);
        assert_eq!(
            plan.unwrap().tasks[0].acceptance.tests[0].reports,
            ["ok.xml"]
        );
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:8:15: error: `reports: /tmp/junit.xml` cannot be used: it must be relative to the workspace (no leading `/` or `~`, no `\`)
        plan.yml:9:15: error: `reports: ../other/junit.xml` cannot be used: it must stay inside the workspace (no `..`)
        plan.yml:10:15: error: `reports: out/[x.xml` cannot be used: unclosed character class; missing ']'
        plan.yml:11:15: error: `reports: ` cannot be used: it is empty
        plan.yml:15:11: error: `required_tests` has an empty id; write a test id as the results name it, e.g. `tests/test_x.py::test_y`
        plan.yml:16:11: error: `required_tests` lists `t1` twice (first at line 14)
        plan.yml: 6 errors
        ");
    }

    #[test]
    fn a_tasks_repo_is_read_normalised_and_defaults_to_none() {
        let src = "story: s\ntasks:\n  - { id: a, repo: Acme/Payments-API, acceptance: { tests: [x] } }\n  - { id: b, acceptance: { tests: [y] } }\n";
        let (plan, problems) = parse_plan(src);
        assert!(problems.is_empty(), "{problems:?}");
        let plan = plan.unwrap();
        let repo = plan.tasks[0].repo.as_ref().unwrap();
        assert_eq!(repo.value.as_str(), "acme/payments-api");
        assert_eq!(repo.pos, Pos::new(3, 20));
        assert_eq!(plan.tasks[1].repo, None);
    }

    #[test]
    fn a_malformed_repo_is_refused_at_its_line() {
        let src = "story: s\ntasks:\n  - id: a\n    repo: acme\n    acceptance: { tests: [x] }\n  - id: b\n    repo: https://github.com/acme/web\n    acceptance: { tests: [x] }\n  - id: c\n    repo: [acme/web]\n    acceptance: { tests: [x] }\n";
        insta::assert_snapshot!(report_for(src), @r"
        plan.yml:4:11: error: `repo: acme` is not a repository: write it `owner/name`, as in `acme/web`
        plan.yml:7:11: error: `repo: https://github.com/acme/web` is not a repository: write it `owner/name`, as in `acme/web`
        plan.yml:10:11: error: `repo` should be a string, found a list
        plan.yml: 3 errors
        ");
    }

    #[test]
    fn settings_are_read_and_bounded() {
        let src = "story: s\nsettings: { review: human, auto_fix: false, max_debug_attempts: 5, max_depth: 9 }\ntasks: []\n";
        let (plan, problems) = parse_plan(src);
        let s = plan.unwrap().settings;
        assert_eq!(
            (s.review, s.auto_fix, s.max_debug_attempts, s.max_depth),
            (Some(ReviewMode::Human), Some(false), Some(5), None)
        );
        assert_eq!(
            problems[0].message,
            "`max_depth` is 9, outside the allowed range 1..=5"
        );
    }
}
