//! Crashes: the real binary killed with SIGKILL at the worst moments, then
//! restarted on the same database. Every effect happens exactly once.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fakehub::{FakeGitHub, Fault};
use taskgate::store::{EffectStatus, NewDelivery, Store};

use crate::support::{eventually, INSTALLATION, REPO, SECRET};

const CREATE_COMMENT: &str = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";
const ACCESS_TOKEN: &str = "POST /app/installations/{installation_id}/access_tokens";

struct Server {
    child: Child,
    url: String,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn spawn(fake: &FakeGitHub, db: &Path) -> Server {
    let port = free_port();
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys/test-app.pem");
    let child = Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("serve")
        .env_clear()
        .env("APP_ID", fake.app_id().to_string())
        .env("PRIVATE_KEY_PATH", key)
        .env("WEBHOOK_SECRET", SECRET)
        .env("GITHUB_API_URL", fake.url())
        .env("HOST", "127.0.0.1")
        .env("PORT", port.to_string())
        .env("DATABASE_URL", format!("sqlite://{}", db.display()))
        .env("TASKGATE_RETRY_BASE_MS", "20")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start taskgate serve");
    let url = format!("http://127.0.0.1:{port}");
    let health = format!("{url}/healthz");
    eventually("the server is up", || {
        let health = health.clone();
        async move {
            reqwest::get(&health)
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await;
    // GitHub sends the App's webhooks here from now on, the echoes of the
    // server's own writes included.
    fake.set_app_webhook(&format!("{url}/webhook"), SECRET);
    Server { child, url }
}

impl Server {
    fn kill(self) {
        // Dropping kills: SIGKILL, no chance to clean up, like a crash.
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bot_comments(fake: &FakeGitHub, issue: u64) -> usize {
    fake.repo(REPO)
        .comments(issue)
        .iter()
        .filter(|c| c.author.ends_with("[bot]"))
        .count()
}

fn create_calls(fake: &FakeGitHub) -> usize {
    fake.requests()
        .iter()
        .filter(|r| {
            r.route
                .as_deref()
                .map(|t| format!("{} {t}", r.method))
                .as_deref()
                == Some(CREATE_COMMENT)
        })
        .count()
}

async fn help_request(fake: &FakeGitHub, server: &Server) -> u64 {
    let repo = fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    // Delivered by the test itself (its answer is checked), below.
    let comment = fake.without_echoes(|| repo.add_comment(issue, "/taskgate help", "octocat"));
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
    let (status, _) = fake
        .deliver(
            &format!("{}/webhook", server.url),
            SECRET,
            "issue_comment",
            "crash-1",
            &payload,
        )
        .await;
    assert_eq!(status, 202);
    issue
}

#[tokio::test]
async fn killed_after_the_commit_before_the_call_the_effect_happens_once() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(INSTALLATION, REPO);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskgate.db");
    // The token exchange hangs, so the effect is committed and its attempt
    // begun, but the comment is never sent before the kill. Twice: the
    // comment's first read of the repository's config mints a token too,
    // and gives up on it after a while (`sync::first_read`); the reply's
    // own mint must hang as well.
    for _ in 0..2 {
        fake.inject(ACCESS_TOKEN, Fault::Latency(Duration::from_secs(30)));
    }
    let server = spawn(&fake, &db).await;
    let issue = help_request(&fake, &server).await;
    let store = Store::open(&db).unwrap();
    eventually("the attempt is recorded", || {
        let store = store.clone();
        async move {
            store
                .effects()
                .await
                .unwrap()
                .first()
                .is_some_and(|e| e.attempts == 1)
        }
    })
    .await;
    server.kill();
    assert_eq!(bot_comments(&fake, issue), 0);
    // The kill may land before or after the token request left; either way
    // the hang must not outlive the crashed process.
    fake.clear_faults();

    let server = spawn(&fake, &db).await;
    eventually("the reply is posted", || async {
        bot_comments(&fake, issue) == 1
    })
    .await;
    eventually("the effect is done", || {
        let store = store.clone();
        async move { store.effects().await.unwrap()[0].status == EffectStatus::Done }
    })
    .await;
    // Done is recorded after GitHub answered the one comment POST, and the
    // crashed process never sent one: no other comment is on its way.
    assert_eq!(bot_comments(&fake, issue), 1);
    server.kill();
}

#[tokio::test]
async fn killed_after_github_accepted_the_comment_is_found_not_repeated() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(INSTALLATION, REPO);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskgate.db");
    // GitHub creates the comment, then the answer is slow: the kill lands
    // after GitHub accepted and before taskgate marked the effect done.
    fake.inject(
        CREATE_COMMENT,
        Fault::LatencyAfterApply(Duration::from_secs(30)),
    );
    let server = spawn(&fake, &db).await;
    let issue = help_request(&fake, &server).await;
    eventually("GitHub has the comment", || async {
        bot_comments(&fake, issue) == 1
    })
    .await;
    server.kill();

    let store = Store::open(&db).unwrap();
    assert_eq!(
        store.effects().await.unwrap()[0].status,
        EffectStatus::Pending
    );
    let server = spawn(&fake, &db).await;
    eventually("the effect is done", || {
        let store = store.clone();
        async move { store.effects().await.unwrap()[0].status == EffectStatus::Done }
    })
    .await;
    assert_eq!(bot_comments(&fake, issue), 1);
    assert_eq!(
        create_calls(&fake),
        1,
        "the second run looked the comment up instead of posting"
    );
    server.kill();
}

#[tokio::test]
async fn a_delivery_recorded_before_a_crash_is_processed_after_restart() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(INSTALLATION, REPO);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskgate.db");
    let repo = fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    let comment = repo.add_comment(issue, "/help", "octocat");
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
    {
        // What a run that crashed right after answering 202 leaves behind.
        let store = Store::open(&db).unwrap();
        store
            .record_delivery(NewDelivery {
                body_digest: None,
                delivery_id: taskgate_core::ids::DeliveryId::new("left-behind"),
                event: "issue_comment".into(),
                action: Some("created".into()),
                installation: Some(taskgate_core::ids::InstallationId::new(INSTALLATION)),
                payload: serde_json::to_vec(&payload).unwrap().into(),
                disposition: taskgate::store::Disposition::Pending,
            })
            .await
            .unwrap();
    }
    let server = spawn(&fake, &db).await;
    eventually("the reply is posted", || async {
        bot_comments(&fake, issue) == 1
    })
    .await;
    server.kill();
}
