//! Stories across repositories (issue 49, `docs/decisions/cross-repo.md`):
//! what plan sync does with a task's `repo:` today. A repository of another
//! owner, or outside the installation, is refused in the plan's check run
//! at its line with the fix; a reachable other repository is refused too,
//! as not supported yet; nothing is created anywhere. Naming the plan's own
//! repository is a plan like any other, and costs no extra read.

use crate::support::{TestApp, INSTALLATION, REPO};

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
