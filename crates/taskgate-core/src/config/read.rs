//! Reading `.github/taskgate.yml` into a [`RepoConfig`]: the keys each
//! mapping may hold, each value checked against its type and range, and
//! every problem listed with its position.
//!
//! Owns: [`load_config`], [`parse_config`] and the `read_*` helpers of
//! each section. Must not: hold defaults (the types in `core::config` do)
//! or do IO: the text comes in, the config and the problems go out.

use std::collections::BTreeMap;

use super::*;
use crate::plan::yaml::{self, as_str, Fields, Node, Value};
use crate::plan::{Problem, ProblemKind};
use crate::schema::config as schema;

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
    let Some(f) = Fields::of(&root, "the config", &schema::CONFIG, &mut problems) else {
        return (c, problems);
    };
    let p = &mut problems;
    if let Some(r) = f.choice_of("runner", p) {
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
        .and_then(|n| Fields::of(n, "limits", &schema::LIMITS, p))
    {
        read_limits(&lf, &mut c.limits, p);
    }
    if let Some(r) = f.choice_of("review", p) {
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
    if let Some(m) = f.choice_of("merge_method", p) {
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
        .and_then(|n| Fields::of(n, "commands", &schema::COMMANDS, p))
    {
        read_commands(&cf, &mut c.commands, p);
    }
    if let Some(n) = f.get("freeze_windows") {
        c.freeze_windows = crate::freeze::read_freeze_windows(n, p);
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
    read_train(&f, &mut c, p);
    if let Some(ff) = f
        .get("flaky")
        .and_then(|n| Fields::of(n, "flaky", &schema::FLAKY, p))
    {
        read_flaky(&ff, &mut c.flaky, p);
    }
    problems.sort_by_key(|p| p.pos.map(|p| (p.line, p.column)).unwrap_or((usize::MAX, 0)));
    yaml::Pointers::of(&root).attach(&mut problems);
    (c, problems)
}

/// The ship train's keys: `ship_batch_max`, `ship_parallel`,
/// `ship_batch_wait`, `ship_bisect`, `ship_train`.
fn read_train(f: &Fields, c: &mut RepoConfig, p: &mut Vec<Problem>) {
    if let Some(v) = f.bounded("ship_batch_max", p) {
        c.ship_batch_max = v as u32;
    }
    if let Some(v) = f.bounded("ship_parallel", p) {
        c.ship_parallel = v as u32;
    }
    if let Some(v) = f.bounded("ship_batch_wait", p) {
        c.ship_batch_wait = v as u32;
    }
    if let Some(how) = f.choice_of("ship_bisect", p) {
        c.ship_bisect = match how.as_str() {
            "halves" => ShipBisect::Halves,
            _ => ShipBisect::Attribution,
        };
    }
    if let Some(b) = f.bool("ship_train", p) {
        c.ship_train = b;
    }
}

/// `roles.<name>`, merged over the defaults; an empty entry is a role
/// with nothing set.
fn read_roles(n: &Node, roles: &mut BTreeMap<String, Role>, p: &mut Vec<Problem>) {
    for (name, _, node) in map_entries(n, "roles", p) {
        if let Some(rf) = Fields::of(node, &format!("role `{name}`"), &schema::ROLE, p) {
            let (agent, ready) = agent::read_agent(name, &rf, p);
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
                agent,
                ready,
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
    if let Some(v) = lf.bounded("max_debug_attempts", p) {
        l.max_debug_attempts = v as u32
    }
    if let Some(v) = lf.bounded("max_branch_depth", p) {
        l.max_branch_depth = v as u32
    }
    if let Some(v) = lf.bounded("branch_timeout_seconds", p) {
        l.branch_timeout_seconds = v
    }
    if let Some(v) = lf.bounded("max_concurrent_branches", p) {
        l.max_concurrent_branches = v as u32
    }
    if let Some(v) = lf.bounded("max_concurrent_runs", p) {
        l.max_concurrent_runs = v as u32
    }
    if let Some(v) = lf.bounded("max_plan_depth", p) {
        l.max_plan_depth = v as u32
    }
}

/// `flaky.*`, each within its range (see the table in the header).
fn read_flaky(ff: &Fields, flaky: &mut FlakyConfig, p: &mut Vec<Problem>) {
    if let Some(v) = ff.bounded("quarantine_after", p) {
        flaky.quarantine_after = v as u32;
    }
    if let Some(v) = ff.bounded("quarantine_days", p) {
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
) -> &'n [(String, crate::plan::Pos, Node)] {
    match &n.value {
        Value::Map(entries) => entries,
        Value::Null => &[],
        _ => {
            p.push(yaml::wrong_type(n, field, "a mapping"));
            &[]
        }
    }
}
