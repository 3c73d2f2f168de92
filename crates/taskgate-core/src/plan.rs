//! The plan: a story broken into tasks with dependencies and acceptance tests
//! (SPEC §2), as plain data, plus everything that can be said about a plan
//! without touching the outside world.
//!
//! Owns: the model ([`Plan`], [`Task`], [`TaskId`]…), parsing YAML text into
//! it with `file:line:column` positions ([`parse`]), validation
//! ([`validate`]), test-command discovery over an abstract view of the
//! repository ([`RepoFiles`], [`discover`]) and the texts people read about a
//! plan ([`render`]).
//!
//! Must not: do IO, await, read the clock, or know GitHub. Files come in as
//! `&str`; the repository comes in as a [`RepoFiles`] the shell backs with git
//! or a directory. Task *states* are decided by the engine; this module only
//! names them ([`TaskState`]) and shows them.
//!
//! One idea to keep in mind: a parent task has no branch and no tests of its
//! own; it is complete when its children are. Depending on a parent means
//! depending on all of its descendants.

pub mod discover;
pub mod parse;
pub mod problem;
pub mod render;
pub mod starter;
pub mod validate;
pub mod yaml;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

pub use discover::{
    discover_test_command, effective_tests, Discovered, EffectiveTests, MemFiles, NoFiles,
    RepoFiles,
};
pub use parse::parse_plan;
pub use problem::{Problem, ProblemKind, Severity};
pub use render::{
    parent_state, render_check_problems, render_check_report, render_mermaid, render_problems,
    render_tree, render_validation_report,
};
pub use validate::validate_plan;

use crate::config::{RepoConfig, ReviewMode};
use crate::ids::RepoName;
use crate::results::TestId;

pub use crate::ids::TaskId;

/// A position in a YAML file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    pub fn new(line: usize, column: usize) -> Self {
        Pos { line, column }
    }
}

/// A value with the place it was written, for messages about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub pos: Pos,
}

impl<T> std::ops::Deref for Spanned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub story: String,
    pub settings: Settings,
    pub integration: Vec<Milestone>,
    /// Top-level tasks (sub-issues of the story).
    pub tasks: Vec<Task>,
}

/// Per-story overrides of the repository config (SPEC §4 bounds, review).
/// `None` means "use the repository's value".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub review: Option<ReviewMode>,
    pub auto_fix: Option<bool>,
    pub max_debug_attempts: Option<u32>,
    pub max_branch_depth: Option<u32>,
    pub branch_timeout_seconds: Option<u64>,
    pub max_concurrent_branches: Option<u32>,
    /// Deepest task nesting allowed (top-level tasks are depth 1).
    pub max_depth: Option<u32>,
}

/// Integration tests that run on the story branch once every task in
/// `after` is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Milestone {
    pub id: Spanned<TaskId>,
    pub after: Vec<Spanned<TaskId>>,
    pub cmd: String,
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: Spanned<TaskId>,
    pub title: String,
    pub description: Option<String>,
    /// The repository the task lives in (`repo:`); `None`: the plan's own.
    pub repo: Option<Spanned<RepoName>>,
    pub role: Option<Spanned<String>>,
    pub depends_on: Vec<Spanned<TaskId>>,
    /// Children: non-empty makes this a parent task.
    pub tasks: Vec<Task>,
    pub acceptance: Acceptance,
    /// Failure kind → role, overriding the repository routing for this task.
    pub failure_routing: BTreeMap<String, Spanned<String>>,
    pub requires_testing: bool,
    /// Overrides `max_debug_attempts` for this task.
    pub max_retries: Option<u32>,
    pub review: Option<ReviewMode>,
}

impl Task {
    pub fn is_parent(&self) -> bool {
        !self.tasks.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Acceptance {
    pub tests: Vec<TestSpec>,
    pub expected_artifacts: Vec<String>,
    pub metrics: Vec<Metric>,
    /// Test ids (as `crate::results` forms them) that must be in the
    /// results and have passed for the task's checks gate to pass.
    pub required_tests: Vec<TestId>,
}

impl Acceptance {
    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
            && self.expected_artifacts.is_empty()
            && self.metrics.is_empty()
            && self.required_tests.is_empty()
    }
}

/// The gate a test belongs to when none is given; one check run per gate.
pub const DEFAULT_GATE: &str = "test";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestSpec {
    pub cmd: String,
    pub timeout_seconds: Option<u64>,
    pub gate: String,
    /// Report files (paths or globs relative to the workspace) the command
    /// writes; empty means "look in the usual places".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub name: String,
    pub operator: MetricOp,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MetricOp {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
}

impl MetricOp {
    pub const ALL: [(&'static str, MetricOp); 6] = [
        (">=", MetricOp::Ge),
        ("<=", MetricOp::Le),
        (">", MetricOp::Gt),
        ("<", MetricOp::Lt),
        ("==", MetricOp::Eq),
        ("!=", MetricOp::Ne),
    ];

    pub fn symbol(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, op)| *op == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    /// Whether `measured <op> expected` holds.
    pub fn holds(self, measured: f64, expected: f64) -> bool {
        match self {
            MetricOp::Ge => measured >= expected,
            MetricOp::Le => measured <= expected,
            MetricOp::Gt => measured > expected,
            MetricOp::Lt => measured < expected,
            MetricOp::Eq => measured == expected,
            MetricOp::Ne => measured != expected,
        }
    }
}

/// Task states (SPEC §3), each mirrored as one `state:*` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    Pending,
    Ready,
    InProgress,
    Testing,
    TestFailed,
    Review,
    Completed,
    Blocked,
    Paused,
    Rejected,
}

impl TaskState {
    pub const ALL: [TaskState; 10] = [
        TaskState::Pending,
        TaskState::Ready,
        TaskState::InProgress,
        TaskState::Testing,
        TaskState::TestFailed,
        TaskState::Review,
        TaskState::Completed,
        TaskState::Blocked,
        TaskState::Paused,
        TaskState::Rejected,
    ];

    /// `in-progress`, `test-failed`, …
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Ready => "ready",
            TaskState::InProgress => "in-progress",
            TaskState::Testing => "testing",
            TaskState::TestFailed => "test-failed",
            TaskState::Review => "review",
            TaskState::Completed => "completed",
            TaskState::Blocked => "blocked",
            TaskState::Paused => "paused",
            TaskState::Rejected => "rejected",
        }
    }

    /// The GitHub label: `state:in-progress`.
    pub fn label(self) -> String {
        format!("state:{}", self.name())
    }

    pub fn from_label(label: &str) -> Option<TaskState> {
        let name = label.strip_prefix("state:")?;
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A task found by walking the plan, with where it sits.
#[derive(Debug, Clone, Copy)]
pub struct TaskRef<'p> {
    pub task: &'p Task,
    /// Top-level tasks are depth 1.
    pub depth: usize,
    pub parent: Option<&'p TaskId>,
}

impl Plan {
    /// Every task, parents before their children, in file order.
    pub fn walk(&self) -> Vec<TaskRef<'_>> {
        fn go<'p>(
            tasks: &'p [Task],
            depth: usize,
            parent: Option<&'p TaskId>,
            out: &mut Vec<TaskRef<'p>>,
        ) {
            for t in tasks {
                out.push(TaskRef {
                    task: t,
                    depth,
                    parent,
                });
                go(&t.tasks, depth + 1, Some(&t.id.value), out);
            }
        }
        let mut out = Vec::new();
        go(&self.tasks, 1, None, &mut out);
        out
    }

    pub fn task(&self, id: &TaskId) -> Option<&Task> {
        self.walk()
            .into_iter()
            .find(|r| r.task.id.value == *id)
            .map(|r| r.task)
    }

    /// Leaves only: the tasks that get a branch and are tested.
    pub fn leaves(&self) -> Vec<&Task> {
        self.walk()
            .into_iter()
            .filter(|r| !r.task.is_parent())
            .map(|r| r.task)
            .collect()
    }

    /// The leaf tasks `task` waits for that are not `complete`, in plan
    /// order: a dependency on a parent waits for each of its leaves (as
    /// the reconciler derives `pending`). Unknown ids wait for nothing.
    pub fn incomplete_dependencies(
        &self,
        task: &Task,
        complete: impl Fn(&TaskId) -> bool,
    ) -> Vec<TaskId> {
        fn leaves_of<'p>(t: &'p Task, out: &mut Vec<&'p Task>) {
            if t.is_parent() {
                t.tasks.iter().for_each(|c| leaves_of(c, out));
            } else {
                out.push(t);
            }
        }
        let mut leaves = Vec::new();
        for dep in &task.depends_on {
            if let Some(t) = self.task(&dep.value) {
                leaves_of(t, &mut leaves);
            }
        }
        let mut waiting: Vec<TaskId> = Vec::new();
        for leaf in leaves {
            if !complete(&leaf.id.value) && !waiting.contains(&leaf.id.value) {
                waiting.push(leaf.id.value.clone());
            }
        }
        waiting
    }
}

/// The outcome of checking one plan file: the plan when it could be read,
/// and every problem found.
#[derive(Debug, Clone)]
pub struct PlanReport {
    pub file: String,
    pub plan: Option<Plan>,
    pub problems: Vec<Problem>,
}

impl PlanReport {
    /// No errors (warnings allowed).
    pub fn is_ok(&self) -> bool {
        !self.problems.iter().any(Problem::is_error)
    }
    pub fn error_count(&self) -> usize {
        self.problems.iter().filter(|p| p.is_error()).count()
    }
    pub fn warning_count(&self) -> usize {
        self.problems.len() - self.error_count()
    }
}

impl Serialize for PlanReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PlanReport", 5)?;
        st.serialize_field("file", &self.file)?;
        st.serialize_field("ok", &self.is_ok())?;
        st.serialize_field("errors", &self.error_count())?;
        st.serialize_field("warnings", &self.warning_count())?;
        st.serialize_field("problems", &self.problems)?;
        st.end()
    }
}

/// Parse and validate one plan file: what `taskgate plan validate` runs and
/// what the engine runs before creating anything.
pub fn check_plan(file: &str, src: &str, config: &RepoConfig, repo: &dyn RepoFiles) -> PlanReport {
    let (plan, mut problems, pointers) = parse::parse_plan_located(src);
    if let Some(plan) = &plan {
        problems.extend(validate_plan(plan, config, repo));
    }
    if let Some(pointers) = pointers {
        pointers.attach(&mut problems);
    }
    problems.sort_by_key(|p| p.pos.map(|p| (p.line, p.column)).unwrap_or((usize::MAX, 0)));
    let plan = if problems.iter().any(Problem::is_error) {
        None
    } else {
        plan
    };
    PlanReport {
        file: file.to_string(),
        plan,
        problems,
    }
}

/// Test helper: the validation report of one plan text, checked against the
/// default config and a repository with no files.
#[cfg(test)]
pub(crate) fn report_for(src: &str) -> String {
    render_validation_report(&[check_plan(
        "plan.yml",
        src,
        &RepoConfig::default(),
        &NoFiles,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_waits_for_each_incomplete_leaf_of_its_dependencies() {
        let src = "story: S\ntasks:\n  - { id: data, title: D }\n  - id: signals\n    title: S\n    tasks:\n      - { id: entry, title: E }\n      - { id: exit, title: X }\n  - { id: report, title: R, depends_on: [signals, data] }\n";
        let (Some(plan), problems) = parse::parse_plan(src) else {
            panic!("plan parses")
        };
        assert!(problems.is_empty(), "{problems:?}");
        let report = plan.task(&TaskId::new("report")).unwrap();
        let ids = |v: Vec<TaskId>| v.iter().map(|t| t.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(
            ids(plan.incomplete_dependencies(report, |_| false)),
            ["entry", "exit", "data"]
        );
        assert_eq!(
            ids(plan.incomplete_dependencies(report, |t| t.as_str() != "exit")),
            ["exit"]
        );
        assert!(plan.incomplete_dependencies(report, |_| true).is_empty());
        let data = plan.task(&TaskId::new("data")).unwrap();
        assert!(plan.incomplete_dependencies(data, |_| false).is_empty());
    }

    fn fixtures_dir() -> std::path::PathBuf {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plans");
        if here.is_dir() {
            here
        } else {
            "/work/main/fixtures/plans".into()
        }
    }

    #[test]
    fn every_fixture_validates_as_expected() {
        let expected_failures = [
            ("bad-cycle.yml", "dependency cycle: `a` → `c` → `b` → `a`"),
            (
                "bad-unknown-dep.yml",
                "depends on unknown task `indicatrs` (did you mean `indicators`?)",
            ),
            ("bad-syntax.yml", "YAML syntax error"),
            (
                "bad-unknown-key.yml",
                "unknown key `depends` in task `data` (did you mean `depends_on`?)",
            ),
        ];
        let mut seen = 0;
        for entry in std::fs::read_dir(fixtures_dir()).expect("fixtures/plans exists") {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let src = std::fs::read_to_string(&path).unwrap();
            let report = check_plan(&name, &src, &RepoConfig::default(), &NoFiles);
            let text = render_validation_report(std::slice::from_ref(&report));
            if name.starts_with("bad-") {
                let (_, fragment) = expected_failures
                    .iter()
                    .find(|(f, _)| *f == name)
                    .expect("expectation listed");
                assert!(!report.is_ok(), "{name} should fail");
                assert!(text.contains(fragment), "{name}: {text}");
            } else {
                assert!(report.is_ok(), "{name} should pass: {text}");
            }
            seen += 1;
        }
        assert!(seen >= 7, "found only {seen} fixtures");
    }

    #[test]
    fn momentum_fixture_parses_into_the_model() {
        let src = std::fs::read_to_string(fixtures_dir().join("momentum.yml")).unwrap();
        let report = check_plan("momentum.yml", &src, &RepoConfig::default(), &NoFiles);
        let plan = report.plan.expect("valid");
        assert_eq!(plan.story, "Momentum strategy with RSI");
        assert_eq!(plan.settings.max_branch_depth, Some(2));
        let data = plan.task(&TaskId::new("data")).unwrap();
        assert_eq!(data.acceptance.tests[0].timeout_seconds, Some(30));
        assert_eq!(data.acceptance.tests[1].gate, "lint");
        assert_eq!(data.acceptance.metrics[0].operator, MetricOp::Ge);
        assert_eq!(data.failure_routing["spec_mismatch"].value, "architect");
        assert_eq!(data.id.pos, Pos::new(10, 9));
        let entry = plan.task(&TaskId::new("entry")).unwrap();
        assert_eq!(entry.depends_on[0].value, TaskId::new("data"));
        assert!(!plan.task(&TaskId::new("docs")).unwrap().requires_testing);
        assert_eq!(plan.leaves().len(), 3);
        assert_eq!(plan.integration[0].after[0].value, TaskId::new("signals"));
    }

    #[test]
    fn state_labels_are_kebab_case() {
        assert_eq!(TaskState::InProgress.label(), "state:in-progress");
        assert_eq!(TaskState::TestFailed.label(), "state:test-failed");
        for s in TaskState::ALL {
            assert_eq!(TaskState::from_label(&s.label()), Some(s));
        }
        assert_eq!(
            serde_json::to_string(&TaskState::InProgress).unwrap(),
            "\"in-progress\""
        );
    }

    #[test]
    fn check_runs_name_each_problem_by_its_json_pointer_too() {
        let src = "story: s\ntasks:\n  - id: a\n    acceptance: { tests: [x] }\n  - id: b\n    depends_on: [a, c]\n    acceptance:\n      tests: [{ cmd: y, timeout_seconds: 0 }]\n    colour: red\n";
        let report = check_plan("p.yml", src, &RepoConfig::default(), &NoFiles);
        insta::assert_snapshot!(render_check_report(std::slice::from_ref(&report)));
        let notes = Problem::annotations("p.yml", &report.problems);
        assert!(
            notes[0].message.ends_with("(at /tasks/1/depends_on/1)"),
            "{notes:?}"
        );
        // The command line keeps `file:line:column: error: message`.
        assert!(!render_validation_report(&[report]).contains("(at "));
    }

    #[test]
    fn json_report_is_machine_readable() {
        let src =
            "story: s\ntasks:\n  - id: a\n    depends_on: [b]\n    acceptance: { tests: [x] }\n";
        let report = check_plan("p.yml", src, &RepoConfig::default(), &NoFiles);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "file": "p.yml", "ok": false, "errors": 1, "warnings": 0,
                "problems": [{
                    "line": 4, "column": 18, "severity": "error", "code": "unknown_dependency",
                    "message": "task `a` depends on unknown task `b`",
                    "task": "a", "dependency": "b", "suggestion": null,
                    "pointer": "/tasks/0/depends_on/0"
                }]
            })
        );
    }
}
