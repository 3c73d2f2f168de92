//! The processor's decisions that change nothing and ask for nothing (a
//! comment with no command, the most common delivery a busy repository
//! sends) are stored together: one commit for a batch of them, not one
//! each (issue 46 item 5).

use fakehub::FakeGitHub;
use taskgate::store::{Disposition, NewDelivery, Store};
use taskgate_core::ids::{DeliveryId, InstallationId};

use crate::support::{eventually, init_logs, metric, TestApp, INSTALLATION, REPO};

const COMMENTS: usize = 40;

#[tokio::test]
async fn comments_with_no_command_are_marked_processed_in_one_commit() {
    init_logs();
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    let repo = fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskgate.db");
    // The comments wait in the inbox before the processor starts (as a
    // restart finds them), so it reads them as one batch.
    {
        let store = Store::open(&db).unwrap();
        for n in 0..COMMENTS {
            let comment = repo.add_comment(issue, &format!("Thanks! ({n})"), "octocat");
            let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
            (store.record_delivery(NewDelivery {
                body_digest: None,
                delivery_id: DeliveryId(format!("comment-{n}")),
                event: "issue_comment".into(),
                action: Some("created".into()),
                installation: Some(InstallationId(INSTALLATION)),
                payload: serde_json::to_vec(&payload).unwrap().into(),
                disposition: Disposition::Pending,
            }))
            .await
            .unwrap();
        }
    }
    let url = format!("sqlite://{}", db.display());
    let app = TestApp::with_config(fake, |c| c.database_url = url).await;
    let decided = || async {
        let mut outcomes = Vec::new();
        for n in 0..COMMENTS {
            let id = format!("comment-{n}");
            let record = app.store().delivery(&id).await.unwrap().unwrap();
            if record.status != "processed" {
                return None;
            }
            outcomes.push(record.outcome.unwrap_or_default());
        }
        Some(outcomes)
    };
    eventually("every comment is decided", || async {
        decided().await.is_some()
    })
    .await;
    let outcomes = decided().await.unwrap();
    assert!(outcomes.iter().all(|o| o == "no commands"), "{outcomes:?}");
    // Every commit since the start: the comments' decisions took one (and
    // the repository's config, read at the first comment, one more), where
    // one a comment would be 40 and more. The rest is the loops' own
    // bookkeeping.
    let commits = metric(&app.metrics().await, "taskgate_store_commit_seconds_count");
    assert!(
        commits < (COMMENTS / 2) as f64,
        "{commits} commits for {COMMENTS} comments"
    );
}
