//! App-level routes (JWT): the app, its installations, installation tokens;
//! plus `GET /repos/{owner}/{repo}` for installations.

use serde_json::json;

use super::{inst, AuthKind, HResult, Reply, Req, Route};
use crate::render;
use crate::state::State;

const fn jwt(method: &'static str, template: &'static str, handler: super::Handler) -> Route {
    Route {
        method,
        template,
        auth: AuthKind::Jwt,
        handler,
    }
}

pub const ROUTES: &[Route] = &[
    jwt("GET", "/app", get_app),
    jwt(
        "GET",
        "/app/installations/{installation_id}",
        get_installation,
    ),
    jwt(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_token,
    ),
    jwt(
        "GET",
        "/repos/{owner}/{repo}/installation",
        repo_installation,
    ),
    inst("GET", "/repos/{owner}/{repo}", get_repo),
];

fn get_app(st: &mut State, req: &Req) -> HResult {
    Ok(Reply::ok(render::app(st, &req.base)))
}

fn get_installation(st: &mut State, req: &Req) -> HResult {
    let id = req.num("installation_id")?;
    if !st.installations.contains_key(&id) {
        return Err(Reply::not_found());
    }
    Ok(Reply::ok(render::installation(st, &req.base, id)))
}

fn create_token(st: &mut State, req: &Req) -> HResult {
    let id = req.num("installation_id")?;
    if !st.installations.contains_key(&id) {
        return Err(Reply::not_found());
    }
    let (token, expires_at) = crate::auth::mint_token(st, id);
    Ok(Reply::created(json!({
        "token": token,
        "expires_at": render::ts(expires_at),
        "permissions": render::permissions(),
        "repository_selection": "selected",
    })))
}

fn repo_installation(st: &mut State, req: &Req) -> HResult {
    let key = req.repo_key();
    let id = st
        .installations
        .values()
        .find(|i| i.repos.contains(&key))
        .map(|i| i.id)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(render::installation(st, &req.base, id)))
}

fn get_repo(st: &mut State, req: &Req) -> HResult {
    let repo = st.repos.get(&req.repo_key()).ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(render::repository(st, &req.base, repo)))
}
