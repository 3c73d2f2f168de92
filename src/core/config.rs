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
//! | `roles.<name>` | `coder`, `architect`, `tester`, `debugger` (empty) | `assignees`, `labels`, `agent_workflow`; merged over the defaults |
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
//! | `commands.permissions.<command>` | `write`; `ship`, `override`, `freeze`, `unfreeze`, `rollback`: `maintain`; `status`, `explain`, `help`: `read` | `read`, `triage`, `write`, `maintain` or `admin` |
//! | `freeze_windows` | none | weekly windows in UTC when nothing lands: `- { days: [fri], from: "16:00", to: "24:00", reason: weekend }` (`core::freeze`) |
//! | `ship_gates` | every gate | the gates (by name) a ship's proof runs on the current base: `[unit, integration-backtest]` |
//! | `rollback_gates` | none | commands a rollback's revert must pass before it lands: `[make smoke]`; none: it lands once it merges cleanly |
//! | `flaky.quarantine_after` | 3 | flaky events (a test failed then passed on the same commit, or changed result across a commit that touched none of its files) before a test is quarantined (1–100; `core::flaky`) |
//! | `flaky.quarantine_days` | 14 | how long a quarantine lasts, in days (1–365); `/taskgate unquarantine <test>` lifts it sooner |
//! | `flaky.unrelated_paths` | prose, licences, images | globs of paths whose change cannot change a test's result: a test whose result changes across a commit that changed only these (or nothing) is flaky (`core::flaky`, kind b) |

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::plan::yaml::{self, as_str, Fields, Node, Value};
use crate::core::plan::{Problem, ProblemKind, Settings};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    #[default]
    Local,
    Actions,
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
    /// A workflow file dispatched when work is routed to this role.
    pub agent_workflow: Option<String>,
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
    pub freeze_windows: Vec<crate::core::freeze::FreezeWindow>,
    /// Commands a rollback's revert must pass before it lands
    /// (`core::ship::rollback`); none: it lands once it merges cleanly.
    pub rollback_gates: Vec<String>,
    /// The gates (by name: `unit`, `integration-backtest`) a ship's proof
    /// runs on the current base; empty: every gate of the story.
    pub ship_gates: Vec<String>,
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

    /// The permission a command needs: the file's override, else the default.
    pub fn required_permission(&self, command: &str) -> Permission {
        if let Some(p) = self.commands.permissions.get(command) {
            return *p;
        }
        crate::commands::default_permission(command)
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

const TOP_KEYS: &[&str] = &[
    "runner",
    "runner_workflow",
    "runner_network",
    "roles",
    "routing",
    "limits",
    "review",
    "allow_self_approval",
    "auto_fix",
    "merge_method",
    "ship_label",
    "deploy_workflow",
    "validation_workflow",
    "commands",
    "freeze_windows",
    "rollback_gates",
    "ship_gates",
    "flaky",
];
const FLAKY_KEYS: &[&str] = &["quarantine_after", "quarantine_days", "unrelated_paths"];
const ROLE_KEYS: &[&str] = &["assignees", "labels", "agent_workflow"];
const LIMIT_KEYS: &[&str] = &[
    "max_debug_attempts",
    "max_branch_depth",
    "branch_timeout_seconds",
    "max_concurrent_branches",
    "max_concurrent_runs",
    "max_plan_depth",
];
const COMMAND_KEYS: &[&str] = &["prefix", "short_form", "permissions"];

/// `None` (no file) → defaults. `Err` lists every error (warnings are dropped).
pub fn load_config(src: Option<&str>) -> Result<RepoConfig, Vec<Problem>> {
    let Some(src) = src else {
        return Ok(RepoConfig::default());
    };
    let (config, problems) = parse_config(src);
    if problems.iter().any(Problem::is_error) {
        Err(problems)
    } else {
        Ok(config)
    }
}

/// Reads what it can over the defaults and reports every problem.
pub fn parse_config(src: &str) -> (RepoConfig, Vec<Problem>) {
    let mut c = RepoConfig::default();
    let mut problems = Vec::new();
    let root = match yaml::load(src) {
        Ok(Some(root)) => root,
        Ok(None) => return (c, problems),
        Err(p) => return (c, vec![*p]),
    };
    let Some(f) = Fields::new(&root, "the config", TOP_KEYS, &mut problems) else {
        return (c, problems);
    };
    let p = &mut problems;
    if let Some(r) = f.choice("runner", &["local", "actions"], p) {
        c.runner = if r == "actions" {
            RunnerKind::Actions
        } else {
            RunnerKind::Local
        };
    }
    set_str(&f, "runner_workflow", &mut c.runner_workflow, p);
    if let Some(b) = f.bool("runner_network", p) {
        c.runner_network = b;
    }
    if let Some(n) = f.get("roles") {
        read_roles(n, &mut c.roles, p);
    }
    // After the roles: routing may name only roles that exist.
    if let Some(n) = f.get("routing") {
        read_routing(n, &c.roles, &mut c.routing, p);
    }
    if let Some(lf) = f
        .get("limits")
        .and_then(|n| Fields::new(n, "limits", LIMIT_KEYS, p))
    {
        read_limits(&lf, &mut c.limits, p);
    }
    if let Some(r) = f.choice("review", &["auto", "human"], p) {
        c.review = if r == "human" {
            ReviewMode::Human
        } else {
            ReviewMode::Auto
        };
    }
    if let Some(b) = f.bool("allow_self_approval", p) {
        c.allow_self_approval = b;
    }
    if let Some(b) = f.bool("auto_fix", p) {
        c.auto_fix = b;
    }
    if let Some(m) = f.choice("merge_method", &["merge", "squash", "rebase"], p) {
        c.merge_method = match m.as_str() {
            "merge" => MergeMethod::Merge,
            "rebase" => MergeMethod::Rebase,
            _ => MergeMethod::Squash,
        };
    }
    set_str(&f, "ship_label", &mut c.ship_label, p);
    c.deploy_workflow = f.str("deploy_workflow", p);
    c.validation_workflow = f.str("validation_workflow", p);
    if let Some(cf) = f
        .get("commands")
        .and_then(|n| Fields::new(n, "commands", COMMAND_KEYS, p))
    {
        read_commands(&cf, &mut c.commands, p);
    }
    if let Some(n) = f.get("freeze_windows") {
        c.freeze_windows = crate::core::freeze::read_freeze_windows(n, p);
    }
    c.rollback_gates = f
        .str_list("rollback_gates", p)
        .into_iter()
        .map(|(cmd, _)| cmd)
        .collect();
    c.ship_gates = f
        .str_list("ship_gates", p)
        .into_iter()
        .map(|(gate, _)| gate)
        .collect();
    if let Some(ff) = f
        .get("flaky")
        .and_then(|n| Fields::new(n, "flaky", FLAKY_KEYS, p))
    {
        read_flaky(&ff, &mut c.flaky, p);
    }
    problems.sort_by_key(|p| p.pos.map(|p| (p.line, p.column)).unwrap_or((usize::MAX, 0)));
    (c, problems)
}

/// `roles.<name>`, merged over the defaults; an empty entry is a role
/// with nothing set.
fn read_roles(n: &Node, roles: &mut BTreeMap<String, Role>, p: &mut Vec<Problem>) {
    for (name, _, node) in map_entries(n, "roles", p) {
        if let Some(rf) = Fields::new(node, &format!("role `{name}`"), ROLE_KEYS, p) {
            let role = Role {
                assignees: rf
                    .str_list("assignees", p)
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
                labels: rf
                    .str_list("labels", p)
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
                agent_workflow: rf.str("agent_workflow", p),
            };
            roles.insert(name.clone(), role);
        } else if node.value == Value::Null {
            roles.insert(name.clone(), Role::default());
        }
    }
}

/// `routing.<kind>`: a known failure kind to a known role, merged over
/// the defaults.
fn read_routing(
    n: &Node,
    roles: &BTreeMap<String, Role>,
    routing: &mut BTreeMap<String, String>,
    p: &mut Vec<Problem>,
) {
    for (kind, kind_pos, node) in map_entries(n, "routing", p) {
        if !FAILURE_KINDS.contains(&kind.as_str()) {
            p.push(Problem::new(
                Some(*kind_pos),
                ProblemKind::UnknownFailureKind {
                    kind: kind.clone(),
                    suggestion: yaml::did_you_mean(kind, FAILURE_KINDS.iter().copied()),
                },
            ));
            continue;
        }
        let Some(role) = as_str(node, kind, p) else {
            continue;
        };
        if !roles.contains_key(&role) {
            p.push(Problem::new(
                Some(node.pos),
                ProblemKind::UnknownRole {
                    context: format!("`routing.{kind}`"),
                    suggestion: yaml::did_you_mean(&role, roles.keys().map(String::as_str)),
                    known: roles.keys().cloned().collect::<Vec<_>>().join(", "),
                    role,
                },
            ));
            continue;
        }
        routing.insert(kind.clone(), role);
    }
}

/// `limits.*`, each within its range (see the table in the header).
fn read_limits(lf: &Fields, l: &mut Limits, p: &mut Vec<Problem>) {
    let int = |key: &str, min: u64, max: u64, p: &mut Vec<Problem>| lf.int(key, min, max, p);
    if let Some(v) = int("max_debug_attempts", 1, 10, p) {
        l.max_debug_attempts = v as u32
    }
    if let Some(v) = int("max_branch_depth", 1, 5, p) {
        l.max_branch_depth = v as u32
    }
    if let Some(v) = int("branch_timeout_seconds", 60, 30 * 86_400, p) {
        l.branch_timeout_seconds = v
    }
    if let Some(v) = int("max_concurrent_branches", 1, 50, p) {
        l.max_concurrent_branches = v as u32
    }
    if let Some(v) = int("max_concurrent_runs", 1, 64, p) {
        l.max_concurrent_runs = v as u32
    }
    if let Some(v) = int("max_plan_depth", 1, 5, p) {
        l.max_plan_depth = v as u32
    }
}

/// `flaky.*`, each within its range (see the table in the header).
fn read_flaky(ff: &Fields, flaky: &mut FlakyConfig, p: &mut Vec<Problem>) {
    if let Some(v) = ff.int("quarantine_after", 1, 100, p) {
        flaky.quarantine_after = v as u32;
    }
    if let Some(v) = ff.int("quarantine_days", 1, 365, p) {
        flaky.quarantine_days = v as u32;
    }
    if ff.get("unrelated_paths").is_some() {
        flaky.unrelated_paths = Vec::new();
        for (glob, pos) in ff.str_list("unrelated_paths", p) {
            let Err(e) = crate::results::ReportGlobs::new(&[glob.as_str()]) else {
                flaky.unrelated_paths.push(glob);
                continue;
            };
            let reason = match e {
                crate::results::ReportError::BadGlob { reason, .. } => reason,
                other => other.to_string(),
            };
            let key = "flaky.unrelated_paths".to_string();
            let kind = ProblemKind::BadPathGlob { key, glob, reason };
            p.push(Problem::new(Some(pos), kind));
        }
    }
}

/// `commands.*`: the prefix, the short form and the permissions.
fn read_commands(cf: &Fields, commands: &mut CommandConfig, p: &mut Vec<Problem>) {
    set_str(cf, "prefix", &mut commands.prefix, p);
    if let Some(b) = cf.bool("short_form", p) {
        commands.short_form = b;
    }
    if let Some(n) = cf.get("permissions") {
        read_permissions(n, &mut commands.permissions, p);
    }
}

/// `commands.permissions.<command>`: a command that takes a permission,
/// to a permission level.
fn read_permissions(
    n: &Node,
    permissions: &mut BTreeMap<String, Permission>,
    p: &mut Vec<Problem>,
) {
    let names: Vec<&str> = PERMISSIONS.iter().map(|(s, _)| *s).collect();
    for (cmd, cmd_pos, node) in map_entries(n, "permissions", p) {
        if !crate::commands::permission_keys().any(|k| k == cmd) {
            p.push(Problem::new(
                Some(*cmd_pos),
                ProblemKind::UnknownCommand {
                    command: cmd.clone(),
                    suggestion: yaml::did_you_mean(cmd, crate::commands::permission_keys()),
                },
            ));
            continue;
        }
        let Some(level) = as_str(node, cmd, p) else {
            continue;
        };
        match PERMISSIONS.iter().find(|(s, _)| *s == level) {
            Some((_, perm)) => {
                permissions.insert(cmd.clone(), *perm);
            }
            None => p.push(Problem::new(
                Some(node.pos),
                ProblemKind::InvalidValue {
                    field: format!("permissions.{cmd}"),
                    suggestion: yaml::did_you_mean(&level, names.iter().copied()),
                    value: level,
                    expected: names.join(", "),
                },
            )),
        }
    }
}

fn set_str(f: &Fields, key: &str, target: &mut String, p: &mut Vec<Problem>) {
    if let Some(s) = f.str(key, p) {
        *target = s;
    }
}

fn map_entries<'n>(
    n: &'n Node,
    field: &str,
    p: &mut Vec<Problem>,
) -> &'n [(String, crate::core::plan::Pos, Node)] {
    match &n.value {
        Value::Map(entries) => entries,
        Value::Null => &[],
        _ => {
            p.push(yaml::wrong_type(n, field, "a mapping"));
            &[]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::plan::render_problems;

    fn problems(src: &str) -> String {
        render_problems(CONFIG_PATH, &parse_config(src).1)
    }

    #[test]
    fn a_missing_file_means_the_defaults() {
        let c = load_config(None).unwrap();
        assert_eq!(c, RepoConfig::default());
        assert_eq!(c.runner, RunnerKind::Local);
        assert_eq!(
            (
                c.limits.max_debug_attempts,
                c.limits.max_branch_depth,
                c.limits.max_concurrent_branches
            ),
            (3, 2, 5)
        );
        assert_eq!(c.role_for("test_failure"), "coder");
        assert_eq!(c.role_for("spec_mismatch"), "architect");
        assert_eq!(c.role_for("flaky_test"), "tester");
        assert_eq!(c.role_for("unknown"), "debugger");
        assert_eq!(c.required_permission("retry"), Permission::Write);
        assert_eq!(c.required_permission("ship"), Permission::Maintain);
        assert_eq!(c.required_permission("override"), Permission::Maintain);
        assert_eq!(c.required_permission("help"), Permission::Read);
        assert_eq!(
            (c.commands.prefix.as_str(), c.commands.short_form),
            ("/taskgate", true)
        );
        assert_eq!(load_config(Some("")).unwrap(), RepoConfig::default());
    }

    #[test]
    fn a_full_config_is_read() {
        let src = r#"
runner: actions
roles:
  coder: { assignees: [alice], labels: [agent:coder], agent_workflow: coder-agent.yml }
  qa: { assignees: [bob] }
routing: { flaky_test: qa }
limits: { max_debug_attempts: 5, max_concurrent_runs: 8 }
review: human
auto_fix: false
merge_method: rebase
ship_label: release
deploy_workflow: deploy.yml
validation_workflow: smoke.yml
commands: { prefix: /tg, short_form: false, permissions: { ship: admin, retry: triage } }
"#;
        let c = load_config(Some(src)).unwrap();
        assert_eq!(c.runner, RunnerKind::Actions);
        assert!(!c.runner_network, "no network unless asked");
        let c = load_config(Some("runner_network: true\n")).unwrap();
        assert!(c.runner_network);
        let c = load_config(Some(src)).unwrap();
        assert_eq!(
            c.roles["coder"].agent_workflow.as_deref(),
            Some("coder-agent.yml")
        );
        assert!(c.roles.contains_key("debugger"), "default roles stay");
        assert_eq!(c.role_for("flaky_test"), "qa");
        assert_eq!(
            c.role_for("timeout"),
            "tester",
            "other routes keep their default"
        );
        assert_eq!(
            (
                c.limits.max_debug_attempts,
                c.limits.max_concurrent_runs,
                c.limits.max_branch_depth
            ),
            (5, 8, 2)
        );
        assert_eq!(
            (c.review, c.auto_fix, c.merge_method),
            (ReviewMode::Human, false, MergeMethod::Rebase)
        );
        assert_eq!(c.ship_label, "release");
        assert_eq!(c.deploy_workflow.as_deref(), Some("deploy.yml"));
        assert_eq!(c.validation_workflow.as_deref(), Some("smoke.yml"));
        assert_eq!(
            (c.commands.prefix.as_str(), c.commands.short_form),
            ("/tg", false)
        );
        assert_eq!(c.required_permission("ship"), Permission::Admin);
        assert_eq!(c.required_permission("retry"), Permission::Triage);
    }

    #[test]
    fn story_settings_override_limits() {
        let c = RepoConfig::default();
        let s = Settings {
            max_debug_attempts: Some(1),
            max_depth: Some(4),
            ..Settings::default()
        };
        let l = c.effective_limits(&s);
        assert_eq!(
            (l.max_debug_attempts, l.max_plan_depth, l.max_branch_depth),
            (1, 4, 2)
        );
    }

    #[test]
    fn every_config_problem_is_reported_with_its_place() {
        let src = "runer: actions\nrouting:\n  test_failure: codr\n  timout: tester\nlimits: { max_debug_attempts: 0, max_branchdepth: 2 }\nreview: manual\ncommands:\n  permissions: { shipp: admin, retry: owner }\n";
        insta::assert_snapshot!(problems(src), @r"
        .github/taskgate.yml:1:1: error: unknown key `runer` in the config (did you mean `runner`?)
        .github/taskgate.yml:3:17: error: `routing.test_failure` names unknown role `codr` (did you mean `coder`?); known roles: architect, coder, debugger, tester
        .github/taskgate.yml:4:3: error: unknown failure kind `timout` (did you mean `timeout`?)
        .github/taskgate.yml:5:31: error: `max_debug_attempts` is 0, outside the allowed range 1..=10
        .github/taskgate.yml:5:34: error: unknown key `max_branchdepth` in limits (did you mean `max_branch_depth`?)
        .github/taskgate.yml:6:9: error: `review: manual` is not valid; expected one of: auto, human
        .github/taskgate.yml:8:18: error: unknown command `shipp` (did you mean `ship`?)
        .github/taskgate.yml:8:39: error: `permissions.retry: owner` is not valid; expected one of: read, triage, write, maintain, admin
        ");
        assert!(load_config(Some(src)).is_err());
    }

    #[test]
    fn syntax_errors_in_config() {
        insta::assert_snapshot!(problems("runner: [local\n"), @r"
        .github/taskgate.yml:2:1: error: YAML syntax error: while parsing a flow sequence, expected ',' or ']'
        ");
    }

    #[test]
    fn flaky_quarantine_keys_are_read_and_checked() {
        let c = load_config(Some("flaky: { quarantine_after: 5, quarantine_days: 7 }\n")).unwrap();
        assert_eq!(
            c.flaky,
            FlakyConfig {
                quarantine_after: 5,
                quarantine_days: 7,
                ..FlakyConfig::default()
            }
        );
        let globs = RepoConfig::default().flaky.unrelated_globs();
        assert!(globs.is_match("README.md") && globs.is_match("docs/guide/x.txt"));
        assert!(!globs.is_match("src/app.py") && !globs.is_match("tests/test_x.py"));
        let own = load_config(Some("flaky: { unrelated_paths: ['notes/**'] }\n")).unwrap();
        assert_eq!(
            own.flaky.unrelated_paths,
            ["notes/**"],
            "the list replaces the default"
        );
        insta::assert_snapshot!(problems("flaky: { unrelated_paths: ['a/[b'] }\n"), @r"
            .github/taskgate.yml:1:28: error: `flaky.unrelated_paths: a/[b` cannot be used: unclosed character class; missing ']'
        ");
        assert_eq!(RepoConfig::default().flaky.quarantine_after, 3);
        assert_eq!(RepoConfig::default().flaky.quarantine_days, 14);
        let src = "flaky: { quarantine_after: 0, quarantine_dayz: 7 }\n";
        insta::assert_snapshot!(problems(src), @r"
            .github/taskgate.yml:1:28: error: `quarantine_after` is 0, outside the allowed range 1..=100
            .github/taskgate.yml:1:31: error: unknown key `quarantine_dayz` in flaky (did you mean `quarantine_days`?)
        ");
        assert!(load_config(Some(src)).is_err());
    }
}
