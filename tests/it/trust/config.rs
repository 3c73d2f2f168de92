//! Settings that can't be sidestepped (issue 28, items 2, 3 and 8): every
//! command, wherever it is written, follows the repository's config; a
//! push that changes only `.github/taskgate.yml` governs the next decision
//! of every existing story; "Re-run all checks" is held to what
//! `/taskgate retry` is.

use serde_json::json;
use taskgate_core::ids::RepoName;

use crate::support::plan::{Plan, Task};
use crate::support::shipped::Shipped;
use crate::support::story::Story;
use crate::support::{fixture, INSTALLATION, REPO};

fn one_task() -> String {
    Plan::story("Checked work").task(Task::check()).yaml()
}

fn repo_name() -> RepoName {
    RepoName::parse(REPO).unwrap()
}

#[tokio::test]
async fn commands_the_config_reserves_for_admins_are_refused_to_a_maintainer_on_a_story_pr_and_a_plain_issue(
) {
    let config = "deploy_workflow: deploy.yml\ncommands:\n  prefix: /tg\n  short_form: false\n  permissions:\n    ship: admin\n    rollback: admin\n    freeze: admin\n";
    // octocat maintains the repository: enough for the defaults, not for
    // this config.
    let sh = Shipped::story().config(config).shippable().await;
    let app = &sh.s.app;
    let story_pr = sh.story_pr().unwrap().number;
    app.comment(story_pr, "octocat", "/tg ship").await;
    app.comment(sh.story_issue, "octocat", "/tg rollback").await;
    let plain = app
        .fake
        .repo(REPO)
        .create_issue("Release 2.0", "Tracking the release.", "octocat");
    app.settle().await;
    app.comment(plain, "octocat", "/tg freeze release 2.0")
        .await;
    app.settle().await;

    let refused =
        [story_pr, sh.story_issue, plain].map(|n| app.replies_to(n, "octocat").join("\n"));
    insta::assert_snapshot!(refused.join("\n"), @r"
    @octocat `/tg ship` needs admin permission on the repository; @octocat has maintain.
    @octocat `/tg rollback` needs admin permission on the repository; @octocat has maintain.
    @octocat `/tg freeze` needs admin permission on the repository; @octocat has maintain.
    ");
    assert_eq!(sh.merges(), 0, "nothing shipped");
    assert_eq!(app.store().repo_freeze(&repo_name()).await.unwrap(), None);

    // An admin may, with the configured prefix, on the plain issue.
    app.fake.add_user("ada", 90_001, "admin");
    app.comment(plain, "ada", "/tg freeze release 2.0").await;
    app.settle().await;
    let frozen = app.store().repo_freeze(&repo_name()).await.unwrap();
    assert_eq!(frozen.map(|f| f.by_login), Some("ada".to_owned()));
}

#[tokio::test]
async fn a_push_that_changes_only_the_config_governs_the_next_decision_of_an_existing_story() {
    // Planned with the defaults: a passing task PR merges by itself.
    let s = Story::of(&one_task()).runners(1).backed().start().await;
    let repo = s.app.fake.repo(REPO);
    s.app
        .push_to_main(&[(".github/taskgate.yml", "review: human\n")])
        .await;
    let record = s.app.store().repo_config(&repo_name()).await.unwrap();
    assert_eq!(
        record.and_then(|r| r.config).as_deref(),
        Some("review: human\n")
    );

    // A config with problems is said on its commit, and not taken.
    s.app
        .push_to_main(&[(".github/taskgate.yml", "review: sometimes\n")])
        .await;
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

    // The story's next decision follows `review: human`: the passing PR
    // waits for a person.
    let green = s.push(&[("check.sh", "exit 0\n")], "works").await;
    s.completed(&green, 1).await;
    repo.set_draft(s.pull().number, false, "agent");
    s.app.settle().await;
    assert!(!s.pull().merged, "human review: the PR waits for /approve");
    s.app.comment(s.pull().number, "octocat", "/approve").await;
    s.app.settle().await;
    assert!(s.pull().merged, "approved: merged");
}

/// GitHub's `check_suite.rerequested` for `sha` on `branch` (`None`: a
/// fork's, whose branch GitHub does not name), pressed by `sender`.
fn rerun_all(branch: Option<&str>, sha: &str, sender: (&str, u64)) -> serde_json::Value {
    let mut suite = fixture("check_suite/rerequested.1.json");
    suite["check_suite"]["head_branch"] = json!(branch);
    suite["check_suite"]["head_sha"] = json!(sha);
    suite["check_suite"]["pull_requests"] = json!([]);
    suite["repository"]["full_name"] = json!(REPO);
    suite["installation"]["id"] = json!(INSTALLATION);
    suite["sender"]["login"] = json!(sender.0);
    suite["sender"]["id"] = json!(sender.1);
    suite
}

async fn attempts(s: &Story) -> usize {
    s.app
        .store()
        .attempts(
            &repo_name(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::Task("check".into()),
        )
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn re_run_all_checks_needs_the_retry_permission_of_the_config() {
    let config = "commands:\n  permissions:\n    retry: maintain\n";
    let s = Story::of(&one_task())
        .config(config)
        .runners(1)
        .start()
        .await;
    let red = s.push(&[("check.sh", "exit 1\n")], "red").await;
    s.completed(&red, 1).await;
    assert_eq!(attempts(&s).await, 1);

    s.app.fake.add_user("wes", 90_002, "write");
    let by_writer = rerun_all(Some(&s.branch), &red, ("wes", 90_002));
    assert_eq!(s.app.deliver("check_suite", &by_writer).await.0, 202);
    s.app.settle().await;
    assert_eq!(attempts(&s).await, 1, "a writer's re-run is refused");
    // GitHub shows nothing where the click was made: the writer is told on
    // the task's pull request (else its issue), once for this commit.
    let told_on = s
        .app
        .fake
        .repo(REPO)
        .pulls()
        .into_iter()
        .find(|p| p.head == s.branch)
        .map_or(s.task_issue, |p| p.number);
    let told: Vec<String> = s
        .app
        .bot_comments(told_on)
        .into_iter()
        .filter(|c| c.contains("was not acted on"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    insta::assert_snapshot!(told[0].lines().next().unwrap(), @"“Re-run all checks” was not acted on: `/taskgate retry` needs maintain permission on the repository; @wes has write.");
    // Clicked again a second later: GitHub's next body (the same body
    // again would be a replay, a duplicate: issue 45).
    let mut clicked_again = by_writer.clone();
    let at = clicked_again["check_suite"]["updated_at"].as_str().unwrap();
    let later = chrono::DateTime::parse_from_rfc3339(at).unwrap() + chrono::Duration::seconds(1);
    clicked_again["check_suite"]["updated_at"] = later.to_rfc3339().into();
    assert_eq!(s.app.deliver("check_suite", &clicked_again).await.0, 202);
    s.app.settle().await;
    let again = s
        .app
        .bot_comments(told_on)
        .into_iter()
        .filter(|c| c.contains("was not acted on"))
        .count();
    assert_eq!(again, 1, "said once for this commit");

    s.app.fake.add_user("mia", 90_003, "maintain");
    let by_maintainer = rerun_all(Some(&s.branch), &red, ("mia", 90_003));
    assert_eq!(s.app.deliver("check_suite", &by_maintainer).await.0, 202);
    s.app.settle().await;
    assert_eq!(attempts(&s).await, 2, "a maintainer's re-run runs");
}

#[tokio::test]
async fn re_run_all_checks_runs_only_the_head_taskgate_heard_pushed_never_a_forks_commit() {
    let s = Story::of(&one_task()).runners(1).start().await;
    s.app.fake.add_user("mia", 90_003, "maintain");
    // A commit pushed to a fork: GitHub names no branch for its suite.
    let fork = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";
    let from_fork = rerun_all(None, fork, ("mia", 90_003));
    assert_eq!(s.app.deliver("check_suite", &from_fork).await.0, 202);
    // The same commit under the task branch's name: taskgate never heard
    // it pushed there, so it is not the task's head and does not run.
    let named_like_the_task = rerun_all(Some(&s.branch), fork, ("mia", 90_003));
    assert_eq!(
        s.app.deliver("check_suite", &named_like_the_task).await.0,
        202
    );
    s.app.settle().await;
    assert_eq!(attempts(&s).await, 0);
    assert!(s.checks(fork).is_empty());
}

/// One push of `first` then more commits than a push webhook lists, each
/// writing one of 400 files (`spread`: more than a comparison lists) or
/// `counter.txt`.
fn large_push(app: &crate::support::TestApp, first: &[(&str, &str)], spread: bool) {
    let names: Vec<String> = (0..fakehub::payloads::PUSH_COMMITS_MAX)
        .map(|i| {
            if spread {
                format!("counter-{}.txt", i % 400)
            } else {
                "counter.txt".to_owned()
            }
        })
        .collect();
    let mut commits = vec![(first.to_vec(), "The change that matters".to_owned())];
    commits.extend(
        names
            .iter()
            .enumerate()
            .map(|(i, name)| (vec![(name.as_str(), "counted\n")], format!("Count {i}"))),
    );
    app.fake
        .repo(REPO)
        .push_commits("main", &commits, "octocat");
}

async fn recorded_config(app: &crate::support::TestApp) -> Option<String> {
    let record = app.store().repo_config(&repo_name()).await.unwrap();
    record.and_then(|r| r.config)
}

#[tokio::test]
async fn a_config_change_in_an_early_commit_of_a_push_larger_than_github_lists_is_recorded() {
    let app = crate::support::TestApp::start().await;
    app.push_to_main(&[(".github/taskgate.yml", "review: human\n")])
        .await;
    assert_eq!(
        recorded_config(&app).await.as_deref(),
        Some("review: human\n")
    );

    // GitHub lists the newest 2048 commits: the config's is not among them.
    large_push(&app, &[(".github/taskgate.yml", "review: auto\n")], false);
    app.settle().await;
    assert_eq!(
        recorded_config(&app).await.as_deref(),
        Some("review: auto\n"),
        "found by comparing before and after"
    );

    // More than 300 files changed too: the comparison is capped, and the
    // config and every plan are read again at the head.
    let plan = one_task();
    let first = [
        (".github/taskgate.yml", "review: human\n"),
        (".taskgate/stories/checks.yml", plan.as_str()),
    ];
    large_push(&app, &first, true);
    app.settle().await;
    assert_eq!(
        recorded_config(&app).await.as_deref(),
        Some("review: human\n"),
        "read again at the head"
    );
    let planned = app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .any(|i| i.title.contains("Checked work"));
    assert!(planned, "the plan added in the first commit is planned");
}
