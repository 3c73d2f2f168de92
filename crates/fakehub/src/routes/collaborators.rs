//! A user's permission on a repository. `permission` is GitHub's legacy
//! field (maintain → write, triage → read); `role_name` is the real role.
//! Unknown users are 404; known users without a role read (public repository).
//! And whether a user can be assigned to its issues: 204, else 404
//! (`State::assignable`).

use serde_json::json;

use super::issues::repo;
use super::{inst, HResult, Reply, Req, Route};
use crate::render;
use crate::state::State;

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        get_permission,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/assignees/{assignee}",
        check_assignee,
    ),
];

fn check_assignee(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    if st.assignable(repo, req.param("assignee")) {
        Ok(Reply::no_content())
    } else {
        Err(Reply::not_found())
    }
}

fn get_permission(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let login = req.param("username");
    let user = st.known_user(login).ok_or_else(Reply::not_found)?;
    let role = st.permission(repo, &user.login);
    let legacy = match role.as_str() {
        "maintain" => "write",
        "triage" => "read",
        other => other,
    };
    let rank = ["none", "read", "triage", "write", "maintain", "admin"]
        .iter()
        .position(|r| *r == role)
        .unwrap_or(0);
    let mut u = render::user(&req.base, &user);
    u["permissions"] = json!({"admin": rank >= 5, "maintain": rank >= 4, "push": rank >= 3, "triage": rank >= 2, "pull": rank >= 1});
    u["role_name"] = json!(role);
    Ok(Reply::ok(
        json!({"permission": legacy, "role_name": role, "user": u}),
    ))
}
