use fakehub::FakeGitHub;
use serde_json::json;

use crate::*;

#[tokio::test]
async fn valid_jwt_reads_the_app_and_mints_tokens() {
    let gh = FakeGitHub::start().await;
    gh.install(7, "acme/widgets");
    let app = app_client(&gh);
    let r = app.get("/app").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["slug"], "taskgate-test");
    assert_eq!(r.body["id"], 4242);
    for h in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-used",
        "x-ratelimit-resource",
        "x-github-request-id",
    ] {
        assert!(r.headers.contains_key(h), "missing {h}");
    }
    let r = app.get("/repos/acme/widgets/installation").await;
    assert_eq!((r.status, r.body["id"].clone()), (200, json!(7)));
    let r = app
        .post("/app/installations/7/access_tokens", json!({}))
        .await;
    assert_eq!(r.status, 201);
    assert!(r.body["token"].as_str().unwrap().starts_with("ghs_"));
    assert!(chrono::DateTime::parse_from_rfc3339(r.body["expires_at"].as_str().unwrap()).is_ok());
    assert_eq!(r.body["repository_selection"], "selected");
    let r = app
        .post("/app/installations/99/access_tokens", json!({}))
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (404, json!("Not Found"))
    );
}

#[tokio::test]
async fn bad_jwts_are_401_with_githubs_wording() {
    let gh = FakeGitHub::start().await;
    let id = json!(gh.app_id());
    let cases = [
        (
            jwt_with(OTHER_KEY, id.clone(), -60, 540),
            "A JSON web token could not be decoded",
        ),
        (
            jwt_with(FakeGitHub::private_key_pem(), id.clone(), -60, 900),
            "'Expiration time' claim ('exp') is too far in the future",
        ),
        (
            jwt_with(FakeGitHub::private_key_pem(), json!(1), -60, 540),
            "Integration not found",
        ),
        (
            "not-a-jwt".to_string(),
            "A JSON web token could not be decoded",
        ),
    ];
    for (token, message) in cases {
        let c = Client {
            http: http(),
            base: gh.url(),
            auth: format!("Bearer {token}"),
        };
        let r = c.get("/app").await;
        assert_eq!(r.status, 401);
        assert_eq!(r.body["message"], message);
        assert_eq!(r.body["documentation_url"], "https://docs.github.com/rest");
    }
    // Numeric iss is accepted too.
    let c = Client {
        http: http(),
        base: gh.url(),
        auth: format!(
            "Bearer {}",
            jwt_with(FakeGitHub::private_key_pem(), id, -60, 540)
        ),
    };
    assert_eq!(c.get("/app").await.status, 200);
}

#[tokio::test]
async fn tokens_are_scoped_to_their_installation_and_expire() {
    let gh = FakeGitHub::start().await;
    gh.install(7, "acme/widgets");
    gh.install(8, "other/thing");
    let c = installation_client(&gh, 7).await;
    assert_eq!(c.get("/repos/acme/widgets").await.status, 200);
    assert_eq!(c.get("/repos/other/thing").await.status, 404);
    let bogus = Client {
        http: http(),
        base: gh.url(),
        auth: "token ghs_nope".into(),
    };
    assert_eq!(
        bogus.get("/repos/acme/widgets").await.body["message"],
        "Bad credentials"
    );
    gh.expire_tokens();
    let r = c.get("/repos/acme/widgets").await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (401, json!("Bad credentials"))
    );
    let fresh = installation_client(&gh, 7).await;
    assert_eq!(fresh.get("/repos/acme/widgets").await.status, 200);
    let installs: Vec<_> = gh
        .requests()
        .iter()
        .filter_map(|r| r.installation)
        .collect();
    assert!(installs.contains(&7) && !installs.contains(&8));
}

#[tokio::test]
async fn token_ttl_is_reported_in_expires_at() {
    let gh = FakeGitHub::start().await;
    gh.install(7, "acme/widgets");
    gh.set_token_ttl(std::time::Duration::from_secs(120));
    let r = app_client(&gh)
        .post("/app/installations/7/access_tokens", json!({}))
        .await;
    let exp = chrono::DateTime::parse_from_rfc3339(r.body["expires_at"].as_str().unwrap()).unwrap();
    let left = exp.timestamp() - chrono::Utc::now().timestamp();
    assert!((100..=121).contains(&left), "{left}");
}
