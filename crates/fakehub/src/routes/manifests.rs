//! The web half of GitHub's "register a GitHub App from a manifest" flow:
//! the form a browser posts to github.com (`POST /settings/apps/new` and
//! `POST /organizations/{org}/settings/apps/new`, `?state=` optional, an
//! `application/x-www-form-urlencoded` body with a `manifest` field).
//!
//! These are github.com web pages, not REST: no token, no JSON body, no
//! OpenAPI operation, no rate-limit headers, no injected faults. So they are
//! their own axum routes, outside the REST pipeline of `routes::serve`. The
//! manifest is validated as GitHub would (a problem is answered 422 in
//! GitHub's error shape *and* recorded as a contract violation); a valid one
//! gets a one-time code and a `302` back to its `redirect_url`. The REST half,
//! `POST /app-manifests/{code}/conversions`, lives in `routes::apps`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State as AxState};
use axum::http::{Response, StatusCode, Uri};
use serde_json::Value;

use super::{parse_query, percent_decode, Reply};
use crate::state::{random_hex, ManifestCode, State};
use crate::{RecordedRequest, Shared};

/// The route templates, as recorded in [`crate::FakeGitHub::requests`].
pub const USER_FORM: &str = "/settings/apps/new";
pub const ORG_FORM: &str = "/organizations/{org}/settings/apps/new";

/// GitHub's limit on an App's name.
const MAX_NAME: usize = 34;

/// `POST /settings/apps/new`: an App owned by the signed-in user.
pub(crate) async fn user_form(
    AxState(shared): AxState<Arc<Shared>>,
    uri: Uri,
    body: Bytes,
) -> Response<Body> {
    form(&shared, None, &uri, &body)
}

/// `POST /organizations/{org}/settings/apps/new`: an App owned by `org`.
pub(crate) async fn org_form(
    AxState(shared): AxState<Arc<Shared>>,
    Path(org): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Response<Body> {
    form(&shared, Some(org), &uri, &body)
}

fn form(shared: &Shared, org: Option<String>, uri: &Uri, body: &[u8]) -> Response<Body> {
    let template = if org.is_some() { ORG_FORM } else { USER_FORM };
    let state = parse_query(uri.query()).remove("state");
    let mut st = shared.lock();
    let (status, recorded, response) = match checked_manifest(body) {
        Err(problem) => {
            let msg = format!("POST {template}: {problem}");
            tracing::warn!("contract violation: {msg}");
            st.violations.push(msg);
            let reply = Reply::unprocessable(&format!("Invalid manifest: {problem}"));
            let json = serde_json::to_vec(&reply.body).expect("JSON");
            let response = Response::builder()
                .status(StatusCode::UNPROCESSABLE_ENTITY)
                .header("content-type", "application/json; charset=utf-8")
                .body(Body::from(json));
            (422, Value::Null, response)
        }
        Ok(manifest) => {
            let redirect = manifest["redirect_url"].as_str().unwrap_or_default();
            let code = mint_code(&mut st, manifest.clone(), org);
            let mut query = format!("code={code}");
            if let Some(s) = &state {
                query.push_str(&format!("&state={}", percent_encode(s)));
            }
            let location = with_query(redirect, &query);
            st.app_manifests.push(manifest.clone());
            let response = Response::builder()
                .status(StatusCode::FOUND)
                .header("location", location)
                .body(Body::empty());
            (302, manifest, response)
        }
    };
    st.requests.push(RecordedRequest {
        method: "POST".into(),
        path: uri.path().to_string(),
        route: Some(template.into()),
        status,
        body: recorded,
        installation: None,
    });
    response.expect("valid response")
}

/// Remembers `manifest` under a fresh one-time code (20 lowercase hex digits).
pub(crate) fn mint_code(st: &mut State, manifest: Value, org: Option<String>) -> String {
    let code = random_hex(20);
    st.manifest_codes.insert(
        code.clone(),
        ManifestCode {
            manifest,
            org,
            converted: false,
        },
    );
    code
}

/// The form body's `manifest`, parsed and validated; `Err` says what is wrong.
fn checked_manifest(body: &[u8]) -> Result<Value, String> {
    let body = String::from_utf8_lossy(body);
    let field = body
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| percent_decode(k, true) == "manifest")
        .map(|(_, v)| percent_decode(v, true))
        .ok_or("the form has no `manifest` field")?;
    let manifest: Value =
        serde_json::from_str(&field).map_err(|e| format!("`manifest` is not valid JSON ({e})"))?;
    validate(&manifest)?;
    Ok(manifest)
}

/// GitHub's rules for a manifest, as far as a client can get them wrong.
pub(crate) fn validate(m: &Value) -> Result<(), String> {
    let Some(obj) = m.as_object() else {
        return Err("`manifest` must be a JSON object".into());
    };
    let http_url = |v: Option<&Value>, name: &str| match v.and_then(Value::as_str) {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => Ok(()),
        Some(u) => Err(format!("`{name}` must be an http(s) URL, got {u:?}")),
        None => Err(format!("`{name}` is required and must be a string")),
    };
    http_url(obj.get("url"), "url")?;
    match obj.get("hook_attributes") {
        Some(Value::Object(h)) => http_url(h.get("url"), "hook_attributes.url")?,
        Some(_) => return Err("`hook_attributes` must be an object".into()),
        None => return Err("`hook_attributes.url` is required".into()),
    }
    // Required by this flow: the code must come back to the client.
    http_url(obj.get("redirect_url"), "redirect_url")?;
    if let Some(name) = obj.get("name") {
        match name.as_str() {
            Some(n) if n.trim().is_empty() => return Err("`name` must not be empty".into()),
            Some(n) if n.chars().count() > MAX_NAME => {
                return Err(format!(
                    "`name` is too long (maximum is {MAX_NAME} characters): {n:?}"
                ))
            }
            Some(_) => {}
            None => return Err("`name` must be a string".into()),
        }
    }
    if let Some(perms) = obj.get("default_permissions") {
        let Some(perms) = perms.as_object() else {
            return Err("`default_permissions` must be an object".into());
        };
        for (k, v) in perms {
            if !matches!(v.as_str(), Some("read" | "write" | "admin")) {
                return Err(format!(
                    "`default_permissions.{k}` must be \"read\", \"write\" or \"admin\", got {v}"
                ));
            }
        }
    }
    if let Some(events) = obj.get("default_events") {
        let ok = events
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string));
        if !ok {
            return Err("`default_events` must be an array of strings".into());
        }
    }
    if obj.get("public").is_some_and(|p| !p.is_boolean()) {
        return Err("`public` must be a boolean".into());
    }
    Ok(())
}

/// Appends `query` to `url`, with `?` or `&`, before any `#fragment`.
fn with_query(url: &str, query: &str) -> String {
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let sep = if head.contains('?') { '&' } else { '?' };
    let mut out = format!("{head}{sep}{query}");
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// Everything but RFC 3986's unreserved characters is encoded.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_appended_before_the_fragment() {
        assert_eq!(with_query("http://a/cb", "code=1"), "http://a/cb?code=1");
        assert_eq!(
            with_query("http://a/cb?x=1#top", "code=1"),
            "http://a/cb?x=1&code=1#top"
        );
    }

    #[test]
    fn state_round_trips_through_percent_encoding() {
        let s = "a b&c=d/é~";
        assert_eq!(percent_encode(s), "a%20b%26c%3Dd%2F%C3%A9~");
        assert_eq!(percent_decode(&percent_encode(s), true), s);
    }
}
