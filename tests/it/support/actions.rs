//! Owns: the `actions` runner scenario: a story whose repository runs its
//! tests with taskgate's workflow, and what the test needs to play GitHub
//! Actions for it: the dispatches, completing a run, and the report
//! artifact the workflow's `taskgate run` uploads.
//! Must not: run anything (no git repository: the commits pushed exist on
//! the fake GitHub only).
//!
//! `ActionsStory::of(&plan).config(CONFIG).without_workflow().start().await`
//! reads as the set-up it is; the defaults are `runner: actions` as the
//! config and the workflow in the repository.

use std::io::Write;

use fakehub::{payloads, RepoHandle};
use taskgate::app::ServeConfig;
use taskgate_core::classify::FailureKind;
use taskgate_core::report::{GateResult, RunReport, REPORT_VERSION};

use super::plan::{Plan, Task};
use super::story::PLAN_PATH;
use super::{eventually, TestApp, REPO};

/// taskgate's runner workflow, as `taskgate init` writes it.
pub const WORKFLOW: &str = "taskgate-run.yml";

/// The plan most `actions` tests share: task `check`, gated by `test`
/// (`sh check.sh`) and `lint` (`sh lint.sh`).
pub fn test_and_lint() -> String {
    Plan::story("Checked work")
        .task(Task::check().runs("sh lint.sh").gate("lint"))
        .yaml()
}

pub struct ActionsStory {
    pub app: TestApp,
    pub task_issue: u64,
    pub branch: String,
}

/// How an [`ActionsStory`] starts; [`ActionsStoryBuilder::start`] makes it.
#[must_use = "a story starts only with `.start().await`"]
pub struct ActionsStoryBuilder<'a, F = fn(&mut ServeConfig)> {
    plan: &'a str,
    config: &'a str,
    workflow: bool,
    many_writes: bool,
    adjust: F,
}

impl ActionsStory {
    /// A story of `plan` (its task `check` titled "Make the check pass"),
    /// under `runner: actions`, with the workflow in the repository.
    pub fn of(plan: &str) -> ActionsStoryBuilder<'_> {
        ActionsStoryBuilder {
            plan,
            config: "runner: actions\n",
            workflow: true,
            many_writes: false,
            adjust: |_| {},
        }
    }
}

impl<'a, F: FnOnce(&mut ServeConfig)> ActionsStoryBuilder<'a, F> {
    /// `.github/taskgate.yml` (`runner: actions` unless said).
    pub fn config(mut self, config: &'a str) -> Self {
        self.config = config;
        self
    }

    /// The workflow file left out of the repository.
    pub fn without_workflow(mut self) -> Self {
        self.workflow = false;
        self
    }

    /// GitHub's secondary rate limit out of the way: for a story that
    /// makes many writes in a few seconds (the limit has tests of its own).
    pub fn many_writes(mut self) -> Self {
        self.many_writes = true;
        self
    }

    /// The server's configuration adjusted.
    pub fn adjust<G: FnOnce(&mut ServeConfig)>(self, adjust: G) -> ActionsStoryBuilder<'a, G> {
        ActionsStoryBuilder {
            plan: self.plan,
            config: self.config,
            workflow: self.workflow,
            many_writes: self.many_writes,
            adjust,
        }
    }

    pub async fn start(self) -> ActionsStory {
        let app = TestApp::start_with(self.adjust).await;
        if self.many_writes {
            app.fake.set_secondary_limit(100_000);
        }
        if self.workflow {
            app.fake.repo(REPO).add_workflow(WORKFLOW);
        }
        app.push_to_main(&[
            (".github/taskgate.yml", self.config),
            (PLAN_PATH, self.plan),
        ])
        .await;
        let (task_issue, branch) = app.task_and_branch("Make the check pass", "check");
        ActionsStory {
            app,
            task_issue,
            branch,
        }
    }
}

impl ActionsStory {
    pub fn repo(&self) -> RepoHandle {
        self.app.fake.repo(REPO)
    }

    /// The agent pushes a commit `sha` to the task branch; GitHub tells
    /// taskgate. Nothing runs it here, so no git repository is needed.
    pub async fn push(&self, sha: &str) {
        self.repo().push_commit(
            &self.branch,
            sha,
            "work",
            &[("check.sh", "exit 0\n")],
            "agent",
        );
    }

    /// Pushes `sha` and waits for its workflow run; returns the run's id.
    pub async fn push_and_dispatch(&self, sha: &str) -> u64 {
        self.push(sha).await;
        eventually("the runner workflow is dispatched", || async {
            self.dispatch_for(sha).is_some()
        })
        .await;
        self.app.settle().await;
        self.dispatch_for(sha).unwrap().run_id
    }

    pub fn dispatch_for(&self, sha: &str) -> Option<fakehub::WorkflowDispatch> {
        self.repo()
            .dispatches()
            .into_iter()
            .find(|d| d.inputs["sha"] == sha)
    }

    /// GitHub's webhook for a run of taskgate's, delivered (again) by the
    /// test: a late or repeated delivery.
    pub async fn workflow_run_again(&self, action: &str, run_id: u64) {
        let payload = payloads::workflow_run(action, &self.repo(), run_id);
        // 200 when the body is the one GitHub sent already: a duplicate.
        let status = self.app.deliver("workflow_run", &payload).await.0;
        assert!(matches!(status, 200 | 202), "{status}");
        self.app.settle().await;
    }

    /// GitHub Actions ends run `run_id` with these artifacts and says so.
    pub async fn complete(&self, run_id: u64, conclusion: &str, artifacts: &[(&str, &[u8])]) {
        self.repo().complete_run(run_id, conclusion, artifacts);
        self.app.settle().await;
    }

    /// Completes the run with a report for `sha` uploaded as the workflow
    /// template does: a zipped `taskgate-report` artifact.
    pub async fn complete_reporting(
        &self,
        run_id: u64,
        conclusion: &str,
        sha: &str,
        gates: &[(&str, bool)],
    ) {
        let zip = zipped(&report(sha, gates));
        self.complete(run_id, conclusion, &[("taskgate-report", &zip)])
            .await;
    }

    pub fn checks(&self, sha: &str) -> Vec<fakehub::CheckRun> {
        self.repo()
            .check_runs()
            .into_iter()
            .filter(|c| c.head_sha == sha)
            .collect()
    }

    pub fn task_labels(&self) -> Vec<String> {
        self.repo().issue(self.task_issue).unwrap().labels
    }
}

fn gate(name: &str, passed: bool) -> GateResult {
    GateResult {
        gate: name.into(),
        passed,
        kind: (!passed).then_some(FailureKind::TestFailure),
        summary: (!passed).then(|| "expected 10 rows, got 0".into()),
        commands: vec![],
        missing_artifacts: vec![],
        metric_failures: vec![],
        warnings: vec![],
        cancelled: false,
        tests: None,
    }
}

/// What the workflow's `taskgate run` writes for task `check` at `sha`.
pub fn report(sha: &str, gates: &[(&str, bool)]) -> RunReport {
    RunReport {
        version: REPORT_VERSION,
        task: taskgate_core::task::RunSubject::Task("check".into()),
        sha: Some(sha.into()),
        gates: gates.iter().map(|(g, passed)| gate(g, *passed)).collect(),
        duration_ms: 1200,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

/// What upload-artifact uploads: the report in a zip.
pub fn zipped(report: &RunReport) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("taskgate-report.json", options).unwrap();
    zip.write_all(&serde_json::to_vec(report).unwrap()).unwrap();
    zip.finish().unwrap().into_inner()
}
