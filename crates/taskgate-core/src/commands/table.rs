//! The one table of comment commands (SPEC §5): each name with its usage,
//! its line in `help`, the permission it needs unless the repository
//! configures another, its family and whether it changes state. The
//! grammar, `help`, the configuration's `commands.permissions` keys, the
//! permission check and the dispatcher all read it.
//!
//! Adding a command is a row here, a variant of
//! [`Command`](super::Command) with its parse, and one handler: the
//! compiler then points at [`Command::spec`](super::Command::spec) and at
//! the dispatcher's match, which name every variant.

use crate::config::Permission;

/// One comment command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    /// How it is written after the prefix, for `help`.
    pub usage: &'static str,
    /// What it does, for `help`.
    pub help: &'static str,
    /// The permission it needs by default (`commands.permissions` overrides).
    pub permission: Permission,
    /// The handler family that carries it out.
    pub family: Family,
    /// Whether it changes a task, story or repository: a comment runs at
    /// most one such command, so two cannot race each other.
    pub changes_state: bool,
}

/// Which handler carries a command out (`app::commands`, one module each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `plan`: a story from the comment's plan.
    Plan,
    /// `retry`, `approve-branch`: a task's runs and todos.
    Task,
    /// `approve`, `revise`, `reject`, `pause`, `resume`: a task in review.
    Review,
    /// `ship`, `accept-commits`: a story on its way to the default branch.
    Ship,
    /// `freeze`, `unfreeze`: the repository's landings.
    Freeze,
    /// `rollback`: a shipped story reverted.
    Rollback,
    /// `unquarantine`: a flaky test's quarantine.
    Quarantine,
    /// `status`, `explain`: read-only views.
    View,
    /// `doctor`: what the repository needs.
    Doctor,
    /// `help`: the list itself; needs no permission check.
    Help,
}

const fn spec(
    name: &'static str,
    usage: &'static str,
    help: &'static str,
    permission: Permission,
    family: Family,
    changes_state: bool,
) -> CommandSpec {
    CommandSpec {
        name,
        usage,
        help,
        permission,
        family,
        changes_state,
    }
}

use Permission::{Maintain, Read, Write};

pub const PLAN: CommandSpec = spec(
    "plan",
    "plan",
    "make this issue a story from the fenced `yaml` plan in the same comment",
    Write,
    Family::Plan,
    true,
);

pub const RETRY: CommandSpec = spec(
    "retry",
    "retry [gate]",
    "run the acceptance gates again (all, or the one named)",
    Write,
    Family::Task,
    true,
);

pub const APPROVE: CommandSpec = spec(
    "approve",
    "approve [--override <reason>]",
    "approve a task in review; `--override` accepts it despite a red checker (recorded)",
    Write,
    Family::Review,
    true,
);

pub const APPROVE_BRANCH: CommandSpec = spec(
    "approve-branch",
    "approve-branch",
    "open the proposed branch-todo issue (manual mode)",
    Write,
    Family::Task,
    true,
);

pub const REVISE: CommandSpec = spec(
    "revise",
    "revise <feedback>",
    "send a task in review back to its implementor with feedback",
    Write,
    Family::Review,
    true,
);

pub const REJECT: CommandSpec = spec(
    "reject",
    "reject <reason>",
    "return a task to planning",
    Write,
    Family::Review,
    true,
);

pub const PAUSE: CommandSpec = spec(
    "pause",
    "pause",
    "stop acting on this task or story until resumed",
    Write,
    Family::Review,
    true,
);

pub const RESUME: CommandSpec = spec(
    "resume",
    "resume",
    "continue after a pause",
    Write,
    Family::Review,
    true,
);

pub const SHIP: CommandSpec = spec(
    "ship",
    "ship [--priority <high or hotfix>]",
    "ship a shippable story (same as the `ship` label on its pull request); a priority (maintain) puts it ahead in the queue, a hotfix first",
    Maintain,
    Family::Ship,
    true,
);

pub const ACCEPT_COMMITS: CommandSpec = spec(
    "accept-commits",
    "accept-commits <full sha>",
    "accept the story branch's commits up to `<full sha>` (all 40 hex digits) that no task PR made (recorded)",
    Maintain,
    Family::Ship,
    true,
);

pub const FREEZE: CommandSpec = spec(
    "freeze",
    "freeze <reason>",
    "stop anything from landing in this repository until `unfreeze` (recorded)",
    Maintain,
    Family::Freeze,
    true,
);

pub const UNFREEZE: CommandSpec = spec(
    "unfreeze",
    "unfreeze",
    "lift a freeze: stories land again",
    Maintain,
    Family::Freeze,
    true,
);

pub const ROLLBACK: CommandSpec = spec(
    "rollback",
    "rollback [--now <reason>]",
    "revert a shipped story through a proven revert PR; `--now` skips the proof (recorded)",
    Maintain,
    Family::Rollback,
    true,
);

pub const UNQUARANTINE: CommandSpec = spec(
    "unquarantine",
    "unquarantine <test id>",
    "lift a flaky test's quarantine: its failures fail gates again (recorded)",
    Write,
    Family::Quarantine,
    true,
);

pub const STATUS: CommandSpec = spec(
    "status",
    "status",
    "show the state of this story or task",
    Read,
    Family::View,
    false,
);

pub const EXPLAIN: CommandSpec = spec(
    "explain",
    "explain",
    "show the latest failure diagnosis",
    Read,
    Family::View,
    false,
);

pub const DOCTOR: CommandSpec = spec(
    "doctor",
    "doctor",
    "check what this repository needs for taskgate (permissions, branch rules, drafts, assignees, workflows, failed deliveries, sandbox)",
    Read,
    Family::Doctor,
    false,
);

pub const HELP: CommandSpec = spec("help", "help", "show this list", Read, Family::Help, false);

/// Every command, in the order `help` lists them.
pub const COMMANDS: &[CommandSpec] = &[
    PLAN,
    RETRY,
    APPROVE,
    APPROVE_BRANCH,
    REVISE,
    REJECT,
    PAUSE,
    RESUME,
    SHIP,
    ACCEPT_COMMITS,
    FREEZE,
    UNFREEZE,
    ROLLBACK,
    UNQUARANTINE,
    STATUS,
    EXPLAIN,
    DOCTOR,
    HELP,
];

/// `approve --override`: not a command of its own, but a permission key.
pub const OVERRIDE: &str = "override";

/// The permission `approve --override` needs by default.
pub const OVERRIDE_PERMISSION: Permission = Maintain;

/// The names of every command, in `help` order.
pub fn command_names() -> impl Iterator<Item = &'static str> + Clone {
    COMMANDS.iter().map(|c| c.name)
}

/// The command named `name`.
pub fn command(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The keys `commands.permissions` accepts: every command and `override`.
pub fn permission_keys() -> impl Iterator<Item = &'static str> + Clone {
    command_names().chain([OVERRIDE])
}

/// The permission `key` needs when the repository configures none.
pub fn default_permission(key: &str) -> Permission {
    if key == OVERRIDE {
        return OVERRIDE_PERMISSION;
    }
    command(key).map_or(Permission::Write, |c| c.permission)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_spec_section_5() {
        assert_eq!(default_permission("retry"), Write);
        assert_eq!(default_permission("ship"), Maintain);
        assert_eq!(default_permission("override"), Maintain);
        assert_eq!(default_permission("status"), Read);
        for maintained in ["freeze", "unfreeze", "rollback"] {
            assert_eq!(default_permission(maintained), Maintain, "{maintained}");
        }
        assert_eq!(permission_keys().count(), COMMANDS.len() + 1);
    }
}
