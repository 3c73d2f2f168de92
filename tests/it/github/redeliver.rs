//! Webhooks that failed to reach taskgate (it was down) are asked for again
//! from GitHub's delivery log, once, and handled once. The tests move the
//! app's clock on from one pass to the next.

use std::time::Duration;

use fakehub::FakeGitHub;

use crate::support::{eventually, TestApp, INSTALLATION, REPO, SECRET};

/// Where GitHub posted while taskgate was not listening.
const DOWN: &str = "http://127.0.0.1:9/webhook";

/// Between redelivery passes in these tests.
const EVERY: Duration = Duration::from_secs(60);
/// From the start to the first pass.
const FIRST: Duration = Duration::from_secs(30);

/// How many times taskgate has read GitHub's delivery log.
fn log_reads(fake: &FakeGitHub) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/app/hook/deliveries")
        .count()
}

/// Moves the app's clock on by `by`, to its next redelivery pass, and waits
/// until that pass has read the delivery log. Passes run one after the
/// other, so the one before it has ended.
async fn next_pass(app: &TestApp, by: Duration) {
    let before = log_reads(&app.fake);
    app.clock.advance(by);
    eventually("the pass reads the delivery log", || async {
        log_reads(&app.fake) > before
    })
    .await;
}

/// A fake GitHub whose delivery of a `/taskgate help` comment (as
/// `delivery`) failed because taskgate was down; and the comment's issue.
async fn help_delivered_while_down(delivery: &str) -> (FakeGitHub, u64) {
    crate::support::init_logs();
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    let repo = fake.repo(REPO);
    let issue = repo.create_issue("Plan the work", "", "octocat");
    let comment = repo.add_comment(issue, "/taskgate help", "octocat");
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
    let (status, _) = fake
        .deliver(DOWN, SECRET, "issue_comment", delivery, &payload)
        .await;
    assert_ne!(status / 100, 2);
    (fake, issue)
}

#[tokio::test]
async fn a_comment_delivered_while_taskgate_was_down_is_redelivered_and_answered_once() {
    // GitHub's attempts while taskgate was down: a command, and an event
    // taskgate does not use.
    let (fake, issue) = help_delivered_while_down("guid-help").await;
    let star = serde_json::json!({"action": "created", "installation": {"id": INSTALLATION}});
    fake.deliver(DOWN, SECRET, "star", "guid-star", &star).await;

    let app = TestApp::with_config(fake, |c| c.redeliver_every = Some(EVERY)).await;
    app.fake
        .set_app_webhook(&format!("{}/webhook", app.url), SECRET);

    next_pass(&app, FIRST).await;
    eventually("the redelivered command answered", || async {
        app.bot_comments(issue).len() == 1
    })
    .await;
    // Later passes ask for nothing again, and nothing is answered twice
    // (the second has begun, so the first has ended).
    next_pass(&app, EVERY).await;
    next_pass(&app, EVERY).await;
    app.settle().await;
    assert_eq!(
        app.fake.redeliveries().len(),
        1,
        "{:?}",
        app.fake.hook_deliveries()
    );
    assert_eq!(app.bot_comments(issue).len(), 1);
    let delivery = app.store().delivery("guid-help").await.unwrap().unwrap();
    assert_eq!(delivery.event, "issue_comment");
    assert!(app.store().delivery("guid-star").await.unwrap().is_none());
    assert!(
        app.metrics()
            .await
            .contains("taskgate_webhook_redeliveries_total 1\n"),
        "{}",
        app.metrics().await
    );
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_redelivery_that_fails_again_is_not_asked_for_on_every_pass() {
    let (fake, _) = help_delivered_while_down("guid-again").await;
    let app = TestApp::with_config(fake, |c| c.redeliver_every = Some(EVERY)).await;
    // The app's webhook still points nowhere: every redelivery fails too.
    app.fake.set_app_webhook(DOWN, SECRET);
    next_pass(&app, FIRST).await;
    eventually("one redelivery asked for", || async {
        app.fake.redeliveries().len() == 1
    })
    .await;
    eventually("the redelivery failed too", || async {
        app.fake
            .hook_deliveries()
            .iter()
            .any(|d| d["redelivery"] == true && d["status"] != "OK")
    })
    .await;
    // Many passes later (fewer minutes than a redelivery is waited for),
    // it is still on its way as far as taskgate knows.
    for _ in 0..4 {
        next_pass(&app, EVERY).await;
    }
    assert_eq!(app.fake.redeliveries().len(), 1);
    app.assert_contract_kept();
}
