//! Trust boundaries on the way to GitHub (issue 18, item 3): a 403 that is
//! not a rate limit, the installation-token cache, and replies longer than
//! GitHub takes.

use std::time::Duration;

use fakehub::{FakeGitHub, Fault, NOT_ACCESSIBLE};
use taskgate::clock::Clock;
use taskgate::github::{AppCredentials, GitHubApp, MintRetry};
use taskgate::store::EffectStatus;
use taskgate_core::ids::InstallationId;

use crate::support::{eventually, TestApp, REPO};

const PLAN_PATH: &str = ".taskgate/stories/momentum.yml";
const SUB_ISSUES: &str = "POST /repos/{owner}/{repo}/issues/{issue_number}/sub_issues";
const CONTENTS: &str = "GET /repos/{owner}/{repo}/contents/{path}";
const ACCESS_TOKEN: &str = "POST /app/installations/{installation_id}/access_tokens";

fn plan() -> String {
    std::fs::read_to_string(format!(
        "{}/fixtures/plans/momentum.yml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// (issue number, body) of every bot comment saying GitHub refused something.
fn refusal_notes(app: &TestApp) -> Vec<(u64, String)> {
    let repo = app.fake.repo(REPO);
    repo.issues()
        .into_iter()
        .flat_map(|i| {
            app.bot_comments(i.number)
                .into_iter()
                .filter(|b| b.contains("GitHub refused it (403"))
                .map(move |b| (i.number, b))
        })
        .collect()
}

#[tokio::test]
async fn a_403_that_is_not_a_rate_limit_fails_the_effect_at_once_and_is_said_on_its_issue() {
    let app = TestApp::start().await;
    // The installation may not link sub-issues: every link is refused.
    app.fake
        .inject(SUB_ISSUES, Fault::NotAccessible { times: 1_000 });
    // `settle` gives up after 30 s: an installation paused for a rate
    // limit (a minute at least) would fail the test here.
    app.push_to_main(&[(PLAN_PATH, &plan())]).await;

    let effects = app.store().effects().await.unwrap();
    let links: Vec<_> = effects
        .iter()
        .filter(|e| e.effect.name() == "link_sub_issue")
        .collect();
    assert!(!links.is_empty());
    for link in &links {
        assert_eq!(
            (link.status, link.attempts),
            (EffectStatus::Failed, 1),
            "{link:?}"
        );
        let error = link.last_error.as_deref().unwrap();
        assert!(error.contains(&format!("403: {NOT_ACCESSIBLE}")), "{error}");
    }
    // The installation's other effects went on at once: every issue and
    // every branch of the plan exists.
    let repo = app.fake.repo(REPO);
    assert_eq!(repo.issues().len(), 5);
    let others_failed: Vec<_> = effects
        .iter()
        .filter(|e| e.effect.name() != "link_sub_issue" && e.status == EffectStatus::Failed)
        .collect();
    assert!(others_failed.is_empty(), "{others_failed:?}");
    app.task_and_branch("Data loading integration", "data");

    // Said on each issue the refused links were about, once per issue
    // however often the reconciler asked for the link again.
    let notes = refusal_notes(&app);
    assert!(!notes.is_empty());
    let mut issues: Vec<u64> = notes.iter().map(|(n, _)| *n).collect();
    issues.sort();
    let before = issues.len();
    issues.dedup();
    assert_eq!(issues.len(), before, "one note per issue: {notes:?}");
    let note = &notes[0].1;
    assert!(
        note.starts_with("taskgate could not link this issue as a sub-issue: GitHub refused it (403: “Resource not accessible by integration”)."),
        "{note}"
    );
    assert!(note.contains("<!-- taskgate:refused effect=link_sub_issue why="));
}

#[tokio::test]
async fn a_403_on_a_read_does_not_hold_the_installations_later_deliveries() {
    let app = TestApp::start().await;
    // The installation may not read contents: the plan push cannot be read.
    app.fake
        .inject(CONTENTS, Fault::NotAccessible { times: 1_000 });
    // Before: taken for a transient failure, the push was put off for up
    // to a day and every later delivery of the installation waited.
    app.push_to_main(&[(PLAN_PATH, &plan())]).await;
    let issue = app.fake.repo(REPO).create_issue("Question", "", "octocat");
    app.comment(issue, "octocat", "/taskgate help").await;
    app.settle().await;

    assert_eq!(app.bot_comments(issue).len(), 1, "the help reply");
    let refused = app.statuses(CONTENTS);
    assert!(!refused.is_empty() && refused.iter().all(|s| *s == 403));
    // The push's reads, and the comment's one read of the config of a
    // repository with none recorded (`sync::first_read`): none retried.
    assert!(refused.len() <= 3, "not retried: {refused:?}");
}

#[tokio::test]
async fn a_slow_token_mint_for_one_installation_does_not_hold_up_another() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(41, "octo-org/slow");
    fake.install(42, "octo-org/quick");
    let creds = AppCredentials::from_pem(fake.app_id(), FakeGitHub::private_key_pem()).unwrap();
    let app = std::sync::Arc::new(GitHubApp::new(&fake.url(), creds));

    fake.inject(ACCESS_TOKEN, Fault::Latency(Duration::from_secs(20)));
    let slow = tokio::spawn({
        let app = app.clone();
        async move { app.installation_token(InstallationId::new(41)).await }
    });
    // The slow mint's request has met its latency and is being held.
    eventually("the slow mint reached GitHub", || async {
        fake.faults_pending(ACCESS_TOKEN) == 0
    })
    .await;

    let quick = app
        .installation_token(InstallationId::new(42))
        .await
        .unwrap();
    assert!(!quick.is_empty());
    assert!(
        !slow.is_finished(),
        "installation 42's token came only after 41's slow mint"
    );
    slow.abort();
}

/// GitHub down: every delivery and effect of an installation wants its
/// token. The mint that failed is remembered for its wait, so the
/// callers meanwhile fail at once, with no JWT signed and no request
/// sent; once the wait has passed, one mint is tried again.
#[tokio::test]
async fn a_token_github_could_not_mint_is_not_asked_for_again_until_its_wait_has_passed() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(41, "octo-org/down");
    fake.install(42, "octo-org/other");
    let creds = AppCredentials::from_pem(fake.app_id(), FakeGitHub::private_key_pem()).unwrap();
    let clock = Clock::movable();
    let retry = MintRetry {
        first: Duration::from_secs(10),
        max: Duration::from_secs(60),
    };
    let app = GitHubApp::new(&fake.url(), creds).with_mint_retry(retry, clock.clone());
    let mints = |installation: u64| {
        let path = format!("/app/installations/{installation}/access_tokens");
        (fake.requests().into_iter())
            .filter(|r| r.path == path)
            .count()
    };
    fake.inject(
        ACCESS_TOKEN,
        Fault::Status {
            status: 502,
            times: 1,
        },
    );
    let first = app
        .installation_token(InstallationId::new(41))
        .await
        .unwrap_err();
    assert!(first.to_string().contains("502"), "{first}");
    // GitHub is back at once, but the wait has not passed.
    for _ in 0..5 {
        let again = app
            .installation_token(InstallationId::new(41))
            .await
            .unwrap_err();
        assert!(again.is_transient(), "{again}");
        assert!(again.to_string().contains("asked for again in"), "{again}");
    }
    assert_eq!(mints(41), 1, "one mint for six callers");
    // Another installation is not held by it.
    app.installation_token(InstallationId::new(42))
        .await
        .unwrap();

    // The wait is on the server's clock: a second before it ends, still
    // not asked; at its end, one mint again.
    clock.advance(Duration::from_secs(9));
    let waiting = app
        .installation_token(InstallationId::new(41))
        .await
        .unwrap_err();
    assert!(waiting.to_string().contains("again in 1 s"), "{waiting}");
    assert_eq!(mints(41), 1);
    clock.advance(Duration::from_secs(1));
    app.installation_token(InstallationId::new(41))
        .await
        .unwrap();
    assert_eq!(mints(41), 2);
}

#[tokio::test]
async fn two_callers_for_one_installation_share_one_mint() {
    let fake = crate::support::CheckedFake::start().await;
    fake.install(41, "octo-org/slow");
    let creds = AppCredentials::from_pem(fake.app_id(), FakeGitHub::private_key_pem()).unwrap();
    let app = std::sync::Arc::new(GitHubApp::new(&fake.url(), creds));
    fake.inject(ACCESS_TOKEN, Fault::Latency(Duration::from_millis(300)));

    let (a, b) = tokio::join!(
        app.installation_token(InstallationId::new(41)),
        app.installation_token(InstallationId::new(41))
    );
    assert_eq!(a.unwrap(), b.unwrap());
    let mints = fake
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/access_tokens"))
        .count();
    assert_eq!(mints, 1);
}

#[tokio::test]
async fn a_reply_over_githubs_limit_is_cut_with_a_note_and_keeps_its_marker() {
    let app = TestApp::start().await;
    let issue = app.fake.repo(REPO).create_issue("Story", "", "octocat");
    // 5,000 unknown commands: each is answered, far past 65,536 characters.
    let comment = "/taskgate x\n".repeat(5_000);
    app.comment(issue, "octocat", &comment).await;
    app.settle().await;

    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 1, "the reply is posted, not lost");
    let reply = &replies[0];
    assert!(reply.chars().count() <= 65_536, "{}", reply.chars().count());
    assert!(reply.starts_with("@octocat, one answer per command:"));
    let (text, marker) = reply.rsplit_once("\n\n").unwrap();
    assert!(
        marker.starts_with("<!-- taskgate:") && marker.ends_with("-->"),
        "{marker}"
    );
    assert!(
        text.ends_with(
            "over GitHub's limit of 65536; the check run and the dashboard show the rest)"
        ),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(text.contains("… (cut: the full text was "));
}
