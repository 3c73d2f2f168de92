//! GitHub's lists lag its writes, and an answer can be lost after GitHub
//! applied the write (a proxy's 502). GitHub has no idempotency key: a
//! retry finds what its earlier attempt made by the marker in a list
//! (`GET .../issues`, an issue's comments, a workflow's runs), and must
//! not read that list before it can show the write. Each test loses the
//! answer of one create while the fake's lists lag, and proves the object
//! is made once; each fails when the retry does not wait out the lag
//! (`src/github/lag.rs`, `docs/decisions/reads-that-lag.md`).

use std::time::Duration;

use fakehub::Fault;

use crate::support::plan::{Plan, Task};
use crate::support::{eventually, TestApp, REPO};

/// How long the fake's lists lag its writes in these tests: real time,
/// passing by itself while the tests wait on the fake's records.
const LAG: Duration = Duration::from_millis(600);

/// taskgate's wait for GitHub's lists, a margin above the lag; link
/// retries that meet a lagging issue (20 ms doubling to 200 ms) are
/// allowed well past it.
async fn app() -> TestApp {
    TestApp::start_with(|c| {
        c.backoff.read_lag = LAG * 2;
        c.backoff.max_attempts = 40;
    })
    .await
}

fn plan() -> String {
    Plan::story("Lagging lists")
        .task(Task::new("one", "First task").runs("true").no_timeout())
        .task(Task::new("two", "Second task").runs("true").no_timeout())
        .yaml()
}

#[tokio::test]
async fn an_issue_whose_answer_was_lost_is_made_once_while_the_issue_list_lags() {
    let app = app().await;
    app.fake.set_read_lag(LAG);
    // GitHub opens the story issue, then the answer is lost: the retry
    // looks for its marker in a list that does not show it yet.
    app.fake.inject(
        "POST /repos/{owner}/{repo}/issues",
        Fault::StatusAfterApply { status: 502 },
    );
    app.push_to_main(&[(".taskgate/stories/lag.yml", plan().as_str())])
        .await;
    let titles: Vec<String> = app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .map(|i| i.title)
        .collect();
    assert_eq!(titles.len(), 3, "each issue once: {titles:#?}");
    assert_eq!(
        app.statuses("POST /repos/{owner}/{repo}/issues"),
        [502, 201, 201],
        "the lost create was not sent again"
    );
}

#[tokio::test]
async fn a_reply_whose_answer_was_lost_is_posted_once_while_the_comment_list_lags() {
    let app = app().await;
    app.push_to_main(&[(".taskgate/stories/lag.yml", plan().as_str())])
        .await;
    let story = app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
        .unwrap()
        .number;
    let before = app.bot_comments(story).len();
    app.fake.set_read_lag(LAG);
    app.fake.inject(
        "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
        Fault::StatusAfterApply { status: 502 },
    );
    app.comment(story, "octocat", "/taskgate help").await;
    app.settle().await;
    let replies = app.bot_comments(story).len() - before;
    assert_eq!(replies, 1, "{:#?}", app.bot_comments(story));
    assert_eq!(
        app.statuses("POST /repos/{owner}/{repo}/issues/{issue_number}/comments")
            .last(),
        Some(&502),
        "the lost reply was not sent again"
    );
}

fn actions_plan() -> String {
    Plan::story("Checked work").task(Task::check()).yaml()
}

#[tokio::test]
async fn a_dispatch_whose_answer_was_lost_starts_one_run_while_the_run_list_lags() {
    let app = app().await;
    let repo = app.fake.repo(REPO);
    repo.add_workflow("taskgate-run.yml");
    app.push_to_main(&[
        (".github/taskgate.yml", "runner: actions\n"),
        (".taskgate/stories/checks.yml", actions_plan().as_str()),
    ])
    .await;
    let (_, branch) = app.task_and_branch("Make the check pass", "check");
    app.fake.set_read_lag(LAG);
    app.fake.inject(
        "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
        Fault::StatusAfterApply { status: 502 },
    );
    let sha = "a".repeat(40);
    repo.push_commit(&branch, &sha, "work", &[("check.sh", "exit 0\n")], "agent");
    eventually("the runner workflow is dispatched", || async {
        !repo.dispatches().is_empty()
    })
    .await;
    app.settle().await;
    assert_eq!(repo.dispatches().len(), 1, "{:#?}", repo.dispatches());
}
