//! Replicas: two taskgate servers on one PostgreSQL database, one fake
//! GitHub and one clock. An acceptance run is run by the replica that
//! claimed the attempt, once; when that replica dies mid-run, the other
//! runs the attempt again once the claim has run out, and each check run
//! is completed once. Runs on PostgreSQL whatever `TASKGATE_TEST_DATABASE`
//! says: it is about replicas.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use taskgate::app::ServeConfig;
use taskgate::clock::Clock;
use taskgate::store::Store;
use taskgate_core::ids::RepoName;
use taskgate_core::AttemptRef;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{eventually, TestApp, REPO, SECRET};

fn plan() -> String {
    Plan::story("Replicated work")
        .task(Task::check().timeout_seconds(900))
        .yaml()
}

/// How long a claim lasts unrenewed. Renewed every third of it, so a
/// slow machine never loses a claim by accident; the tests move the clock
/// past it instead of waiting it out.
const LEASE: Duration = Duration::from_secs(10);

const UPDATE_CHECK_RUN: &str = "/repos/{owner}/{repo}/check-runs/{check_run_id}";

/// Two replicas: the story's server and a second one on the same fake
/// GitHub, database and clock. GitHub's webhooks go to the second, as a
/// load balancer would send them to either.
struct Cluster {
    story: Story,
    second: TestApp,
    clock: Clock,
    /// The gate's nap, a duration of its own (the sandbox shows the test
    /// nothing but its processes): each run naps until the test stops it.
    nap: String,
    /// Each replica's work directory (the story's server first).
    work_dirs: [PathBuf; 2],
    _database: pgtest::PgDatabase<'static>,
}

fn on_the_cluster(c: &mut ServeConfig, database_url: &str, clock: &Clock) {
    c.database_url = database_url.to_owned();
    c.lease = LEASE;
    c.clock = clock.clone();
}

async fn cluster() -> Cluster {
    cluster_of(&plan()).await
}

/// Two replicas, each with one runner, on a story of `plan`.
async fn cluster_of(plan: &str) -> Cluster {
    let database = pgtest::fresh_database();
    let url = database.url().to_owned();
    let clock = Clock::movable();
    let (mut git, mut work_dirs) = (None, [PathBuf::new(), PathBuf::new()]);
    let story = Story::of(plan)
        .runners(1)
        .adjust(|c| {
            on_the_cluster(c, &url, &clock);
            git = c.git.clone();
            work_dirs[0] = c.work_dir.clone();
        })
        .start()
        .await;
    let second = TestApp::with_config(story.app.fake.clone(), |c| {
        on_the_cluster(c, &url, &clock);
        c.git = git;
        c.max_concurrent_runs = 1;
        work_dirs[1] = c.work_dir.clone();
    })
    .await;
    Cluster {
        story,
        second,
        clock,
        nap: format!("600.{:06}", fastrand::u32(..1_000_000)),
        work_dirs,
        _database: database,
    }
}

impl Cluster {
    /// The runs of the gate napping now: their `sleep` processes.
    fn napping(&self) -> Vec<u32> {
        let wanted = format!("sleep\0{}\0", self.nap);
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let pid = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                (cmdline == wanted.as_bytes()).then_some(pid)
            })
            .collect()
    }

    /// How many checkouts replica `i` has: a run removes its own just
    /// before it reports its end.
    fn checkouts(&self, i: usize) -> usize {
        std::fs::read_dir(self.work_dirs[i].join("workspaces"))
            .map(|dir| dir.count())
            .unwrap_or(0)
    }

    /// Pushes the napping gate to the task branch; returns once one
    /// replica runs it and its check run says so, with the run's nap.
    async fn push_and_start(&self) -> (String, u32) {
        // allowed sleep: a gate the test opens by killing this run's
        // `sleep` ([`wake`]), one run at a time; never a timed wait.
        let gate = format!("sleep {}; exit 0\n", self.nap);
        let sha = self.story.push(&[("check.sh", &gate)], "napping").await;
        eventually("one replica runs the attempt", || async {
            self.napping().len() == 1
                && self
                    .story
                    .checks(&sha)
                    .iter()
                    .any(|c| c.status == "in_progress")
        })
        .await;
        (sha, self.napping()[0])
    }

    /// Who holds the claim on the task's first attempt, and until when.
    async fn claim(&self, store: &Store) -> (String, i64) {
        store
            .attempt_claim(&repo(), &first_attempt())
            .await
            .unwrap()
            .expect("the attempt is claimed")
    }

    /// Waits until the check runs on `sha` are completed and `app` is
    /// quiet; returns them.
    async fn completed(&self, app: &TestApp, sha: &str) -> Vec<fakehub::CheckRun> {
        eventually("the check run completed", || async {
            let runs = self.story.checks(sha);
            !runs.is_empty() && runs.iter().all(|c| c.status == "completed")
        })
        .await;
        app.settle().await;
        self.story.checks(sha)
    }
}

/// Ends a run's nap: the gate goes on, and passes.
fn wake(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {pid}");
}

fn repo() -> RepoName {
    RepoName::parse(REPO).unwrap()
}

fn first_attempt() -> AttemptRef {
    AttemptRef {
        story: "file:checks".into(),
        task: taskgate_core::task::RunSubject::Task("check".into()),
        attempt: 1,
    }
}

/// How often GitHub was told to complete each check run, by path.
fn completions(fake: &fakehub::FakeGitHub) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in fake.requests() {
        if r.method == "PATCH"
            && r.route.as_deref() == Some(UPDATE_CHECK_RUN)
            && (200..300).contains(&r.status)
            && r.body["status"] == "completed"
        {
            *counts.entry(r.path).or_default() += 1;
        }
    }
    counts
}

/// Each of `runs` completed exactly once, successfully, and no other.
fn assert_completed_once_with_success(fake: &fakehub::FakeGitHub, runs: &[fakehub::CheckRun]) {
    assert!(
        runs.iter()
            .all(|c| c.conclusion.as_deref() == Some("success")),
        "{runs:#?}"
    );
    let want: BTreeMap<String, usize> = runs
        .iter()
        .map(|c| (format!("/repos/{REPO}/check-runs/{}", c.id), 1))
        .collect();
    assert_eq!(completions(fake), want);
}

#[tokio::test]
async fn two_replicas_run_an_attempt_once() {
    let c = cluster().await;
    let (sha, run) = c.push_and_start().await;
    let store = c.second.store();
    let (holder, claimed_until) = c.claim(store).await;
    assert!(
        [c.story.app.store().replica(), store.replica()].contains(&holder.as_str()),
        "{holder}"
    );
    // The holder renews its claim for longer than the other replica takes
    // to look at the queue again (2 s): the other leaves the attempt be.
    eventually("the claim renewed", || async {
        let (by, until) = c.claim(store).await;
        by == holder && until >= claimed_until + 3_000
    })
    .await;
    assert_eq!(c.napping(), [run], "one replica runs the attempt");
    wake(run);
    let checks = c.completed(&c.second, &sha).await;
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_completed_once_with_success(&c.story.app.fake, &checks);
    assert!(c.napping().is_empty(), "no other run of it waits");
    let attempts = store
        .attempts(
            &repo(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::Task("check".into()),
        )
        .await
        .unwrap();
    let statuses: Vec<&str> = attempts.iter().map(|a| a.status.as_str()).collect();
    assert_eq!(statuses, ["passed"]);
}

#[tokio::test]
async fn a_replica_that_dies_mid_run_leaves_the_attempt_to_the_other_once_its_claim_runs_out() {
    let mut c = cluster().await;
    let (sha, first_run) = c.push_and_start().await;
    c.second.settle().await;
    let (holder, _) = c.claim(c.second.store()).await;
    // The replica running it dies; GitHub's webhooks go to the other.
    let dead = usize::from(holder != c.story.app.store().replica());
    let app = if dead == 0 {
        &mut c.story.app
    } else {
        &mut c.second
    };
    app.running.take().unwrap().abort();
    let c = &c;
    let survivor = if dead == 0 { &c.second } else { &c.story.app };
    survivor
        .fake
        .set_app_webhook(&format!("{}/webhook", survivor.url), SECRET);
    // Its run dies with it: the gate's processes are stopped, the checkout
    // removed, and nothing reported: the check run stays in progress.
    eventually("the dead replica's run ended", || async {
        c.napping().is_empty() && c.checkouts(dead) == 0
    })
    .await;
    survivor.settle().await;
    let checks = c.story.checks(&sha);
    assert!(
        checks.iter().all(|c| c.status == "in_progress"),
        "{checks:#?}"
    );
    // Until the claim runs out, the attempt stays the dead replica's.
    assert_eq!(c.claim(survivor.store()).await.0, holder);
    c.clock.advance(LEASE + Duration::from_secs(1));
    eventually("the other replica runs the attempt again", || async {
        c.napping().len() == 1
    })
    .await;
    let second_run = c.napping()[0];
    assert_ne!(second_run, first_run);
    assert_eq!(
        c.claim(survivor.store()).await.0,
        survivor.store().replica()
    );
    wake(second_run);
    let checks = c.completed(survivor, &sha).await;
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_completed_once_with_success(&survivor.fake, &checks);
    assert!(c.napping().is_empty());
    let store = survivor.store();
    let attempts = store
        .attempts(
            &repo(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::Task("check".into()),
        )
        .await
        .unwrap();
    let statuses: Vec<&str> = attempts.iter().map(|a| a.status.as_str()).collect();
    assert_eq!(statuses, ["passed"], "the same attempt, run again");
}

/// A push to installation `installation`, left to the processor.
fn pushed(id: &str, installation: u64) -> taskgate::store::NewDelivery {
    taskgate::store::NewDelivery {
        body_digest: None,
        delivery_id: taskgate_core::ids::DeliveryId::new(id.to_owned()),
        event: "push".into(),
        action: None,
        installation: Some(taskgate_core::ids::InstallationId::new(installation)),
        payload: bytes::Bytes::from_static(b"{}"),
        disposition: taskgate::store::Disposition::Pending,
    }
}

/// More deliveries than the processor reads at a time are another
/// replica's (it holds their installation's lease): the replica reads on
/// past them and decides the delivery of an installation it may take.
#[tokio::test]
async fn a_replica_whose_batch_is_all_another_replicas_decides_the_deliveries_after_it() {
    let database = pgtest::fresh_database();
    let url = database.url().to_owned();
    let app = TestApp::start_with(|c| c.database_url = url.clone()).await;
    let other = Store::open_postgres(database.url()).unwrap();
    assert!(other.take_lease("inbox:7", 600_000).await.unwrap());
    for n in 0..200 {
        let delivery = pushed(&format!("held-{n}"), 7);
        app.store().record_delivery(delivery).await.unwrap();
    }
    app.store()
        .record_delivery(pushed("mine", 8))
        .await
        .unwrap();
    eventually("the replica decides the delivery it may take", || async {
        let record = app.store().delivery("mine").await.unwrap().unwrap();
        record.status != "received"
    })
    .await;
    let held = app.store().delivery("held-0").await.unwrap().unwrap();
    assert_eq!(held.status, "received", "another replica's to decide");
}

/// The tasks of [`a_replica_claims_no_more_runs_than_its_runner_can_start`]:
/// `check` (the story's) and three more, each with its own branch.
const FOUR: [(&str, &str); 4] = [
    ("check", "Make the check pass"),
    ("two", "Second"),
    ("three", "Third"),
    ("four", "Fourth"),
];

/// Four runs queued at once on two replicas with one runner each: each
/// replica claims only the run its runner can start, and the other takes
/// up the next; the two left stay unclaimed for whichever runner comes
/// free first. A replica claiming every run it saw would hold three it
/// cannot start (the runner's slot waits) while the other's runner
/// idles.
#[tokio::test]
async fn a_replica_claims_no_more_runs_than_its_runner_can_start() {
    let mut plan = Plan::story("Replicated work");
    for (id, title) in FOUR {
        plan = plan.task(
            Task::new(id, title)
                .runs("sh check.sh")
                .timeout_seconds(900),
        );
    }
    let c = cluster_of(&plan.yaml()).await;
    // allowed sleep: a gate the test opens by killing this run's
    // `sleep` ([`wake`]), one run at a time; never a timed wait.
    let gate = format!("sleep {}; exit 0\n", c.nap);
    for (id, title) in FOUR {
        let (_, branch) = c.story.app.task_and_branch(title, id);
        c.story
            .push_to(&branch, &[("check.sh", &gate)], "napping")
            .await;
    }
    let store = c.second.store();
    let replicas = [c.story.app.store().replica(), store.replica()];
    eventually("both replicas run one attempt each", || async {
        c.napping().len() == 2
    })
    .await;
    // A run queue claims what it takes up in one pass over the queue, and
    // starts each run as it claims it; a run naps only well after that
    // (checkout, sandbox): so both passes that started these runs are
    // over, and would have claimed the others had they claimed beyond
    // their free runners (without the bound: two claims each).
    let mut held = BTreeMap::new();
    for (id, _) in FOUR {
        let attempt = AttemptRef {
            task: taskgate_core::task::RunSubject::Task(id.into()),
            ..first_attempt()
        };
        if let Some((by, _)) = store.attempt_claim(&repo(), &attempt).await.unwrap() {
            *held.entry(by).or_insert(0) += 1;
        }
    }
    let want: BTreeMap<String, usize> = replicas.iter().map(|r| (r.to_string(), 1)).collect();
    assert_eq!(held, want, "claims by replica");
    assert_eq!(c.napping().len(), 2);
    // Each run that ends frees its replica's runner for one more.
    for _ in 0..FOUR.len() {
        eventually("a run going", || async { !c.napping().is_empty() }).await;
        let run = c.napping()[0];
        wake(run);
        eventually("the run ended", || async { !c.napping().contains(&run) }).await;
    }
    eventually("every run ended", || async { c.napping().is_empty() }).await;
}
