//! Stories across repositories (issue 49, `docs/decisions/cross-repo.md`):
//! what plan sync does with a task's `repo:` today. A repository of another
//! owner, or outside the installation, is refused in the plan's check run
//! at its line with the fix; a reachable other repository is refused too,
//! as not supported yet; nothing is created anywhere. Naming the plan's own
//! repository is a plan like any other, and costs no extra read.

use crate::support::{queue_effects, TestApp, INSTALLATION, REPO};

const PLAN_PATH: &str = ".taskgate/stories/checkout.yml";

/// `octo-org/web` in the test installation, `octo-org/docs` outside it,
/// `other/lib` in another owner's installation.
fn other_repositories(app: &TestApp) -> [&'static str; 3] {
    app.fake.install(INSTALLATION, "octo-org/web");
    app.fake.repo("octo-org/docs").make_private();
    app.fake.install(INSTALLATION + 1, "other/lib");
    ["octo-org/web", "octo-org/docs", "other/lib"]
}

const PLAN: &str = "\
story: Checkout v2
tasks:
  - id: api
    title: Payment intents endpoint
    acceptance: { tests: ['cargo test payments'] }
  - id: web
    title: Checkout page uses payment intents
    repo: octo-org/web
    depends_on: [api]
    acceptance: { tests: ['npm test'] }
  - id: docs
    title: Checkout docs
    repo: octo-org/docs
    requires_testing: false
  - id: lib
    title: Shared money type
    repo: other/lib
    acceptance: { tests: ['make test'] }
";

#[tokio::test]
async fn a_task_repository_outside_the_installation_or_the_owner_is_refused_in_the_plan_and_nothing_is_created(
) {
    let app = TestApp::start().await;
    let others = other_repositories(&app);
    app.push_to_main(&[(PLAN_PATH, PLAN)]).await;

    let repo = app.fake.repo(REPO);
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(
        (run.name.as_str(), run.conclusion.as_deref()),
        ("taskgate/plan", Some("failure"))
    );
    let lines: Vec<(&str, u64)> = run
        .annotations
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap(),
                a["start_line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines, [(PLAN_PATH, 8), (PLAN_PATH, 13), (PLAN_PATH, 17)]);
    insta::assert_snapshot!(run.summary.as_deref().unwrap());
    // Nothing created, here or there: the one write is the check run.
    for name in std::iter::once(REPO).chain(others) {
        let r = app.fake.repo(name);
        assert!(r.issues().is_empty(), "{name}: {:?}", r.issues());
    }
    let writes: Vec<String> = app
        .fake
        .writes()
        .into_iter()
        .filter(|w| !w.path.starts_with("/app/"))
        .map(|w| format!("{} {}", w.method, w.path))
        .collect();
    assert_eq!(writes, [format!("POST /repos/{REPO}/check-runs")]);
    let asked: Vec<_> = app
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/installation/repositories")
        .collect();
    assert_eq!(asked.len(), 1, "the installation's repositories, read once");
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_plan_in_a_comment_naming_another_repository_is_answered_and_nothing_is_created() {
    let app = TestApp::start().await;
    other_repositories(&app);
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Checkout", "Let us plan it.", "octocat");
    app.comment(
        issue,
        "octocat",
        &format!("/taskgate plan\n\n```yaml\n{PLAN}```\n"),
    )
    .await;
    app.settle().await;

    assert_eq!(repo.issues().len(), 1, "only the commented issue");
    assert_eq!(repo.issue(issue).unwrap().title, "Checkout");
    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 1, "{replies:?}");
    // The reply without its hidden marker (it names the comment's id).
    insta::assert_snapshot!(replies[0].split("<!--").next().unwrap().trim_end());
    app.assert_contract_kept();
}

#[tokio::test]
async fn naming_the_plans_own_repository_is_a_plan_like_any_other() {
    let app = TestApp::start().await;
    let plan = "story: Checkout v2\ntasks:\n  - id: api\n    repo: Octo-Org/Hello-World\n    acceptance: { tests: ['cargo test'] }\n";
    app.push_to_main(&[(PLAN_PATH, plan)]).await;

    let repo = app.fake.repo(REPO);
    let titles: Vec<String> = repo.issues().into_iter().map(|i| i.title).collect();
    assert_eq!(titles, ["Checkout v2", "api"]);
    assert!(
        !app.fake
            .requests()
            .iter()
            .any(|r| r.path == "/installation/repositories"),
        "a plan naming no other repository asks nothing more"
    );
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_pull_request_adding_such_a_plan_is_refused_on_its_head_as_the_sync_would() {
    let app = TestApp::start().await;
    other_repositories(&app);
    let repo = app.fake.repo(REPO);
    let head = repo.push_files("plan", &[(PLAN_PATH, PLAN)], "Plan checkout", "alice");
    repo.create_pull("plan", "main", "Plan checkout", "alice");
    app.settle().await;

    let run = repo
        .check_runs()
        .into_iter()
        .find(|r| r.name == "taskgate/plan" && r.head_sha == head)
        .expect("taskgate/plan on the pull request's head");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    insta::assert_snapshot!(run.summary.as_deref().unwrap());
    assert_eq!(run.annotations.len(), 3);
    assert!(repo.issues().iter().all(|i| i.is_pull_request));
    app.assert_contract_kept();
}

/// Opens an issue in `repo` as the App, labelled `label`, carrying `key`.
fn made_by_the_app(app: &TestApp, repo: &str, label: &str, key: &str) -> u64 {
    let bot = format!("{}[bot]", app.fake.app_slug());
    let handle = app.fake.repo(repo);
    let body = format!("Made by taskgate.\n\n{}", taskgate_core::hidden_marker(key));
    let number = handle.create_issue("Made", &body, &bot);
    handle.add_labels(number, &[label], &bot);
    number
}

#[tokio::test]
async fn resync_of_a_part_repository_keeps_another_homes_issues_apart_from_its_own_stories() {
    use taskgate_core::ids::RepoName;
    use taskgate_core::plan::TaskId;
    use taskgate_core::story::{labels, Marker, Placed};

    let app = TestApp::start().await;
    app.fake.install(INSTALLATION, "octo-org/web");
    let (home, web) = (
        RepoName::parse(REPO).unwrap(),
        RepoName::parse("octo-org/web").unwrap(),
    );
    // In octo-org/web: a task of hello-world's story `file:checkout`, with
    // its branch, and web's own story of the same key.
    let story = || "file:checkout".into();
    let part = Placed::in_part(
        Marker::Task {
            story: story(),
            task: TaskId::new("web"),
        },
        &home,
    );
    let own = Marker::Story { story: story() };
    let n = made_by_the_app(&app, web.as_str(), labels::TASK, &part.key());
    made_by_the_app(&app, web.as_str(), labels::STORY, &own.key());
    let branch = format!("taskgate/task-{n}-web");
    (app.fake.repo(web.as_str())).push_files(&branch, &[("w.txt", "w")], "Work", "alice");

    let creds = taskgate::github::AppCredentials::from_pem(
        app.fake.app_id(),
        fakehub::FakeGitHub::private_key_pem(),
    )
    .unwrap();
    let github = taskgate::github::GitHubApp::new(&app.fake.url(), creds);
    let found = taskgate::app::resync::resync(&github, app.store(), &web)
        .await
        .unwrap();
    assert_eq!((found.issues, found.branches), (2, 1), "{found:?}");
    let store = app.store();
    let record = store.issue_record(&web, &part.key()).await.unwrap();
    assert_eq!(
        record.map(|r| r.number.get()),
        Some(n),
        "filed under its home"
    );
    // Web's own story does not take the other home's task for its own.
    let mine = store.story_issues(&web, &story()).await.unwrap();
    assert_eq!(mine.keys().collect::<Vec<_>>(), [&own.key()]);
}

/// A database of its own, kept alive as long as the test: effects are
/// queued in it before the server starts, so no processor races the queue.
struct Database {
    url: String,
    _dir: tempfile::TempDir,
    _postgres: Option<pgtest::PgDatabase<'static>>,
}

fn database() -> Database {
    let dir = tempfile::tempdir().unwrap();
    if crate::support::on_postgres() {
        let pg = pgtest::fresh_database();
        return Database {
            url: pg.url().to_owned(),
            _dir: dir,
            _postgres: Some(pg),
        };
    }
    Database {
        url: format!("sqlite://{}", dir.path().join("taskgate.db").display()),
        _dir: dir,
        _postgres: None,
    }
}

/// Opens an issue in `repo` as the App, labelled `label`, carrying `key`,
/// and records it as the executor would have.
async fn made_and_recorded(
    fake: &fakehub::FakeGitHub,
    store: &taskgate::store::Store,
    (repo, label, key): (&str, &str, &str),
) -> u64 {
    use taskgate_core::ids::{IssueId, IssueNumber, RepoName};
    let bot = format!("{}[bot]", fake.app_slug());
    let handle = fake.repo(repo);
    let body = format!("Made by taskgate.\n\n{}", taskgate_core::hidden_marker(key));
    let number = handle.create_issue("Made", &body, &bot);
    handle.add_labels(number, &[label], &bot);
    let issue = handle.issue(number).unwrap();
    let record = taskgate_core::sync::IssueRecord {
        number: IssueNumber::new(number),
        id: IssueId::new(issue.id),
        title: issue.title,
        body: issue.body.unwrap_or_default(),
        labels: issue.labels.into_iter().collect(),
        open: true,
        parent: None,
        blocked_by: Default::default(),
    };
    let repo = RepoName::parse(repo).unwrap();
    store.put_issue_record(&repo, key, record).await.unwrap();
    number
}

/// Queues `effects` as the decision on one delivery.
#[tokio::test]
async fn a_sub_issue_and_a_blocker_in_another_repository_are_linked_by_their_ids() {
    use taskgate_core::ids::RepoName;
    use taskgate_core::plan::TaskId;
    use taskgate_core::story::{labels, Marker, Placed};
    use taskgate_core::Effect;

    let fake = fakehub::FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    fake.install(INSTALLATION, "octo-org/web");
    let (home, web) = (
        RepoName::parse(REPO).unwrap(),
        RepoName::parse("octo-org/web").unwrap(),
    );
    let task = |id: &str| Marker::Task {
        story: "file:checkout".into(),
        task: TaskId::new(id),
    };
    // The story and its `api` task here; its `web` task in octo-org/web.
    let story_key = Marker::Story {
        story: "file:checkout".into(),
    }
    .key();
    let api_key = task("api").key();
    let web_key = Placed::in_part(task("web"), &home).key();
    let db = database();
    let store = taskgate::store::Store::open_url(&db.url).unwrap();
    let story = made_and_recorded(&fake, &store, (REPO, labels::STORY, &story_key)).await;
    let api = made_and_recorded(&fake, &store, (REPO, labels::TASK, &api_key)).await;
    let web_task = (made_and_recorded(&fake, &store, (web.as_str(), labels::TASK, &web_key))).await;
    let effects = vec![
        Effect::LinkSubIssue {
            repo: home.clone(),
            parent: story_key.clone(),
            child: web_key.clone(),
            replace_parent: false,
            child_repo: Some(web.clone()),
        },
        Effect::AddBlockedBy {
            repo: web.clone(),
            marker: web_key.clone(),
            blocker: api_key.clone(),
            blocker_repo: Some(home.clone()),
        },
    ];
    queue_effects(&store, INSTALLATION, "cross-repo-links", effects).await;
    drop(store);
    let url = db.url.clone();
    let app = TestApp::with_config(fake, move |c| c.database_url = url).await;
    app.settle().await;

    app.assert_no_effect_failed().await;
    let (here, there) = (app.fake.repo(REPO), app.fake.repo(web.as_str()));
    let linked = there.issue(web_task).unwrap();
    assert_eq!(linked.parent, Some(here.issue(story).unwrap().id));
    assert_eq!(linked.blocked_by, vec![here.issue(api).unwrap().id]);
    // Recorded on the web task, in its repository, by the keys linked.
    let record = app
        .store()
        .issue_record(&web, &web_key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.parent.as_deref(), Some(story_key.as_str()));
    assert!(record.blocked_by.contains(&api_key), "{record:?}");
}
