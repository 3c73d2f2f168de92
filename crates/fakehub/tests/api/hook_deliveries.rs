//! The App webhook's delivery log (`GET /app/hook/deliveries`) and
//! redelivery (`POST /app/hook/deliveries/{delivery_id}/attempts`): every
//! `deliver` is logged, failed ones included, and a redelivery goes to the
//! App's configured webhook with the original delivery's guid and payload.
//! Echoes of writes are silenced where the App webhook is set: these tests
//! are about the log of explicit deliveries (echoes: `echoes.rs`).

use std::time::Duration;

use fakehub::FakeGitHub;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::*;

/// A URL nothing listens on.
async fn closed_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/webhook")
}

fn payload(n: u64) -> Value {
    json!({
        "action": "created",
        "comment": {"id": n, "body": format!("comment {n}")},
        "installation": {"id": 7},
        "repository": {"id": 99, "full_name": "acme/widgets"},
    })
}

/// The log once every redelivery asked for has ended (a redelivery is
/// logged when it ends); it holds `n` entries.
async fn log_of(gh: &FakeGitHub, n: usize) -> Vec<Value> {
    gh.redeliveries_settled().await;
    let log = gh.hook_deliveries();
    assert_eq!(log.len(), n, "{log:?}");
    log
}

fn ids(items: &Value) -> Vec<u64> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .collect()
}

fn next_link(r: &Resp) -> Option<String> {
    let link = r.headers.get("link")?.to_str().unwrap();
    let (url, rel) = link.split_once("; ")?;
    assert_eq!(rel, "rel=\"next\"", "{link}");
    Some(url.trim_matches(['<', '>']).to_string())
}

#[tokio::test]
async fn deliveries_are_logged_failed_or_ok_with_githubs_fields() {
    let gh = FakeGitHub::start().await;
    let down = closed_url().await;
    let (status, error) = gh
        .deliver(&down, "s", "issue_comment", "g-1", &payload(1))
        .await;
    assert_eq!(status, 0, "{error}");
    assert!(!error.is_empty());
    let (ok_url, mut seen) = receiver(202).await;
    let (status, body) = gh
        .deliver(&ok_url, "s", "ping", "g-2", &json!({"zen": "x"}))
        .await;
    assert_eq!((status, body.as_str()), (202, "accepted"));
    assert!(seen.recv().await.is_some());
    let (bad_url, _bad) = receiver(503).await;
    assert_eq!(
        gh.deliver(&bad_url, "s", "issues", "g-3", &payload(3))
            .await
            .0,
        503
    );

    let log = gh.hook_deliveries();
    let [bad, ok, failed] = &log[..] else {
        panic!("three entries, newest first: {log:?}")
    };
    assert!(bad["id"].as_u64() > ok["id"].as_u64() && ok["id"].as_u64() > failed["id"].as_u64());
    assert_eq!(failed["status_code"], 0);
    assert_eq!(failed["status"], "failed to connect to host");
    assert_eq!(
        (&failed["guid"], &failed["event"], &failed["action"]),
        (&json!("g-1"), &json!("issue_comment"), &json!("created"))
    );
    assert_eq!(
        (&failed["installation_id"], &failed["repository_id"]),
        (&json!(7), &json!(99))
    );
    assert_eq!(failed["redelivery"], false);
    assert_eq!(
        (&ok["status"], &ok["status_code"]),
        (&json!("OK"), &json!(202))
    );
    assert_eq!(
        (&ok["action"], &ok["installation_id"], &ok["repository_id"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(bad["status"], "Invalid HTTP Response: 503");
    let detail = gh.hook_delivery(failed["id"].as_u64().unwrap()).unwrap();
    assert_eq!(detail["url"], down);
    assert_eq!(detail["request"]["payload"], payload(1));

    // The REST list shows the same entries, with exactly GitHub's fields.
    let r = app_client(&gh).get("/app/hook/deliveries").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, Value::Array(log.clone()));
    assert!(r.headers.get("link").is_none());
    let mut keys: Vec<&str> = failed
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "action",
            "delivered_at",
            "duration",
            "event",
            "guid",
            "id",
            "installation_id",
            "redelivery",
            "repository_id",
            "status",
            "status_code",
            "throttled_at"
        ]
    );
    assert!(chrono::DateTime::parse_from_rfc3339(failed["delivered_at"].as_str().unwrap()).is_ok());
    assert!(failed["duration"].as_f64().unwrap() >= 0.0);
    assert_eq!(failed["throttled_at"], Value::Null);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn the_list_is_newest_first_paged_by_cursor_and_filtered_by_redelivery() {
    let gh = FakeGitHub::start().await;
    let down = closed_url().await;
    for n in 1..=4 {
        let guid = format!("g-{n}");
        gh.deliver(&down, "s", "issue_comment", &guid, &payload(n))
            .await;
    }
    let (url, mut seen) = receiver(202).await;
    gh.set_app_webhook(&url, "s");
    gh.silence_echoes();
    let oldest = gh.hook_deliveries().last().unwrap()["id"].as_u64().unwrap();
    let app = app_client(&gh);
    let r = app
        .call(
            "POST",
            &format!("/app/hook/deliveries/{oldest}/attempts"),
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    seen.recv().await.unwrap();
    let all = log_of(&gh, 5).await;
    let all_ids: Vec<u64> = all.iter().map(|d| d["id"].as_u64().unwrap()).collect();
    let mut sorted = all_ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(all_ids, sorted, "newest first");
    assert_eq!(all[0]["redelivery"], true);

    // Pages of two, following the Link header to the end.
    let r = app.get("/app/hook/deliveries?per_page=2").await;
    assert_eq!(ids(&r.body), all_ids[..2]);
    assert_eq!(
        r.headers["link"].to_str().unwrap(),
        format!(
            "<{}/app/hook/deliveries?per_page=2&cursor={}>; rel=\"next\"",
            gh.url(),
            all_ids[1]
        )
    );
    let mut paged = ids(&r.body);
    let mut next = next_link(&r);
    while let Some(url) = next {
        let path = url.strip_prefix(&gh.url()).unwrap().to_string();
        let r = app.get(&path).await;
        assert_eq!(r.status, 200, "{}", r.body);
        paged.extend(ids(&r.body));
        next = next_link(&r);
    }
    assert_eq!(paged, all_ids);

    // Filters, kept in the next link.
    let r = app.get("/app/hook/deliveries?redelivery=true").await;
    assert_eq!(ids(&r.body), [all_ids[0]]);
    let r = app
        .get("/app/hook/deliveries?redelivery=false&per_page=3")
        .await;
    assert_eq!(ids(&r.body), all_ids[1..4]);
    assert_eq!(
        next_link(&r).unwrap(),
        format!(
            "{}/app/hook/deliveries?redelivery=false&per_page=3&cursor={}",
            gh.url(),
            all_ids[3]
        )
    );
    let r = app.get("/app/hook/deliveries?status=success").await;
    assert_eq!(ids(&r.body), [all_ids[0]]);
    gh.assert_contract_kept();

    // A cursor is the fake's own: anything else is refused.
    for bad in ["cursor=abc", "redelivery=maybe"] {
        let r = app.get(&format!("/app/hook/deliveries?{bad}")).await;
        assert_eq!(r.status, 422, "{bad}");
        assert_eq!(r.body["message"], "Validation Failed");
    }
}

#[tokio::test]
async fn a_failed_delivery_is_redelivered_to_the_configured_webhook() {
    let gh = FakeGitHub::start().await;
    let down = closed_url().await;
    let sent = payload(5);
    assert_eq!(
        gh.deliver(&down, "old-secret", "issue_comment", "g-5", &sent)
            .await
            .0,
        0
    );
    let failed = gh.hook_deliveries()[0]["id"].as_u64().unwrap();
    let (url, mut seen) = receiver(202).await;
    gh.set_app_webhook(&url, "new-secret");
    gh.silence_echoes();

    let r = app_client(&gh)
        .call(
            "POST",
            &format!("/app/hook/deliveries/{failed}/attempts"),
            None,
        )
        .await;
    assert_eq!((r.status, r.body.clone()), (202, json!({})));
    assert_eq!(gh.redeliveries(), [failed]);

    let (headers, raw) = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .expect("redelivered in time")
        .unwrap();
    assert_eq!(headers["x-github-delivery"], "g-5");
    assert_eq!(headers["x-github-event"], "issue_comment");
    let mut mac = Hmac::<Sha256>::new_from_slice(b"new-secret").unwrap();
    mac.update(&raw);
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(headers["x-hub-signature-256"].to_str().unwrap(), expected);
    assert_eq!(serde_json::from_slice::<Value>(&raw).unwrap(), sent);

    let log = log_of(&gh, 2).await;
    let again = &log[0];
    assert_eq!(
        (
            &again["redelivery"],
            &again["guid"],
            &again["status"],
            &again["status_code"]
        ),
        (&json!(true), &json!("g-5"), &json!("OK"), &json!(202))
    );
    assert!(again["id"].as_u64().unwrap() > failed);
    assert_eq!(
        log[1]["status_code"], 0,
        "the failed attempt stays as it was"
    );
    let detail = gh.hook_delivery(again["id"].as_u64().unwrap()).unwrap();
    assert_eq!(detail["url"], url);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn redelivery_is_refused_as_github_refuses_it() {
    let gh = FakeGitHub::start().await;
    let down = closed_url().await;
    gh.deliver(&down, "s", "issue_comment", "g-1", &payload(1))
        .await;
    let id = gh.hook_deliveries()[0]["id"].as_u64().unwrap();
    let app = app_client(&gh);
    let attempt = |id: String| format!("/app/hook/deliveries/{id}/attempts");

    // Nothing configured to redeliver to.
    let r = app.call("POST", &attempt(id.to_string()), None).await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (422, json!("Webhook is not configured"))
    );
    gh.set_app_webhook(&down, "s");
    gh.silence_echoes();

    // Unknown ids.
    for unknown in [(id + 1000).to_string(), "abc".to_string()] {
        let r = app.call("POST", &attempt(unknown), None).await;
        assert_eq!(
            (r.status, r.body["message"].clone()),
            (404, json!("Not Found"))
        );
    }

    // No app JWT: neither route answers.
    let anonymous = Client {
        http: http(),
        base: gh.url(),
        auth: String::new(),
    };
    assert_eq!(anonymous.get("/app/hook/deliveries").await.status, 401);
    assert_eq!(
        anonymous
            .call("POST", &attempt(id.to_string()), None)
            .await
            .status,
        401
    );

    // Older than three days.
    gh.age_hook_delivery(id, Duration::from_secs(3 * 24 * 3600 + 60));
    let r = app.call("POST", &attempt(id.to_string()), None).await;
    assert_eq!(r.status, 422);
    assert!(
        r.body["message"].as_str().unwrap().contains("3 days"),
        "{}",
        r.body
    );
    // Every request was refused, so none queued a redelivery (a redelivery
    // is queued only with its acceptance): nothing is on its way.
    assert!(gh.redeliveries().is_empty());
    gh.redeliveries_settled().await;
    assert_eq!(gh.hook_deliveries().len(), 1, "nothing was resent");
}
