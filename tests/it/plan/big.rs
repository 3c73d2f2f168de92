//! A plan of thousands of tasks (issue 32, item 4): materialised under
//! GitHub's hourly write budget on the fake, with both clocks moved on to
//! whatever taskgate waits for, never slept through; its story says when
//! it will be complete; and a re-push of a materialised plan costs the
//! writes of what it changed, no more.

use std::time::{Duration, Instant};

use taskgate::github::Pacing;

use crate::support::{TestApp, INSTALLATION, REPO};

const PLAN_PATH: &str = ".taskgate/stories/big.yml";

/// `tasks` leaves in phases of at most 100 (GitHub allows 100 sub-issues
/// an issue), each blocked by the one before it in its phase, as the
/// 150-task bench has them. One task a line, in flow style: 10,000 tasks
/// take 0.7 MB, under the 1 MB GitHub's contents API serves a file's text
/// up to.
pub fn big_plan(tasks: usize) -> String {
    phased_plan(tasks, 100)
}

/// `tasks` leaves in phases of at most `per_phase`, each blocked by the
/// one before it in its phase: each phase's first task is ready at once.
fn phased_plan(tasks: usize, per_phase: usize) -> String {
    let mut plan = format!("story: {tasks} tasks\ntasks:\n");
    for p in 0..tasks.div_ceil(per_phase) {
        plan.push_str(&format!("  - id: p{p}\n    title: Phase {p}\n    tasks:\n"));
        for i in 0..(tasks - p * per_phase).min(per_phase) {
            let after = match i {
                0 => String::new(),
                _ => format!(", depends_on: [p{p}t{}]", i - 1),
            };
            plan.push_str(&format!(
                "      - {{ id: p{p}t{i}, title: Task {p}.{i}, requires_testing: false{after} }}\n"
            ));
        }
    }
    plan
}

/// The writes to GitHub since the first `from` requests, as method and
/// path (token exchanges left out).
fn writes_since(app: &TestApp, from: usize) -> Vec<String> {
    app.fake.requests()[from..]
        .iter()
        .filter(|r| r.method != "GET" && (200..300).contains(&r.status))
        .filter(|r| !r.path.starts_with("/app/"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[tokio::test]
async fn a_re_push_of_a_30_task_plan_costs_the_writes_of_what_changed() {
    let app = TestApp::start().await;
    let plan = big_plan(30);
    app.fake
        .repo(REPO)
        .push_files("main", &[(PLAN_PATH, &plan)], "Plan", "octocat");
    app.advance_until_settled().await;
    let repo = app.fake.repo(REPO);
    assert_eq!(repo.issues().len(), 1 + 1 + 30);

    // The same plan in a new commit: nothing to write.
    let before = app.fake.request_count();
    app.push_to_main(&[(PLAN_PATH, &format!("{plan}\n"))]).await;
    app.advance_until_settled().await;
    assert_eq!(writes_since(&app, before), Vec::<String>::new());

    // One task's title changed: its issue is edited, nothing else.
    let before = app.fake.request_count();
    let changed = plan.replace("title: Task 0.17,", "title: Task 0.17 renamed,");
    assert_ne!(changed, plan);
    app.push_to_main(&[(PLAN_PATH, &changed)]).await;
    app.advance_until_settled().await;
    let renamed = repo
        .issues()
        .into_iter()
        .find(|i| i.title == "Task 0.17 renamed")
        .expect("the task's issue is renamed");
    let story = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.contains(&"taskgate:story".to_owned()))
        .unwrap();
    // The story's body lists its tasks by title: it is edited too.
    assert!(story.body.unwrap().contains("Task 0.17 renamed"));
    assert_eq!(
        writes_since(&app, before),
        [
            format!("PATCH /repos/{REPO}/issues/{}", story.number),
            format!("PATCH /repos/{REPO}/issues/{}", renamed.number),
        ]
    );
    app.assert_contract_kept();
}

/// A story of many phases has a task ready in each; every reconcile pass
/// asks again for the start of each ready task's branch until the first
/// start is recorded, so the outbox holds starts that call GitHub for
/// nothing. They spend none of the hour's write budget: the plan is
/// complete when its story says, not an hour's budget per 20 such
/// starts later (at 10,000 tasks, 100 phases: 7 % later).
#[tokio::test]
async fn a_plan_of_many_phases_is_complete_when_its_story_says() {
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    let app = TestApp::paced(fake, 20).await;
    app.fake.repo(REPO).push_files(
        "main",
        &[(PLAN_PATH, &phased_plan(36, 3))],
        "Plan",
        "octocat",
    );
    let took = app.advance_until_settled().await;

    let notes = app.plan_estimates();
    let said = said_duration(&notes[0]).expect("a duration said");
    // 12 phases: 12 task branches and the story's, each made once.
    let branches = (app.fake.writes().iter())
        .filter(|w| w.path.ends_with("/git/refs"))
        .count();
    assert_eq!(branches, 1 + 12);
    // The note rounds up to the minute; a write slot spent on nothing
    // costs 3 minutes (an hour's budget of 20).
    let late = took.as_secs_f64() - said.as_secs_f64();
    assert!(
        (-60.0..=60.0).contains(&late),
        "complete after {took:?}, said {said:?}: {notes:?}"
    );
}

/// The test process's peak resident memory (`VmHWM`), in MiB: taskgate,
/// the fake GitHub and the test together.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// The median of 20 timed `GET`s of `path` (with the API token), in ms,
/// and the size of the last answer.
async fn median_get_ms(app: &TestApp, path: &str) -> (f64, usize) {
    let client = reqwest::Client::new();
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let res = client
            .get(format!("{}{path}", app.url))
            .bearer_auth("api-token")
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
        size = res.bytes().await.unwrap().len();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], size)
}

/// `(in 1 h 01 min)` of the story's note, as a duration.
fn said_duration(note: &str) -> Option<Duration> {
    let said = note.split("(in ").nth(1)?;
    let mut words = said.split_whitespace();
    let hours: u64 = words.next()?.parse().ok()?;
    words.next();
    let minutes: u64 = words.next()?.parse().ok()?;
    Some(Duration::from_secs(hours * 3_600 + minutes * 60))
}

/// `docs/benchmarks.md`, "A 10,000-task plan": a plan of
/// `BIGPLAN_TASKS` tasks (10,000 unless set) materialised at the default
/// write budget against GitHub's default secondary limits, on moved
/// clocks; then the API and the dashboard timed at that size. Run with
/// `cargo test --test it bench_a_10_000_task_plan -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a benchmark: prints figures for docs/benchmarks.md"]
async fn bench_a_10_000_task_plan_under_the_hourly_budget() {
    crate::support::init_logs();
    let tasks: usize = std::env::var("BIGPLAN_TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let fake = fakehub::FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    let app = TestApp::with_config(fake, |c| c.pacing = Pacing::default()).await;
    let plan = big_plan(tasks);
    let started = Instant::now();
    app.fake
        .repo(REPO)
        .push_files("main", &[(PLAN_PATH, &plan)], "Plan", "octocat");
    let took = app
        .advance_until_settled_within(Duration::from_secs(6 * 3_600))
        .await;
    let wall = started.elapsed();

    let writes = app
        .fake
        .writes()
        .iter()
        .filter(|w| !w.path.starts_with("/app/"))
        .count();
    let refused: Vec<String> = app
        .fake
        .requests()
        .iter()
        .filter(|r| matches!(r.status, 403 | 422 | 429))
        .map(|r| format!("{} {} {} {}", r.method, r.path, r.status, r.body))
        .collect();
    let issues = app.fake.repo(REPO).issues();
    let notes = app.plan_estimates();
    let said = notes.first().and_then(|n| said_duration(n));
    let store_mib = app.database_bytes() as f64 / (1024.0 * 1024.0);
    let (api_ms, api_bytes) = median_get_ms(&app, "/api/stories").await;
    let (dashboard_ms, dashboard_bytes) = median_get_ms(&app, "/").await;
    println!(
        "{tasks}-task plan ({} KiB of yaml): {writes} writes ({:.2} a task), {} refused, \
         complete after {:.1} h of GitHub's time, said {said:?} ({:+.1} %), {:.0} s on this machine, \
         peak RSS {:.0} MiB (taskgate, fakehub and the test), store {store_mib:.1} MiB; \
         GET /api/stories median {api_ms:.1} ms ({api_bytes} bytes), GET / median \
         {dashboard_ms:.1} ms ({dashboard_bytes} bytes)\nnotes on the story: {notes:#?}",
        plan.len() / 1024,
        writes as f64 / tasks as f64,
        refused.len(),
        took.as_secs_f64() / 3_600.0,
        said.map_or(f64::NAN, |s| 100.0 * (s.as_secs_f64() / took.as_secs_f64() - 1.0)),
        wall.as_secs_f64(),
        peak_rss_mib(),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(issues.len(), 1 + tasks.div_ceil(100) + tasks);
}
