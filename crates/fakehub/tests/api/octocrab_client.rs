//! The real client: octocrab authenticates as the app, then as the
//! installation, and deserialises every answer into its models.

use fakehub::{payloads, FakeGitHub};
use octocrab::models::webhook_events::WebhookEvent;
use serde_json::json;

use crate::{octocrab_for, receiver};

#[tokio::test]
async fn octocrab_reads_and_writes_through_the_fake() {
    let gh = FakeGitHub::start().await;
    let repo = gh.install(7, "acme/widgets");
    repo.with_file("feature", "a.txt", "a");
    let oc = octocrab_for(&gh, 7);
    let issues = oc.issues("acme", "widgets");
    let issue = issues
        .create("Story")
        .body("b")
        .labels(vec!["taskgate:story".to_string()])
        .send()
        .await
        .unwrap();
    assert_eq!(issue.user.r#type, "Bot");
    let comment = issues.create_comment(issue.number, "hello").await.unwrap();
    assert_eq!(comment.body.as_deref(), Some("hello"));
    issues
        .add_labels(issue.number, &["state:ready".to_string()])
        .await
        .unwrap();
    let page = issues
        .list_comments(issue.number)
        .per_page(1)
        .send()
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    let fetched = issues.get(issue.number).await.unwrap();
    assert_eq!(fetched.labels.len(), 2);
    let sha = repo.branch_sha("feature").unwrap();
    let run = oc
        .checks("acme", "widgets")
        .create_check_run("taskgate/unit", sha.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(run.name, "taskgate/unit");
    let payload = payloads::check_run("created", &repo, run.id.0);
    WebhookEvent::try_from_header_and_body("check_run", &serde_json::to_vec(&payload).unwrap())
        .unwrap();
    let pr = oc
        .pulls("acme", "widgets")
        .create("Feature", "feature", "main")
        .send()
        .await
        .unwrap();
    assert_eq!(pr.head.sha, sha);
    let content = oc
        .repos("acme", "widgets")
        .get_content()
        .path("README.md")
        .send()
        .await
        .unwrap();
    assert_eq!(
        content.items[0].decoded_content().as_deref(),
        Some("# widgets\n")
    );
    let perm = oc
        .repos("acme", "widgets")
        .get_contributor_permission("acme")
        .send()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(perm.permission).unwrap(),
        json!("admin")
    );
    gh.assert_contract_kept();
}

#[tokio::test]
async fn payloads_parse_as_octocrab_webhook_events_and_deliver_signed() {
    let gh = FakeGitHub::start().await;
    let repo = gh.install(7, "acme/widgets");
    let n = repo.create_issue("Story", "body", "alice");
    let comment = repo.add_comment(n, "/taskgate plan", "alice");
    repo.with_file("feature", "a.txt", "a");
    let pr = repo.create_pull("feature", "main", "Feature", "alice");
    let events = [
        (
            "issue_comment",
            payloads::issue_comment_created(&repo, n, &comment),
        ),
        ("issues", payloads::issues_opened(&repo, n)),
        ("push", payloads::push(&repo, "feature", None, "alice")),
        ("pull_request", payloads::pull_request("opened", &repo, pr)),
    ];
    for (event, payload) in &events {
        assert_eq!(payload["installation"]["id"], 7, "{event}");
        let body = serde_json::to_vec(payload).unwrap();
        WebhookEvent::try_from_header_and_body(event, &body)
            .unwrap_or_else(|e| panic!("{event}: {e}"));
    }

    // A receiver that reports the headers and body it got.
    let (url, mut rx) = receiver(200).await;
    let (status, body) = gh
        .deliver(&url, "s3cret", "issue_comment", "d-1", &events[0].1)
        .await;
    assert_eq!((status, body.as_str()), (200, "accepted"));
    let (headers, raw) = rx.recv().await.unwrap();
    assert_eq!(
        headers["x-hub-signature-256"].to_str().unwrap(),
        fakehub::signature("s3cret", &raw)
    );
    assert_eq!(headers["x-github-event"], "issue_comment");
    assert_eq!(headers["x-github-delivery"], "d-1");
    assert_eq!(headers["x-github-hook-installation-target-id"], "4242");
    assert_eq!(headers["user-agent"], "GitHub-Hookshot/fake");
}

/// GitHub answers a created check run with the page that shows it,
/// `html_url` (`https://github.com/<owner>/<repo>/runs/<id>` in the REST
/// docs' example): taskgate's branch todos link there for the full log.
#[tokio::test]
async fn a_created_check_run_names_its_page_in_html_url() {
    let gh = FakeGitHub::start().await;
    let repo = gh.install(7, "acme/widgets");
    repo.with_file("feature", "a.txt", "a");
    let oc = octocrab_for(&gh, 7);
    let sha = repo.branch_sha("feature").unwrap();
    let run = oc
        .checks("acme", "widgets")
        .create_check_run("taskgate/unit", sha)
        .send()
        .await
        .unwrap();
    assert_eq!(
        run.html_url.as_deref(),
        Some(format!("https://github.com/acme/widgets/runs/{}", run.id.0).as_str())
    );
}
