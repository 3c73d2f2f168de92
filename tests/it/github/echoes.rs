//! GitHub echoes taskgate's own writes (the fake sends every webhook of
//! every write, as GitHub does): each echo is handled for what it is, and
//! only work starts runs. One test per rule of `docs/architecture.md`
//! ("GitHub echoes taskgate's own writes"); each fails when its handling
//! is taken out.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use taskgate_core::ids::RepoName;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{fixture, metric, TestApp, INSTALLATION, REPO};

/// `check` first; `report` waits for it.
fn chain() -> String {
    Plan::story("Chained work")
        .task(Task::check())
        .task(
            Task::new("report", "Write the report")
                .depends_on("check")
                .runs("sh report.sh"),
        )
        .yaml()
}

fn repo_name() -> RepoName {
    RepoName::parse(REPO).unwrap()
}

async fn attempts(s: &Story, task: &str) -> usize {
    s.app
        .store()
        .attempts(
            &repo_name(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::parse(task).unwrap(),
        )
        .await
        .unwrap()
        .len()
}

/// Marks the task PR ready as its author would; auto review merges it.
async fn ready(s: &Story, pr: u64) {
    s.app.fake.repo(REPO).set_draft(pr, false, "agent");
    s.app.settle().await;
}

fn labels(s: &Story, issue: u64) -> Vec<String> {
    s.app.fake.repo(REPO).issue(issue).unwrap().labels
}

#[tokio::test]
async fn branches_taskgate_creates_come_back_as_pushes_and_start_nothing() {
    let s = Story::of(&chain()).start().await;
    let echoed: Vec<_> = s
        .app
        .fake
        .echo_log()
        .into_iter()
        .filter(|e| e.event == "push" && e.sender.ends_with("[bot]") && !e.redelivery)
        .collect();
    assert_eq!(
        echoed.len(),
        2,
        "the story's and the ready task's branches (the pending one has none yet)"
    );
    // No run, no check run, no pull request, no state change.
    assert_eq!(attempts(&s, "check").await, 0);
    assert_eq!(attempts(&s, "report").await, 0);
    let repo = s.app.fake.repo(REPO);
    assert!(repo.check_runs().is_empty(), "{:#?}", repo.check_runs());
    assert!(repo.pulls().is_empty());
    assert!(labels(&s, s.task_issue).contains(&"state:ready".to_owned()));
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn check_suite_requested_starts_nothing_the_push_of_the_commit_does() {
    let s = Story::of(&chain()).start().await;
    // A commit whose push has not been heard of (yet): GitHub's
    // check_suite.requested for it alone starts nothing.
    let sha = "1234567812345678123456781234567812345678";
    let repo = s.app.fake.repo(REPO);
    s.app
        .fake
        .without_echoes(|| repo.record_commit(&s.branch, sha, "work", &[("check.sh", "exit 0\n")]));
    let mut suite = fixture("check_suite/requested.1.json");
    suite["check_suite"]["head_branch"] = json!(s.branch);
    suite["check_suite"]["head_sha"] = json!(sha);
    suite["repository"]["full_name"] = json!(REPO);
    suite["installation"]["id"] = json!(INSTALLATION);
    assert_eq!(s.app.deliver("check_suite", &suite).await.0, 202);
    s.app.settle().await;
    assert_eq!(attempts(&s, "check").await, 0);
    assert!(s.checks(sha).is_empty());
    // "Re-run all checks" is a retry, of the head taskgate heard pushed
    // only: a commit it never heard of runs nothing, even asked by a
    // writer (`config_trust`).
    suite["action"] = json!("rerequested");
    suite["sender"]["login"] = json!("octocat");
    assert_eq!(s.app.deliver("check_suite", &suite).await.0, 202);
    s.app.settle().await;
    assert_eq!(attempts(&s, "check").await, 0);
}

#[tokio::test]
async fn a_pending_task_is_not_run_until_its_dependency_completes_then_its_work_is() {
    let s = Story::of(&chain()).backed().start().await;
    let repo = s.app.fake.repo(REPO);
    let report = repo
        .issues()
        .into_iter()
        .find(|i| i.title == "Write the report")
        .unwrap()
        .number;
    let branch = format!("taskgate/task-{report}-report");
    assert_eq!(repo.branch_sha(&branch), None, "no branch while pending");
    // An agent starts on the report early, on a branch of its own from
    // main, and its test fails meanwhile.
    let main = repo.branch_sha("main").unwrap();
    let early = s
        .origin
        .commit_from(&branch, &main, &[("report.sh", "exit 1\n")], "early");
    repo.push_commit(&branch, &early, "early", &[], "agent");
    s.app.settle().await;
    let checks = s.checks(&early);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0].name, "taskgate/acceptance");
    assert_eq!(checks[0].conclusion.as_deref(), Some("neutral"));
    let check_issue = s.task_issue;
    assert_eq!(
        checks[0].title.as_deref(),
        Some(format!("Not run: waiting for #{check_issue}").as_str())
    );
    assert_eq!(attempts(&s, "report").await, 0);
    assert!(labels(&s, report).contains(&"state:pending".to_owned()));
    let todos = repo
        .issues()
        .into_iter()
        .filter(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .count();
    assert_eq!(todos, 0, "no branch todo for a pending task");

    // The dependency passes and merges: the report's branch is brought up
    // to date (the story branch merged into it) and that head is tested.
    let from = repo.branch_sha(&s.branch).unwrap();
    let green = s
        .origin
        .commit_from(&s.branch, &from, &[("check.sh", "exit 0\n")], "check");
    repo.push_commit(&s.branch, &green, "check", &[], "agent");
    s.completed(&green, 1).await;
    ready(&s, s.pull().number).await;
    assert!(s.pull().merged);
    let head = repo.branch_sha(&branch).unwrap();
    assert_ne!(head, early, "the story branch was merged into it");
    assert_eq!(repo.file(&branch, "check.sh").as_deref(), Some("exit 0\n"));
    let runs = s.completed(&head, 1).await;
    assert_eq!(runs[0].name, "taskgate/test");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    // One update, one attempt: the early head is not queued as the
    // dependency completes, only the head brought up to date is.
    assert_eq!(attempts(&s, "report").await, 1);
    assert!(labels(&s, report).contains(&"state:test-failed".to_owned()));
    let body = repo.issue(report).unwrap().body.unwrap_or_default();
    assert!(
        body.contains("was brought up to date: the story branch"),
        "{body}"
    );
    s.app.assert_contract_kept();
}

/// GitHub does not promise the order of its webhooks: the `opened` of the
/// draft PR taskgate opened at the first head may arrive after the push
/// that moved the branch on. It is late, not news: the task keeps its
/// head, and the first head is not tested again.
#[tokio::test]
async fn a_pull_request_event_late_behind_a_newer_push_does_not_move_the_task_back() {
    let s = Story::of(&chain()).start().await;
    let first = s.push(&[("check.sh", "exit 1\n")], "first").await;
    s.completed(&first, 1).await;
    let repo = s.app.fake.repo(REPO);
    // The PR's `opened`, as GitHub built it at the first head.
    let opened = fakehub::payloads::pull_request("opened", &repo, s.pull().number);
    assert_eq!(opened["pull_request"]["head"]["sha"], first.as_str());
    let second = s.push(&[("check.sh", "exit 0\n")], "second").await;
    s.completed(&second, 1).await;

    assert_eq!(s.app.deliver("pull_request", &opened).await.0, 202);
    s.app.settle().await;
    assert_eq!(attempts(&s, "check").await, 2);
    assert_eq!(
        s.checks(&first).len(),
        1,
        "the first head is not tested again"
    );
    let record = s
        .app
        .store()
        .task_record(
            &repo_name(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::Task("check".into()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.head.map(|h| h.into_string()), Some(second));
}

#[tokio::test]
async fn the_draft_pr_is_asked_for_again_when_github_answered_no_commits_between() {
    let s = Story::of(&chain()).start().await;
    // GitHub does not see the pushed commit yet when asked for the PR.
    s.app.fake.inject(
        "POST /repos/{owner}/{repo}/pulls",
        fakehub::Fault::Unprocessable {
            message: format!("No commits between the story branch and {}", s.branch),
        },
    );
    let first = s.push(&[("check.sh", "exit 1\n")], "first").await;
    s.completed(&first, 1).await;
    assert!(s.app.fake.repo(REPO).pulls().is_empty());
    let failed: Vec<_> = s
        .app
        .store()
        .effects()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.status == taskgate::store::EffectStatus::Failed)
        .collect();
    assert!(failed.is_empty(), "not a failure: {failed:#?}");
    // The next push brings work again: the PR is opened then.
    let second = s.push(&[("check.sh", "exit 0\n")], "second").await;
    s.completed(&second, 1).await;
    let pr = s.pull();
    assert!(pr.draft);
    assert_eq!(pr.author, "taskgate-test[bot]");
}

#[tokio::test]
async fn a_ready_pr_opened_by_hand_after_the_head_went_green_is_merged() {
    let s = Story::of(&chain()).start().await;
    // taskgate's draft PR is refused, as above; the person opens one.
    s.app.fake.inject(
        "POST /repos/{owner}/{repo}/pulls",
        fakehub::Fault::Unprocessable {
            message: format!("No commits between the story branch and {}", s.branch),
        },
    );
    let green = s.push(&[("check.sh", "exit 0\n")], "works").await;
    s.completed(&green, 1).await;
    assert!(labels(&s, s.task_issue).contains(&"state:review".to_owned()));
    let repo = s.app.fake.repo(REPO);
    let story_branch = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
        .map(|i| format!("taskgate/story-{}", i.number))
        .unwrap();
    let pr = repo.create_pull(&s.branch, &story_branch, "The check", "agent");
    s.app.settle().await;
    let pull = repo.pulls().into_iter().find(|p| p.number == pr).unwrap();
    assert!(pull.merged, "adopted and merged: {pull:#?}");
    assert_eq!(s.checks(&green).len(), 1, "not tested again");
    assert!(labels(&s, s.task_issue).contains(&"state:completed".to_owned()));
}

/// Own echoes by `event.action` and whether they caused GitHub calls.
fn own_echoes(text: &str) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("taskgate_own_webhooks_total{") else {
            continue;
        };
        let (labels, n) = rest.split_once("} ").unwrap();
        let get = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap()
        };
        out.insert((get("event"), get("caused")), n.parse().unwrap());
    }
    out
}

#[tokio::test]
async fn taskgates_own_echoes_cause_no_write_and_its_merges_carry_the_story_on() {
    let s = Story::of(&chain()).start().await;
    let green = s.push(&[("check.sh", "exit 0\n")], "check").await;
    s.completed(&green, 1).await;
    ready(&s, s.pull().number).await;
    // The report is ready now: its branch is made from the story branch.
    let (_, branch) = s.app.task_and_branch("Write the report", "report");
    let report = s
        .push_to(&branch, &[("report.sh", "exit 0\n")], "report")
        .await;
    s.completed(&report, 1).await;
    let repo = s.app.fake.repo(REPO);
    let pr = repo.pulls().into_iter().find(|p| p.head == branch).unwrap();
    ready(&s, pr.number).await;
    assert!(repo
        .pulls()
        .iter()
        .all(|p| p.merged || p.head.starts_with("taskgate/story-")));

    let echoes = own_echoes(&s.app.metrics().await);
    let caused: Vec<_> = echoes
        .keys()
        .filter(|(_, caused)| caused == "writes")
        .map(|(event, _)| event.as_str())
        .collect();
    // Completing a task (and the story PR opened once every task is
    // complete, labelled when GitHub names it) is the only work they do.
    assert_eq!(
        caused,
        ["pull_request.closed", "pull_request.opened"],
        "{echoes:#?}"
    );
    let quiet: f64 = echoes
        .iter()
        .filter(|((_, c), _)| c == "none")
        .map(|(_, n)| n)
        .sum();
    assert!(quiet >= 10.0, "{echoes:#?}");
    assert!(
        metric(
            &s.app.metrics().await,
            "taskgate_own_webhooks_total{event=\"pull_request.closed\",caused=\"writes\"}"
        ) >= 2.0
    );
}

#[tokio::test]
async fn an_echo_redelivered_or_duplicated_costs_no_write() {
    let s = Story::of(&chain()).start().await;
    let green = s.push(&[("check.sh", "exit 0\n")], "check").await;
    s.completed(&green, 1).await;
    ready(&s, s.pull().number).await;
    let writes = s.app.fake.writes().len();

    let log = s.app.fake.hook_deliveries();
    let mut again = 0;
    for d in &log {
        let detail = s.app.fake.hook_delivery(d["id"].as_u64().unwrap()).unwrap();
        let payload: Value = detail["request"]["payload"].clone();
        if !payload["sender"]["login"]
            .as_str()
            .is_some_and(|l| l.ends_with("[bot]"))
        {
            continue;
        }
        let event = d["event"].as_str().unwrap();
        // GitHub's redelivery keeps the id: answered as a duplicate.
        let guid = d["guid"].as_str().unwrap();
        assert_eq!(s.app.deliver_as(event, guid, &payload).await.0, 200);
        // The same body under a new id is a replay (issue 45): a
        // duplicate as well.
        assert_eq!(s.app.deliver(event, &payload).await.0, 200);
        again += 1;
    }
    s.app.settle().await;
    assert!(again >= 10, "{again} echoes replayed");
    let extra: Vec<_> = s.app.fake.writes()[writes..].to_vec();
    assert!(extra.is_empty(), "{extra:#?}");
}

#[tokio::test]
async fn reads_that_lag_writes_are_retried_without_failing_or_duplicating() {
    // Retries spread over ~2.7 s (20 ms doubling to 200 ms, 16 tries),
    // well past the lag below. The lag is long enough that the links,
    // which a pass makes once every issue is made, meet it however busy
    // the machine (at 300 ms a slow pass came after it: nothing lagged).
    let app = TestApp::start_with(|c| c.backoff.max_attempts = 16).await;
    // For a moment after each write, GitHub's reads do not show it: a
    // just-created issue cannot be linked as a sub-issue yet.
    app.fake.set_read_lag(Duration::from_millis(1_000));
    app.push_to_main(&[(
        ".taskgate/stories/momentum.yml",
        include_str!("../../../fixtures/plans/momentum.yml"),
    )])
    .await;
    let repo = app.fake.repo(REPO);
    let issues = repo.issues();
    assert_eq!(issues.len(), 5, "each issue once");
    let story = issues
        .iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
        .unwrap();
    let linked = issues.iter().filter(|i| i.parent.is_some()).count();
    assert_eq!(linked, 4, "every task linked under its parent");
    assert!(issues.iter().filter(|i| i.parent == Some(story.id)).count() >= 2);
    let effects = app.store().effects().await.unwrap();
    let failed: Vec<_> = effects
        .iter()
        .filter(|e| e.status == taskgate::store::EffectStatus::Failed)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let lagged = app
        .fake
        .requests()
        .iter()
        .filter(|r| r.status == 404 && r.path.ends_with("/sub_issues"))
        .count();
    assert!(lagged > 0, "the lag was met");
    app.assert_contract_kept();
}
