//! `GET /orgs/{org}`: an organisation. Its GitHub `plan` is shown only to
//! an installation granted `organization_plan` (GitHub: "To see information
//! about an organization's GitHub plan, GitHub Apps need the Organization
//! plan permission"); a login that is not an organisation is 404. And a
//! team membership (`crate::teams`), as code owners' approvals need.

use serde_json::json;

use super::{inst, HResult, Reply, Req, Route};
use crate::auth::Caller;
use crate::render::HTML;
use crate::state::State;

pub const ROUTES: &[Route] = &[
    inst("GET", "/orgs/{org}", get_org),
    inst(
        "GET",
        "/orgs/{org}/teams/{team_slug}/memberships/{username}",
        get_team_membership,
    ),
];

/// `GET /orgs/{org}/teams/{team_slug}/memberships/{username}`: the
/// membership's `role` and `state` (`active` or `pending`); 404 when
/// `username` is not in the team (GitHub: "Get team membership for a
/// user").
fn get_team_membership(st: &mut State, req: &Req) -> HResult {
    let (org, slug, login) = (
        req.param("org"),
        req.param("team_slug"),
        req.param("username"),
    );
    let state = st
        .teams
        .state(org, slug, login)
        .ok_or_else(Reply::not_found)?;
    let url = format!("{}/orgs/{org}/teams/{slug}/memberships/{login}", req.base);
    Ok(Reply::ok(
        json!({"url": url, "role": "member", "state": state}),
    ))
}

fn get_org(st: &mut State, req: &Req) -> HResult {
    let org = st
        .known_user(req.param("org"))
        .filter(|u| u.kind == "Organization")
        .ok_or_else(Reply::not_found)?;
    let api = format!("{}/orgs/{}", req.base, org.login);
    let mut v = json!({
        "login": org.login, "id": org.id, "node_id": format!("O_fake{}", org.id), "url": api,
        "repos_url": format!("{api}/repos"), "events_url": format!("{api}/events"),
        "hooks_url": format!("{api}/hooks"), "issues_url": format!("{api}/issues"),
        "members_url": format!("{api}/members{{/member}}"),
        "public_members_url": format!("{api}/public_members{{/member}}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", org.id),
        "description": null, "has_organization_projects": true, "has_repository_projects": true,
        "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
        "html_url": format!("{HTML}/{}", org.login), "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-01T00:00:00Z", "type": "Organization", "archived_at": null,
    });
    let Some(Caller::Installation(inst)) = req.caller else {
        return Err(Reply::not_found());
    };
    let may_see_plan = st
        .installations
        .get(&inst)
        .and_then(|i| i.permissions.as_ref())
        .is_some_and(|p| p.get("organization_plan").is_some());
    if may_see_plan {
        let plan = st.plans.get(&org.login.to_lowercase()).cloned();
        v["plan"] = json!({"name": plan.unwrap_or_else(|| "free".into()), "space": 976_562_499, "private_repos": 9999});
    }
    Ok(Reply::ok(v))
}
