//! Acceptance runs end to end: pushes to a task branch are fetched from a
//! real git repository by the local runner, run under their timeouts, and
//! reported as check runs on the fake GitHub; the task's state follows.

use fakehub::payloads;
use serde_json::{json, Value};

use crate::support::hold::Hold;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{eventually, metric, REPO};

fn plan() -> String {
    Plan::story("Checked work")
        .task(Task::check().runs("sh lint.sh").gate("lint"))
        .task(Task::new("other", "Other work").runs("sh other.sh"))
        .yaml()
}

fn conclusion(runs: &[fakehub::CheckRun], name: &str) -> String {
    runs.iter()
        .find(|c| c.name == name)
        .and_then(|c| c.conclusion.clone())
        .unwrap_or_else(|| panic!("no completed {name} in {runs:#?}"))
}

#[tokio::test]
async fn a_failing_push_then_a_fix_then_ready_for_review_merges_the_task() {
    let s = Story::of(&plan()).start().await;
    let red = s
        .push(
            &[
                ("check.sh", "echo 'expected 10 rows, got 0' >&2; exit 1\n"),
                ("lint.sh", "exit 0\n"),
            ],
            "first try",
        )
        .await;
    let runs = s.completed(&red, 2).await;
    assert_eq!(conclusion(&runs, "taskgate/test"), "failure");
    assert_eq!(conclusion(&runs, "taskgate/lint"), "success");
    let test = runs.iter().find(|c| c.name == "taskgate/test").unwrap();
    assert!(
        test.title.as_deref().unwrap().contains("1 failed"),
        "{test:#?}"
    );
    assert!(
        test.text.as_deref().unwrap().contains("expected 10 rows"),
        "the log is in the check run"
    );
    assert_eq!(test.actions.len(), 1, "a Retry button");
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));
    // The first push opened a draft PR into the story branch.
    let pr = s.pull();
    assert!(pr.draft);
    assert!(pr.base.starts_with("taskgate/story-"), "{}", pr.base);

    // GitHub also sends pull_request.synchronize and check_suite for the
    // same head: the commit is not run twice.
    let green = s.push(&[("check.sh", "exit 0\n")], "fix").await;
    let runs = s.completed(&green, 2).await;
    assert!(runs
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
    assert!(s.task_labels().contains(&"state:review".to_owned()));
    assert!(!s.pull().merged, "a draft is not merged");

    // Ready for review: proven already, so merged (auto review) at once.
    let repo = s.app.fake.repo(REPO);
    repo.set_draft(pr.number, false, "agent");
    s.app.settle().await;
    assert!(s.pull().merged);
    assert_eq!(s.checks(&green).len(), 2, "no re-run before merging");
    let issue = repo.issue(s.task_issue).unwrap();
    assert_eq!(issue.state, "closed");
    assert!(issue.labels.contains(&"state:completed".to_owned()));

    // Every attempt is stored with its report.
    let story = "file:checks";
    let attempts = s
        .app
        .store()
        .attempts(
            &taskgate_core::ids::RepoName::parse(REPO).unwrap(),
            &taskgate_core::ids::StoryId::new(story),
            &taskgate_core::task::RunSubject::Task("check".into()),
        )
        .await
        .unwrap();
    let statuses: Vec<&str> = attempts.iter().map(|a| a.status.as_str()).collect();
    assert_eq!(statuses, ["passed", "failed"]);
    assert!(attempts
        .iter()
        .all(|a| a.report.is_some() && a.finished_ms.is_some()));
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_newer_push_cancels_the_running_attempt_and_kills_its_processes() {
    let s = Story::of(&plan()).start().await;
    // The first attempt waits at a hold nobody releases: only a kill ends
    // it before its timeout.
    let hold = Hold::new();
    let held = format!("{}\n", hold.wait());
    let first = s
        .push(&[("check.sh", &held), ("lint.sh", "exit 0\n")], "held")
        .await;
    hold.until_held().await;
    let second = s.push(&[("check.sh", "exit 0\n")], "fast").await;
    let runs = s.completed(&first, 2).await;
    assert!(
        runs.iter()
            .all(|c| c.conclusion.as_deref() == Some("cancelled")),
        "{runs:#?}"
    );
    let runs = s.completed(&second, 2).await;
    assert!(runs
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
    // The superseded process group was killed, not left to wait.
    eventually("the first attempt's processes are gone", || async {
        !hold.is_held()
    })
    .await;
}

#[tokio::test]
async fn a_commit_that_no_longer_exists_is_reported_as_not_run() {
    let s = Story::of(&plan()).start().await;
    let repo = s.app.fake.repo(REPO);
    // GitHub knows the commit, the git remote does not (force-pushed away).
    let gone = "0123456789abcdef0123456789abcdef01234567";
    repo.push_commit(
        &s.branch,
        gone,
        "gone",
        &[("check.sh", "exit 0\n")],
        "agent",
    );
    let runs = s.completed(gone, 2).await;
    for run in &runs {
        assert_eq!(run.conclusion.as_deref(), Some("cancelled"));
        assert_eq!(run.title.as_deref(), Some("Not run"));
        assert!(run.summary.as_deref().unwrap().contains(gone));
    }
    assert!(s.task_labels().contains(&"state:testing".to_owned()));
}

#[tokio::test]
async fn retry_by_button_by_rerun_and_by_command_runs_again() {
    let s = Story::of(&plan()).start().await;
    let sha = s
        .push(&[("check.sh", "exit 1\n"), ("lint.sh", "exit 0\n")], "red")
        .await;
    let runs = s.completed(&sha, 2).await;
    let repo = s.app.fake.repo(REPO);
    let test = runs.iter().find(|c| c.name == "taskgate/test").unwrap();

    // The Retry button: only that gate runs again.
    let pressed = payloads::check_run_requested_action(&repo, test.id, "retry", "octocat");
    assert_eq!(s.app.deliver("check_run", &pressed).await.0, 202);
    let runs = s.completed(&sha, 3).await;
    assert_eq!(runs.iter().filter(|c| c.name == "taskgate/test").count(), 2);

    // A reader's click runs nothing: the button needs `retry`'s permission.
    s.app.fake.add_user("bob", 77, "read");
    let by_reader = payloads::check_run_requested_action(&repo, test.id, "retry", "bob");
    assert_eq!(s.app.deliver("check_run", &by_reader).await.0, 202);
    s.app.settle().await;
    assert_eq!(s.checks(&sha).len(), 3);

    // "Re-run" on GitHub, by octocat.
    let mut rerun = payloads::check_run("rerequested", &repo, test.id);
    rerun["sender"]["login"] = json!("octocat");
    assert_eq!(s.app.deliver("check_run", &rerun).await.0, 202);
    s.completed(&sha, 4).await;

    // `/taskgate retry` on the task issue: every gate, and a +1.
    s.app
        .comment(s.task_issue, "octocat", "/taskgate retry")
        .await;
    s.completed(&sha, 6).await;
    // An unknown gate is refused with a reply, nothing runs.
    s.app
        .comment(s.task_issue, "octocat", "/taskgate retry nosuchgate")
        .await;
    s.app.settle().await;
    assert_eq!(s.checks(&sha).len(), 6);
    let replies = s.app.bot_comments(s.task_issue);
    assert!(
        replies.iter().any(|c| c.contains("no gate `nosuchgate`")),
        "{replies:#?}"
    );
    // Another app's check run is not ours to re-run.
    let mut foreign = payloads::check_run("rerequested", &repo, test.id);
    foreign["sender"]["login"] = json!("octocat");
    foreign["check_run"]["app"]["id"] = json!(999_999);
    assert_eq!(s.app.deliver("check_run", &foreign).await.0, 202);
    s.app.settle().await;
    assert_eq!(s.checks(&sha).len(), 6);
}

#[tokio::test]
async fn runs_beyond_the_limit_wait_and_their_check_runs_say_so() {
    let s = Story::of(&plan()).runners(1).start().await;
    let other = s
        .app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .find(|i| i.title == "Other work")
        .unwrap();
    let other_branch = format!("taskgate/task-{}-other", other.number);
    // The first run holds the only runner until the test lets it go.
    let hold = Hold::new();
    let held = format!("{}\n", hold.wait());
    let first = s
        .push(&[("check.sh", &held), ("lint.sh", "exit 0\n")], "held")
        .await;
    hold.until_held().await;
    let second = s
        .push_to(&other_branch, &[("other.sh", "exit 0\n")], "other")
        .await;
    eventually("the waiting run says so", || async {
        s.checks(&second)
            .iter()
            .any(|c| c.title.as_deref() == Some("Queued behind 1 run"))
    })
    .await;
    assert!(s.checks(&second).iter().all(|c| c.status == "queued"));
    hold.release();
    let runs = s.completed(&first, 2).await;
    assert_eq!(conclusion(&runs, "taskgate/test"), "success", "released");
    let runs = s.completed(&second, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
}

#[tokio::test]
async fn a_pull_request_from_a_fork_is_not_run() {
    let s = Story::of(&plan()).start().await;
    let repo = s.app.fake.repo(REPO);
    let sha = s.push(&[("check.sh", "exit 0\n")], "work").await;
    s.completed(&sha, 2).await;
    let number = s.pull().number;
    // A fork is told apart by the repository's id, not its name (a name
    // can be taken again), and a deleted fork's head repository is null.
    let mut same_name = payloads::pull_request("synchronize", &repo, number);
    same_name["pull_request"]["head"]["repo"]["id"] = json!(repo.id() + 1000);
    let mut deleted_fork = payloads::pull_request("synchronize", &repo, number);
    deleted_fork["pull_request"]["head"]["repo"] = Value::Null;
    for mut payload in [same_name, deleted_fork] {
        payload["pull_request"]["head"]["sha"] = json!(sha);
        assert_eq!(s.app.deliver("pull_request", &payload).await.0, 202);
        s.app.settle().await;
    }
    let neutral: Vec<_> = s
        .checks(&sha)
        .into_iter()
        .filter(|c| c.name == "taskgate/acceptance")
        .collect();
    assert_eq!(neutral.len(), 2);
    assert!(neutral
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("neutral")));
    assert!(neutral[0].summary.as_deref().unwrap().contains("forks"));
}

#[tokio::test]
async fn a_local_run_counts_its_commands_time_and_the_runners_overhead_apart() {
    let s = Story::of(&plan()).start().await;
    let sha = s
        .push(
            // allowed sleep: a command that takes a second, the time
            // measured here (the command's own, not a wait for anything).
            &[("check.sh", "sleep 1\n"), ("lint.sh", "exit 0\n")],
            "slow",
        )
        .await;
    s.completed(&sha, 2).await;
    let text = s.app.metrics().await;
    assert_eq!(
        metric(
            &text,
            "taskgate_runner_overhead_seconds_count{runner=\"local\"}"
        ),
        1.0
    );
    let commands = metric(
        &text,
        "taskgate_run_seconds_total{runner=\"local\",part=\"commands\"}",
    );
    let overhead = metric(
        &text,
        "taskgate_run_seconds_total{runner=\"local\",part=\"overhead\"}",
    );
    assert!((1.0..30.0).contains(&commands), "{commands}");
    // Fetching and checking out a commit takes some time, never none.
    assert!(overhead > 0.0, "{overhead}");
    assert_eq!(
        metric(
            &text,
            "taskgate_runner_overhead_seconds_sum{runner=\"local\"}"
        ),
        overhead
    );
}
