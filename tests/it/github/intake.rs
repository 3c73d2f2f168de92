//! `POST /webhook`: every bad input gets a clear answer and stores nothing.

use serde_json::json;
use taskgate::intake::signature::sign;

use crate::support::{eventually, fixture, TestApp, SECRET};

async fn send(app: &TestApp, headers: &[(&str, &str)], body: Vec<u8>) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(format!("{}/webhook", app.url))
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("the server answers")
}

async fn post(app: &TestApp, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, String) {
    let res = send(app, headers, body).await;
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn signed(app: &TestApp, event: &str, delivery: &str, body: &[u8]) -> (u16, String) {
    let sig = sign(SECRET.as_bytes(), body);
    post(
        app,
        &[
            ("x-github-event", event),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", &sig),
            ("content-type", "application/json"),
        ],
        body.to_vec(),
    )
    .await
}

/// Deliveries recorded, less the webhooks GitHub sent for the writes made
/// (the fake's echoes, each recorded once; a shuffled second copy has the
/// same delivery id, so the store keeps one): what the test's own posts left.
async fn stored(app: &TestApp) -> i64 {
    app.fake.echoes_settled().await;
    let echoed = app
        .fake
        .echo_log()
        .iter()
        .filter(|e| e.status == 202 && !e.redelivery)
        .count() as i64;
    app.store().delivery_count().await.unwrap() - echoed
}

#[tokio::test]
async fn unsigned_or_wrongly_signed_deliveries_are_refused_and_not_stored() {
    let app = TestApp::start().await;
    let body = serde_json::to_vec(&fixture("ping/default.1.json")).unwrap();
    let base = [("x-github-event", "ping"), ("x-github-delivery", "d-1")];

    let (status, text) = post(&app, &base, body.clone()).await;
    assert_eq!(
        (status, text.trim()),
        (401, "missing X-Hub-Signature-256 header")
    );

    let wrong_secret = sign(b"not the secret", &body);
    let (status, _) = post(
        &app,
        &[base[0], base[1], ("x-hub-signature-256", &wrong_secret)],
        body.clone(),
    )
    .await;
    assert_eq!(status, 401);

    let other_body = sign(SECRET.as_bytes(), b"{\"zen\":\"other\"}");
    let (status, _) = post(
        &app,
        &[base[0], base[1], ("x-hub-signature-256", &other_body)],
        body.clone(),
    )
    .await;
    assert_eq!(status, 401);

    // A body cut short in transit no longer matches the signature of the whole.
    let full_sig = sign(SECRET.as_bytes(), &body);
    let truncated = body[..body.len() / 2].to_vec();
    let (status, text) = post(
        &app,
        &[base[0], base[1], ("x-hub-signature-256", &full_sig)],
        truncated,
    )
    .await;
    assert_eq!(status, 401, "{text}");

    assert_eq!(stored(&app).await, 0);
}

#[tokio::test]
async fn bodies_over_githubs_25_mib_cap_get_413() {
    let app = TestApp::start().await;
    let body = vec![b' '; 26 * 1024 * 1024];
    let (status, text) = signed(&app, "ping", "big", &body).await;
    assert_eq!(
        (status, text.trim()),
        (413, "webhook bodies are at most 25 MiB (GitHub's cap)")
    );
    assert_eq!(stored(&app).await, 0);
}

#[tokio::test]
async fn bodies_past_the_memory_budget_get_503_until_room_is_given_back() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start_with(|config| config.webhook_memory_mib = 25).await;
    // A sender that announces 21 MiB and sends 20 of them: the room for
    // what it sent is held while the rest of its body is awaited.
    let mut slow = tokio::net::TcpStream::connect(app.url.trim_start_matches("http://"))
        .await
        .unwrap();
    let head = format!(
        "POST /webhook HTTP/1.1\r\nhost: taskgate\r\ncontent-type: application/json\r\n\
         x-github-event: ping\r\nx-github-delivery: slow\r\ncontent-length: {}\r\n\r\n",
        21 << 20
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&vec![b' '; 20 << 20]).await.unwrap();

    // A 6 MiB body does not fit beside it: it waits, then is told to come
    // back. Asked with a wrong signature until it finds no room: one that
    // comes before the server has read the slow sender's bytes fits, and
    // is refused 401, storing nothing.
    let ping = serde_json::to_vec(&fixture("ping/default.1.json")).unwrap();
    let mut large = ping.clone();
    large.resize(6 << 20, b' ');
    let unsigned = [
        ("x-github-event", "ping"),
        ("x-github-delivery", "probe"),
        ("x-hub-signature-256", "sha256=00"),
    ];
    let refused = std::sync::Mutex::new(None);
    eventually("a 6 MiB body finds no room", || async {
        let res = send(&app, &unsigned, large.clone()).await;
        let status = res.status().as_u16();
        let retry_after = res.headers().get("retry-after").cloned();
        *refused.lock().unwrap() = Some((retry_after, res.text().await.unwrap()));
        status == 503
    })
    .await;
    let (retry_after, text) = refused.into_inner().unwrap().unwrap();
    assert_eq!(retry_after.unwrap(), "1");
    assert!(
        text.starts_with("taskgate is holding 25 MiB of webhook bodies already"),
        "{text}"
    );
    // An ordinary delivery still fits beside it.
    let (status, text) = signed(&app, "ping", "small", &ping).await;
    assert_eq!(status, 202, "{text}");
    assert_eq!(stored(&app).await, 1, "only the small delivery is recorded");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_deliveries_total{event=\"unverified\",outcome=\"busy\"} 1"),
        "{metrics}"
    );

    // The slow sender hangs up; its room comes back, and a 6 MiB delivery
    // is taken.
    drop(slow);
    let sig = sign(SECRET.as_bytes(), &large);
    let headers = [
        ("x-github-event", "ping"),
        ("x-github-delivery", "large"),
        ("x-hub-signature-256", sig.as_str()),
    ];
    let (status, text) = post(&app, &headers, large).await;
    assert_eq!(status, 202, "{text}");
    assert!(app.store().delivery("large").await.unwrap().is_some());
}

#[tokio::test]
async fn twenty_senders_announcing_25_mib_and_sending_nothing_keep_no_delivery_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    // Twenty connections declare GitHub's largest body (500 MiB together,
    // twice the 256 MiB budget) and then fall silent. Each asks to be told
    // when its body is wanted: the `100 Continue` says its request reached
    // the handler, which now waits for the body.
    let mut silent = Vec::new();
    for n in 0..20 {
        let mut stream = tokio::net::TcpStream::connect(app.url.trim_start_matches("http://"))
            .await
            .unwrap();
        let head = format!(
            "POST /webhook HTTP/1.1\r\nhost: taskgate\r\ncontent-type: application/json\r\n\
             x-github-event: ping\r\nx-github-delivery: silent-{n}\r\nexpect: 100-continue\r\n\
             content-length: {}\r\n\r\n",
            taskgate::intake::MAX_BODY_BYTES
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        silent.push(stream);
    }
    for stream in &mut silent {
        let want = b"HTTP/1.1 100 Continue\r\n\r\n";
        let mut got = vec![0; want.len()];
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            stream.read_exact(&mut got),
        );
        read.await.expect("asked for its body").unwrap();
        assert_eq!(got, want, "{}", String::from_utf8_lossy(&got));
    }

    // GitHub's delivery is answered at once, not after the 2 s wait for room.
    let ping = serde_json::to_vec(&fixture("ping/default.1.json")).unwrap();
    let started = std::time::Instant::now();
    let (status, text) = signed(&app, "ping", "real", &ping).await;
    assert_eq!(status, 202, "{text}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "answered after {:?}",
        started.elapsed()
    );
    let metrics = app.metrics().await;
    assert!(!metrics.contains("outcome=\"busy\""), "{metrics}");
    drop(silent);
}

#[tokio::test]
async fn a_request_whose_headers_never_finish_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start_with(|config| {
        config.header_read_timeout = std::time::Duration::from_millis(300)
    })
    .await;
    let mut slow = tokio::net::TcpStream::connect(app.url.trim_start_matches("http://"))
        .await
        .unwrap();
    slow.write_all(b"POST /webhook HTTP/1.1\r\nhost: taskgate\r\n")
        .await
        .unwrap();
    // The server closes the connection (the timeout is 300 ms; the wait
    // here only bounds a failing test).
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        slow.read_to_end(&mut rest),
    )
    .await;
    assert!(closed.is_ok(), "the connection was still open after 10 s");
    // Whole requests are served as before.
    let ping = serde_json::to_vec(&fixture("ping/default.1.json")).unwrap();
    let (status, text) = signed(&app, "ping", "after", &ping).await;
    assert_eq!(status, 202, "{text}");
}

#[tokio::test]
async fn malformed_deliveries_get_400_with_a_reason() {
    let app = TestApp::start().await;
    let sig = sign(SECRET.as_bytes(), b"{}");
    let (status, text) = post(&app, &[("x-hub-signature-256", &sig)], b"{}".to_vec()).await;
    assert_eq!(
        (status, text.trim()),
        (400, "missing X-GitHub-Event or X-GitHub-Delivery header")
    );

    let (status, text) = signed(&app, "issues", "bad-json", b"{\"action\": ").await;
    assert_eq!(status, 400);
    assert!(text.starts_with("body is not valid JSON"), "{text}");

    let wrong_shape =
        serde_json::to_vec(&json!({"action": "created", "issue": {"number": "three"}})).unwrap();
    let (status, text) = signed(&app, "issue_comment", "bad-shape", &wrong_shape).await;
    assert_eq!(status, 400);
    assert!(
        text.contains("`issue_comment` payload does not have the expected shape"),
        "{text}"
    );
    assert!(text.contains("issue"), "names the field: {text}");

    let (status, _) = signed(&app, "star", "bad-json-2", b"not json").await;
    assert_eq!(status, 400);
    assert_eq!(stored(&app).await, 0);
}

#[tokio::test]
async fn unknown_events_are_recorded_as_ignored() {
    let app = TestApp::start().await;
    let (status, text) = signed(&app, "star", "star-1", b"{\"action\":\"created\"}").await;
    assert_eq!(status, 202, "{text}");
    let record = app.store().delivery("star-1").await.unwrap().unwrap();
    assert_eq!(record.status, "ignored");
}

#[tokio::test]
async fn a_used_event_with_an_action_nothing_acts_on_is_settled_at_intake() {
    let app = TestApp::start().await;
    let body = serde_json::to_vec(&fixture("issues/opened.1.json")).unwrap();
    let (status, text) = signed(&app, "issues", "opened-1", &body).await;
    assert_eq!(
        (status, text.trim()),
        (202, "accepted; nothing to do for issues.opened")
    );
    // Processed in the same commit as it was recorded: nothing is left
    // for the processor, which would otherwise read it back and write it
    // a second time.
    let record = app.store().delivery("opened-1").await.unwrap().unwrap();
    assert_eq!(record.status, "processed");
    assert_eq!(
        record.outcome.as_deref(),
        Some("nothing to do for issues.opened")
    );
    let pending = app
        .store()
        .pending_deliveries(10, |_, _| true)
        .await
        .unwrap();
    assert!(pending.is_empty());

    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_deliveries_total{event=\"issues\",outcome=\"no_action\"} 1"),
        "{metrics}"
    );

    // A shape the event cannot have is still refused, settled or not.
    let (status, _) = signed(&app, "issues", "opened-2", b"{\"action\":\"opened\"}").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_delivery_seen_before_is_answered_200_and_processed_once() {
    let app = TestApp::start().await;
    let issue = app
        .fake
        .repo(crate::support::REPO)
        .create_issue("Hello", "", "octocat");
    let repo = app.fake.repo(crate::support::REPO);
    // Delivered by the test itself, below.
    let comment = app
        .fake
        .without_echoes(|| repo.add_comment(issue, "/taskgate help", "octocat"));
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);

    let (first, _) = app.deliver_as("issue_comment", "same-id", &payload).await;
    let (second, text) = app.deliver_as("issue_comment", "same-id", &payload).await;
    assert_eq!((first, second), (202, 200), "{text}");
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 1);
}

#[tokio::test]
async fn a_signed_body_replayed_under_a_new_delivery_id_is_not_acted_on_twice() {
    let app = TestApp::start().await;
    let issue = app
        .fake
        .repo(crate::support::REPO)
        .create_issue("Hello", "", "octocat");
    let repo = app.fake.repo(crate::support::REPO);
    // Delivered by the test itself, below: as seen on a public relay
    // channel, then re-posted with an id the sender made up.
    let comment = app
        .fake
        .without_echoes(|| repo.add_comment(issue, "/taskgate help", "octocat"));
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);

    let (first, _) = app
        .deliver_as("issue_comment", "the-real-id", &payload)
        .await;
    app.settle().await;
    let (replayed, text) = app.deliver_as("issue_comment", "a-new-id", &payload).await;
    assert_eq!((first, replayed), (202, 200), "{text}");
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 1, "answered once");
    assert_eq!(stored(&app).await, 1);
}

#[tokio::test]
async fn concurrent_copies_of_one_delivery_are_recorded_once() {
    let app = TestApp::start().await;
    let issue = app
        .fake
        .repo(crate::support::REPO)
        .create_issue("Hello", "", "octocat");
    let repo = app.fake.repo(crate::support::REPO);
    // Delivered by the test itself, below.
    let comment = app
        .fake
        .without_echoes(|| repo.add_comment(issue, "/taskgate help", "octocat"));
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);

    let sends = (0..8).map(|_| app.deliver_as("issue_comment", "racing-id", &payload));
    let mut statuses: Vec<u16> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    statuses.sort();
    assert_eq!(statuses, vec![200, 200, 200, 200, 200, 200, 200, 202]);
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 1);
    assert_eq!(stored(&app).await, 1);
}

#[tokio::test]
async fn while_the_secret_is_rotated_the_previous_one_is_accepted_and_counted() {
    let app = TestApp::start_with(|config| {
        config.previous_webhook_secret = Some("the old secret".into());
    })
    .await;
    // Three pings (each body a delivery of its own: a body seen before is
    // a replay, whatever its id).
    let body_of = |n: u8| serde_json::to_vec(&fixture(&format!("ping/default.{n}.json"))).unwrap();
    let signed_with = |secret: &str, delivery: &'static str| {
        let n = match delivery {
            "d-new" => 1,
            "d-old" => 2,
            _ => 3,
        };
        let body = body_of(n);
        let signature = sign(secret.as_bytes(), &body);
        let app = &app;
        async move {
            post(
                app,
                &[
                    ("x-github-event", "ping"),
                    ("x-github-delivery", delivery),
                    ("x-hub-signature-256", &signature),
                ],
                body,
            )
            .await
            .0
        }
    };
    assert_eq!(signed_with(SECRET, "d-new").await, 202);
    assert_eq!(signed_with("the old secret", "d-old").await, 202);
    assert_eq!(signed_with("an older secret", "d-older").await, 401);
    assert_eq!(stored(&app).await, 2);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_webhook_previous_secret_total 1\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn webhooks_are_taken_at_the_configured_path_only() {
    let app = TestApp::start_with(|config| {
        config.webhook_path = "/api/github/webhooks".into();
    })
    .await;
    let body = serde_json::to_vec(&fixture("ping/default.1.json")).unwrap();
    let to = |path: &'static str, delivery: &'static str| {
        reqwest::Client::new()
            .post(format!("{}{path}", app.url))
            .header("x-github-event", "ping")
            .header("x-github-delivery", delivery)
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
            .body(body.clone())
            .send()
    };
    let status = |answer: reqwest::Response| answer.status().as_u16();
    assert_eq!(
        status(to("/api/github/webhooks", "d-probot-path").await.unwrap()),
        202
    );
    assert_eq!(status(to("/webhook", "d-default-path").await.unwrap()), 404);
    assert_eq!(stored(&app).await, 1);
}

#[tokio::test]
async fn healthz_and_metrics_answer() {
    let app = TestApp::start().await;
    app.deliver("ping", &fixture("ping/default.1.json")).await;
    let health = reqwest::get(format!("{}/healthz", app.url)).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_deliveries_total{event=\"ping\",outcome=\"accepted\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("taskgate_outbox_depth"), "{metrics}");
    // Every answer is timed, the ping's included.
    assert!(
        metrics.contains("taskgate_webhook_ack_seconds_count 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("taskgate_delivery_processing_seconds"),
        "{metrics}"
    );
    // The ping was recorded in a group commit, which the writer timed.
    let value = |name: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(&format!("{name} ")));
        line.and_then(|l| l.split(' ').nth(1)?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    assert!(value("taskgate_store_commit_seconds_count") >= 1.0);
    assert!(value("taskgate_store_commit_jobs_sum") >= 1.0);
    assert!(metrics.contains("taskgate_store_checkpoint_seconds_count"));
}

/// A captured delivery sent again once its id is forgotten (retention) is
/// refused by the age of its event, and counted: an old command is not
/// acted on a second time with its sender's permission of today.
#[tokio::test]
async fn a_delivery_replayed_after_its_id_is_forgotten_is_refused_by_its_events_age() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(crate::support::REPO);
    let issue = repo.create_issue("Hello", "", "octocat");
    let comment = app
        .fake
        .without_echoes(|| repo.add_comment(issue, "/taskgate help", "octocat"));
    let captured = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
    let (status, _) = app.deliver_as("issue_comment", "captured", &captured).await;
    assert_eq!(status, 202);
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 1);

    let retention = taskgate::app::loops::retention::DEFAULT_RETENTION;
    app.advance(retention + std::time::Duration::from_secs(24 * 60 * 60));
    let view = taskgate::app::loops::retention::RetentionStore::of(app.store().clone());
    taskgate::app::loops::retention::prune_once(&view, retention)
        .await
        .unwrap();
    let (status, text) = app.deliver_as("issue_comment", "captured", &captured).await;
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("more than 30 days ago"), "{text}");
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 1, "the command ran once");
    let metrics = app.metrics().await;
    assert!(
        metrics
            .contains("taskgate_deliveries_total{event=\"issue_comment\",outcome=\"too_old\"} 1"),
        "{metrics}"
    );
}

/// GitHub's documented examples are from 2019: as documented, the ones
/// with an event time are refused, and say why.
#[tokio::test]
async fn a_documented_example_from_2019_is_refused_as_too_old_and_not_stored() {
    let app = TestApp::start().await;
    let old = crate::support::fixture_as_documented("issue_comment/created.1.json");
    let (status, text) = app.deliver("issue_comment", &old).await;
    assert_eq!(status, 422);
    insta::assert_snapshot!(text, @"refused: this event happened at 2019-05-15 15:20:21 UTC, more than 30 days ago; taskgate keeps delivery ids that long (TASKGATE_RETENTION_DAYS), so an older event may be a replay and is not acted on");
    assert_eq!(stored(&app).await, 0);
}

/// A sha that is no full commit sha (issue 47 item 3) is refused at the
/// door like any other shape error: 400 naming the field, nothing stored,
/// and the process keeps serving.
#[tokio::test]
async fn a_delivery_with_a_malformed_sha_gets_400_naming_the_field() {
    let app = TestApp::start().await;
    let mut payload = fixture("pull_request/synchronize.json");
    payload["pull_request"]["head"]["sha"] = json!("abc");
    let body = serde_json::to_vec(&payload).unwrap();
    let (status, text) = signed(&app, "pull_request", "short-sha", &body).await;
    assert_eq!(status, 400, "{text}");
    insta::assert_snapshot!("malformed_sha_reply", text.trim());
    assert_eq!(stored(&app).await, 0);

    payload["pull_request"]["head"]["sha"] = json!("0123456789abcdef0123456789abcdef01234567");
    let body = serde_json::to_vec(&payload).unwrap();
    let (status, text) = signed(&app, "pull_request", "full-sha", &body).await;
    assert_eq!(
        status, 202,
        "the same delivery with a full sha is taken: {text}"
    );
}
