//! The one table of comment commands (SPEC §5): each name with its usage,
//! its line in `help` and the permission it needs unless the repository
//! configures another. The grammar, `help`, the configuration's
//! `commands.permissions` keys and the permission check all read it.

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
}

const fn spec(
    name: &'static str,
    usage: &'static str,
    help: &'static str,
    permission: Permission,
) -> CommandSpec {
    CommandSpec {
        name,
        usage,
        help,
        permission,
    }
}

use Permission::{Maintain, Read, Write};

/// Every command, in the order `help` lists them.
pub const COMMANDS: &[CommandSpec] = &[
    spec(
        "plan",
        "plan",
        "make this issue a story from the fenced `yaml` plan in the same comment",
        Write,
    ),
    spec(
        "retry",
        "retry [gate]",
        "run the acceptance gates again (all, or the one named)",
        Write,
    ),
    spec(
        "approve",
        "approve [--override <reason>]",
        "approve a task in review; `--override` accepts it despite a red checker (recorded)",
        Write,
    ),
    spec(
        "approve-branch",
        "approve-branch",
        "open the proposed branch-todo issue (manual mode)",
        Write,
    ),
    spec(
        "revise",
        "revise <feedback>",
        "send a task in review back to its implementor with feedback",
        Write,
    ),
    spec(
        "reject",
        "reject <reason>",
        "return a task to planning",
        Write,
    ),
    spec(
        "pause",
        "pause",
        "stop acting on this task or story until resumed",
        Write,
    ),
    spec("resume", "resume", "continue after a pause", Write),
    spec(
        "ship",
        "ship [--priority <high or hotfix>]",
        "ship a shippable story (same as the `ship` label on its pull request); a priority (maintain) puts it ahead in the queue, a hotfix first",
        Maintain,
    ),
    spec(
        "accept-commits",
        "accept-commits <full sha>",
        "accept the story branch's commits up to `<full sha>` (all 40 hex digits) that no task PR made (recorded)",
        Maintain,
    ),
    spec(
        "freeze",
        "freeze <reason>",
        "stop anything from landing in this repository until `unfreeze` (recorded)",
        Maintain,
    ),
    spec(
        "unfreeze",
        "unfreeze",
        "lift a freeze: stories land again",
        Maintain,
    ),
    spec(
        "rollback",
        "rollback [--now <reason>]",
        "revert a shipped story through a proven revert PR; `--now` skips the proof (recorded)",
        Maintain,
    ),
    spec(
        "unquarantine",
        "unquarantine <test id>",
        "lift a flaky test's quarantine: its failures fail gates again (recorded)",
        Write,
    ),
    spec(
        "status",
        "status",
        "show the state of this story or task",
        Read,
    ),
    spec(
        "explain",
        "explain",
        "show the latest failure diagnosis",
        Read,
    ),
    spec(
        "doctor",
        "doctor",
        "check what this repository needs for taskgate (permissions, branch rules, drafts, assignees, workflows, failed deliveries, sandbox)",
        Read,
    ),
    spec("help", "help", "show this list", Read),
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
