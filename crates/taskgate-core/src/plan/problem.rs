//! Everything that can be wrong with a plan or a repository config, as data:
//! a position, a severity and a [`ProblemKind`] whose `Display` is the
//! message a person reads and whose serde form is what `--json` prints.

use serde::Serialize;

use super::{Pos, TaskId};

/// Errors make a plan (or config) unusable; warnings are shown but accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem, at a place in the file when there is one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    #[serde(flatten)]
    pub pos: Option<Pos>,
    pub severity: Severity,
    pub message: String,
    #[serde(flatten)]
    pub kind: ProblemKind,
    /// Where in the document, as a JSON pointer (RFC 6901) over the YAML
    /// read as JSON: `/tasks/2/depends_on/0`. `None` without a place, or
    /// when the text could not be read as a tree.
    pub pointer: Option<String>,
}

impl Problem {
    pub fn new(pos: Option<Pos>, kind: ProblemKind) -> Self {
        let severity = kind.severity();
        Problem {
            pos,
            severity,
            message: kind.to_string(),
            kind,
            pointer: None,
        }
    }

    /// Whether the problem is about a key itself (an unknown key, kind or
    /// command), so its place names the key rather than a value.
    pub fn is_about_a_key(&self) -> bool {
        match &self.kind {
            ProblemKind::UnknownKey { .. }
            | ProblemKind::UnknownFailureKind { .. }
            | ProblemKind::UnknownCommand { .. } => true,
            ProblemKind::Syntax { .. }
            | ProblemKind::EmptyPlan
            | ProblemKind::MissingField { .. }
            | ProblemKind::WrongType { .. }
            | ProblemKind::InvalidValue { .. }
            | ProblemKind::OutOfRange { .. }
            | ProblemKind::InvalidId { .. }
            | ProblemKind::InvalidRepo { .. }
            | ProblemKind::RepoOfAnotherOwner { .. }
            | ProblemKind::RepoNotInstalled { .. }
            | ProblemKind::RepoNotYetSupported { .. }
            | ProblemKind::DuplicateId { .. }
            | ProblemKind::UnknownDependency { .. }
            | ProblemKind::SelfDependency { .. }
            | ProblemKind::DependencyCycle { .. }
            | ProblemKind::HierarchyDependency { .. }
            | ProblemKind::TooDeep { .. }
            | ProblemKind::TooManyChildren { .. }
            | ProblemKind::NoTestCommand { .. }
            | ProblemKind::ParentWithAcceptance { .. }
            | ProblemKind::UnknownRole { .. }
            | ProblemKind::BadReportGlob { .. }
            | ProblemKind::BadPathGlob { .. }
            | ProblemKind::EmptyRequiredTest
            | ProblemKind::DuplicateRequiredTest { .. }
            | ProblemKind::FreezeWindow { .. }
            | ProblemKind::Agent { .. } => false,
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The check-run annotations for `problems` in the file at `path`: one
    /// per problem that has a place.
    pub fn annotations(path: &str, problems: &[Problem]) -> Vec<crate::CheckAnnotation> {
        problems
            .iter()
            .filter_map(|p| {
                p.pos.map(|pos| crate::CheckAnnotation {
                    path: path.to_owned(),
                    line: pos.line as u32,
                    message: match p.pointer.as_deref() {
                        Some(pointer) if !pointer.is_empty() => {
                            format!("{} (at {pointer})", p.message)
                        }
                        _ => p.message.clone(),
                    },
                })
            })
            .collect()
    }
}

fn hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    }
}

fn chain(ids: &[TaskId]) -> String {
    ids.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(" → ")
}

#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum ProblemKind {
    #[error("YAML syntax error: {message}")]
    Syntax { message: String },
    #[error("the plan is empty: it needs a `story` and at least one task")]
    EmptyPlan,
    #[error("unknown key `{key}` in {context}{}", hint(.suggestion))]
    UnknownKey {
        key: String,
        context: String,
        suggestion: Option<String>,
    },
    #[error("`{field}` is missing in {context}")]
    MissingField { field: String, context: String },
    #[error("`{field}` should be {expected}, found {found}")]
    WrongType {
        field: String,
        expected: String,
        found: String,
    },
    #[error("`{field}: {value}` is not valid; expected one of: {expected}{}", hint(.suggestion))]
    InvalidValue {
        field: String,
        value: String,
        expected: String,
        suggestion: Option<String>,
    },
    #[error("`{field}` is {value}, outside the allowed range {min}..={max}")]
    OutOfRange {
        field: String,
        value: i64,
        min: u64,
        max: u64,
    },
    #[error("`{id}` is not a valid id: use letters, digits, `-` and `_` (it becomes part of branch names)")]
    InvalidId { id: String },
    #[error("`repo: {repo}` is not a repository: write it `owner/name`, as in `acme/web`")]
    InvalidRepo { repo: String },
    #[error("`repo: {repo}` is of another owner: tasks may only name repositories of owner {owner}, the plan's owner")]
    RepoOfAnotherOwner { repo: String, owner: String },
    #[error("taskgate cannot reach `{repo}`: install the App on {repo} (or add it to the installation's repositories)")]
    RepoNotInstalled { repo: String },
    #[error("tasks in another repository (`{repo}`) are not supported yet: taskgate does not create issues, branches or pull requests there. Leave `repo` out (or name `{home}`) to plan the task here")]
    RepoNotYetSupported { repo: String, home: String },
    #[error("duplicate id `{id}` (first defined at line {first_line})")]
    DuplicateId { id: TaskId, first_line: usize },
    #[error("task `{task}` depends on unknown task `{dependency}`{}", hint(.suggestion))]
    UnknownDependency {
        task: TaskId,
        dependency: TaskId,
        suggestion: Option<String>,
    },
    #[error("task `{task}` depends on itself")]
    SelfDependency { task: TaskId },
    #[error("dependency cycle: {}", chain(.cycle))]
    DependencyCycle { cycle: Vec<TaskId> },
    #[error("task `{task}` depends on `{dependency}`, its own {relation}; a parent completes when its children do, so this can never be ready")]
    HierarchyDependency {
        task: TaskId,
        dependency: TaskId,
        relation: String,
    },
    #[error("task `{task}` is at depth {depth}, deeper than the limit of {limit}")]
    TooDeep {
        task: TaskId,
        depth: usize,
        limit: usize,
    },
    #[error(
        "{parent} has {count} child tasks; GitHub allows at most {limit} sub-issues per issue"
    )]
    TooManyChildren {
        parent: String,
        count: usize,
        limit: usize,
    },
    #[error("task `{task}` requires testing but has no tests and no test command could be discovered (add `acceptance.tests`, a Makefile target `test-{task}`, or `requires_testing: false`)")]
    NoTestCommand { task: TaskId },
    #[error("parent task `{task}` has acceptance criteria, but parent tasks have no branch to test; move them to a child task or to `integration`")]
    ParentWithAcceptance { task: TaskId },
    #[error("unknown failure kind `{kind}`{}", hint(.suggestion))]
    UnknownFailureKind {
        kind: String,
        suggestion: Option<String>,
    },
    #[error("{context} names unknown role `{role}`{}; known roles: {known}", hint(.suggestion))]
    UnknownRole {
        role: String,
        context: String,
        known: String,
        suggestion: Option<String>,
    },
    #[error("unknown command `{command}`{}", hint(.suggestion))]
    UnknownCommand {
        command: String,
        suggestion: Option<String>,
    },
    #[error("`reports: {glob}` cannot be used: {reason}")]
    BadReportGlob { glob: String, reason: String },
    #[error("`{key}: {glob}` cannot be used: {reason}")]
    BadPathGlob {
        key: String,
        glob: String,
        reason: String,
    },
    #[error("`required_tests` has an empty id; write a test id as the results name it, e.g. `tests/test_x.py::test_y`")]
    EmptyRequiredTest,
    #[error("`required_tests` lists `{id}` twice (first at line {first_line})")]
    DuplicateRequiredTest { id: String, first_line: usize },
    /// A `freeze_windows` entry of the repository config (`core::freeze`).
    #[error("`{field}`: {problem}")]
    FreezeWindow { field: String, problem: String },
    /// A role's `agent` or `agent_workflow` of the repository config
    /// (`core::config::agent`).
    #[error("`{field}`: {problem}")]
    Agent {
        field: String,
        problem: crate::config::AgentProblem,
    },
}

impl ProblemKind {
    pub fn severity(&self) -> Severity {
        match self {
            // A plan's role that the repository config does not know: the
            // task still works, nobody is notified. Config routing to an
            // unknown role is an error and uses `field`-less context.
            ProblemKind::UnknownRole { context, .. } if context.starts_with("task") => {
                Severity::Warning
            }
            _ => Severity::Error,
        }
    }
}
