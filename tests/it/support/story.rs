//! Owns: the scenario most acceptance tests start from: a story synced
//! from a plan on main, a real git remote behind it, and the helpers that
//! push to its task branch and wait for its check runs.
//! Must not: assert what a test proves (a [`Story`] only sets up and
//! waits; the test says what must hold).
//!
//! `Story::of(PLAN).config(CONFIG).runners(1).start().await` reads as the
//! set-up it is; what is not named keeps its default (no config, two
//! concurrent runs, the fake GitHub's own commits, the server's defaults).

use taskgate::app::ServeConfig;

use super::origin::Origin;
use super::{eventually, TestApp, INSTALLATION, REPO};

/// Where a [`Story`]'s plan is pushed on main.
pub const PLAN_PATH: &str = ".taskgate/stories/checks.yml";

pub struct Story {
    pub app: TestApp,
    pub origin: Origin,
    pub task_issue: u64,
    pub branch: String,
}

/// How a [`Story`] starts; [`StoryBuilder::start`] makes it.
#[must_use = "a story starts only with `.start().await`"]
pub struct StoryBuilder<'a, F = fn(&mut ServeConfig)> {
    plan: &'a str,
    config: Option<&'a str>,
    max_runs: usize,
    backed: bool,
    adjust: F,
}

impl Story {
    /// A story of `plan`, synced from main; its task titled "Make the
    /// check pass" (id `check`) is the one the helpers push to.
    pub fn of(plan: &str) -> StoryBuilder<'_> {
        StoryBuilder {
            plan,
            config: None,
            max_runs: 2,
            backed: false,
            adjust: |_| {},
        }
    }
}

impl<'a, F: FnOnce(&mut ServeConfig)> StoryBuilder<'a, F> {
    /// `.github/taskgate.yml`, pushed with the plan.
    pub fn config(self, config: &'a str) -> Self {
        self.config_if(Some(config))
    }

    /// `.github/taskgate.yml` if there is one.
    pub fn config_if(mut self, config: Option<&'a str>) -> Self {
        self.config = config;
        self
    }

    /// At most `max` runs at once (`max_concurrent_runs`; 2 unless said).
    pub fn runners(mut self, max: usize) -> Self {
        self.max_runs = max;
        self
    }

    /// Every commit the fake GitHub makes itself (the plan pushed to
    /// main, merges) a real commit of the runner's git remote, so that
    /// merge commits can be checked out and tested.
    pub fn backed(mut self) -> Self {
        self.backed = true;
        self
    }

    /// The server's configuration adjusted, after the story's own.
    pub fn adjust<G: FnOnce(&mut ServeConfig)>(self, adjust: G) -> StoryBuilder<'a, G> {
        StoryBuilder {
            plan: self.plan,
            config: self.config,
            max_runs: self.max_runs,
            backed: self.backed,
            adjust,
        }
    }

    pub async fn start(self) -> Story {
        let StoryBuilder {
            plan,
            config,
            max_runs,
            backed,
            adjust,
        } = self;
        super::init_logs();
        let fake = fakehub::FakeGitHub::start().await;
        let repo = fake.install(INSTALLATION, REPO);
        // These stories make many writes in a few seconds; the secondary
        // limit has tests of its own.
        fake.set_secondary_limit(100_000);
        let origin = Origin::new();
        if backed {
            repo.back_with_git(&origin.bare());
        }
        let source = origin.source();
        let app = TestApp::with_config(fake, move |c| {
            c.git = Some(source);
            c.max_concurrent_runs = max_runs;
            adjust(c);
        })
        .await;
        let mut files = vec![(PLAN_PATH, plan)];
        if let Some(config) = config {
            files.insert(0, (".github/taskgate.yml", config));
        }
        app.push_to_main(&files).await;
        let (task_issue, branch) = app.task_and_branch("Make the check pass", "check");
        Story {
            app,
            origin,
            task_issue,
            branch,
        }
    }
}

impl Story {
    /// The agent pushes `files` to the task branch; GitHub tells taskgate.
    pub async fn push(&self, files: &[(&str, &str)], message: &str) -> String {
        self.push_to(&self.branch, files, message).await
    }

    pub async fn push_to(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        let sha = self.origin.commit(branch, files, message);
        // GitHub sends push, pull_request.synchronize (once a PR is open)
        // and check_suite for it.
        self.app
            .fake
            .repo(REPO)
            .push_commit(branch, &sha, message, files, "agent");
        sha
    }

    /// [`Story::push`] as `login` (an agent's bot, or a person).
    pub async fn push_as(&self, login: &str, files: &[(&str, &str)], message: &str) -> String {
        let sha = self.origin.commit(&self.branch, files, message);
        self.app
            .fake
            .repo(REPO)
            .push_commit(&self.branch, &sha, message, files, login);
        sha
    }

    /// [`Story::push_to`] on top of `branch` as GitHub has it (not on
    /// whatever the test's work tree last held): an agent's commit on its
    /// own branch.
    pub async fn push_on(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        let from = self
            .app
            .fake
            .repo(REPO)
            .branch_sha(branch)
            .expect("the branch exists");
        let sha = self.origin.commit_from(branch, &from, files, message);
        self.app
            .fake
            .repo(REPO)
            .push_commit(branch, &sha, message, files, "agent");
        sha
    }

    pub fn checks(&self, sha: &str) -> Vec<fakehub::CheckRun> {
        self.app
            .fake
            .repo(REPO)
            .check_runs()
            .into_iter()
            .filter(|c| c.head_sha == sha)
            .collect()
    }

    /// Waits until every check run on `sha` is completed.
    pub async fn completed(&self, sha: &str, count: usize) -> Vec<fakehub::CheckRun> {
        eventually("check runs completed", || async {
            let runs = self.checks(sha);
            runs.len() == count && runs.iter().all(|c| c.status == "completed")
        })
        .await;
        self.app.settle().await;
        self.checks(sha)
    }

    /// The task's `state:*` label, or nothing.
    pub fn state(&self) -> String {
        self.task_labels()
            .into_iter()
            .find(|l| l.starts_with("state:"))
            .unwrap_or_default()
    }

    pub fn task_labels(&self) -> Vec<String> {
        self.app
            .fake
            .repo(REPO)
            .issue(self.task_issue)
            .unwrap()
            .labels
    }

    pub fn pull(&self) -> fakehub::Pull {
        self.app
            .fake
            .repo(REPO)
            .pulls()
            .into_iter()
            .find(|p| p.head == self.branch)
            .expect("a task pull request")
    }
}
