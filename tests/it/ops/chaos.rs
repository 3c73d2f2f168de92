//! Chaos: three replicas of the real binary on one PostgreSQL database,
//! behind a round-robin front, while deliveries arrive: plan pushes, task
//! pushes with red and green runs, and commands. One replica after another
//! is killed with SIGKILL and started again. Afterwards every GitHub object
//! taskgate makes exists exactly once.
//!
//! `TASKGATE_CHAOS_ROUNDS` sets the workload (CI runs the short default;
//! `TASKGATE_CHAOS_ROUNDS=80` makes about a thousand deliveries). Runs on
//! PostgreSQL whatever `TASKGATE_TEST_DATABASE` says: it is about replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use fakehub::FakeGitHub;
use taskgate::store::Store;

use crate::support::origin::Origin;
use crate::support::plan::{Plan, Task};
use crate::support::story::PLAN_PATH;
use crate::support::{free_port, INSTALLATION, REPO, SECRET};

const REPLICAS: usize = 3;

fn plan() -> String {
    Plan::story("Chaos")
        .task(Task::check())
        .task(Task::new("other", "Other work").runs("sh other.sh"))
        .yaml()
}

/// The replicas' processes, by index; `None` while one is down.
struct Replicas {
    children: Mutex<Vec<Option<Child>>>,
    ports: Vec<u16>,
    env: Vec<(String, String)>,
    work: PathBuf,
}

impl Replicas {
    fn start(&self, i: usize) {
        let child = Command::new(env!("CARGO_BIN_EXE_taskgate"))
            .arg("serve")
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("PORT", self.ports[i].to_string())
            .env("TASKGATE_WORK_DIR", self.work.join(format!("replica-{i}")))
            .stdout(Stdio::null())
            .stderr(self.log(i))
            .spawn()
            .expect("start taskgate serve");
        self.children.lock().unwrap()[i] = Some(child);
    }

    /// Each replica's log, kept across its restarts for a failing test.
    fn log(&self, i: usize) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.work.join(format!("replica-{i}.log")))
            .unwrap()
    }

    /// The replicas' logs' last lines.
    fn tail_logs(&self) -> String {
        (0..self.ports.len())
            .map(|i| {
                let log = std::fs::read_to_string(self.work.join(format!("replica-{i}.log")))
                    .unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                format!("--- replica {i}\n{tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// SIGKILL: no chance to clean up, like a lost machine.
    fn kill(&self, i: usize) {
        if let Some(mut child) = self.children.lock().unwrap()[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn kill_all(&self) {
        for i in 0..self.ports.len() {
            self.kill(i);
        }
    }
}

impl Drop for Replicas {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The round-robin front GitHub posts to: each delivery goes to the next
/// replica, and on to the one after when a replica is down or busy.
struct Front {
    ports: Vec<u16>,
    next: AtomicUsize,
    http: reqwest::Client,
}

async fn forward(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let n = front.ports.len();
    let first = front.next.fetch_add(1, Ordering::SeqCst);
    for k in 0..n {
        let port = front.ports[(first + k) % n];
        let mut request = front
            .http
            .post(format!("http://127.0.0.1:{port}/webhook"))
            .body(body.clone());
        for name in [
            "x-github-event",
            "x-github-delivery",
            "x-hub-signature-256",
            "content-type",
        ] {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value.as_bytes());
            }
        }
        match request.send().await {
            Ok(answer) if answer.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE => {
                let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
                return (status, answer.text().await.unwrap_or_default());
            }
            _ => continue,
        }
    }
    (StatusCode::BAD_GATEWAY, "no replica answered".into())
}

async fn start_front(ports: Vec<u16>) -> String {
    let front = Arc::new(Front {
        ports,
        next: AtomicUsize::new(0),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
    });
    let app = axum::Router::new()
        .route("/webhook", axum::routing::post(forward))
        .with_state(front);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn replica_env(fake: &FakeGitHub, database: &str, git: &str) -> Vec<(String, String)> {
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys/test-app.pem");
    let inherit = ["PATH", "HOME"].map(|k| (k, std::env::var(k).unwrap_or_default()));
    let own = [
        ("APP_ID", fake.app_id().to_string()),
        ("PRIVATE_KEY_PATH", key.display().to_string()),
        ("WEBHOOK_SECRET", SECRET.to_owned()),
        ("GITHUB_API_URL", fake.url()),
        ("HOST", "127.0.0.1".to_owned()),
        ("DATABASE_URL", database.to_owned()),
        ("TASKGATE_LEASE_SECONDS", "2".to_owned()),
        ("TASKGATE_GIT_URL", git.to_owned()),
        ("TASKGATE_WRITES_PER_MINUTE", "0".to_owned()),
        ("TASKGATE_REDELIVER_MINUTES", "0".to_owned()),
        ("TASKGATE_RETRY_BASE_MS", "20".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    inherit
        .into_iter()
        .chain(own)
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Kills one replica after another every `every` and starts it again,
/// until `stop`; returns how many kills there were.
async fn keep_killing(replicas: Arc<Replicas>, stop: Arc<AtomicBool>, every: Duration) -> usize {
    let mut kills = 0;
    while !stop.load(Ordering::SeqCst) {
        // allowed sleep: the kills are load, paced in real time (a
        // replica killed mid-work at any moment), not a wait for an event.
        tokio::time::sleep(every).await;
        let i = kills % replicas.ports.len();
        replicas.kill(i);
        kills += 1;
        // allowed sleep: a replica down for a while is the load.
        tokio::time::sleep(Duration::from_millis(300)).await;
        replicas.start(i);
    }
    kills
}

fn rounds() -> usize {
    std::env::var("TASKGATE_CHAOS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20)
}

/// Waits (up to `limit`) until nothing is left to do: the inbox, the outbox
/// and the runs are empty, and the fake has delivered every webhook.
async fn quiet(store: &Store, fake: &FakeGitHub, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut calm = 0;
    loop {
        let inbox = store.inbox_depth().await.unwrap();
        let outbox = store.outbox_depth().await.unwrap();
        let runs = store
            .active_attempts(taskgate_core::config::RunnerKind::Local)
            .await
            .unwrap();
        let echoes = fake.echo_stats();
        let idle =
            inbox.0 == 0 && outbox == 0 && runs.is_empty() && echoes.queued == echoes.delivered;
        calm = if idle { calm + 1 } else { 0 };
        if calm >= 10 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not quiet: inbox {inbox:?}, outbox {outbox}, runs {}, echoes {echoes:?}",
            runs.len()
        );
        // allowed sleep: a bounded poll (`limit`) of the store and the fake.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_killed_one_after_another_make_every_object_exactly_once() {
    crate::support::init_logs();
    let database = pgtest::fresh_database();
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    fake.set_permission("octocat", "write");
    fake.set_secondary_limit(100_000);
    let origin = Origin::new();
    let work = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..REPLICAS).map(|_| free_port()).collect();
    let replicas = Arc::new(Replicas {
        children: Mutex::new((0..REPLICAS).map(|_| None).collect()),
        env: replica_env(&fake, database.url(), &origin.source().url_template),
        ports: ports.clone(),
        work: work.path().to_owned(),
    });
    for i in 0..REPLICAS {
        replicas.start(i);
    }
    // Every replica listens before GitHub sends anything (the front then
    // always finds one up: one replica at a time is down).
    for port in &ports {
        wait_healthy(*port, &replicas).await;
    }
    let store = Store::open_postgres(database.url()).unwrap();
    let front = start_front(ports).await;
    fake.set_app_webhook(&front, SECRET);

    let stop = Arc::new(AtomicBool::new(false));
    let killer = tokio::spawn(keep_killing(
        replicas.clone(),
        stop.clone(),
        Duration::from_millis(1500),
    ));
    let repo = fake.repo(REPO);
    repo.push_files(
        "main",
        &[(PLAN_PATH, plan().as_str())],
        "Add a plan",
        "octocat",
    );
    let (task, branch) = task_branch(&fake, &replicas).await;
    let mut help_comments = Vec::new();
    let mut last_sha = String::new();
    for round in 0..rounds() {
        // Red on odd rounds, green on even ones.
        let script = if round % 2 == 1 {
            "exit 1\n"
        } else {
            "exit 0\n"
        };
        let files = [("check.sh", script), ("round.txt", &*round.to_string())];
        last_sha = origin.commit(&branch, &files, &format!("round {round}"));
        repo.push_commit(
            &branch,
            &last_sha,
            &format!("round {round}"),
            &files,
            "agent",
        );
        help_comments.push(repo.add_comment(task, "/taskgate help", "octocat").id);
        if round % 4 == 3 {
            // The plan pushed again, unchanged: costs nothing.
            repo.push_files(
                "main",
                &[(PLAN_PATH, plan().as_str())],
                "Touch the plan",
                "octocat",
            );
        }
        // allowed sleep: the webhooks' pace, so the kills land among them
        // (load, not a wait for an event).
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let kills = killer.await.unwrap();
    for i in 0..REPLICAS {
        if replicas.children.lock().unwrap()[i].is_none() {
            replicas.start(i);
        }
    }
    quiet(&store, &fake, Duration::from_secs(180)).await;

    let deliveries = fake.echo_stats().delivered;
    eprintln!("chaos: {deliveries} deliveries, {kills} replicas killed");
    assert!(kills >= 2, "only {kills} kills");
    assert_each_marker_once(&fake);
    assert_each_help_answered_once(&fake, task, &help_comments);
    assert_each_check_run_once(&fake);
    assert_last_head_tested(&fake, &last_sha, &replicas);
    replicas.kill_all();
}

async fn wait_healthy(port: u16, replicas: &Replicas) {
    let url = format!("http://127.0.0.1:{port}/healthz");
    for _ in 0..300 {
        if reqwest::get(&url)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        // allowed sleep: a bounded poll (300 or 600 looks).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "replica on {port} never became healthy\n{}",
        replicas.tail_logs()
    );
}

/// The task issue and branch plan sync made (waits for them).
async fn task_branch(fake: &FakeGitHub, replicas: &Replicas) -> (u64, String) {
    let repo = fake.repo(REPO);
    for _ in 0..600 {
        let found = repo
            .issues()
            .into_iter()
            .find(|i| i.title == "Make the check pass");
        if let Some(issue) = found {
            let branch = format!("taskgate/task-{}-check", issue.number);
            if repo.branch_sha(&branch).is_some() {
                return (issue.number, branch);
            }
        }
        // allowed sleep: a bounded poll (300 or 600 looks).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "plan sync never made the task's issue and branch\n{}",
        replicas.tail_logs()
    );
}

/// Every hidden marker taskgate writes names one issue: no issue (story,
/// task, branch todo) was made twice.
fn assert_each_marker_once(fake: &FakeGitHub) {
    let mut markers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for issue in fake.repo(REPO).issues() {
        let body = issue.body.unwrap_or_default();
        if let Some(marker) = hidden_marker(&body) {
            markers.entry(marker).or_default().push(issue.number);
        }
    }
    assert!(markers.len() >= 3, "story and task issues: {markers:?}");
    let twice: Vec<_> = markers.iter().filter(|(_, n)| n.len() > 1).collect();
    assert!(twice.is_empty(), "issues made more than once: {twice:?}");
}

fn hidden_marker(body: &str) -> Option<String> {
    let start = body.rfind("<!-- taskgate:")?;
    let end = body[start..].find("-->")? + start;
    Some(body[start..end].trim().to_owned())
}

/// Each `/taskgate help` got exactly one reply.
fn assert_each_help_answered_once(fake: &FakeGitHub, task: u64, comments: &[u64]) {
    let replies: Vec<String> = fake
        .repo(REPO)
        .comments(task)
        .into_iter()
        .filter(|c| c.author.ends_with("[bot]"))
        .map(|c| c.body)
        .collect();
    for id in comments {
        let marker = format!("<!-- taskgate:reply-to={id} -->");
        let answers = replies.iter().filter(|r| r.contains(&marker)).count();
        assert_eq!(answers, 1, "comment {id} answered {answers} times");
    }
}

/// Each check run taskgate opened (one per gate and attempt, named by its
/// external id) exists once, and was completed with one conclusion.
fn assert_each_check_run_once(fake: &FakeGitHub) {
    let mut seen = BTreeSet::new();
    for run in fake.repo(REPO).check_runs() {
        let Some(key) = run.external_id.clone() else {
            continue;
        };
        assert!(seen.insert(key.clone()), "check run {key} opened twice");
    }
    let mut conclusions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for request in fake.requests() {
        let patch = request.method == "PATCH"
            && request.route.as_deref() == Some("/repos/{owner}/{repo}/check-runs/{check_run_id}");
        if let (true, Some(conclusion)) = (patch, request.body["conclusion"].as_str()) {
            conclusions
                .entry(request.path.clone())
                .or_default()
                .insert(conclusion.to_owned());
        }
    }
    let split: Vec<_> = conclusions.iter().filter(|(_, c)| c.len() > 1).collect();
    assert!(
        split.is_empty(),
        "check runs completed with two results: {split:?}"
    );
}

/// The last head pushed was tested to the end (the replicas' logs say
/// why not: CI keeps only the test's output).
fn assert_last_head_tested(fake: &FakeGitHub, sha: &str, replicas: &Replicas) {
    let runs: Vec<_> = fake
        .repo(REPO)
        .check_runs()
        .into_iter()
        .filter(|c| c.head_sha == sha && c.name.starts_with("taskgate/"))
        .collect();
    assert!(
        !runs.is_empty(),
        "the last head has no check runs\n{}",
        replicas.tail_logs()
    );
    assert!(
        runs.iter().all(|c| c.status == "completed"),
        "the last head's check runs: {runs:#?}\n{}",
        replicas.tail_logs()
    );
}
