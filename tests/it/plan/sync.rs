//! Plans become stories on GitHub: first sync, idempotent re-sync, changes,
//! and bad plans, against the fake GitHub.

use fakehub::payloads;

use crate::support::{TestApp, REPO};

const PLAN_PATH: &str = ".taskgate/stories/momentum.yml";

pub fn plan_fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/fixtures/plans/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Commits `content` to `path` on main and delivers the push.
async fn push_file(app: &TestApp, path: &str, content: &str) {
    app.push_to_main(&[(path, content)]).await;
}

/// Write calls other than token exchanges.
fn write_count(app: &TestApp) -> usize {
    app.fake
        .writes()
        .iter()
        .filter(|w| !w.path.starts_with("/app/"))
        .count()
}

fn issue_by_title(app: &TestApp, title: &str) -> fakehub::Issue {
    app.fake
        .repo(REPO)
        .issues()
        .into_iter()
        .find(|i| i.title == title)
        .unwrap_or_else(|| panic!("no issue titled {title}"))
}

#[tokio::test]
async fn a_pushed_plan_becomes_a_story_with_tasks_links_labels_and_branches() {
    let app = TestApp::start().await;
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;
    let repo = app.fake.repo(REPO);

    let story = issue_by_title(&app, "Momentum strategy with RSI");
    assert!(story.labels.contains(&"taskgate:story".to_owned()));
    let data = issue_by_title(&app, "Data loading integration");
    let signals = issue_by_title(&app, "Signals");
    let entry = issue_by_title(&app, "Entry conditions");
    let docs = issue_by_title(&app, "Strategy notes");
    assert_eq!(repo.issues().len(), 5);

    // Hierarchy through sub-issues, dependencies through blocked-by.
    assert_eq!(data.parent, Some(story.id));
    assert_eq!(signals.parent, Some(story.id));
    assert_eq!(entry.parent, Some(signals.id));
    assert_eq!(docs.parent, Some(signals.id));
    assert_eq!(entry.blocked_by, vec![data.id]);

    // States: `data` is ready, `entry` waits for it.
    assert!(
        data.labels.contains(&"state:ready".to_owned()),
        "{:?}",
        data.labels
    );
    assert!(
        entry.labels.contains(&"state:pending".to_owned()),
        "{:?}",
        entry.labels
    );

    // Branches: the story's, and one per leaf task that is ready (SPEC
    // §3); `entry` gets its branch when `data` completes.
    let base = repo.branch_sha("main").unwrap();
    for branch in [
        format!("taskgate/story-{}", story.number),
        format!("taskgate/task-{}-data", data.number),
        format!("taskgate/task-{}-docs", docs.number),
    ] {
        assert_eq!(
            repo.branch_sha(&branch).as_deref(),
            Some(base.as_str()),
            "{branch}"
        );
    }
    let pending = format!("taskgate/task-{}-entry", entry.number);
    assert_eq!(repo.branch_sha(&pending), None, "{pending}");
    assert!(repo.labels().iter().any(|l| l.name == "state:pending"));

    let body = story.body.unwrap();
    assert!(
        body.contains(&format!("#{}", data.number)),
        "the story links its tasks:\n{body}"
    );
    let entry_body = entry.body.unwrap();
    assert!(
        entry_body.contains(&format!("#{}", data.number)),
        "dependencies are written in the body"
    );
    insta::assert_snapshot!("story_body", body);
    insta::assert_snapshot!("task_body_entry", entry_body);
    app.assert_contract_kept();
}

#[tokio::test]
async fn pushing_the_same_plan_again_makes_no_write_calls() {
    let app = TestApp::start().await;
    let plan = plan_fixture("momentum.yml");
    push_file(&app, PLAN_PATH, &plan).await;
    let writes = write_count(&app);

    // The same push twice under one delivery id (a redelivery: answered
    // 200, not processed), the same push content under a new id (processed,
    // plan re-read), then a new commit with the same plan.
    let repo = app.fake.repo(REPO);
    let payload = payloads::push(&repo, "main", None, "octocat");
    assert_eq!(app.deliver_as("push", "push-again", &payload).await.0, 202);
    assert_eq!(app.deliver_as("push", "push-again", &payload).await.0, 200);
    app.deliver("push", &payload).await;
    app.settle().await;
    push_file(&app, PLAN_PATH, &format!("{plan}\n")).await;

    assert_eq!(write_count(&app), writes);
    assert_eq!(repo.issues().len(), 5);
}

#[tokio::test]
async fn a_changed_plan_updates_only_what_changed() {
    let app = TestApp::start().await;
    let plan = plan_fixture("momentum.yml");
    push_file(&app, PLAN_PATH, &plan).await;
    let writes = write_count(&app);

    let changed = plan
        .replace("title: Data loading integration", "title: Data loading")
        .replace("description: Implement fetch_and_prepare_data(symbol, start, end)", "description: Implement load_bars(symbol, start, end)")
        .replace("      - { id: docs, title: Strategy notes, requires_testing: false }\n", "      - { id: exits, title: Exit conditions, depends_on: [entry], acceptance: { tests: [{ cmd: \"pytest tests/test_exit.py\" }] } }\n");
    assert_ne!(changed, plan, "the fixture changed shape; update this test");
    push_file(&app, PLAN_PATH, &changed).await;

    let repo = app.fake.repo(REPO);
    let renamed = issue_by_title(&app, "Data loading");
    let exits = issue_by_title(&app, "Exit conditions");
    let entry = issue_by_title(&app, "Entry conditions");
    assert_eq!(exits.blocked_by, vec![entry.id]);
    let removed = repo
        .issues()
        .into_iter()
        .find(|i| i.title == "Strategy notes")
        .unwrap();
    assert_eq!(
        (removed.state.as_str(), removed.state_reason.as_deref()),
        ("closed", Some("not_planned"))
    );
    assert!(repo
        .comments(removed.number)
        .iter()
        .any(|c| c.body.contains("removed from the plan")));
    assert_eq!(renamed.number, 2, "edited in place, not recreated");
    assert!(
        renamed.body.as_deref().unwrap().contains("load_bars"),
        "the description is edited"
    );
    assert!(write_count(&app) > writes);
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_bad_plan_gets_a_failing_check_run_and_changes_nothing() {
    let app = TestApp::start().await;
    push_file(
        &app,
        ".taskgate/stories/bad.yml",
        &plan_fixture("bad-unknown-dep.yml"),
    )
    .await;

    let repo = app.fake.repo(REPO);
    assert!(repo.issues().is_empty());
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        (run.name.as_str(), run.conclusion.as_deref()),
        ("taskgate/plan", Some("failure"))
    );
    assert_eq!(run.head_sha, repo.branch_sha("main").unwrap());
    assert!(
        run.summary
            .as_deref()
            .unwrap()
            .contains("did you mean `indicators`"),
        "{:?}",
        run.summary
    );
    assert_eq!(run.annotations[0]["path"], ".taskgate/stories/bad.yml");
    insta::assert_snapshot!(run.summary.as_deref().unwrap());
    app.assert_contract_kept();
}

#[tokio::test]
async fn pushes_elsewhere_or_without_plans_do_nothing() {
    let app = TestApp::start().await;
    push_file(&app, "README.md", "hello").await;
    let repo = app.fake.repo(REPO);
    let before = repo.branch_sha("main").unwrap();
    repo.with_file("feature", PLAN_PATH, &plan_fixture("momentum.yml"));
    app.deliver(
        "push",
        &payloads::push(&repo, "feature", Some(&before), "octocat"),
    )
    .await;
    app.settle().await;
    assert_eq!(write_count(&app), 0);
}

#[tokio::test]
async fn after_losing_the_database_resync_rebuilds_and_the_next_push_changes_nothing() {
    let app = TestApp::start().await;
    let plan = plan_fixture("momentum.yml");
    push_file(&app, PLAN_PATH, &plan).await;
    let writes = write_count(&app);

    let app = app.lose_database().await;
    let creds = taskgate::github::AppCredentials::from_pem(
        app.fake.app_id(),
        fakehub::FakeGitHub::private_key_pem(),
    )
    .unwrap();
    let github = taskgate::github::GitHubApp::new(&app.fake.url(), creds);
    let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let found = taskgate::app::resync::resync(&github, app.store(), &repo)
        .await
        .unwrap();
    // The story's branch and its two ready tasks' (`entry` is pending).
    assert_eq!((found.issues, found.branches), (5, 3));

    push_file(&app, PLAN_PATH, &format!("{plan}\n")).await;
    assert_eq!(write_count(&app), writes);
    assert_eq!(app.fake.repo(REPO).issues().len(), 5);
}

#[tokio::test]
async fn without_resync_a_lost_database_still_never_duplicates_issues() {
    let app = TestApp::start().await;
    let plan = plan_fixture("momentum.yml");
    push_file(&app, PLAN_PATH, &plan).await;
    let app = app.lose_database().await;
    push_file(&app, PLAN_PATH, &format!("{plan}\n")).await;
    assert_eq!(app.fake.repo(REPO).issues().len(), 5);
}

/// 60 top-level tasks, each blocked by the one before.
fn sixty_task_plan() -> String {
    let mut plan = String::from("story: Sixty tasks\ntasks:\n");
    for i in 0..60 {
        plan.push_str(&format!(
            "  - id: t{i}\n    title: Task {i}\n    requires_testing: false\n"
        ));
        if i > 0 {
            plan.push_str(&format!("    depends_on: [t{}]\n", i - 1));
        }
    }
    plan
}

#[tokio::test]
async fn a_sixty_task_plan_materialises_paced_under_the_secondary_limit() {
    crate::support::init_logs();
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(crate::support::INSTALLATION, REPO);
    // GitHub's 80 content-creating requests a minute and 500 an hour (the
    // fake's defaults, on its clock); taskgate at its default budget, 60 a
    // minute and 450 an hour, on its own. Both clocks move on together.
    let app = TestApp::with_config(fake, |c| {
        c.pacing = taskgate::github::Pacing::default();
    })
    .await;
    app.fake.repo(REPO).push_files(
        "main",
        &[(".taskgate/stories/sixty.yml", &sixty_task_plan())],
        "Update the plan",
        "octocat",
    );
    let took = app.advance_until_settled().await;
    println!("60-task plan: complete after {took:?} of GitHub's time");

    let rejected: Vec<_> = app
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.status >= 400 && r.status != 404)
        .collect();
    assert!(rejected.is_empty(), "{rejected:#?}");
    assert_eq!(app.fake.repo(REPO).issues().len(), 61);
    let writes = write_count(&app);
    // Recorded in docs/benchmarks.md: calls per task of a first sync.
    println!(
        "60-task plan: {writes} write calls, {:.1} per task",
        writes as f64 / 60.0
    );
    let mut by_route = std::collections::BTreeMap::<String, usize>::new();
    for w in app.fake.writes() {
        if !w.path.starts_with("/app/") {
            *by_route
                .entry(format!("{} {}", w.method, w.route.unwrap_or_default()))
                .or_default() += 1;
        }
    }
    for (route, n) in by_route {
        println!("  {n:>4}  {route}");
    }
    assert!(writes <= 6 * 61, "{writes} writes");
}

#[tokio::test]
async fn a_plan_posted_in_a_comment_makes_that_issue_the_story() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Strategy work", "We want a momentum strategy.", "octocat");
    let plan = plan_fixture("momentum.yml");
    app.comment(
        issue,
        "octocat",
        &format!("Here is the plan:\n\n/taskgate plan\n\n```yaml\n{plan}```\n"),
    )
    .await;
    app.settle().await;

    let story = repo.issue(issue).unwrap();
    assert_eq!(story.title, "Momentum strategy with RSI");
    assert!(story.labels.contains(&"taskgate:story".to_owned()));
    assert!(story.body.unwrap().contains("<!-- taskgate:story=issue:"));
    assert_eq!(
        repo.issues().len(),
        5,
        "the story issue is reused, four tasks created"
    );
    assert_eq!(
        issue_by_title(&app, "Data loading integration").parent,
        Some(story.id)
    );
    let kept = repo.comments(issue);
    assert!(
        kept.iter()
            .any(|c| c.body.contains("> We want a momentum strategy.")),
        "the original description is kept"
    );
    app.assert_contract_kept();

    let failed: Vec<_> = app
        .store()
        .effects()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.status != taskgate::store::EffectStatus::Done)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // Posting the same plan again changes nothing but the reaction.
    let writes = app.fake.writes().len();
    app.comment(
        issue,
        "octocat",
        &format!("/taskgate plan\n\n```yaml\n{plan}```\n"),
    )
    .await;
    app.settle().await;
    let after: Vec<_> = app.fake.writes()[writes..]
        .iter()
        .map(|w| format!("{} {}", w.path, w.body))
        .filter(|p| !p.starts_with("/app/"))
        .collect();
    assert!(after.iter().all(|p| p.contains("/reactions ")), "{after:?}");
}

#[tokio::test]
async fn a_bad_plan_in_a_comment_gets_a_reply_and_changes_nothing() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Strategy work", "", "octocat");
    app.comment(
        issue,
        "octocat",
        &format!(
            "/taskgate plan\n\n```yaml\n{}```\n",
            plan_fixture("bad-cycle.yml")
        ),
    )
    .await;
    app.comment(issue, "octocat", "/taskgate plan\n\nno yaml here")
        .await;
    app.settle().await;

    assert_eq!(repo.issues().len(), 1);
    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(replies[0].contains("dependency cycle"), "{}", replies[0]);
    assert!(
        replies[1].contains("fenced code block marked `yaml`"),
        "{}",
        replies[1]
    );
    insta::assert_snapshot!("bad_plan_reply", replies[0]);
}

#[tokio::test]
async fn yaml_that_would_exhaust_the_parser_gets_a_reply_and_taskgate_keeps_serving() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Strategy work", "", "octocat");
    // 30,000 nested levels overflowed the parser's stack; 35 KB of aliases
    // to a 32 KB string grew to gigabytes. Both crashed the process, and
    // again on every restart, the delivery being still pending.
    let deep = format!("story: s\ntasks:\n{}x\n", "- ".repeat(30_000));
    let big = "x".repeat(32 << 10);
    let aliases = |name: &str| vec![format!("*{name}"); 300].join(", ");
    let bomb = format!(
        "story: s\na: &a \"{big}\"\nb: &b [{}]\nc: [{}]\ntasks: []\n",
        aliases("a"),
        aliases("b")
    );
    for yaml in [deep, bomb] {
        app.comment(
            issue,
            "octocat",
            &format!("/taskgate plan\n\n```yaml\n{yaml}```\n"),
        )
        .await;
    }
    app.comment(issue, "octocat", "/taskgate help").await;
    app.settle().await;

    assert_eq!(repo.issues().len(), 1, "nothing created");
    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 3, "{replies:?}");
    assert!(
        replies[0].contains("nested more than 64 levels deep"),
        "{}",
        replies[0]
    );
    assert!(
        replies[1].contains("aliases expand this document past 4 MiB"),
        "{}",
        replies[1]
    );
    assert!(
        replies[2].contains("/taskgate retry"),
        "help still answered: {}",
        replies[2]
    );
}

#[tokio::test]
async fn a_bad_repository_config_fails_the_plan_check_and_changes_nothing() {
    let app = TestApp::start().await;
    app.fake.repo(REPO).with_file(
        "main",
        ".github/taskgate.yml",
        "limits:\n  max_debug_atempts: 3\n",
    );
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;

    let repo = app.fake.repo(REPO);
    assert!(repo.issues().is_empty());
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    let summary = runs[0].summary.as_deref().unwrap();
    assert!(summary.contains(".github/taskgate.yml"), "{summary}");
    assert!(
        summary.contains("max_debug_attempts"),
        "did you mean: {summary}"
    );
}

#[tokio::test]
async fn creates_github_keeps_refusing_end_after_a_bounded_number_of_passes() {
    let app = TestApp::start().await;
    for _ in 0..40 {
        app.fake.inject(
            "POST /repos/{owner}/{repo}/issues",
            fakehub::Fault::ValidationFailed,
        );
    }
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;

    let attempts = app
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/issues"))
        .count();
    // The push's pass and MAX_RECONCILE_ROUNDS more, five issues each;
    // then it stops.
    let passes = 1 + taskgate_core::sync::MAX_RECONCILE_ROUNDS as usize;
    assert_eq!(attempts, 5 * passes);
    assert!(app.fake.repo(REPO).issues().is_empty());
}

#[tokio::test]
async fn a_github_hiccup_while_reading_the_plan_is_retried() {
    let app = TestApp::start().await;
    app.fake.inject(
        "GET /repos/{owner}/{repo}/contents/{path}",
        fakehub::Fault::Status {
            status: 502,
            times: 2,
        },
    );
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;
    assert_eq!(app.fake.repo(REPO).issues().len(), 5);
}

#[tokio::test]
async fn a_github_outage_puts_the_plan_off_without_holding_up_other_installations() {
    let app = TestApp::start().await;
    let elsewhere = app.fake.install(77, "octo-org/elsewhere");
    let question = elsewhere.create_issue("How do I start?", "", "octocat");
    let contents = "GET /repos/{owner}/{repo}/contents/{path}";
    app.fake.inject(
        contents,
        fakehub::Fault::Status {
            status: 503,
            times: 10_000,
        },
    );
    let repo = app.fake.repo(REPO);
    let before = repo.branch_sha("main").unwrap();
    repo.with_file("main", PLAN_PATH, &plan_fixture("momentum.yml"));
    let push = fakehub::payloads::push(&repo, "main", Some(&before), "octocat");
    assert_eq!(app.deliver("push", &push).await.0, 202);
    // The quick tries fail, then the push is put off and tried again later.
    let plan_reads = || {
        app.fake
            .requests()
            .iter()
            .filter(|r| r.route.as_deref() == Some("/repos/{owner}/{repo}/contents/{path}"))
            .count()
    };
    crate::support::eventually(
        "the plan read is tried again after the quick tries",
        || async { plan_reads() > 4 },
    )
    .await;

    // Meanwhile another installation's command is answered.
    let comment = app
        .fake
        .without_echoes(|| elsewhere.add_comment(question, "/taskgate help", "octocat"));
    let payload = fakehub::payloads::issue_comment_created(&elsewhere, question, &comment);
    assert_eq!(app.deliver("issue_comment", &payload).await.0, 202);
    crate::support::eventually("the other installation's help reply", || async {
        elsewhere
            .comments(question)
            .iter()
            .any(|c| c.author.ends_with("[bot]"))
    })
    .await;
    assert!(repo.issues().is_empty(), "the plan is still waiting");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_inbox_depth{state=\"put_off\"} 1"),
        "{metrics}"
    );

    // GitHub recovers: the plan is synced, once.
    app.fake.clear_faults();
    app.settle().await;
    assert_eq!(repo.issues().len(), 5);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_inbox_depth{state=\"put_off\"} 0"),
        "{metrics}"
    );
    app.assert_contract_kept();
}

#[tokio::test]
async fn removing_the_plan_file_closes_the_story_and_restoring_it_reopens_it() {
    let app = TestApp::start().await;
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;
    let repo = app.fake.repo(REPO);
    assert_eq!(repo.issues().len(), 5);
    let story = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
        .expect("the story issue");

    // Someone deletes the plan file on main.
    let before = repo.branch_sha("main").unwrap();
    repo.without_file("main", PLAN_PATH);
    let push = fakehub::payloads::push(&repo, "main", Some(&before), "octocat");
    assert_eq!(app.deliver("push", &push).await.0, 202);
    app.settle().await;
    for issue in repo.issues() {
        assert_eq!(issue.state, "closed", "{issue:#?}");
        assert_eq!(issue.state_reason.as_deref(), Some("not_planned"));
    }
    let said = app.bot_comments(story.number);
    assert!(
        said.iter()
            .any(|c| c.contains("`.taskgate/stories/momentum.yml` was removed")),
        "{said:#?}"
    );
    let repo_name = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    assert!(app
        .store()
        .story(
            &repo_name,
            &taskgate_core::ids::StoryId::new("file:momentum")
        )
        .await
        .unwrap()
        .is_none());

    // Restored: the same issues open again, none duplicated.
    push_file(&app, PLAN_PATH, &plan_fixture("momentum.yml")).await;
    let issues = repo.issues();
    assert_eq!(issues.len(), 5);
    assert!(issues.iter().all(|i| i.state == "open"), "{issues:#?}");
    app.assert_contract_kept();
}
