//! A pull request that adds or changes a plan gets a `taskgate/plan` check
//! run on its head: the problems the default branch's sync would report
//! (line, column and JSON pointer), or what merging would create; nothing
//! is created until it merges (issue 48 item 3).

use crate::plan::sync::plan_fixture;
use crate::support::{TestApp, REPO};

const PLAN_PATH: &str = ".taskgate/stories/momentum.yml";

/// The `taskgate/plan` check run on `sha`, once written.
fn plan_check(app: &TestApp, sha: &str) -> Option<fakehub::CheckRun> {
    app.fake
        .repo(REPO)
        .check_runs()
        .into_iter()
        .rev()
        .find(|r| r.name == "taskgate/plan" && r.head_sha == sha)
}

/// Issues other than pull requests.
fn issues(app: &TestApp) -> usize {
    app.fake
        .repo(REPO)
        .issues()
        .iter()
        .filter(|i| !i.is_pull_request)
        .count()
}

fn shown(run: &fakehub::CheckRun) -> String {
    format!(
        "{:?}: {}\n\n{}",
        run.conclusion,
        run.title.as_deref().unwrap_or_default(),
        run.summary.as_deref().unwrap_or_default()
    )
}

#[tokio::test]
async fn a_pull_request_changing_a_plan_is_checked_on_its_head_and_nothing_is_created_until_it_merges(
) {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let good = plan_fixture("momentum.yml");
    let head = repo.push_files("plan", &[(PLAN_PATH, &good)], "Plan it", "alice");
    let number = repo.create_pull("plan", "main", "Plan momentum", "alice");
    app.settle().await;

    let run = plan_check(&app, &head).expect("taskgate/plan on the pull request's head");
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    insta::assert_snapshot!("would_create", shown(&run));
    assert_eq!(issues(&app), 0, "nothing is created before the merge");

    // A typo pushed to the pull request: refused on the new head, with the
    // place the default branch's sync would name.
    let bad = good.replace("depends_on: [data]", "depends_on: [dta]");
    let head = repo.push_files("plan", &[(PLAN_PATH, &bad)], "Typo", "alice");
    app.settle().await;
    let run = plan_check(&app, &head).expect("taskgate/plan on the new head");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    insta::assert_snapshot!("refused", shown(&run));
    assert_eq!(run.annotations[0]["path"], PLAN_PATH);
    assert_eq!(issues(&app), 0);

    // Fixed and merged: now the story is created, as the check run said.
    let head = repo.push_files("plan", &[(PLAN_PATH, &good)], "Fix", "alice");
    app.settle().await;
    assert_eq!(
        plan_check(&app, &head)
            .and_then(|r| r.conclusion)
            .as_deref(),
        Some("success")
    );
    assert_eq!(issues(&app), 0);
    repo.merge_pull(number, "alice");
    app.settle().await;
    assert_eq!(issues(&app), 5, "the story and its four tasks");
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_pull_request_that_touches_no_plan_gets_no_plan_check() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let head = repo.push_files("docs", &[("README.md", "hello\n")], "Docs", "alice");
    repo.create_pull("docs", "main", "Docs", "alice");
    app.settle().await;
    assert!(plan_check(&app, &head).is_none());
}
