//! Owns: the ship-queue stream (issue 31, "Benchmark"): a seeded stream of
//! one-task stories, each built and made shippable through the real
//! taskgate against the fake GitHub, then shipped with `/taskgate ship` at
//! its arrival time on the movable clock; GitHub Actions played by
//! [`player::ActionsPlayer`] (a ship proof takes [`ShipStream::build`]'s
//! `proof` of clock time); a person who re-ships a story refused for
//! nothing it did; and the loop that moves both clocks straight to the
//! next thing due. [`figures`] reads what happened from GitHub and the
//! store.
//! Must not: decide for taskgate or reach into it: stories go in through
//! GitHub (comments, pushes, workflow runs), and what is read back is what
//! GitHub and the store hold.
//!
//! Why the `actions` runner: a proof on the `local` runner takes the wall
//! time its commands take, whatever the clock says, so ten minutes of clock
//! time would be ten minutes of waiting (or a test that lies about it).
//! With `runner: actions` taskgate waits for a workflow run GitHub
//! completes, and the fake completes it when its clock says ten minutes
//! have passed since the dispatch: taskgate sees exactly what a ten-minute
//! job looks like, and the stream costs no waiting. The loop never steps
//! the clock by a fixed amount: it moves it to the next arrival or the
//! next run's end, so a day of clock time is a few hundred steps.

use std::time::Duration;

use fakehub::RepoHandle;
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::ship::{ShipState, StoryRecord};

use super::actions::WORKFLOW;
use super::plan::{Plan, Task};
use super::{eventually, TestApp, REPO};

pub mod figures;
pub mod player;

use player::{ActionsPlayer, SHARED_MOVED};

/// Mean time between two arrivals: more stories an hour (40) than a
/// one-at-a-time queue of ten-minute proofs can prove (6), as in a busy
/// repository; the core's model of the train uses the same stream.
const ARRIVAL_MS: u64 = 90_000;

/// Stories built at once while setting up: each batch's webhooks settle
/// well within the harness's waits.
const SETUP_BATCH: usize = 10;

/// One story of the stream.
#[derive(Debug, Clone)]
pub struct StreamStory {
    /// Its task id and file stem: `s0`, `s1`, …
    pub key: String,
    /// When it is shipped, after the stream starts.
    pub at_ms: i64,
    /// A test fails on the merge (never on its own branch).
    pub broken: bool,
    /// Its test fails in its first proof, then passes.
    pub flaky: bool,
    /// The file its failing test is in: its own 70 % of the time.
    pub test_file: String,
}

/// A deterministic generator (xorshift): the same seed, the same stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// `n` stories from `seed`: the stream of the core's model
/// (`crates/taskgate-core/benches/ship_train.rs`), draw for draw.
pub fn stream(n: usize, seed: u64) -> Vec<StreamStory> {
    let mut rng = Rng(seed);
    let mut at_ms = 0;
    (0..n)
        .map(|i| {
            at_ms += (rng.next() % (2 * ARRIVAL_MS)) as i64;
            let broken = rng.chance(10);
            let flaky = !broken && rng.chance(5);
            let test_file = if rng.chance(70) {
                format!("tests/s{i}.rs")
            } else {
                "tests/shared.rs".to_owned()
            };
            StreamStory {
                key: format!("s{i}"),
                at_ms,
                broken,
                flaky,
                test_file,
            }
        })
        .collect()
}

/// Which queue the stream goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// The one-story queue: the product with `ship_train` off.
    Serial,
    /// The ship train with its defaults.
    Train,
    /// The ship train splitting failed cars in halves, without the
    /// failing tests' evidence (`ship_bisect: halves`).
    Split,
}

impl Queue {
    /// `TASKGATE_BENCH_QUEUE=serial|train|split`; serial unless said.
    pub fn from_env() -> Queue {
        match std::env::var("TASKGATE_BENCH_QUEUE").as_deref() {
            Err(_) | Ok("" | "serial") => Queue::Serial,
            Ok("train") => Queue::Train,
            Ok("split") => Queue::Split,
            Ok(other) => panic!("TASKGATE_BENCH_QUEUE={other}: use serial, train or split"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Queue::Serial => "serial",
            Queue::Train => "train",
            Queue::Split => "split",
        }
    }

    /// `.github/taskgate.yml` for this queue; a train's batching wait is
    /// `TASKGATE_BENCH_BATCH_WAIT` seconds when set (else the default).
    fn config(self) -> String {
        let queue = match self {
            // Explicit: the serial baseline whatever the default becomes.
            Queue::Serial => {
                return "runner: actions\nship_label: ship\nship_train: false\n".into()
            }
            Queue::Train => "runner: actions\nship_label: ship\nship_train: true\n",
            Queue::Split => {
                "runner: actions\nship_label: ship\nship_train: true\nship_bisect: halves\n"
            }
        };
        match std::env::var("TASKGATE_BENCH_BATCH_WAIT") {
            Ok(wait) if !wait.is_empty() => format!("{queue}ship_batch_wait: {wait}\n"),
            _ => queue.to_owned(),
        }
    }
}

/// A story of the stream as the harness follows it.
#[derive(Debug, Clone)]
pub struct Tracked {
    pub spec: StreamStory,
    pub story: StoryId,
    pub issue: u64,
    /// Shipped and not landed or refused since.
    pub waiting: bool,
    pub shipped: bool,
    /// Times its ship was refused.
    pub refusals: u32,
    /// Times a person shipped it again after a refusal.
    pub requeues: u32,
    /// When it landed (the store's stamp), on the movable clock.
    pub landed_ms: Option<i64>,
}

/// The stream's repository, its stories built, before the first ship.
pub struct ShipStream {
    pub app: TestApp,
    pub queue: Queue,
    pub stories: Vec<Tracked>,
    pub player: ActionsPlayer,
    repo: RepoName,
    /// The stream's start on the movable clock.
    pub t0_ms: i64,
    /// The default branch's head when the stream started.
    pub main_at_start: String,
    /// How many times the loop moved the clocks.
    pub steps: usize,
}

impl ShipStream {
    /// The repository under `queue`'s config with every story of `specs`
    /// built (its task green and merged, its story PR open and shippable)
    /// on the default branch as it was, and then the default branch moved
    /// on by the change the broken stories do not survive.
    pub async fn build(queue: Queue, specs: Vec<StreamStory>, proof: Duration) -> ShipStream {
        let app = TestApp::start().await;
        // Hundreds of writes a minute while stories are built; the
        // secondary limits have tests of their own.
        app.fake.set_secondary_limit(100_000);
        app.fake.add_user("octocat", 583_231, "maintain");
        let repo = app.fake.repo(REPO);
        repo.add_workflow(WORKFLOW);
        let player = ActionsPlayer::new(repo.clone(), proof, &specs);
        let mut s = ShipStream {
            app,
            queue,
            stories: Vec::new(),
            player,
            repo: RepoName::parse(REPO).unwrap(),
            t0_ms: 0,
            main_at_start: String::new(),
            steps: 0,
        };
        let config = queue.config();
        s.app
            .push_to_main(&[
                (".github/taskgate.yml", config.as_str()),
                ("src/shared.rs", "pub const SHARED: u32 = 1;\n"),
            ])
            .await;
        for batch in specs.chunks(SETUP_BATCH) {
            s.build_batch(batch).await;
        }
        s.app.push_to_main(&[("src/shared.rs", SHARED_MOVED)]).await;
        s.quiet().await;
        s
    }

    fn repo(&self) -> RepoHandle {
        self.app.fake.repo(REPO)
    }

    /// Waits until taskgate is quiet with every run due completed.
    pub async fn quiet(&mut self) {
        loop {
            self.app.settle().await;
            let now = self.app.clock.now_ms();
            if self.player.play(now) == 0 {
                return;
            }
        }
    }

    /// Builds `batch`: its plans on main, a green commit on each task
    /// branch, each task PR marked ready and merged by taskgate, each story
    /// shippable.
    async fn build_batch(&mut self, batch: &[StreamStory]) {
        let plans: Vec<(String, String)> = batch
            .iter()
            .map(|s| {
                let plan = Plan::story(&format!("Stream story {} arrives", s.key))
                    .task(Task::new(&s.key, &format!("Work {}", s.key)).runs("cargo test"))
                    .yaml();
                (format!(".taskgate/stories/{}.yml", s.key), plan)
            })
            .collect();
        let files: Vec<(&str, &str)> = plans
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        self.app.push_to_main(&files).await;
        let repo = self.repo();
        let mut task_branches = Vec::new();
        for s in batch {
            let (_, branch) = self.app.task_and_branch(&format!("Work {}", s.key), &s.key);
            let src = format!("src/{}.rs", s.key);
            let test = format!("tests/{}.rs", s.key);
            let body = format!("pub fn {}() -> u32 {{ 1 }}\n", s.key);
            let check = format!("#[test]\nfn works() {{ assert_eq!({}(), 1) }}\n", s.key);
            repo.push_files(&branch, &[(&src, &body), (&test, &check)], "Work", "agent");
            task_branches.push(branch);
        }
        self.quiet().await;
        for branch in &task_branches {
            let pr = repo.pulls().into_iter().find(|p| &p.head == branch);
            let pr = pr.unwrap_or_else(|| panic!("a task PR for {branch}"));
            repo.set_draft(pr.number, false, "agent");
        }
        self.quiet().await;
        for s in batch {
            let tracked = self.track(s.clone()).await;
            self.stories.push(tracked);
        }
    }

    /// Finds `spec`'s story issue, story PR and id, once it is shippable.
    async fn track(&self, spec: StreamStory) -> Tracked {
        let repo = self.repo();
        let needle = format!("story {} arrives", spec.key);
        let issue = repo
            .issues()
            .into_iter()
            .find(|i| i.labels.iter().any(|l| l == "taskgate:story") && i.title.contains(&needle))
            .unwrap_or_else(|| panic!("the story issue of {}", spec.key))
            .number;
        let branch = taskgate_core::story::story_branch(issue);
        eventually("the story PR is open", || async {
            repo.pulls().iter().any(|p| p.head == branch)
        })
        .await;
        let rows = self.app.store().stories().await.unwrap();
        let story = rows
            .into_iter()
            .find(|r| r.repo == self.repo && r.issue == IssueNumber::new(issue))
            .expect("the story's row")
            .story;
        let tracked = Tracked {
            spec,
            story,
            issue,
            waiting: false,
            shipped: false,
            refusals: 0,
            requeues: 0,
            landed_ms: None,
        };
        let state = self.record(&tracked.story).await.state;
        assert_eq!(state, ShipState::Shippable, "{} is built", tracked.spec.key);
        tracked
    }

    async fn records(&self) -> Vec<(StoryId, StoryRecord)> {
        self.app.store().story_records(&self.repo).await.unwrap()
    }

    pub async fn record(&self, story: &StoryId) -> StoryRecord {
        self.records()
            .await
            .into_iter()
            .find(|(s, _)| s == story)
            .map(|(_, r)| r)
            .unwrap_or_default()
    }
}

mod stream_loop;
