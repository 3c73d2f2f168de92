//! The comment path's cost (issue 46 item 5): the processor's decisions
//! that change nothing and ask for nothing (a comment with no command, the
//! most common delivery a busy repository sends) are stored together, one
//! commit for a batch of them, not one each; and a comment reads its
//! repository's recorded config once.

use std::sync::atomic::{AtomicU64, Ordering};

use fakehub::FakeGitHub;
use taskgate::store::{Disposition, NewDelivery, Store};
use taskgate_core::ids::{DeliveryId, InstallationId};

use crate::support::{eventually, init_logs, metric, TestApp, INSTALLATION, REPO};

const COMMENTS: usize = 100;

/// `COMMENTS` comments with no command, left in the inbox before taskgate
/// starts (as a restart finds them), so the processor reads them as one
/// batch; returns once each is decided, with `/metrics` then and the
/// store reads taskgate made.
async fn decide_comments_left_behind() -> (Decided, String, u64) {
    init_logs();
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    let repo = fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskgate.db");
    {
        let store = Store::open(&db).unwrap();
        for n in 0..COMMENTS {
            let comment = repo.add_comment(issue, &format!("Thanks! ({n})"), "octocat");
            let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
            (store.record_delivery(NewDelivery {
                body_digest: None,
                delivery_id: DeliveryId::new(format!("comment-{n}")),
                event: "issue_comment".into(),
                action: Some("created".into()),
                installation: Some(InstallationId::new(INSTALLATION)),
                payload: serde_json::to_vec(&payload).unwrap().into(),
                disposition: Disposition::Pending,
            }))
            .await
            .unwrap();
        }
    }
    // SQLite on both runs of the suite: the file is what a restart finds.
    let url = format!("sqlite://{}", db.display());
    let app = TestApp::with_config(fake, |c| c.database_url = url).await;
    // Waited for with one read a look, counted, so the test's own reads
    // are told from taskgate's.
    let looks = AtomicU64::new(0);
    eventually("every comment is decided", || async {
        looks.fetch_add(1, Ordering::SeqCst);
        app.store().inbox_depth().await.unwrap().0 == 0
    })
    .await;
    let reads = app.store().writer_metrics().reads.get() - looks.load(Ordering::SeqCst);
    for n in 0..COMMENTS {
        let id = format!("comment-{n}");
        let record = app.store().delivery(&id).await.unwrap().unwrap();
        assert_eq!(record.status, "processed", "{id}");
        assert_eq!(record.outcome.as_deref(), Some("no commands"), "{id}");
    }
    let metrics = app.metrics().await;
    (
        Decided {
            _app: app,
            _dir: dir,
        },
        metrics,
        reads,
    )
}

/// The app and its database's folder, kept until the test's end.
struct Decided {
    _app: TestApp,
    _dir: tempfile::TempDir,
}

#[tokio::test]
async fn comments_with_no_command_are_marked_processed_in_one_commit() {
    let (_app, metrics, _) = decide_comments_left_behind().await;
    // Every commit since the start: the comments' decisions took one (and
    // the repository's config, read at the first comment, one more), where
    // one a comment would be 100 and more. The rest is the loops' own
    // bookkeeping.
    let commits = metric(&metrics, "taskgate_store_commit_seconds_count");
    assert!(
        commits < (COMMENTS / 2) as f64,
        "{commits} commits for {COMMENTS} comments"
    );
}

#[tokio::test]
async fn a_comment_reads_its_repositorys_recorded_config_once() {
    let (_app, _, reads) = decide_comments_left_behind().await;
    // Every read since the start (each a hop to the reader's thread): one
    // a comment for its config, recorded at the first; reading it twice
    // would be 200 and more. The rest is the start's and the loops'.
    eprintln!("{reads} reads for {COMMENTS} comments");
    assert!(
        reads < (2 * COMMENTS) as u64,
        "{reads} reads for {COMMENTS} comments"
    );
}

#[tokio::test]
async fn a_comment_is_decided_from_the_intakes_parse_not_parsed_again() {
    let app = TestApp::start().await;
    let issue = app.fake.repo(REPO).create_issue("Story", "", "octocat");
    // One at a time, each decided before the next: the processor is
    // waiting when a comment comes, and it is woken only once the intake
    // has left its parse (a batch read between the commit and that finds
    // none, and parses the body: correct, only slower).
    for n in 0..5 {
        app.comment(issue, "octocat", &format!("Thanks! ({n})"))
            .await;
        eventually("the comment is decided", || async {
            app.store().inbox_depth().await.unwrap().0 == 0
        })
        .await;
    }
    let replies = app.replies(issue);
    assert!(replies.is_empty(), "{replies:?}");
    // Each body parsed once, at intake: the processor took the parse.
    let metrics = app.metrics().await;
    let again = metric(&metrics, "taskgate_webhook_parsed_again_total");
    assert_eq!(again, 0.0, "comments parsed again by the processor");
}
