//! fakehub driven over HTTP with plain reqwest (and once with octocrab, to
//! prove its responses deserialise into the real client's models).

mod agents;
mod auth;
mod copilot;
mod distinct;
mod echoes;
mod faults;
mod git_backing;
mod git_commits;
mod git_http;
mod git_pulls;
mod graphql;
mod hook_deliveries;
mod installations;
mod issues;
mod limits;
mod manifests;
mod merge_queue;
mod merges;
mod octocrab_client;
mod push_commits;
mod read_lag;
mod review_rules;
mod rules;
mod settings;
mod workflows_permission;

use fakehub::FakeGitHub;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

pub const OTHER_KEY: &str = include_str!("other-key.pem");

/// An app JWT with claims relative to now.
pub fn jwt_with(key_pem: &str, iss: Value, iat_offset: i64, exp_offset: i64) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iat": now + iat_offset, "exp": now + exp_offset, "iss": iss});
    encode(
        &Header::new(Algorithm::RS256),
        &claims,
        &EncodingKey::from_rsa_pem(key_pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

pub fn jwt(gh: &FakeGitHub) -> String {
    jwt_with(
        FakeGitHub::private_key_pem(),
        json!(gh.app_id().to_string()),
        -60,
        540,
    )
}

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub auth: String,
}

pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Client {
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut rb = self
            .http
            .request(m, format!("{}{path}", self.base))
            .header("authorization", &self.auth)
            .header("accept", "application/vnd.github+json");
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let r = rb.send().await.expect("request sent");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        Resp {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }
    pub async fn get(&self, path: &str) -> Resp {
        self.call("GET", path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call("POST", path, Some(body)).await
    }
}

pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub fn app_client(gh: &FakeGitHub) -> Client {
    Client {
        http: http(),
        base: gh.url(),
        auth: format!("Bearer {}", jwt(gh)),
    }
}

/// A client holding a fresh installation token.
pub async fn installation_client(gh: &FakeGitHub, installation: u64) -> Client {
    let r = app_client(gh)
        .post(
            &format!("/app/installations/{installation}/access_tokens"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    Client {
        http: http(),
        base: gh.url(),
        auth: format!("token {}", r.body["token"].as_str().unwrap()),
    }
}

/// The real client, authenticated as the app's `installation`.
pub fn octocrab_for(gh: &FakeGitHub, installation: u64) -> octocrab::Octocrab {
    let key =
        jsonwebtoken::EncodingKey::from_rsa_pem(FakeGitHub::private_key_pem().as_bytes()).unwrap();
    let app = octocrab::Octocrab::builder()
        .base_uri(gh.url())
        .unwrap()
        .app(gh.app_id().into(), key)
        .build()
        .unwrap();
    app.installation(installation.into()).unwrap()
}

/// A fake with `acme/widgets` installed as installation 7, and a client for it.
pub async fn setup() -> (FakeGitHub, fakehub::RepoHandle, Client) {
    let gh = FakeGitHub::start().await;
    let repo = gh.install(7, "acme/widgets");
    let c = installation_client(&gh, 7).await;
    (gh, repo, c)
}

/// What a webhook receiver got: the request's headers and body.
pub type Seen = (axum::http::HeaderMap, Vec<u8>);

/// A webhook receiver answering `status`; reports what it got.
pub async fn receiver(status: u16) -> (String, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let code = axum::http::StatusCode::from_u16(status).unwrap();
    let app = axum::Router::new().route(
        "/webhook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send((headers, body.to_vec()));
                    (code, "accepted")
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/webhook"), rx)
}
