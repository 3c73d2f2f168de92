//! Webhooks that failed to reach taskgate (it was down) are asked for again
//! from GitHub's delivery log, once, and handled once.

use std::time::Duration;

use fakehub::FakeGitHub;

use crate::support::{eventually, TestApp, INSTALLATION, REPO, SECRET};

/// Where GitHub posted while taskgate was not listening.
const DOWN: &str = "http://127.0.0.1:9/webhook";

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

    let app = TestApp::with_config(fake, |c| {
        c.redeliver_every = Some(Duration::from_millis(200));
    })
    .await;
    app.fake
        .set_app_webhook(&format!("{}/webhook", app.url), SECRET);

    eventually("the redelivered command answered", || async {
        app.bot_comments(issue).len() == 1
    })
    .await;
    // Later passes ask for nothing again, and nothing is answered twice.
    tokio::time::sleep(Duration::from_millis(800)).await;
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
    let app = TestApp::with_config(fake, |c| {
        c.redeliver_every = Some(Duration::from_millis(100));
    })
    .await;
    // The app's webhook still points nowhere: every redelivery fails too.
    app.fake.set_app_webhook(DOWN, SECRET);
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
    // Many passes later, it is still on its way as far as taskgate knows.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(app.fake.redeliveries().len(), 1);
    app.assert_contract_kept();
}
