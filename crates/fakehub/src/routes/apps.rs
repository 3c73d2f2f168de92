//! App-level routes (JWT): the app, its installations, installation tokens;
//! plus `GET /repos/{owner}/{repo}` and `GET /installation/repositories`
//! for installations, and the manifest
//! flow's unauthenticated `POST /app-manifests/{code}/conversions` (its web
//! form is `routes::manifests`).

use serde_json::{json, Value};

use super::{inst, jwt, paginate, AuthKind, HResult, Reply, Req, Route};
use crate::auth::Caller;
use crate::render;
use crate::state::{random_hex, RegisteredApp, State, User};

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
    inst("GET", "/installation/repositories", installation_repos),
    Route {
        method: "POST",
        template: "/app-manifests/{code}/conversions",
        auth: AuthKind::Anonymous,
        handler: convert_manifest,
    },
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
    let granted = st.installations[&id]
        .permissions
        .clone()
        .unwrap_or_else(render::permissions);
    Ok(Reply::created(json!({
        "token": token,
        "expires_at": render::ts(expires_at),
        "permissions": granted,
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

/// The repositories the calling installation may touch, paged as GitHub
/// pages them, in an object (`total_count`, `repository_selection`,
/// `repositories`) rather than a bare list.
fn installation_repos(st: &mut State, req: &Req) -> HResult {
    let Some(Caller::Installation(id)) = req.caller else {
        return Err(Reply::not_found());
    };
    let keys = st
        .installations
        .get(&id)
        .map(|i| i.repos.clone())
        .unwrap_or_default();
    let items: Vec<Value> = keys
        .iter()
        .filter_map(|key| st.repos.get(key))
        .map(|r| render::repository(st, &req.base, r))
        .collect();
    let total = items.len();
    let mut reply = paginate(req, items);
    let page = reply.body.take().unwrap_or_else(|| json!([]));
    reply.body = Some(json!({
        "total_count": total,
        "repository_selection": "selected",
        "repositories": page,
    }));
    Ok(reply)
}

fn get_repo(st: &mut State, req: &Req) -> HResult {
    let repo = st.repos.get(&req.repo_key()).ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(render::repository(st, &req.base, repo)))
}

/// Turns a one-time manifest code into the App, once. The App registered is
/// the fake's own (its id, slug and private key), so the credentials answered
/// work against this same fake; name, permissions, events, URL and owner come
/// from the manifest and the form it was posted with.
fn convert_manifest(st: &mut State, req: &Req) -> HResult {
    let code = st
        .manifest_codes
        .get_mut(req.param("code"))
        .filter(|c| !c.converted)
        .ok_or_else(Reply::not_found)?;
    code.converted = true;
    let (manifest, org) = (code.manifest.clone(), code.org.clone());
    if let Some(org) = &org {
        // Posted under /organizations/{org}/...: it is an organisation.
        let id = st.known_user(org).map_or_else(|| st.next_id(), |u| u.id);
        st.users.insert(
            org.to_lowercase(),
            User {
                login: org.clone(),
                id,
                kind: "Organization".into(),
            },
        );
    }
    let text = |k: &str| manifest.get(k).and_then(Value::as_str).map(str::to_string);
    let webhook_secret = random_hex(40);
    st.registered = Some(RegisteredApp {
        name: text("name").unwrap_or_else(|| st.slug.clone()),
        description: text("description"),
        external_url: text("url"),
        owner: org,
        permissions: manifest
            .get("default_permissions")
            .cloned()
            .unwrap_or_else(|| json!({})),
        events: manifest
            .get("default_events")
            .cloned()
            .unwrap_or_else(|| json!([])),
        webhook_secret: webhook_secret.clone(),
    });
    let mut app = render::app(st, &req.base);
    app["client_secret"] = json!(random_hex(40));
    app["webhook_secret"] = json!(webhook_secret);
    app["pem"] = json!(crate::FakeGitHub::private_key_pem());
    Ok(Reply::created(app))
}
