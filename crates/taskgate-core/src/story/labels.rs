//! The labels taskgate uses, each with its colour and description, so that
//! the shell can create (or repair) them in a repository before first use.
//! Label names are API: the engine reads them back (`state:*`,
//! `ship`), so they are built from the same enums the engine uses.

use serde::{Deserialize, Serialize};

use crate::classify::FailureKind;
use crate::config::DEFAULT_ROLES;
use crate::plan::TaskState;

/// The story issue.
pub const STORY: &str = "taskgate:story";
/// A task issue, parent or leaf.
pub const TASK: &str = "taskgate:task";
/// A branch todo: a failing task's debugging issue (SPEC §4).
pub const BRANCH_TODO: &str = "taskgate:branch-todo";
/// A bound was hit; a person must look (SPEC §4).
pub const NEEDS_HUMAN: &str = "needs-human";
/// On the story PR once every task is complete (SPEC §7).
pub const SHIPPABLE: &str = "shippable";
/// Added by a human to ship a story PR (the default of `ship_label`).
pub const SHIP: &str = "ship";
/// The deploy workflow succeeded.
pub const DEPLOYED: &str = "deployed";
/// Post-deploy validation passed.
pub const REVIEW_READY: &str = "review-ready";
/// Post-deploy validation failed.
pub const NEEDS_FIX: &str = "needs-fix";
/// On a revert pull request taskgate opened to roll a story back.
pub const ROLLBACK: &str = "taskgate:rollback";
/// On a story PR whose story was rolled back.
pub const ROLLED_BACK: &str = "rolled-back";

/// GitHub refuses longer label descriptions.
pub const MAX_DESCRIPTION_CHARS: usize = 100;
/// GitHub refuses longer label names.
pub const MAX_NAME_CHARS: usize = 50;

/// One label as GitHub's label API takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSpec {
    pub name: String,
    /// Six hex digits, no `#`.
    pub color: String,
    pub description: String,
}

impl LabelSpec {
    fn new(name: impl Into<String>, color: &str, description: impl Into<String>) -> Self {
        LabelSpec {
            name: name.into(),
            color: color.into(),
            description: description.into(),
        }
    }
}

/// `role:coder`: work routed to a role (any role the config names).
pub fn role_label(role: &str) -> String {
    format!("role:{role}")
}

/// `kind:test_failure`: the failure kind of a branch todo.
pub fn kind_label(kind: FailureKind) -> String {
    format!("kind:{}", kind.as_str())
}

fn state_spec(s: TaskState) -> (&'static str, &'static str) {
    match s {
        TaskState::Pending => ("ededed", "Waiting for its dependencies to complete"),
        TaskState::Ready => ("0075ca", "Branch created; waiting for work"),
        TaskState::InProgress => (
            "fbca04",
            "Work has started: a commit or pull request exists",
        ),
        TaskState::Testing => ("fef2c0", "Acceptance tests are running"),
        TaskState::TestFailed => ("d73a4a", "Acceptance tests failed; a branch todo is open"),
        TaskState::Review => (
            "8250df",
            "All gates pass; waiting for the merge or an approval",
        ),
        TaskState::Completed => ("0e8a16", "Acceptance passed and the task PR is merged"),
        TaskState::Blocked => (
            "b60205",
            "Blocked by a failing dependency or an exhausted bound",
        ),
        TaskState::Paused => ("6e7781", "Paused; `/resume` continues"),
        TaskState::Rejected => ("24292f", "Returned to planning"),
    }
}

fn role_description(role: &str) -> String {
    let what = match role {
        "coder" => "implementation, build, lint and runtime fixes",
        "architect" => "spec mismatches (artifacts, metrics, contracts)",
        "tester" => "timeouts and flaky tests",
        "debugger" => "tooling errors, unknown failures, deep retries",
        _ => "work routed by the repository config",
    };
    format!("Routed to the {role} role: {what}")
}

fn kind_spec(kind: FailureKind) -> (&'static str, &'static str) {
    match kind {
        FailureKind::TestFailure => ("f9d0c4", "A test failed"),
        FailureKind::BuildFailure => ("f9d0c4", "The code did not compile or build"),
        FailureKind::LintFailure => ("fef2c0", "A linter or formatter reported problems"),
        FailureKind::RuntimeError => ("f9d0c4", "The program crashed or raised an error"),
        FailureKind::MissingDependency => ("fef2c0", "A module, package or binary is missing"),
        FailureKind::Timeout => ("d4c5f9", "A command ran past its timeout"),
        FailureKind::SpecMismatch => (
            "bfd4f2",
            "Missing artifact, metric out of bounds or contract mismatch",
        ),
        FailureKind::ToolingError => ("d4c5f9", "Command not found or the runner failed"),
        FailureKind::FlakyTest => ("d4c5f9", "Failed, then passed on an immediate re-run"),
        FailureKind::Unknown => ("ededed", "Could not be classified"),
    }
}

/// Every label taskgate uses, in a stable order.
pub fn catalogue() -> Vec<LabelSpec> {
    let mut out = vec![
        LabelSpec::new(
            STORY,
            "5319e7",
            "A story: a plan taskgate turns into task issues and branches",
        ),
        LabelSpec::new(
            TASK,
            "1d76db",
            "A task of a taskgate story; done when its acceptance tests pass",
        ),
        LabelSpec::new(
            BRANCH_TODO,
            "d93f0b",
            "Fix a failing task: diagnosis, attempt n/N, routed to a role",
        ),
    ];
    out.extend(TaskState::ALL.into_iter().map(|s| {
        let (color, description) = state_spec(s);
        LabelSpec::new(s.label(), color, description)
    }));
    out.extend(
        DEFAULT_ROLES
            .into_iter()
            .map(|r| LabelSpec::new(role_label(r), "c5def5", role_description(r))),
    );
    out.extend(FailureKind::ALL.into_iter().map(|k| {
        let (color, description) = kind_spec(k);
        LabelSpec::new(
            kind_label(k),
            color,
            format!("Failure kind: {}", description.to_lowercase()),
        )
    }));
    out.extend([
        LabelSpec::new(
            NEEDS_HUMAN,
            "b60205",
            "taskgate hit a retry bound; a person must decide the next step",
        ),
        LabelSpec::new(
            SHIPPABLE,
            "0e8a16",
            "Every task is complete; add `ship` to the story PR to ship it",
        ),
        LabelSpec::new(
            SHIP,
            "1d76db",
            "Ship this story: merge the story PR and deploy it",
        ),
        LabelSpec::new(DEPLOYED, "5319e7", "The deploy workflow succeeded"),
        LabelSpec::new(REVIEW_READY, "0e8a16", "Post-deploy validation passed"),
        LabelSpec::new(
            NEEDS_FIX,
            "d93f0b",
            "Post-deploy validation failed; a branch todo is open",
        ),
        LabelSpec::new(
            ROLLBACK,
            "b60205",
            "A revert of a shipped story, opened by taskgate; it lands once proven",
        ),
        LabelSpec::new(
            ROLLED_BACK,
            "b60205",
            "This story was reverted on the default branch",
        ),
    ]);
    out
}

/// The catalogue entry for `name`. A role the config adds beyond the
/// defaults (`role:reviewer`) gets a generic entry.
pub fn spec(name: &str) -> Option<LabelSpec> {
    catalogue()
        .into_iter()
        .find(|l| l.name == name)
        .or_else(|| {
            let role = name.strip_prefix("role:").filter(|r| !r.is_empty())?;
            let spec = LabelSpec::new(name, "c5def5", role_description(role));
            (spec.name.chars().count() <= MAX_NAME_CHARS
                && spec.description.chars().count() <= MAX_DESCRIPTION_CHARS)
                .then_some(spec)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn catalogue_is_valid_for_github() {
        let all = catalogue();
        let mut names = HashSet::new();
        for l in &all {
            assert!(names.insert(l.name.clone()), "duplicate label {}", l.name);
            assert!(
                l.color.len() == 6 && l.color.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}: colour {:?}",
                l.name,
                l.color
            );
            assert_eq!(l.color, l.color.to_lowercase(), "{}", l.name);
            assert!(!l.description.is_empty(), "{}", l.name);
            assert!(
                l.description.chars().count() <= MAX_DESCRIPTION_CHARS,
                "{}: description has {} chars",
                l.name,
                l.description.chars().count()
            );
            assert!(l.name.chars().count() <= MAX_NAME_CHARS, "{}", l.name);
            assert_eq!(spec(&l.name).as_ref(), Some(l));
        }
    }

    #[test]
    fn catalogue_covers_every_state_role_and_kind() {
        let names: HashSet<String> = catalogue().into_iter().map(|l| l.name).collect();
        for s in TaskState::ALL {
            assert!(names.contains(&s.label()), "{s}");
        }
        for k in FailureKind::ALL {
            assert!(names.contains(&kind_label(k)), "{k}");
        }
        for r in DEFAULT_ROLES {
            assert!(names.contains(&role_label(r)), "{r}");
        }
        for n in [
            STORY,
            TASK,
            BRANCH_TODO,
            NEEDS_HUMAN,
            SHIPPABLE,
            SHIP,
            DEPLOYED,
            REVIEW_READY,
            NEEDS_FIX,
            ROLLBACK,
            ROLLED_BACK,
        ] {
            assert!(names.contains(n), "{n}");
        }
        assert_eq!(names.len(), 3 + 10 + 4 + 10 + 8);
    }

    #[test]
    fn labels_read_as_expected() {
        assert_eq!(spec("state:in-progress").unwrap().color, "fbca04");
        assert_eq!(
            spec("role:coder").unwrap().description,
            "Routed to the coder role: implementation, build, lint and runtime fixes"
        );
        assert_eq!(
            spec("kind:flaky_test").unwrap().description,
            "Failure kind: failed, then passed on an immediate re-run"
        );
        assert_eq!(
            spec("role:reviewer").unwrap().description,
            "Routed to the reviewer role: work routed by the repository config"
        );
        assert_eq!(spec("state:unknown"), None);
        assert_eq!(spec("role:"), None);
    }
}
