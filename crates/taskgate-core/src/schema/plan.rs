//! A plan file's shape (`.taskgate/stories/*.yml`, SPEC §2): what
//! `plan::parse` reads, key by key, with its limits.

use super::{Bound, Field, Keys, Kind, Shape, ID_PATTERN, REPO_PATTERN};
use crate::config::FAILURE_KINDS;

/// Test and milestone timeouts: one second to six hours (the longest a
/// GitHub Actions job may run).
pub const TIMEOUT: Bound = Bound::new(1, 6 * 3600);
/// Failed runs per branch todo.
pub const DEBUG_ATTEMPTS: Bound = Bound::new(1, 10);
/// Nested branch todos.
pub const BRANCH_DEPTH: Bound = Bound::new(1, 5);
/// A branch todo's lifetime: a minute to 30 days.
pub const BRANCH_TIMEOUT: Bound = Bound::new(60, 30 * 86_400);
/// Open branch todos per story.
pub const CONCURRENT_BRANCHES: Bound = Bound::new(1, 50);
/// Deepest task nesting (top-level tasks are depth 1).
pub const PLAN_DEPTH: Bound = Bound::new(1, 5);
/// A task's own retries (0: none).
pub const RETRIES: Bound = Bound::new(0, 10);
/// Child tasks per task, and top-level tasks: GitHub's sub-issue limit.
pub const MAX_CHILDREN: u64 = 100;

/// A `reports:` path or glob: not empty, relative (no leading `/` or `~`,
/// no backslash), inside the workspace (no `..` part). Whether it is a valid
/// glob is the reader's check alone.
pub const REPORT_PATTERN: &str = "^(?![/~])(?!.*\\\\)(?!(.*/)?\\.\\.(/|$)).*\\S";

pub const REVIEW_MODES: &[&str] = &["auto", "human"];
pub const METRIC_OPERATORS: &[&str] = &[">=", "<=", ">", "<", "==", "!="];

fn failure_kinds() -> Vec<&'static str> {
    FAILURE_KINDS.to_vec()
}

const REVIEW: Field = Field {
    key: "review",
    description: "`auto` merges a task pull request when its checks pass; `human` waits for an approval (`/approve`, or an \"Approve\" review) by someone who did not push it.",
    example: "\"human\"",
    kind: Kind::Choice(REVIEW_MODES),
    required: false,
};

const ID_LIST: Kind = Kind::StrList {
    item: &Kind::Str,
    unique: false,
};

/// The whole file.
pub static PLAN: Shape = Shape {
    name: "plan",
    description: "A taskgate plan: a story broken into tasks with dependencies and acceptance tests. taskgate creates the story issue, one sub-issue per task and their links when the plan reaches the default branch.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "story",
            description: "The story's title: the title of its issue and of its pull request.",
            example: "\"Momentum strategy with RSI\"",
            kind: Kind::Str,
            required: true,
        },
        Field {
            key: "settings",
            description: "Overrides of the repository's `.github/taskgate.yml` for this story.",
            example: "{\"review\": \"auto\", \"max_debug_attempts\": 3}",
            kind: Kind::Object(&SETTINGS),
            required: false,
        },
        Field {
            key: "integration",
            description: "Integration milestones: commands that run on the story branch once every task they are `after` is complete.",
            example: "[{\"id\": \"backtest\", \"after\": [\"signals\"], \"cmd\": \"pytest tests/integration -q\"}]",
            kind: Kind::List {
                item: &Kind::Object(&MILESTONE),
                max_items: None,
            },
            required: false,
        },
        Field {
            key: "tasks",
            description: "The top-level tasks, each a sub-issue of the story (at most 100, GitHub's sub-issue limit).",
            example: "[{\"id\": \"data\", \"title\": \"Data loading\", \"acceptance\": {\"tests\": [\"pytest tests/test_data.py\"]}}]",
            kind: Kind::List {
                item: &Kind::Object(&TASK),
                max_items: Some(MAX_CHILDREN),
            },
            required: false,
        },
    ],
};

/// `settings:`
pub static SETTINGS: Shape = Shape {
    name: "settings",
    description: "Per-story overrides of the repository config; a key left out takes the repository's value.",
    one_of: &[],
    nullable: false,
    fields: &[
        REVIEW,
        Field {
            key: "auto_fix",
            description: "`false`: propose branch todos for failures and wait for `/approve-branch` instead of opening them.",
            example: "true",
            kind: Kind::Bool,
            required: false,
        },
        Field {
            key: "max_debug_attempts",
            description: "Failed runs a branch todo gets before a deeper todo replaces it (1-10).",
            example: "3",
            kind: Kind::Int(DEBUG_ATTEMPTS),
            required: false,
        },
        Field {
            key: "max_branch_depth",
            description: "How deep branch todos may nest (1-5).",
            example: "2",
            kind: Kind::Int(BRANCH_DEPTH),
            required: false,
        },
        Field {
            key: "branch_timeout_seconds",
            description: "Lifetime of a branch todo, in seconds (60 to 30 days).",
            example: "86400",
            kind: Kind::Int(BRANCH_TIMEOUT),
            required: false,
        },
        Field {
            key: "max_concurrent_branches",
            description: "Open branch todos at once in this story (1-50).",
            example: "5",
            kind: Kind::Int(CONCURRENT_BRANCHES),
            required: false,
        },
        Field {
            key: "max_depth",
            description: "Deepest task nesting allowed in this plan; top-level tasks are depth 1 (1-5).",
            example: "3",
            kind: Kind::Int(PLAN_DEPTH),
            required: false,
        },
    ],
};

const TIMEOUT_SECONDS: Field = Field {
    key: "timeout_seconds",
    description: "How long the command may run, in seconds (1 to 21600, six hours).",
    example: "300",
    kind: Kind::Int(TIMEOUT),
    required: false,
};

/// An `integration:` item.
pub static MILESTONE: Shape = Shape {
    name: "milestone",
    description: "An integration milestone: a command run on the story branch once the tasks it is `after` are complete; its check run is `integration-<id>`.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "id",
            description: "The milestone's id: letters, digits, `-` and `_`.",
            example: "\"backtest\"",
            kind: Kind::Pattern(ID_PATTERN),
            required: true,
        },
        Field {
            key: "after",
            description: "The tasks (ids) that must be complete first; a parent task stands for all its children. One id may be written without the list.",
            example: "[\"signals\"]",
            kind: ID_LIST,
            required: false,
        },
        Field {
            key: "cmd",
            description: "The shell command to run in the story branch's workspace.",
            example: "\"pytest tests/integration -q\"",
            kind: Kind::Str,
            required: true,
        },
        TIMEOUT_SECONDS,
    ],
};

/// A `tasks:` item, at any depth.
pub static TASK: Shape = Shape {
    name: "task",
    description: "A task: a sub-issue of its story (or of its parent task). A task with `tasks` is a parent: it has no branch and no tests of its own, and is complete when its children are.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "id",
            description: "The task's id, unique in the plan: letters, digits, `-` and `_` (it becomes part of branch names).",
            example: "\"data\"",
            kind: Kind::Pattern(ID_PATTERN),
            required: true,
        },
        Field {
            key: "title",
            description: "The task issue's title; the id when left out.",
            example: "\"Data loading integration\"",
            kind: Kind::Str,
            required: false,
        },
        Field {
            key: "description",
            description: "What to do, in Markdown: the body of the task's issue.",
            example: "\"Implement fetch_and_prepare_data(symbol, start, end)\"",
            kind: Kind::Str,
            required: false,
        },
        Field {
            key: "repo",
            description: "The repository (`owner/name`) the task's issue, branch and pull request live in: one the App is installed on, of the plan's owner. The plan's own repository when left out.",
            example: "\"acme/web\"",
            kind: Kind::Pattern(REPO_PATTERN),
            required: false,
        },
        Field {
            key: "role",
            description: "The role (of the repository config's `roles`) the task's work is routed to.",
            example: "\"coder\"",
            kind: Kind::Str,
            required: false,
        },
        Field {
            key: "depends_on",
            description: "Tasks (ids) that must be complete before this one is ready; depending on a parent means on all its children. One id may be written without the list.",
            example: "[\"data\"]",
            kind: ID_LIST,
            required: false,
        },
        Field {
            key: "tasks",
            description: "Child tasks (at most 100): they make this a parent task.",
            example: "[{\"id\": \"entry\", \"title\": \"Entry conditions\", \"acceptance\": {\"tests\": [\"pytest tests/test_entry.py\"]}}]",
            kind: Kind::List {
                item: &Kind::Object(&TASK),
                max_items: Some(MAX_CHILDREN),
            },
            required: false,
        },
        Field {
            key: "acceptance",
            description: "What must hold for the task to be complete: tests, artifacts, metrics. Only leaf tasks (without `tasks`) have one.",
            example: "{\"tests\": [\"pytest tests/test_data.py -q\"]}",
            kind: Kind::Object(&ACCEPTANCE),
            required: false,
        },
        Field {
            key: "failure_routing",
            description: "Failure kind to role, for this task, over the repository's `routing`.",
            example: "{\"spec_mismatch\": \"architect\"}",
            kind: Kind::Map {
                keys: Keys::Of(failure_kinds),
                value: &Kind::Str,
            },
            required: false,
        },
        Field {
            key: "requires_testing",
            description: "`false` for a task with nothing to test (documentation); otherwise it needs tests, or a discoverable test command.",
            example: "false",
            kind: Kind::Bool,
            required: false,
        },
        Field {
            key: "max_retries",
            description: "Failed runs of this task's todos before escalation, over `max_debug_attempts` (0-10).",
            example: "2",
            kind: Kind::Int(RETRIES),
            required: false,
        },
        REVIEW,
    ],
};

/// `acceptance:`
pub static ACCEPTANCE: Shape = Shape {
    name: "acceptance",
    description: "The task's acceptance criteria, checked on each push to its branch.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "tests",
            description: "Test commands, each a check run in its gate. A command alone runs in the `test` gate.",
            example: "[\"pytest tests/test_data.py -q\", {\"cmd\": \"ruff check .\", \"gate\": \"lint\"}]",
            kind: Kind::List {
                item: &Kind::AnyOf(&[Kind::Str, Kind::Object(&TEST)]),
                max_items: None,
            },
            required: false,
        },
        Field {
            key: "expected_artifacts",
            description: "Files the task's branch must contain.",
            example: "[\"Backtest/backtesting_adapter.py\"]",
            kind: Kind::StrList {
                item: &Kind::Str,
                unique: false,
            },
            required: false,
        },
        Field {
            key: "metrics",
            description: "Numbers the tests report that must meet a threshold.",
            example: "[{\"name\": \"rows_min\", \"operator\": \">=\", \"value\": 10}]",
            kind: Kind::List {
                item: &Kind::Object(&METRIC),
                max_items: None,
            },
            required: false,
        },
        Field {
            key: "required_tests",
            description: "Test ids (as the test reports name them) that must be in the results and have passed; each non-empty and listed once.",
            example: "[\"tests/test_x.py::test_y\"]",
            kind: Kind::StrList {
                item: &Kind::Pattern("\\S"),
                unique: true,
            },
            required: false,
        },
    ],
};

/// A test of `acceptance.tests` written as a mapping.
pub static TEST: Shape = Shape {
    name: "test",
    description: "A test command with its gate, timeout and report files.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "cmd",
            description: "The shell command, run in the task branch's workspace.",
            example: "\"pytest tests/test_adapter.py -q\"",
            kind: Kind::Str,
            required: true,
        },
        TIMEOUT_SECONDS,
        Field {
            key: "gate",
            description: "The check run the test belongs to (`test` when left out): letters, digits, `-` and `_`.",
            example: "\"unit\"",
            kind: Kind::Pattern(ID_PATTERN),
            required: false,
        },
        Field {
            key: "reports",
            description: "Report files (paths or globs relative to the workspace, no leading `/` or `~`, no `..`) the command writes: JUnit XML, TAP, libtest JSON, `go test -json`.",
            example: "[\"junit.xml\", \"build/**/TEST-*.xml\"]",
            kind: Kind::StrList {
                item: &Kind::Pattern(REPORT_PATTERN),
                unique: false,
            },
            required: false,
        },
    ],
};

/// An `acceptance.metrics` item.
pub static METRIC: Shape = Shape {
    name: "metric",
    description: "A metric the tests report, and the threshold it must meet.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "name",
            description: "The metric's name, as the tests report it.",
            example: "\"rows_min\"",
            kind: Kind::Str,
            required: true,
        },
        Field {
            key: "operator",
            description: "How the measured value compares with `value`.",
            example: "\">=\"",
            kind: Kind::Choice(METRIC_OPERATORS),
            required: true,
        },
        Field {
            key: "value",
            description: "The threshold.",
            example: "10",
            kind: Kind::Number,
            required: true,
        },
    ],
};
