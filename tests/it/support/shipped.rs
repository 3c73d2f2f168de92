//! Owns: the ship scenario: a one-task story on a fake GitHub whose
//! commits are real (proofs run on them), taken as far as a test needs it
//! (building, shippable, landed), and the helpers that ship it and wait
//! for what follows.
//! Must not: assert what a test proves beyond the set-up's own milestones
//! (the task PR merged, the story PR opened, the story shippable).
//!
//! `Shipped::story().config(CONFIG).check(SLOW_CHECK).shippable().await`
//! reads as the set-up it is; the check defaults to `exit 0`. The config
//! written says `ship_batch_wait: 0` unless the test's own names it.

use serde_json::Value;

use fakehub::payloads;

use super::plan::{Plan, Task};
use super::story::Story;
use super::{eventually, REPO};

/// The story shipped: one task, `check`, gated by `sh check.sh`.
fn plan() -> String {
    Plan::story("Shipped work").task(Task::check()).yaml()
}

/// The plan of [`Shipped::second_story`].
pub struct Shipped {
    pub s: Story,
    pub story_issue: u64,
    pub branch: String,
}

/// How far a [`Shipped`] story is taken before the test starts.
#[must_use = "a story starts only with `.start()`, `.shippable()` or `.landed()`"]
pub struct ShippedBuilder<'a> {
    config: Option<&'a str>,
    check: &'a str,
    runners: usize,
}

impl Shipped {
    /// A story of one task `check` ("Make the check pass"), with no
    /// repository config unless given one.
    pub fn story() -> ShippedBuilder<'static> {
        ShippedBuilder {
            config: None,
            check: "exit 0\n",
            runners: 1,
        }
    }
}

impl<'a> ShippedBuilder<'a> {
    /// `.github/taskgate.yml`.
    pub fn config(mut self, config: &'a str) -> Self {
        self.config = Some(config);
        self
    }

    /// At most `max` runs at once (1 unless said).
    pub fn runners(mut self, max: usize) -> Self {
        self.runners = max;
        self
    }

    /// The task's `check.sh` when it is done (`exit 0` unless said).
    pub fn check(mut self, check: &'a str) -> Self {
        self.check = check;
        self
    }

    /// The story synced, its task not started; octocat maintains the
    /// repository (shipping needs maintain, SPEC §5).
    pub async fn start(self) -> Shipped {
        // A lone story proves at once unless the test is about the ship
        // train's batching wait (`ship/batch_wait.rs` sets it): the wait
        // is clock time, which flows in real time here.
        let config = match self.config {
            Some(c) if c.contains("ship_batch_wait") => c.to_owned(),
            Some(c) => format!("{}\nship_batch_wait: 0\n", c.trim_end()),
            None => "ship_batch_wait: 0\n".to_owned(),
        };
        let s = Story::of(&plan())
            .config(&config)
            .runners(self.runners)
            .backed()
            .start()
            .await;
        s.app.fake.add_user("octocat", 583_231, "maintain");
        let repo = s.app.fake.repo(REPO);
        let story_issue = repo
            .issues()
            .into_iter()
            .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
            .expect("the story issue")
            .number;
        Shipped {
            s,
            branch: format!("taskgate/story-{story_issue}"),
            story_issue,
        }
    }

    /// The task done with the check and merged; taskgate opened the story
    /// PR, and the story is shippable.
    pub async fn shippable(self) -> Shipped {
        let check = self.check;
        let sh = self.start().await;
        sh.complete_the_task_with(check).await;
        assert!(sh.story_pr().is_some(), "taskgate opened the story PR");
        assert_eq!(sh.state().await, "shippable");
        sh
    }

    /// Shippable, shipped by the label, and landed.
    pub async fn landed(self) -> Shipped {
        let sh = self.shippable().await;
        sh.add_ship_label().await;
        sh.landed().await;
        sh
    }
}

impl Shipped {
    pub fn repo(&self) -> fakehub::RepoHandle {
        self.s.app.fake.repo(REPO)
    }

    /// The task passes and its PR merges into the story branch.
    pub async fn complete_the_task(&self) {
        self.complete_the_task_with("exit 0\n").await;
    }

    /// The task passes with `check` as its `check.sh`, and its PR merges
    /// into the story branch.
    pub async fn complete_the_task_with(&self, check: &str) {
        let green = self.s.push(&[("check.sh", check)], "works").await;
        self.s.completed(&green, 1).await;
        let pr = self.s.pull();
        let repo = self.repo();
        repo.set_draft(pr.number, false, "agent");
        self.s.app.settle().await;
        assert!(self.s.pull().merged, "the task PR merged");
    }

    pub fn story_pr(&self) -> Option<fakehub::Pull> {
        self.repo()
            .pulls()
            .into_iter()
            .find(|p| p.head == self.branch)
    }

    /// octocat adds the `ship` label; GitHub sends `pull_request.labeled`.
    pub async fn add_ship_label(&self) {
        let pr = self.story_pr().unwrap().number;
        // A person's click comes a second or more after the change before
        // it (taskgate's removal of the label, say): GitHub's `updated_at`
        // then differs, and so does the body. Two clicks in one second
        // are one body, which the intake takes as a replay (issue 45).
        self.s.app.advance(std::time::Duration::from_secs(1));
        self.repo().add_labels(pr, &["ship"], "octocat");
        self.s.app.fake.echoes_settled().await;
    }

    /// The `labeled` webhook of the `ship` label delivered once more, as a
    /// redelivery or a duplicate from GitHub would be.
    pub async fn ship_label_again(&self) -> (u16, String) {
        let pr = self.story_pr().unwrap().number;
        let payload = payloads::pull_request_labeled(&self.repo(), pr, "ship", "octocat");
        self.s.app.deliver("pull_request", &payload).await
    }

    pub fn gate(&self) -> fakehub::CheckRun {
        let head = self.repo().branch_sha(&self.branch).unwrap();
        self.repo()
            .check_runs()
            .into_iter()
            .find(|c| c.name == "taskgate/ship-gate" && c.head_sha == head)
            .expect("a ship gate on the story PR head")
    }

    pub fn pr_labels(&self) -> Vec<String> {
        let number = self.story_pr().unwrap().number;
        self.repo().issue(number).unwrap().labels
    }

    pub async fn api(&self, method: &str, path: &str, token: Option<&str>) -> (u16, Value) {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", self.s.app.url);
        let mut req = match method {
            "POST" => client.post(url),
            _ => client.get(url),
        };
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// The story as the API gives it (`GET /api/stories/{issue}`),
    /// whatever the status.
    pub async fn story_json(&self) -> Value {
        self.story_api(self.story_issue).await.1
    }

    async fn story_api(&self, issue: u64) -> (u16, Value) {
        let path = format!("/api/stories/{issue}");
        self.api("GET", &path, Some("api-token")).await
    }

    /// The story's state, as the API says it.
    pub async fn state(&self) -> String {
        self.state_of(self.story_issue).await
    }

    /// The state of the story of issue `issue` (another story of the
    /// repository), as the API says it.
    pub async fn state_of(&self, issue: u64) -> String {
        let (status, v) = self.story_api(issue).await;
        assert_eq!(status, 200, "{v}");
        v["state"].as_str().unwrap().to_owned()
    }

    /// Completes the workflow run dispatched for `workflow` and tells taskgate.
    pub async fn finish_run(&self, workflow: &str, conclusion: &str) {
        let repo = self.repo();
        let run = repo
            .dispatches()
            .into_iter()
            .find(|d| d.workflow == workflow)
            .unwrap_or_else(|| panic!("{workflow} was dispatched"))
            .run_id;
        repo.complete_run(run, conclusion, &[]);
        self.s.app.settle().await;
    }

    /// Waits until the story PR is merged: the proof on the current base
    /// runs first, on the runner, after the inbox has gone quiet.
    pub async fn landed(&self) {
        eventually("the story landed", || async {
            self.story_pr().is_some_and(|p| p.merged)
        })
        .await;
        self.s.app.settle().await;
    }

    /// Waits until taskgate said something containing `needle` on the
    /// story issue (`what` names the wait), then for the inbox to settle.
    pub async fn story_told(&self, what: &str, needle: &str) {
        eventually(what, || async {
            self.s
                .app
                .bot_comments(self.story_issue)
                .iter()
                .any(|c| c.contains(needle))
        })
        .await;
        self.s.app.settle().await;
    }

    /// Landings: the default branch moved to a tested commit (a story PR
    /// is never merged through the pull request API).
    pub fn merges(&self) -> usize {
        let writes = self.s.app.fake.writes();
        assert!(
            !writes.iter().any(|w| w.method == "PUT"
                && w.path.ends_with("/merge")
                && w.path
                    .contains(&format!("/pulls/{}/", self.story_pr().unwrap().number))),
            "a story PR lands by fast-forward, not the merge API"
        );
        writes
            .iter()
            .filter(|w| w.method == "PATCH" && w.path.ends_with("/git/refs/heads/main"))
            .count()
    }

    pub fn pull_of(&self, branch: &str) -> Option<fakehub::Pull> {
        self.repo().pulls().into_iter().find(|p| p.head == branch)
    }

    /// The default branch's head.
    pub fn main_head(&self) -> String {
        self.repo().branch_sha("main").unwrap()
    }

    /// The parents of a real commit, from the runner's git remote.
    pub fn parents(&self, sha: &str) -> Vec<String> {
        self.s.origin.parents(sha)
    }

    /// A second story in the same repository, its one task done: its
    /// story issue and story branch.
    pub async fn second_story(&self) -> (u64, String) {
        self.story_done("other", "Other shipped work", "Other work")
            .await
    }

    /// Another story `title` in the repository (plan file and task id
    /// `key`, its one task `task_title` running `sh <key>.sh`), its task
    /// done and its story PR open: its story issue and story branch.
    pub async fn story_done(&self, key: &str, title: &str, task_title: &str) -> (u64, String) {
        let script = format!("{key}.sh");
        self.story_done_with(key, (title, task_title), &[(script.as_str(), "exit 0\n")])
            .await
    }

    /// [`Shipped::story_done`], its task's work being `files` (which must
    /// hold `<key>.sh`, the task's gate).
    pub async fn story_done_with(
        &self,
        key: &str,
        (title, task_title): (&str, &str),
        files: &[(&str, &str)],
    ) -> (u64, String) {
        let plan = Plan::story(title)
            .task(Task::new(key, task_title).runs(&format!("sh {key}.sh")))
            .yaml();
        let path = format!(".taskgate/stories/{key}.yml");
        self.s
            .app
            .push_to_main(&[(path.as_str(), plan.as_str())])
            .await;
        let (_, task_branch) = self.s.app.task_and_branch(task_title, key);
        let green = self.s.push_on(&task_branch, files, "works").await;
        self.s.completed(&green, 1).await;
        let task_pr = self.pull_of(&task_branch).expect("the task's PR");
        self.repo().set_draft(task_pr.number, false, "agent");
        self.s.app.settle().await;
        let issue = self
            .repo()
            .issues()
            .into_iter()
            .find(|i| {
                i.number != self.story_issue
                    && i.labels.iter().any(|l| l == "taskgate:story")
                    && i.title.contains(title)
            })
            .expect("the story's issue")
            .number;
        let branch = format!("taskgate/story-{issue}");
        eventually("the story PR is open", || async {
            self.pull_of(&branch).is_some()
        })
        .await;
        (issue, branch)
    }
}
