//! A repository no push has synced follows its own `.github/taskgate.yml`
//! (issue 28, items 2 and 3): its config is read when the App is installed
//! on it, or else before its first comment (installed while taskgate was
//! down, or a lost database), never the defaults until a config push.

use serde_json::json;
use taskgate_core::ids::RepoName;

use crate::support::{fixture, TestApp, INSTALLATION, REPO};

/// Reserves `freeze` for admins and moves the prefix: a maintainer's
/// `/tg freeze` is refused by this config, and is no command at all under
/// the defaults.
const ADMIN_FREEZE: &str =
    "commands:\n  prefix: /tg\n  short_form: false\n  permissions:\n    freeze: admin\n";

fn repo_name() -> RepoName {
    RepoName::parse(REPO).unwrap()
}

/// A running taskgate that has heard nothing of [`REPO`], whose default
/// branch has `config` at `.github/taskgate.yml`; `mia` maintains it.
async fn configured_but_unheard(config: &str) -> TestApp {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    app.fake.without_echoes(|| {
        repo.push_files(
            "main",
            &[(".github/taskgate.yml", config)],
            "Configure taskgate",
            "octocat",
        )
    });
    app.fake.add_user("mia", 90_003, "maintain");
    app
}

/// GitHub's `installation_repositories` / `added` for [`REPO`].
/// The config recorded for the repository.
async fn recorded(app: &TestApp) -> taskgate::store::RepoConfigRecord {
    let record = app.store().repo_config(&repo_name()).await.unwrap();
    record.expect("a config recorded")
}

fn repository_added() -> serde_json::Value {
    let mut added = fixture("installation_repositories/added.1.json");
    added["installation"]["id"] = json!(INSTALLATION);
    added["repositories_added"] = json!([{
        "id": 4242, "node_id": "R_4242", "name": "hello-world", "full_name": REPO, "private": false
    }]);
    added
}

/// `mia` asks for a freeze on a plain issue, with the config's prefix.
async fn maintainer_freezes(app: &TestApp) -> Vec<String> {
    let plain = app
        .fake
        .repo(REPO)
        .create_issue("Release 2.0", "Tracking the release.", "octocat");
    app.settle().await;
    app.comment(plain, "mia", "/tg freeze release 2.0").await;
    app.settle().await;
    app.replies_to(plain, "mia")
}

#[tokio::test]
async fn a_repository_just_installed_follows_its_config_before_any_push() {
    let app = configured_but_unheard(ADMIN_FREEZE).await;
    assert_eq!(
        app.deliver("installation_repositories", &repository_added())
            .await
            .0,
        202
    );
    app.settle().await;
    let head = app.fake.repo(REPO).branch_sha("main").unwrap();
    let record = recorded(&app).await;
    assert_eq!(
        (record.config.as_deref(), record.sha.as_str()),
        (Some(ADMIN_FREEZE), head.as_str())
    );

    insta::assert_snapshot!(maintainer_freezes(&app).await.join("\n"), @"@mia `/tg freeze` needs admin permission on the repository; @mia has maintain.");
    assert_eq!(app.store().repo_freeze(&repo_name()).await.unwrap(), None);
}

#[tokio::test]
async fn a_repository_installed_unheard_has_its_config_read_at_its_first_comment() {
    // No installation delivery: installed while taskgate was down.
    let app = configured_but_unheard(ADMIN_FREEZE).await;
    insta::assert_snapshot!(maintainer_freezes(&app).await.join("\n"), @"@mia `/tg freeze` needs admin permission on the repository; @mia has maintain.");
    assert_eq!(app.store().repo_freeze(&repo_name()).await.unwrap(), None);
    let record = app.store().repo_config(&repo_name()).await.unwrap();
    assert_eq!(
        record.and_then(|r| r.config).as_deref(),
        Some(ADMIN_FREEZE),
        "read once, recorded"
    );
}

#[tokio::test]
async fn a_config_with_problems_found_at_installation_is_said_on_the_head_and_the_defaults_stay() {
    let app = configured_but_unheard("commands:\n  permissions:\n    freeze: owner\n").await;
    assert_eq!(
        app.deliver("installation_repositories", &repository_added())
            .await
            .0,
        202
    );
    app.settle().await;
    let repo = app.fake.repo(REPO);
    let head = repo.branch_sha("main").unwrap();
    let said = crate::support::check_titles(&repo, &head);
    insta::assert_debug_snapshot!(said, @r#"
    [
        (
            "taskgate/plan",
            "failure",
            "1 problem(s) in .github/taskgate.yml; taskgate keeps the last good config",
        ),
    ]
    "#);
    // The defaults are the last good config: recorded, so the repository
    // is not read (nor its problems said) again at every comment.
    let record = recorded(&app).await;
    assert_eq!((record.config, record.sha.as_str()), (None, head.as_str()));
    app.assert_no_effect_failed().await;
}

#[tokio::test]
async fn an_unheard_repositorys_first_push_records_its_config_whatever_it_changed() {
    let app = configured_but_unheard(ADMIN_FREEZE).await;
    app.push_to_main(&[("README.md", "# hello\n")]).await;
    let head = app.fake.repo(REPO).branch_sha("main").unwrap();
    let record = recorded(&app).await;
    assert_eq!(
        (record.config.as_deref(), record.sha.as_str()),
        (Some(ADMIN_FREEZE), head.as_str())
    );
}

#[tokio::test]
async fn a_config_with_problems_read_at_a_first_comment_is_said_once_and_the_defaults_answer() {
    let app = configured_but_unheard("commands:\n  permissions:\n    freeze: owner\n").await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Question", "", "octocat");
    app.settle().await;
    app.comment(issue, "octocat", "/taskgate help").await;
    app.comment(issue, "octocat", "/taskgate help").await;
    app.settle().await;
    assert_eq!(app.bot_comments(issue).len(), 2, "both answered");
    let head = repo.branch_sha("main").unwrap();
    let said: Vec<_> = repo
        .check_runs()
        .into_iter()
        .filter(|c| c.head_sha == head)
        .map(|c| (c.name, c.conclusion.unwrap_or_default()))
        .collect();
    assert_eq!(
        said,
        [("taskgate/plan".to_owned(), "failure".to_owned())],
        "said once"
    );
    let record = recorded(&app).await;
    assert_eq!(record.config, None, "the defaults, recorded");
    app.assert_no_effect_failed().await;
}

#[tokio::test]
async fn a_failed_config_read_is_not_tried_again_for_every_comment_until_its_wait_has_passed() {
    const CONTENTS: &str = "GET /repos/{owner}/{repo}/contents/{path}";
    let app = configured_but_unheard(ADMIN_FREEZE).await;
    let config_reads = || {
        (app.fake.requests().iter())
            .filter(|r| r.method == "GET" && r.path.contains("/contents/.github/taskgate.yml"))
            .count()
    };
    // GitHub fails every read of the file while it is down.
    app.fake.inject(
        CONTENTS,
        fakehub::Fault::Status {
            status: 502,
            times: 1_000,
        },
    );
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Question", "", "octocat");
    app.settle().await;
    app.comment(issue, "octocat", "/taskgate help").await;
    app.settle().await;
    let after_first = config_reads();
    assert!(after_first >= 1, "the first comment asks GitHub");
    for _ in 0..3 {
        app.comment(issue, "octocat", "/taskgate help").await;
    }
    app.settle().await;
    assert_eq!(
        app.bot_comments(issue).len(),
        4,
        "each answered, with the fallback"
    );
    assert_eq!(config_reads(), after_first, "the comments after it do not");
    assert!(app
        .store()
        .repo_config(&repo_name())
        .await
        .unwrap()
        .is_none());

    // GitHub is back; the wait has passed: the next comment reads and
    // records the config, and follows it.
    app.fake.clear_faults();
    app.advance(std::time::Duration::from_millis(
        taskgate::app::sync::RETRY_READ_FIRST_MS as u64,
    ));
    insta::assert_snapshot!(maintainer_freezes(&app).await.join("\n"), @"@mia `/tg freeze` needs admin permission on the repository; @mia has maintain.");
    assert_eq!(recorded(&app).await.config.as_deref(), Some(ADMIN_FREEZE));
}
