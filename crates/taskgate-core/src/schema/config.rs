//! `.github/taskgate.yml`'s shape: what `config::read` (and
//! `freeze::read_freeze_windows`) read, key by key, with their limits. The
//! meaning of each key, at length: docs/configuration.md.

use super::plan::{
    BRANCH_DEPTH, BRANCH_TIMEOUT, CONCURRENT_BRANCHES, DEBUG_ATTEMPTS, PLAN_DEPTH, REVIEW_MODES,
};
use super::{Bound, Field, Keys, Kind, Shape};
use crate::config::FAILURE_KINDS;

pub const RUNNERS: &[&str] = &["local", "actions"];
pub const MERGE_METHODS: &[&str] = &["merge", "squash", "rebase"];
pub const SHIP_BISECT: &[&str] = &["attribution", "halves"];
pub const PERMISSION_LEVELS: &[&str] = &["read", "triage", "write", "maintain", "admin"];
/// A role's `agent` written as a word.
pub const AGENT_WORDS: &[&str] = &["copilot"];
/// `roles.<name>.agent.ready`.
pub const AGENT_READY: &[&str] = &["auto", "never"];

/// Test runs at once for one repository.
pub const CONCURRENT_RUNS: Bound = Bound::new(1, 64);
pub const SHIP_BATCH_MAX: Bound = Bound::new(1, 100);
pub const SHIP_PARALLEL: Bound = Bound::new(1, 100);
/// Seconds the idle ship train waits for more stories.
pub const SHIP_BATCH_WAIT: Bound = Bound::new(0, 3_600);
pub const QUARANTINE_AFTER: Bound = Bound::new(1, 100);
pub const QUARANTINE_DAYS: Bound = Bound::new(1, 365);

/// A workflow file name in `.github/workflows/`.
pub const WORKFLOW_PATTERN: &str = "^[^/\\\\\\s]+\\.ya?ml$";
/// `HH:MM` in UTC, from `00:00` to `24:00`.
pub const TIME_PATTERN: &str = "^\\s*(([01]?[0-9]|2[0-3]):[0-5][0-9]|24:00)\\s*$";
/// A weekday, short or long, in any case (`fri`, `Friday`).
pub const DAY_PATTERN: &str = "^([Mm][Oo][Nn]([Dd][Aa][Yy])?|[Tt][Uu][Ee]([Ss][Dd][Aa][Yy])?|[Ww][Ee][Dd]([Nn][Ee][Ss][Dd][Aa][Yy])?|[Tt][Hh][Uu]([Rr][Ss][Dd][Aa][Yy])?|[Ff][Rr][Ii]([Dd][Aa][Yy])?|[Ss][Aa][Tt]([Uu][Rr][Dd][Aa][Yy])?|[Ss][Uu][Nn]([Dd][Aa][Yy])?)$";

fn failure_kinds() -> Vec<&'static str> {
    FAILURE_KINDS.to_vec()
}

fn permission_keys() -> Vec<&'static str> {
    crate::commands::permission_keys().collect()
}

const STRINGS: Kind = Kind::StrList {
    item: &Kind::Str,
    unique: false,
};

const fn flag(key: &'static str, description: &'static str, example: &'static str) -> Field {
    Field {
        key,
        description,
        example,
        kind: Kind::Bool,
        required: false,
    }
}

const fn int(
    key: &'static str,
    bound: Bound,
    description: &'static str,
    example: &'static str,
) -> Field {
    Field {
        key,
        description,
        example,
        kind: Kind::Int(bound),
        required: false,
    }
}

const fn text(
    key: &'static str,
    kind: Kind,
    description: &'static str,
    example: &'static str,
) -> Field {
    Field {
        key,
        description,
        example,
        kind,
        required: false,
    }
}

/// The whole file.
pub static CONFIG: Shape = Shape {
    name: "config",
    description: "taskgate's settings for this repository, read from the default branch. Every key is optional; a key left out takes its default.",
    one_of: &[],
    nullable: false,
    fields: &[
        text("runner", Kind::Choice(RUNNERS), "Where acceptance tests run: `local` (the taskgate server's sandbox) or `actions` (a dispatched GitHub Actions workflow). Default `local`.", "\"actions\""),
        text("runner_workflow", Kind::Pattern(WORKFLOW_PATTERN), "The workflow the `actions` runner dispatches. Default `taskgate-run.yml`.", "\"taskgate-run.yml\""),
        flag("runner_network", "`true`: test commands may reach the network. Default `false`.", "false"),
        text("roles", Kind::Map { keys: Keys::Any, value: &Kind::Object(&ROLE) }, "Roles by name, merged over the defaults (`coder`, `architect`, `tester`, `debugger`): who and what a task's work is routed to.", "{\"coder\": {\"agent\": {\"mention\": \"@claude\"}}}"),
        text("routing", Kind::Map { keys: Keys::Of(failure_kinds), value: &Kind::Str }, "Failure kind to role (a role of `roles`), merged over the defaults.", "{\"flaky_test\": \"tester\"}"),
        text("limits", Kind::Object(&LIMITS), "Bounds on the loop's work.", "{\"max_debug_attempts\": 3}"),
        text("review", Kind::Choice(REVIEW_MODES), "`auto` merges a task pull request when its checks pass; `human` waits for an approval by someone who did not push it. Default `auto`.", "\"auto\""),
        flag("allow_self_approval", "`true`: whoever pushed a task's commits may also `/approve` it. Default `false`.", "false"),
        flag("auto_fix", "`false`: propose branch todos and wait for `/approve-branch`. Default `true`.", "true"),
        text("merge_method", Kind::Choice(MERGE_METHODS), "How task pull requests are merged. Default `squash`.", "\"squash\""),
        text("ship_label", Kind::Str, "The label that ships a shippable story pull request. Default `ship`.", "\"ship\""),
        text("deploy_workflow", Kind::Str, "The workflow dispatched after a story pull request merges.", "\"deploy.yml\""),
        text("validation_workflow", Kind::Str, "The workflow dispatched after a successful deploy.", "\"smoke.yml\""),
        text("commands", Kind::Object(&COMMANDS), "Comment commands: their prefix and who may use them.", "{\"prefix\": \"/taskgate\"}"),
        text("freeze_windows", Kind::List { item: &Kind::Object(&WINDOW), max_items: None }, "Weekly windows, in UTC, when nothing lands.", "[{\"days\": [\"fri\"], \"from\": \"16:00\", \"to\": \"24:00\", \"reason\": \"weekend\"}]"),
        text("rollback_gates", STRINGS, "Commands a rollback's revert must pass before it lands.", "[\"make smoke\"]"),
        text("ship_gates", STRINGS, "The gates, by name, a ship's proof runs. Default: every gate.", "[\"unit\", \"integration-backtest\"]"),
        int("ship_batch_max", SHIP_BATCH_MAX, "Stories the ship train proves together in one batch (1-100). Default 4.", "4"),
        int("ship_parallel", SHIP_PARALLEL, "Batches proven at once, each on top of the one ahead (1-100). Default 2.", "2"),
        int("ship_batch_wait", SHIP_BATCH_WAIT, "Seconds the idle ship train waits for more stories before its first batch (0-3600). Default 30.", "30"),
        text("ship_bisect", Kind::Choice(SHIP_BISECT), "How a failed batch is split: `attribution` sets apart the stories the failing tests point at first; `halves` always splits in halves. Default `attribution`.", "\"attribution\""),
        flag("ship_train", "`false`: the one-story ship queue instead of the ship train. Default `true`.", "true"),
        text("flaky", Kind::Object(&FLAKY), "When a flaky test is quarantined, and for how long.", "{\"quarantine_after\": 3}"),
    ],
};

/// `roles.<name>:`
pub static ROLE: Shape = Shape {
    name: "role",
    description: "A role: who is assigned and notified, and which agent its todos reach.",
    one_of: &[],
    nullable: true,
    fields: &[
        text("assignees", STRINGS, "GitHub logins assigned to the role's issues.", "[\"octocat\"]"),
        text("labels", STRINGS, "Labels put on the role's issues.", "[\"needs-architect\"]"),
        text("agent", Kind::AnyOf(&[Kind::Choice(AGENT_WORDS), Kind::Object(&AGENT)]), "How the role's todos reach an agent: `copilot`, or one of `{ mention: \"@handle\" }`, `{ label: name }`, `{ workflow: file.yml }`.", "{\"mention\": \"@claude\"}"),
        text("agent_workflow", Kind::Pattern(WORKFLOW_PATTERN), "The older spelling of `agent: { workflow: <file> }`; a role may not have both.", "\"agent.yml\""),
    ],
};

/// `roles.<name>.agent:` as a mapping.
pub static AGENT: Shape = Shape {
    name: "agent",
    description: "Exactly one way to reach the agent, and whether taskgate may mark its green fix ready.",
    one_of: &["mention", "label", "workflow"],
    nullable: false,
    fields: &[
        text(
            "mention",
            Kind::Pattern("^@\\S+$"),
            "Comment on the todo, mentioning this handle (with its `@`, no spaces).",
            "\"@claude\"",
        ),
        text(
            "label",
            Kind::Pattern("\\S"),
            "Add this label to the todo.",
            "\"fix-me\"",
        ),
        text(
            "workflow",
            Kind::Pattern(WORKFLOW_PATTERN),
            "Dispatch this workflow of `.github/workflows/`.",
            "\"agent.yml\"",
        ),
        text(
            "ready",
            Kind::Choice(AGENT_READY),
            "Under `review: auto`, whether taskgate marks the draft task pull request it opened ready once the agent's fix turns every gate green (`auto`, the default), or leaves that to a person (`never`).",
            "\"never\"",
        ),
    ],
};

/// `limits:`
pub static LIMITS: Shape = Shape {
    name: "limits",
    description: "Bounds on the loop's work; a plan's `settings` may override them per story.",
    one_of: &[],
    nullable: false,
    fields: &[
        int(
            "max_debug_attempts",
            DEBUG_ATTEMPTS,
            "Failed runs per branch todo (1-10). Default 3.",
            "3",
        ),
        int(
            "max_branch_depth",
            BRANCH_DEPTH,
            "Nested branch todos (1-5). Default 2.",
            "2",
        ),
        int(
            "branch_timeout_seconds",
            BRANCH_TIMEOUT,
            "Lifetime of a branch todo, in seconds (60 to 30 days). Default 86400.",
            "86400",
        ),
        int(
            "max_concurrent_branches",
            CONCURRENT_BRANCHES,
            "Open branch todos per story (1-50). Default 5.",
            "5",
        ),
        int(
            "max_concurrent_runs",
            CONCURRENT_RUNS,
            "Test runs at once for this repository (1-64). Default 4.",
            "4",
        ),
        int(
            "max_plan_depth",
            PLAN_DEPTH,
            "Deepest task nesting in a plan (1-5). Default 3.",
            "3",
        ),
    ],
};

/// `commands:`
pub static COMMANDS: Shape = Shape {
    name: "commands",
    description: "Comment commands (`/taskgate retry`…).",
    one_of: &[],
    nullable: false,
    fields: &[
        text(
            "prefix",
            Kind::Str,
            "The comment-command prefix. Default `/taskgate`.",
            "\"/taskgate\"",
        ),
        flag(
            "short_form",
            "Also accept `/retry` and the others without the prefix. Default `true`.",
            "true",
        ),
        text(
            "permissions",
            Kind::Map {
                keys: Keys::Of(permission_keys),
                value: &Kind::Choice(PERMISSION_LEVELS),
            },
            "The repository permission a command needs, by command.",
            "{\"ship\": \"maintain\"}",
        ),
    ],
};

/// A `freeze_windows:` item.
pub static WINDOW: Shape = Shape {
    name: "freeze_window",
    description:
        "A weekly window, in UTC, when nothing lands; a window across midnight is written as two.",
    one_of: &[],
    nullable: false,
    fields: &[
        Field {
            key: "days",
            description: "The weekdays, short or long (`fri`, `friday`).",
            example: "[\"fri\", \"sat\"]",
            kind: Kind::StrList {
                item: &Kind::Pattern(DAY_PATTERN),
                unique: false,
            },
            required: true,
        },
        Field {
            key: "from",
            description: "Start, `HH:MM` in UTC.",
            example: "\"16:00\"",
            kind: Kind::Time,
            required: true,
        },
        Field {
            key: "to",
            description: "End, `HH:MM` in UTC (`24:00` for midnight), after `from`.",
            example: "\"24:00\"",
            kind: Kind::Time,
            required: true,
        },
        text(
            "reason",
            Kind::Str,
            "Why, shown where a landing waits.",
            "\"weekend\"",
        ),
    ],
};

/// `flaky:`
pub static FLAKY: Shape = Shape {
    name: "flaky",
    description: "Quarantine of flaky tests.",
    one_of: &[],
    nullable: false,
    fields: &[
        int(
            "quarantine_after",
            QUARANTINE_AFTER,
            "Flaky events after which a test is quarantined (1-100). Default 3.",
            "3",
        ),
        int(
            "quarantine_days",
            QUARANTINE_DAYS,
            "How long a quarantine lasts, in days (1-365). Default 14.",
            "14",
        ),
        text(
            "unrelated_paths",
            STRINGS,
            "Globs of paths whose change cannot change a test's result; replaces the default list.",
            "[\"**/*.md\", \"docs/**\"]",
        ),
    ],
};
