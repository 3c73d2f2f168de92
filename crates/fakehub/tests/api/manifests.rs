//! The App-manifest flow: the github.com web form, then the unauthenticated
//! REST conversion of its one-time code.

use fakehub::FakeGitHub;
use serde_json::{json, Value};

use crate::*;

fn manifest() -> Value {
    json!({
        "name": "taskgate for acme",
        "url": "https://example.com/taskgate",
        "hook_attributes": {"url": "https://hooks.example.com/webhook"},
        "redirect_url": "http://127.0.0.1:9999/setup/callback",
        "public": false,
        "default_permissions": {"issues": "write", "metadata": "read"},
        "default_events": ["issues", "issue_comment"],
    })
}

/// Posts the form as a browser would; `path` may carry `?state=...`.
async fn post_form(gh: &FakeGitHub, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
    http()
        .post(format!("{}{path}", gh.url()))
        .form(fields)
        .send()
        .await
        .expect("request sent")
}

async fn post_manifest(gh: &FakeGitHub, path: &str, manifest: &Value) -> reqwest::Response {
    post_form(gh, path, &[("manifest", &manifest.to_string())]).await
}

/// `POST /app-manifests/{code}/conversions`, with no credentials at all.
async fn convert(gh: &FakeGitHub, code: &str) -> (u16, Value) {
    let r = http()
        .post(format!("{}/app-manifests/{code}/conversions", gh.url()))
        .header("accept", "application/vnd.github+json")
        .send()
        .await
        .expect("request sent");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The `code` and `state` of a redirect's `Location`.
fn code_and_state(location: &str) -> (String, Option<String>) {
    let query = location.split_once('?').expect("a query").1;
    let get = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    (get("code").expect("a code"), get("state"))
}

#[tokio::test]
async fn the_form_redirects_with_a_code_that_converts_to_the_fakes_own_app() {
    let gh = FakeGitHub::start().await;
    let r = post_manifest(&gh, "/settings/apps/new?state=s%201", &manifest()).await;
    assert_eq!(r.status().as_u16(), 302);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with("http://127.0.0.1:9999/setup/callback?code="),
        "{location}"
    );
    let (code, state) = code_and_state(&location);
    assert_eq!(code.len(), 20);
    assert!(code
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(state.as_deref(), Some("s%201"));
    assert_eq!(gh.app_manifests(), vec![manifest()]);

    let (status, app) = convert(&gh, &code).await;
    assert_eq!(status, 201, "{app}");
    assert_eq!(app["id"], json!(gh.app_id()));
    assert_eq!(app["slug"], gh.app_slug());
    assert_eq!(app["pem"], FakeGitHub::private_key_pem());
    assert_eq!(app["name"], "taskgate for acme");
    assert_eq!(app["external_url"], "https://example.com/taskgate");
    assert_eq!(app["permissions"], manifest()["default_permissions"]);
    assert_eq!(app["events"], manifest()["default_events"]);
    assert_eq!(app["owner"]["login"], "taskgate-org");
    for field in ["client_id", "client_secret", "node_id", "html_url"] {
        assert!(
            app[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field}"
        );
    }
    let secret = gh
        .converted_webhook_secret()
        .expect("a conversion happened");
    assert!(!secret.is_empty());
    assert_eq!(app["webhook_secret"], secret);
    gh.assert_contract_kept();

    // The answered key is the fake's: a JWT made with it reads the App,
    // which now describes what the manifest registered.
    let r = app_client(&gh).get("/app").await;
    assert_eq!(
        (r.status, r.body["name"].clone()),
        (200, app["name"].clone())
    );
}

#[tokio::test]
async fn codes_are_single_use_and_unknown_codes_are_404() {
    let gh = FakeGitHub::start().await;
    let code = gh.manifest_code(manifest());
    assert_eq!(convert(&gh, &code).await.0, 201);
    let (status, body) = convert(&gh, &code).await;
    assert_eq!((status, body["message"].clone()), (404, json!("Not Found")));
    assert_eq!(convert(&gh, "0123456789abcdef0123").await.0, 404);
    gh.assert_contract_kept();
    assert!(
        gh.app_manifests().is_empty(),
        "manifest_code skips the form"
    );
}

#[tokio::test]
async fn an_org_form_makes_the_org_the_owner_and_state_is_optional() {
    let gh = FakeGitHub::start().await;
    let mut m = manifest();
    m["redirect_url"] = json!("https://example.com/cb?from=setup");
    let r = post_manifest(&gh, "/organizations/acme/settings/apps/new", &m).await;
    assert_eq!(r.status().as_u16(), 302);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with("https://example.com/cb?from=setup&code="),
        "{location}"
    );
    assert!(!location.contains("state="), "{location}");
    let (code, _) = code_and_state(&location);
    let (status, app) = convert(&gh, &code).await;
    assert_eq!(status, 201, "{app}");
    assert_eq!(app["owner"]["login"], "acme");
    assert_eq!(app["owner"]["type"], "Organization");
}

#[tokio::test]
async fn bad_manifests_are_422_and_violations() {
    let gh = FakeGitHub::start().await;
    let without = |field: &str| {
        let mut m = manifest();
        m.as_object_mut().unwrap().remove(field);
        m.to_string()
    };
    let with = |pointer: &str, v: Value| {
        let mut m = manifest();
        *m.pointer_mut(pointer).unwrap() = v;
        m.to_string()
    };
    let cases = [
        ("not JSON", "{\"url\": ".to_string()),
        ("not an object", "[1, 2]".to_string()),
        ("no url", without("url")),
        (
            "hook url not http(s)",
            with("/hook_attributes/url", json!("ftp://hooks.example.com")),
        ),
        ("no redirect_url", without("redirect_url")),
        (
            "permission execute",
            with("/default_permissions/issues", json!("execute")),
        ),
        ("35-character name", with("/name", json!("x".repeat(35)))),
        ("events not strings", with("/default_events", json!([1]))),
        ("public not a bool", with("/public", json!("no"))),
    ];
    for (i, (case, text)) in cases.iter().enumerate() {
        let r = post_form(&gh, "/settings/apps/new?state=x", &[("manifest", text)]).await;
        assert_eq!(r.status().as_u16(), 422, "{case}");
        assert!(r.headers().get("location").is_none(), "{case}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], "422", "{case}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{case}"
        );
        assert_eq!(gh.contract_violations().len(), i + 1, "{case}");
    }
    let r = post_form(&gh, "/settings/apps/new", &[("name", "no manifest")]).await;
    assert_eq!(r.status().as_u16(), 422);
    assert_eq!(gh.contract_violations().len(), cases.len() + 1);
    assert!(gh.app_manifests().is_empty());

    // A 34-character name is GitHub's limit, not over it.
    let ok = with("/name", json!("x".repeat(34)));
    let r = post_form(&gh, "/settings/apps/new", &[("manifest", &ok)]).await;
    assert_eq!(r.status().as_u16(), 302);
}

#[tokio::test]
async fn other_methods_on_the_form_fall_through_to_the_rest_pipeline() {
    let gh = FakeGitHub::start().await;
    let r = http()
        .get(format!("{}/settings/apps/new", gh.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(gh.contract_violations().len(), 1);
}
