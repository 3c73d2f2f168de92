//! Repository configuration: `.github/taskgate.yml` on the default branch
//! (SPEC §9), as plain data with documented defaults. A missing file means
//! the defaults; a present file is validated like a plan (unknown keys with
//! "did you mean", wrong types, out-of-range limits, routing to a role that
//! does not exist), every problem at its `line:column`.
//!
//! Must not: read the file itself (the shell hands over its text), do IO,
//! await or read the clock.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `runner` | `local` | `local` or `actions` |
//! | `runner_workflow` | `taskgate-run.yml` | workflow dispatched by the `actions` runner |
//! | `runner_network` | `false` | `true`: the `local` runner's sandbox lets commands reach the network (each check run says so) |
//! | `roles.<name>` | `coder`, `architect`, `tester`, `debugger` (empty) | `assignees`, `labels`, `agent` (`copilot`, `{ mention: "@claude" }`, `{ label: fix-me }`, `{ workflow: agent.yml }`; `agent_workflow: <file>` is the older spelling of the last; `core::config::agent`); merged over the defaults |
//! | `routing.<kind>` | SPEC §4 table | failure kind → role; merged over the defaults |
//! | `limits.max_debug_attempts` | 3 | failed runs per branch todo (1–10) |
//! | `limits.max_branch_depth` | 2 | nested branch todos (1–5) |
//! | `limits.branch_timeout_seconds` | 86400 | lifetime of a branch todo (60 s–30 days) |
//! | `limits.max_concurrent_branches` | 5 | open branch todos per story (1–50) |
//! | `limits.max_concurrent_runs` | 4 | test runs at once for this repository (1–64) |
//! | `limits.max_plan_depth` | 3 | deepest task nesting in a plan (1–5) |
//! | `review` | `auto` | `auto` merges a task PR when its checks pass; `human` waits for `/approve` |
//! | `allow_self_approval` | `false` | `true`: whoever pushed a task's commits may `/approve` it too |
//! | `auto_fix` | `true` | `false`: propose branch todos and wait for `/approve-branch` |
//! | `merge_method` | `squash` | `merge`, `squash` or `rebase` |
//! | `ship_label` | `ship` | the label that ships a shippable story PR |
//! | `deploy_workflow` | none | workflow dispatched after the story PR merges |
//! | `validation_workflow` | none | workflow dispatched after a successful deploy |
//! | `commands.prefix` | `/taskgate` | the comment-command prefix |
//! | `commands.short_form` | `true` | also accept `/retry` etc. without the prefix |
//! | `commands.permissions.<command>` | `write`; `ship`, `override`, `freeze`, `unfreeze`, `rollback`: `maintain`; `status`, `explain`, `doctor`, `help`: `read` | `read`, `triage`, `write`, `maintain` or `admin` |
//! | `freeze_windows` | none | weekly windows in UTC when nothing lands: `- { days: [fri], from: "16:00", to: "24:00", reason: weekend }` (`core::freeze`) |
//! | `ship_gates` | every gate | the gates (by name) a ship's proof runs on the current base: `[unit, integration-backtest]` |
//! | `ship_batch_max` | 4 | stories proven together in one batch of the ship train (1–100; 1: one story per proof; `core::ship::train`) |
//! | `ship_parallel` | 2 | batches proven at once, each on the one ahead (1–100; `core::ship::train`) |
//! | `ship_batch_wait` | 30 | seconds an idle ship train waits after a ship for more stories before it proves its first batch (0–3600; 0: at once; never while a batch is proving; `core::ship::train`) |
//! | `ship_bisect` | `attribution` | how the ship train splits a failed batch: `attribution` (first the stories the failing tests point at, else halves) or `halves` (always halves: the plain binary split; `core::ship::train`) |
//! | `ship_train` | true | ship through the ship train: batches proven side by side, each landed as one fast-forward (where the rules allow one; else, or `false`, the one-story queue ships) |
//! | `rollback_gates` | none | commands a rollback's revert must pass before it lands: `[make smoke]`; none: it lands once it merges cleanly |
//! | `flaky.quarantine_after` | 3 | flaky events (a test failed then passed on the same commit, or changed result across a commit that touched none of its files) before a test is quarantined (1–100; `core::flaky`) |
//! | `flaky.quarantine_days` | 14 | how long a quarantine lasts, in days (1–365); `/taskgate unquarantine <test>` lifts it sooner |
//! | `flaky.unrelated_paths` | prose, licences, images | globs of paths whose change cannot change a test's result: a test whose result changes across a commit that changed only these (or nothing) is flaky (`core::flaky`, kind b) |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plan::Settings;

/// `ship_batch_wait`'s default, in seconds: chosen with the ship stream
/// benchmark (docs/decisions/ship-queue.md, "The batching wait").
pub const DEFAULT_SHIP_BATCH_WAIT_S: u32 = 30;

/// Where the shell finds the config on the default branch.
pub const CONFIG_PATH: &str = ".github/taskgate.yml";

/// Failure kinds of SPEC §4, as written in routing tables.
pub const FAILURE_KINDS: [&str; 10] = [
    "test_failure",
    "build_failure",
    "lint_failure",
    "runtime_error",
    "missing_dependency",
    "timeout",
    "spec_mismatch",
    "tooling_error",
    "flaky_test",
    "unknown",
];

/// Roles that exist even when the config names none.
pub const DEFAULT_ROLES: [&str; 4] = ["coder", "architect", "tester", "debugger"];

/// Where an attempt runs (`runner` in the repo config). The core chooses
/// from it when it queues an attempt (`task::decide`): a runner is one
/// variant here, the effects it is started and stopped with, and its
/// performer in the shell; the compiler lists each place that must learn it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    #[default]
    Local,
    Actions,
}

/// How the ship train splits a failed batch (`ship_bisect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShipBisect {
    /// The stories the failing tests point at first (`train::attribution`),
    /// halves when none stands out.
    #[default]
    Attribution,
    /// Always in halves: the plain binary split.
    Halves,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewMode {
    #[default]
    Auto,
    Human,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    Merge,
    #[default]
    Squash,
    Rebase,
}

/// GitHub repository permission levels, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// GitHub's name of the level: `read`, `triage`, `write`, `maintain`, `admin`.
    pub fn name(self) -> &'static str {
        PERMISSIONS
            .iter()
            .find(|(_, p)| *p == self)
            .map(|(s, _)| *s)
            .expect("every level is listed")
    }
}

const PERMISSIONS: [(&str, Permission); 5] = [
    ("read", Permission::Read),
    ("triage", Permission::Triage),
    ("write", Permission::Write),
    ("maintain", Permission::Maintain),
    ("admin", Permission::Admin),
];

/// Who hears about work routed to a role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Role {
    pub assignees: Vec<String>,
    pub labels: Vec<String>,
    /// How work routed to this role reaches an agent (`agent:`, or the
    /// older `agent_workflow: <file>`).
    pub agent: Option<AgentRoute>,
    /// Whether taskgate marks its own draft ready when the agent's fix is
    /// green (`agent: { …, ready: never }`; `core::task::ready`).
    pub ready: AgentReady,
}

impl Role {
    /// The workflow dispatched when work is routed to this role.
    pub fn agent_workflow(&self) -> Option<&str> {
        self.agent.as_ref().and_then(AgentRoute::workflow)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    pub max_debug_attempts: u32,
    pub max_branch_depth: u32,
    pub branch_timeout_seconds: u64,
    pub max_concurrent_branches: u32,
    pub max_concurrent_runs: u32,
    pub max_plan_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_debug_attempts: 3,
            max_branch_depth: 2,
            branch_timeout_seconds: 86_400,
            max_concurrent_branches: 5,
            max_concurrent_runs: 4,
            max_plan_depth: 3,
        }
    }
}

/// `flaky.*`: when a flaky test is quarantined, and for how long
/// (`core::flaky`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlakyConfig {
    /// Flaky events that quarantine a test.
    pub quarantine_after: u32,
    /// Days a quarantine lasts.
    pub quarantine_days: u32,
    /// Globs of paths whose change cannot change a test's result: a test
    /// that flips across a commit that changed only these is flaky.
    pub unrelated_paths: Vec<String>,
}

/// `flaky.unrelated_paths` when the config names none: prose, licences
/// and pictures.
pub const DEFAULT_UNRELATED_PATHS: &[&str] = &[
    "**/*.md",
    "**/*.markdown",
    "**/*.rst",
    "**/*.adoc",
    "docs/**",
    "**/LICENSE*",
    "**/NOTICE*",
    "**/AUTHORS*",
    "**/*.png",
    "**/*.jpg",
    "**/*.gif",
    "**/*.svg",
];

impl Default for FlakyConfig {
    fn default() -> Self {
        FlakyConfig {
            quarantine_after: 3,
            quarantine_days: 14,
            unrelated_paths: DEFAULT_UNRELATED_PATHS
                .iter()
                .map(|g| g.to_string())
                .collect(),
        }
    }
}

impl FlakyConfig {
    /// [`FlakyConfig::unrelated_paths`] as a matcher (each glob was checked
    /// when the config was read).
    pub fn unrelated_globs(&self) -> crate::results::ReportGlobs {
        let globs: Vec<&str> = self.unrelated_paths.iter().map(String::as_str).collect();
        crate::results::ReportGlobs::new(&globs).unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandConfig {
    pub prefix: String,
    pub short_form: bool,
    /// Only the overrides written in the file; see [`RepoConfig::required_permission`].
    pub permissions: BTreeMap<String, Permission>,
}

impl Default for CommandConfig {
    fn default() -> Self {
        CommandConfig {
            prefix: "/taskgate".into(),
            short_form: true,
            permissions: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoConfig {
    pub runner: RunnerKind,
    pub runner_workflow: String,
    /// The local runner's sandbox shares the host's network.
    pub runner_network: bool,
    pub roles: BTreeMap<String, Role>,
    /// Failure kind → role, complete (defaults merged with the file).
    pub routing: BTreeMap<String, String>,
    pub limits: Limits,
    pub review: ReviewMode,
    /// Whoever pushed a task's commits may also approve it.
    pub allow_self_approval: bool,
    pub auto_fix: bool,
    pub merge_method: MergeMethod,
    pub ship_label: String,
    pub deploy_workflow: Option<String>,
    pub validation_workflow: Option<String>,
    pub commands: CommandConfig,
    /// When nothing lands, every week (`core::freeze`).
    pub freeze_windows: Vec<crate::freeze::FreezeWindow>,
    /// Commands a rollback's revert must pass before it lands
    /// (`core::ship::rollback`); none: it lands once it merges cleanly.
    pub rollback_gates: Vec<String>,
    /// The gates (by name: `unit`, `integration-backtest`) a ship's proof
    /// runs on the current base; empty: every gate of the story.
    pub ship_gates: Vec<String>,
    /// Stories proven together in one car of the ship train (1: one story
    /// per proof).
    pub ship_batch_max: u32,
    /// Cars of the ship train proven at once, each on the one ahead.
    pub ship_parallel: u32,
    /// Seconds an idle ship train waits for more stories before it forms
    /// its first car (0: at once); never while a car is in the train.
    pub ship_batch_wait: u32,
    /// How the ship train splits a failed batch.
    pub ship_bisect: ShipBisect,
    /// Queued stories go to the ship train (`core::ship::train`), not the
    /// one-story queue. Off by default until the shell lands cars.
    pub ship_train: bool,
    /// Flaky-test quarantine (`core::flaky`).
    pub flaky: FlakyConfig,
}

fn default_route(kind: &str) -> &'static str {
    match kind {
        "spec_mismatch" => "architect",
        "timeout" | "flaky_test" => "tester",
        "tooling_error" | "unknown" => "debugger",
        _ => "coder",
    }
}

impl Default for RepoConfig {
    fn default() -> Self {
        RepoConfig {
            runner: RunnerKind::Local,
            runner_workflow: "taskgate-run.yml".into(),
            runner_network: false,
            roles: DEFAULT_ROLES
                .iter()
                .map(|r| (r.to_string(), Role::default()))
                .collect(),
            routing: FAILURE_KINDS
                .iter()
                .map(|k| (k.to_string(), default_route(k).to_string()))
                .collect(),
            limits: Limits::default(),
            review: ReviewMode::Auto,
            allow_self_approval: false,
            auto_fix: true,
            merge_method: MergeMethod::Squash,
            ship_label: "ship".into(),
            deploy_workflow: None,
            validation_workflow: None,
            commands: CommandConfig::default(),
            freeze_windows: Vec::new(),
            rollback_gates: Vec::new(),
            ship_gates: Vec::new(),
            ship_batch_max: 4,
            ship_parallel: 2,
            ship_batch_wait: DEFAULT_SHIP_BATCH_WAIT_S,
            ship_bisect: ShipBisect::Attribution,
            ship_train: true,
            flaky: FlakyConfig::default(),
        }
    }
}

impl RepoConfig {
    /// The role a failure of `kind` goes to (before any per-task override).
    pub fn role_for(&self, kind: &str) -> &str {
        self.routing
            .get(kind)
            .map(String::as_str)
            .unwrap_or("debugger")
    }

    /// The ship train's settings (`ship_batch_max`, `ship_parallel`,
    /// `ship_bisect`, `ship_batch_wait`).
    pub fn train_settings(&self) -> crate::ship::TrainSettings {
        crate::ship::TrainSettings {
            batch_max: self.ship_batch_max as usize,
            parallel: self.ship_parallel as usize,
            attribution: self.ship_bisect == ShipBisect::Attribution,
            batch_wait_ms: i64::from(self.ship_batch_wait) * 1_000,
        }
    }

    /// The permission a command needs: the file's override, else the default.
    pub fn required_permission(&self, command: &str) -> Permission {
        if let Some(p) = self.commands.permissions.get(command) {
            return *p;
        }
        crate::commands::default_permission(command)
    }

    /// A task's review mode: the task's own `review:`, else its story's
    /// `settings.review`, else the repository's (`.github/taskgate.yml`).
    pub fn effective_review(&self, settings: &Settings, task: Option<ReviewMode>) -> ReviewMode {
        task.or(settings.review).unwrap_or(self.review)
    }

    /// Whether the failure loop opens branch todos by itself: the story's
    /// `settings.auto_fix`, else the repository's.
    pub fn effective_auto_fix(&self, settings: &Settings) -> bool {
        settings.auto_fix.unwrap_or(self.auto_fix)
    }

    /// The repository limits with a story's `settings` applied on top.
    pub fn effective_limits(&self, settings: &Settings) -> Limits {
        let l = &self.limits;
        Limits {
            max_debug_attempts: settings.max_debug_attempts.unwrap_or(l.max_debug_attempts),
            max_branch_depth: settings.max_branch_depth.unwrap_or(l.max_branch_depth),
            branch_timeout_seconds: settings
                .branch_timeout_seconds
                .unwrap_or(l.branch_timeout_seconds),
            max_concurrent_branches: settings
                .max_concurrent_branches
                .unwrap_or(l.max_concurrent_branches),
            max_concurrent_runs: l.max_concurrent_runs,
            max_plan_depth: settings.max_depth.unwrap_or(l.max_plan_depth),
        }
    }

    pub fn role_names(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }
}

pub mod agent;
pub mod push;
mod read;
pub use agent::{AgentProblem, AgentReady, AgentRoute};
pub use push::{decide_config_read, decide_first_config_read, Problems};
pub use read::{load_config, parse_config};

#[cfg(test)]
mod tests;
