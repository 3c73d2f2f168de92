//! The test's side of the fake GitHub: webhooks delivered (GitHub's
//! documented examples as fixtures), people's comments, and what taskgate
//! wrote there (the bot's comments and replies, check runs, statuses).
//!
//! Owns: reading and writing the fake on the test's behalf. Must not: wait
//! longer than the fake's own echoes (`settle` does).

use fakehub::FakeGitHub;
use serde_json::Value;

use super::{TestApp, REPO, SECRET};

impl TestApp {
    /// Posts a signed delivery with a fresh delivery id.
    pub async fn deliver(&self, event: &str, payload: &Value) -> (u16, String) {
        let id = format!("{:032x}", fastrand::u128(..));
        self.deliver_as(event, &id, payload).await
    }

    pub async fn deliver_as(
        &self,
        event: &str,
        delivery_id: &str,
        payload: &Value,
    ) -> (u16, String) {
        self.fake
            .deliver(
                &format!("{}/webhook", self.url),
                SECRET,
                event,
                delivery_id,
                payload,
            )
            .await
    }

    /// A user's comment on issue `number`; GitHub delivers it. Returns
    /// once taskgate has answered the delivery.
    pub async fn comment(&self, number: u64, author: &str, body: &str) -> fakehub::Comment {
        let comment = self.fake.repo(REPO).add_comment(number, body, author);
        self.fake.echoes_settled().await;
        comment
    }

    /// The statuses GitHub answered to the requests on `route`
    /// (`"POST /repos/{owner}/{repo}/issues"`), in order.
    pub fn statuses(&self, route: &str) -> Vec<u16> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| {
                r.route
                    .as_deref()
                    .is_some_and(|t| route.strip_prefix(&r.method).map(str::trim_start) == Some(t))
            })
            .map(|r| r.status)
            .collect()
    }

    /// Every request body taskgate sent matched GitHub's OpenAPI description.
    pub fn assert_contract_kept(&self) {
        self.fake.assert_contract_kept();
    }

    /// The bot's estimate comments ("This plan needs about …") on the
    /// repository's story issue, oldest first.
    pub fn plan_estimates(&self) -> Vec<String> {
        let story = (self.fake.repo(REPO).issues().into_iter())
            .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
            .expect("a story issue");
        self.bot_comments(story.number)
            .into_iter()
            .filter(|b| b.starts_with("This plan needs about"))
            .collect()
    }

    /// Comments on `number` written by the bot (not by the test).
    pub fn bot_comments(&self, number: u64) -> Vec<String> {
        self.fake
            .repo(REPO)
            .comments(number)
            .into_iter()
            .filter(|c| c.author.ends_with("[bot]"))
            .map(|c| c.body)
            .collect()
    }

    /// The bot's replies on `number` (comments that answer someone:
    /// `@login …`), first line only: the rest is a marker naming ids.
    pub fn replies(&self, number: u64) -> Vec<String> {
        self.replies_to(number, "")
    }

    /// The bot's replies on `number` that answer `login`, first line only.
    pub fn replies_to(&self, number: u64, login: &str) -> Vec<String> {
        let to = format!("@{login}");
        self.bot_comments(number)
            .into_iter()
            .filter(|c| c.starts_with(&to))
            .map(|c| c.lines().next().unwrap_or_default().to_owned())
            .collect()
    }

    /// Pushes one commit of `files` (path, content) to main of [`REPO`],
    /// as a change on the default branch; waits until it is handled.
    pub async fn push_to_main(&self, files: &[(&str, &str)]) {
        let repo = self.fake.repo(REPO);
        repo.push_files("main", files, "Update the plan", "octocat");
        self.settle().await;
    }

    /// The task issue titled `title` that plan sync opened, and its branch
    /// (`taskgate/task-<issue>-<slug>`), which must exist.
    pub fn task_and_branch(&self, title: &str, slug: &str) -> (u64, String) {
        let repo = self.fake.repo(REPO);
        let task = repo
            .issues()
            .into_iter()
            .find(|i| i.title == title)
            .unwrap_or_else(|| panic!("no task issue titled {title:?}"));
        let branch = format!("taskgate/task-{}-{slug}", task.number);
        assert!(
            repo.branch_sha(&branch).is_some(),
            "task branch {branch} created"
        );
        (task.number, branch)
    }
}

/// A fake GitHub for a test without a [`TestApp`] (a child process, the
/// setup flow): it derefs to [`FakeGitHub`] and, dropped at the test's
/// end, checks the contract as [`TestApp`] does.
pub struct CheckedFake(FakeGitHub);

impl CheckedFake {
    pub async fn start() -> CheckedFake {
        CheckedFake(FakeGitHub::start().await)
    }
}

impl std::ops::Deref for CheckedFake {
    type Target = FakeGitHub;

    fn deref(&self) -> &FakeGitHub {
        &self.0
    }
}

impl Drop for CheckedFake {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.0.assert_contract_kept();
        }
    }
}

/// The check runs on commit `sha` of `repo`, as (name, conclusion,
/// title): what a person sees on that commit.
pub fn check_titles(repo: &fakehub::RepoHandle, sha: &str) -> Vec<(String, String, String)> {
    repo.check_runs()
        .into_iter()
        .filter(|c| c.head_sha == sha)
        .map(|c| {
            (
                c.name,
                c.conclusion.unwrap_or_default(),
                c.title.unwrap_or_default(),
            )
        })
        .collect()
}

/// GitHub's documented example of a webhook, dated now: the examples are
/// from 2019, and taskgate refuses an event older than its retention as a
/// possible replay (`intake::age`). Only the times GitHub gives the event
/// are moved; [`fixture_as_documented`] keeps them.
pub fn fixture(path: &str) -> Value {
    let mut payload = fixture_as_documented(path);
    let now = chrono::Utc::now();
    let text = serde_json::json!(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    for (object, field) in [
        ("comment", "created_at"),
        ("comment", "updated_at"),
        ("issue", "updated_at"),
        ("pull_request", "updated_at"),
        ("check_suite", "updated_at"),
        ("workflow_run", "updated_at"),
        ("review", "submitted_at"),
    ] {
        if payload[object][field].is_string() {
            payload[object][field] = text.clone();
        }
    }
    if payload["repository"]["pushed_at"].is_i64() {
        payload["repository"]["pushed_at"] = serde_json::json!(now.timestamp());
    }
    payload
}

/// GitHub's documented example of a webhook, exactly as documented.
pub fn fixture_as_documented(path: &str) -> Value {
    let full = format!("{}/fixtures/webhooks/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}")))
        .unwrap()
}
