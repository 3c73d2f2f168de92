//! Which role a branch todo goes to.

use crate::classify::FailureKind;
use crate::config::RepoConfig;
use crate::plan::Task;

/// The role that deep todos go to unless routing says otherwise (SPEC §4).
pub const DEEP_ROLE: &str = "debugger";

/// The role a todo for a failure of `kind` at `depth` goes to:
///
/// 1. the task's `failure_routing` for `kind`, at any depth;
/// 2. at depth 1, the repository's routing ([`RepoConfig::role_for`]);
/// 3. deeper, `debugger` — unless the repository routes `kind` somewhere
///    other than SPEC §4's default table, which counts as configured and is
///    kept at every depth. (The config merges the file over the defaults,
///    so a route the file spells out to its default role cannot be told
///    apart from no route, and goes to `debugger` when deep.)
pub fn route(kind: FailureKind, task: &Task, config: &RepoConfig, depth: u32) -> String {
    let kind = kind.as_str();
    if let Some(role) = task.failure_routing.get(kind) {
        return role.value.clone();
    }
    let configured = config.role_for(kind);
    if depth <= 1 || configured != RepoConfig::default().role_for(kind) {
        configured.to_owned()
    } else {
        DEEP_ROLE.to_owned()
    }
}
