//! GitHub's other limits (issue 33, item 4), each as the fake serves it:
//! secondary rate limits and the write budget, repositories without
//! drafts, assignees GitHub refuses, a base branch modified during a
//! merge, the sub-issue limits, check runs of other Apps, and list reads
//! that lag.

use std::time::Duration;

use fakehub::Fault;
use taskgate::github::Pacing;
use taskgate::store::EffectStatus;

use crate::plan::sync::plan_fixture;
use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{eventually, TestApp, REPO};

const CREATE_COMMENT: &str = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";
const CREATE_ISSUE: &str = "POST /repos/{owner}/{repo}/issues";
const PLAN_PATH: &str = ".taskgate/stories/momentum.yml";

/// `n` top-level tasks, each blocked by the one before.
pub fn chain_plan(n: usize) -> String {
    let mut plan = format!("story: {n} tasks\ntasks:\n");
    for i in 0..n {
        plan.push_str(&format!(
            "  - id: t{i}\n    title: Task {i}\n    requires_testing: false\n"
        ));
        if i > 0 {
            plan.push_str(&format!("    depends_on: [t{}]\n", i - 1));
        }
    }
    plan
}

/// `phases` parent tasks of `per_phase` leaves each (GitHub allows 100
/// sub-issues an issue), each leaf blocked by the one before it.
pub fn phased_plan(phases: usize, per_phase: usize) -> String {
    let mut plan = format!("story: {} tasks\ntasks:\n", phases * per_phase);
    for p in 0..phases {
        plan.push_str(&format!("  - id: p{p}\n    title: Phase {p}\n    tasks:\n"));
        for i in 0..per_phase {
            plan.push_str(&format!(
                "      - id: p{p}t{i}\n        title: Task {p}.{i}\n        requires_testing: false\n"
            ));
            if i > 0 {
                plan.push_str(&format!("        depends_on: [p{p}t{}]\n", i - 1));
            }
        }
    }
    plan
}

/// Waits until GitHub has answered `route` with `status`.
async fn answered(app: &TestApp, route: &str, status: u16) {
    eventually(&format!("{route} answered {status}"), || async {
        app.statuses(route).contains(&status)
    })
    .await;
}

/// The effect `name` that met a rate limit is put off by about a minute:
/// not due within 57 s, due within 61 s.
async fn put_off_a_minute(app: &TestApp, name: &str) {
    let limited = |e: &taskgate::store::EffectRow| {
        e.effect.name() == name
            && e.last_error
                .as_deref()
                .is_some_and(|w| w.contains("rate limit"))
    };
    eventually(&format!("{name} put off for a rate limit"), || async {
        app.store().effects().await.unwrap().iter().any(limited)
    })
    .await;
    let effects = app.store().effects().await.unwrap();
    let id = effects.iter().find(|e| limited(e)).unwrap().id;
    let now = app.clock.now_ms();
    let due_by = |ms: i64| async move {
        let due = app.store().due_effects(now + ms, 1_000).await.unwrap();
        due.iter().any(|e| e.id == id)
    };
    assert!(!due_by(57_000).await, "{name} is due within 57 s");
    assert!(due_by(61_000).await, "{name} is not due within 61 s");
}

#[tokio::test]
async fn a_secondary_limit_without_retry_after_waits_a_minute_then_goes_on() {
    let app = TestApp::start().await;
    let issue = app.fake.repo(REPO).create_issue("Story", "", "octocat");
    app.fake
        .inject(CREATE_COMMENT, Fault::SecondaryRateLimitWithoutRetryAfter);
    app.comment(issue, "octocat", "/taskgate help").await;
    answered(&app, CREATE_COMMENT, 403).await;

    // GitHub gives no time: taskgate waits a minute, on its clock.
    put_off_a_minute(&app, "post_comment").await;
    assert_eq!(app.statuses(CREATE_COMMENT), vec![403]);
    app.advance(Duration::from_secs(61));
    app.settle().await;

    assert_eq!(app.statuses(CREATE_COMMENT), vec![403, 201]);
    assert_eq!(app.bot_comments(issue).len(), 1);
    let effects = app.store().effects().await.unwrap();
    let reply = effects.iter().find(|e| e.effect.name() == "post_comment");
    let reply = reply.unwrap();
    assert_eq!((reply.status, reply.failures), (EffectStatus::Done, 0));
}

#[tokio::test]
async fn an_issue_submitted_too_quickly_is_created_once_after_a_wait() {
    let app = TestApp::start().await;
    app.fake.inject(CREATE_ISSUE, Fault::SubmittedTooQuickly);
    app.fake.repo(REPO).push_files(
        "main",
        &[(PLAN_PATH, &plan_fixture("momentum.yml"))],
        "Plan",
        "octocat",
    );
    answered(&app, CREATE_ISSUE, 422).await;
    // A rate limit, not a refusal: the plan waits a minute and goes on.
    put_off_a_minute(&app, "create_issue").await;
    app.advance(Duration::from_secs(61));
    app.settle().await;

    let issues = app.fake.repo(REPO).issues();
    let mut titles: Vec<&str> = issues.iter().map(|i| i.title.as_str()).collect();
    titles.sort_unstable();
    let before = titles.len();
    titles.dedup();
    assert_eq!((before, titles.len()), (5, 5), "{titles:?}");
    app.assert_no_effect_failed().await;
}

#[tokio::test]
async fn a_plan_over_the_hourly_budget_says_on_its_story_when_it_will_be_complete_and_completes() {
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(crate::support::INSTALLATION, REPO);
    // GitHub allows 30 writes an hour here; taskgate budgets 20.
    fake.set_secondary_hourly_limit(30);
    crate::support::init_logs();
    let app = TestApp::paced(fake, 20).await;
    app.fake.repo(REPO).push_files(
        "main",
        &[(".taskgate/stories/chain.yml", &chain_plan(8))],
        "Plan",
        "octocat",
    );
    let took = app.advance_until_settled().await;

    let repo = app.fake.repo(REPO);
    let story = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.contains(&"taskgate:story".to_owned()))
        .unwrap();
    let notes = app.plan_estimates();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = &notes[0];
    assert!(
        note.contains("taskgate makes at most 20 an hour (60 a minute)"),
        "{note}"
    );
    // Complete: every task linked under the story, each blocked by the one
    // before, and it took more than an hour of GitHub's time.
    let tasks: Vec<_> = repo
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with("Task "))
        .collect();
    assert_eq!(tasks.len(), 8);
    assert!(
        tasks.iter().all(|t| t.parent == Some(story.id)),
        "{tasks:#?}"
    );
    assert_eq!(tasks.iter().filter(|t| t.blocked_by.len() == 1).count(), 7);
    assert!(took >= Duration::from_secs(3_600), "{took:?}");
    // Never over GitHub's limits, and nothing asked twice: the budget kept
    // taskgate under them, and no pass asked again for a link still
    // waiting for the budget (GitHub would answer it 422 "duplicate").
    let refused: Vec<_> = app
        .fake
        .requests()
        .into_iter()
        .filter(|r| matches!(r.status, 403 | 422 | 429))
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
}

#[tokio::test]
async fn a_pass_queued_behind_a_write_being_retried_waits_for_it_and_makes_nothing_twice() {
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(crate::support::INSTALLATION, REPO);
    // The story and the first task are made; the second task is made too,
    // but its answer is lost, so taskgate retries it a little later.
    fake.inject(CREATE_ISSUE, Fault::Latency(Duration::ZERO));
    fake.inject(CREATE_ISSUE, Fault::Latency(Duration::ZERO));
    fake.inject(CREATE_ISSUE, Fault::StatusAfterApply { status: 502 });
    let app = TestApp::with_config(fake, |_| {}).await;
    app.fake.repo(REPO).push_files(
        "main",
        &[(".taskgate/stories/chain.yml", &chain_plan(3))],
        "Plan",
        "octocat",
    );
    app.advance_until_settled().await;

    let mut tasks: Vec<String> = app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with("Task "))
        .map(|i| i.title)
        .collect();
    tasks.sort();
    assert_eq!(tasks, ["Task 0", "Task 1", "Task 2"]);
    app.assert_no_effect_failed().await;
}

fn two_tasks() -> String {
    Plan::story("Two tasks")
        .task(Task::new("check", "Make the check pass").runs("true"))
        .task(Task::new("other", "Other work").runs("true"))
        .yaml()
}

const CREATE_PULL: &str = "POST /repos/{owner}/{repo}/pulls";

#[tokio::test]
async fn without_drafts_the_task_pr_is_a_normal_one_and_drafts_are_not_asked_again() {
    let s = Story::of(&two_tasks()).start().await;
    // A private repository on GitHub Free.
    s.app.fake.repo(REPO).without_drafts();
    let (_, other) = s.app.task_and_branch("Other work", "other");

    let sha = s.push(&[("work.txt", "one")], "work").await;
    s.completed(&sha, 1).await;
    let sha = s.push_to(&other, &[("other.txt", "two")], "work").await;
    s.completed(&sha, 1).await;

    // Asked as a draft once, refused, opened as a normal PR; the second
    // task's PR (and the story's, once both merged) opened normal at once.
    let asked: Vec<(bool, u16)> = s
        .app
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.route.as_deref() == Some("/repos/{owner}/{repo}/pulls"))
        .map(|r| (r.body["draft"] == serde_json::json!(true), r.status))
        .collect();
    assert_eq!(
        asked[..3],
        [(true, 422), (false, 201), (false, 201)],
        "{CREATE_PULL}"
    );
    assert!(asked[3..].iter().all(|a| *a == (false, 201)), "{asked:?}");
    let pulls = s.app.fake.repo(REPO).pulls();
    assert!(pulls.len() >= 2);
    assert!(pulls.iter().all(|p| !p.draft), "{pulls:#?}");
    s.app.assert_no_effect_failed().await;
}

fn one_red_task() -> String {
    Plan::story("Checked work").task(Task::check()).yaml()
}

#[tokio::test]
async fn a_todo_for_an_unassignable_login_is_opened_without_it_and_says_so_once() {
    // `ghost` is not a collaborator: GitHub refuses to assign it.
    let config = "roles:\n  coder: { assignees: [ghost] }\n";
    let s = Story::of(&one_red_task()).config(config).start().await;
    for attempt in 1..=2 {
        let red = format!("echo 'expected 10 rows' >&2\nexit {attempt}\n");
        let sha = s.push(&[("check.sh", &red)], "try").await;
        s.completed(&sha, 1).await;
    }

    let repo = s.app.fake.repo(REPO);
    let todos: Vec<_> = repo
        .issues()
        .into_iter()
        .filter(|i| i.labels.contains(&"taskgate:branch-todo".to_owned()))
        .collect();
    assert_eq!(todos.len(), 1, "{todos:#?}");
    let todo = &todos[0];
    assert!(todo.assignees.is_empty());
    let task = repo.issue(s.task_issue).unwrap();
    assert_eq!(todo.parent, Some(task.id), "still a sub-issue of its task");
    let notes: Vec<String> = s
        .app
        .bot_comments(todo.number)
        .into_iter()
        .filter(|b| b.starts_with("taskgate could not assign this issue"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].contains("`ghost`") && notes[0].contains("the role `coder`"));
    assert_eq!(
        s.app
            .statuses(CREATE_ISSUE)
            .iter()
            .filter(|st| **st == 422)
            .count(),
        1
    );
}

const MERGE_PULL: &str = "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge";

#[tokio::test]
async fn a_merge_meeting_base_branch_was_modified_is_tried_again() {
    let s = Story::of(&two_tasks()).start().await;
    // A normal PR, so that auto review merges it once proven.
    s.app.fake.repo(REPO).without_drafts();
    s.app.fake.inject(MERGE_PULL, Fault::BaseBranchModified);
    let sha = s.push(&[("work.txt", "one")], "work").await;
    s.completed(&sha, 1).await;
    s.app.settle().await;

    assert_eq!(s.app.statuses(MERGE_PULL), vec![405, 200]);
    assert!(s.pull().merged, "the task PR is merged");
    let said: Vec<String> = s
        .app
        .bot_comments(s.task_issue)
        .into_iter()
        .filter(|b| b.contains("was refused"))
        .collect();
    assert!(said.is_empty(), "{said:#?}");
}

const CREATE_CHECK_RUN: &str = "POST /repos/{owner}/{repo}/check-runs";
const UPDATE_CHECK_RUN: &str = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}";

#[tokio::test]
async fn a_check_run_of_another_app_with_the_same_name_and_key_is_never_touched() {
    let s = Story::of(&two_tasks()).start().await;
    let repo = s.app.fake.repo(REPO);
    let sha = s.origin.commit(&s.branch, &[("work.txt", "one")], "work");
    // A second taskgate App (staging) on the same repository made the
    // same check run, with the same key.
    let key = "story=file:checks task=check attempt=1 gate=test";
    let staging =
        repo.add_check_run_of_app((9_999, "taskgate-staging"), "taskgate/test", &sha, key);
    // taskgate's own create fails once, so its retry looks for the run.
    s.app.fake.inject(
        CREATE_CHECK_RUN,
        Fault::Status {
            status: 502,
            times: 1,
        },
    );
    repo.push_commit(&s.branch, &sha, "work", &[("work.txt", "one")], "agent");
    eventually("taskgate's own check run completed", || async {
        repo.check_runs()
            .iter()
            .any(|c| c.head_sha == sha && c.other_app.is_none() && c.status == "completed")
    })
    .await;
    s.app.settle().await;

    let theirs = repo
        .check_runs()
        .into_iter()
        .find(|c| c.id == staging)
        .unwrap();
    assert_eq!((theirs.status.as_str(), theirs.title), ("queued", None));
    assert!(!s.app.statuses(UPDATE_CHECK_RUN).contains(&403));
    assert_eq!(s.app.statuses(CREATE_CHECK_RUN), vec![502, 201]);
}

/// `docs/benchmarks.md`: a 150-task plan materialised at the default write
/// budget against GitHub's default secondary limits, on moved clocks. Run
/// with `cargo test --release --test it bench_a_150_task_plan -- --ignored
/// --nocapture`.
#[tokio::test]
#[ignore = "a benchmark: prints figures for docs/benchmarks.md"]
async fn bench_a_150_task_plan_under_the_hourly_budget() {
    crate::support::init_logs();
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(crate::support::INSTALLATION, REPO);
    let app = TestApp::with_config(fake, |c| c.pacing = Pacing::default()).await;
    let started = std::time::Instant::now();
    app.fake.repo(REPO).push_files(
        "main",
        &[(".taskgate/stories/big.yml", &phased_plan(3, 50))],
        "Plan",
        "octocat",
    );
    let took = app.advance_until_settled().await;
    let writes: Vec<_> = app
        .fake
        .writes()
        .into_iter()
        .filter(|w| !w.path.starts_with("/app/"))
        .collect();
    let refused = app
        .fake
        .requests()
        .iter()
        .filter(|r| matches!(r.status, 403 | 422 | 429))
        .map(|r| format!("{} {} {} {}", r.method, r.path, r.status, r.body))
        .collect::<Vec<_>>();
    let note = app.plan_estimates().into_iter().next().unwrap_or_default();
    println!(
        "150-task plan: {} writes, complete after {:.1} min of GitHub's time \
         ({:.1} s on this machine), {} refused {refused:?}\nstory note: {note}",
        writes.len(),
        took.as_secs_f64() / 60.0,
        started.elapsed().as_secs_f64(),
        refused.len()
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(app.fake.repo(REPO).issues().len(), 1 + 3 + 150);
}

const CREATE_LABEL: &str = "POST /repos/{owner}/{repo}/labels";

/// A label made once costs no second write: the second failure episode's
/// todo asks for the same labels, and they exist.
#[tokio::test]
async fn a_label_taskgate_already_made_costs_no_second_write() {
    let plan = Plan::story("Checked work").task(Task::check()).yaml();
    let s = Story::of(&plan).start().await;
    for (script, message) in [
        ("exit 1\n", "red"),
        ("exit 0\n", "green"),
        ("exit 1\n", "red again"),
    ] {
        let sha = s.push(&[("check.sh", script)], message).await;
        s.completed(&sha, 1).await;
    }
    let todos = s
        .app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.labels.contains(&"taskgate:branch-todo".to_owned()))
        .count();
    assert_eq!(todos, 2, "one todo per failure episode");
    let statuses = s.app.statuses(CREATE_LABEL);
    assert!(!statuses.contains(&422), "{statuses:?}");
}
