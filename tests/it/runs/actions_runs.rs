//! The `actions` runner end to end: with `runner: actions` in the repo
//! config, a push to a task branch dispatches the runner workflow instead of
//! running locally; the test plays GitHub Actions (completes the run,
//! uploads the report artifact, sends `workflow_run`) and the check runs and
//! the task's state follow, as after a local run.

use std::time::Duration;

use fakehub::payloads;
use serde_json::json;

use crate::support::actions::{report, test_and_lint, zipped, ActionsStory, WORKFLOW};
use crate::support::plan::{Plan, Task};
use crate::support::{eventually, metric, REPO};

const GATES: [&str; 2] = ["test", "lint"];

/// The watch's period in the tests that move the clock past it.
const WATCH: Duration = Duration::from_secs(60);
/// A watch period and a second: what the tests move the clock on by for
/// the next look.
const NEXT_WATCH: Duration = WATCH.saturating_add(Duration::from_secs(1));

/// A story on Actions watched every minute (the tests move the app's
/// clock on past it; the run queue ticks by the same clock).
async fn watched_story() -> ActionsStory {
    ActionsStory::of(&test_and_lint())
        .adjust(|c| c.actions_watch = WATCH)
        .start()
        .await
}

fn conclusion(runs: &[fakehub::CheckRun], name: &str) -> String {
    runs.iter()
        .find(|c| c.name == name)
        .and_then(|c| c.conclusion.clone())
        .unwrap_or_else(|| panic!("no completed {name} in {runs:#?}"))
}

const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

#[tokio::test]
async fn with_two_plans_each_dispatch_names_the_story_whose_plan_the_job_runs() {
    // Two stories whose tasks share the id `check`: only the story tells
    // the job which plan's commands to run (`taskgate run --story`).
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let other = Plan::story("Other work")
        .task(
            Task::new("check", "Make the other check pass")
                .runs("sh check.sh")
                .runs("sh lint.sh")
                .gate("lint"),
        )
        .yaml();
    s.app
        .push_to_main(&[(".taskgate/stories/other.yml", &other)])
        .await;
    let (_, other_branch) = s.app.task_and_branch("Make the other check pass", "check");
    s.push(SHA1).await;
    s.repo().push_commit(
        &other_branch,
        SHA2,
        "work",
        &[("check.sh", "exit 0\n")],
        "agent",
    );
    eventually("both runs are dispatched", || async {
        s.dispatch_for(SHA1).is_some() && s.dispatch_for(SHA2).is_some()
    })
    .await;
    let inputs = |sha: &str| {
        let d = s.dispatch_for(sha).unwrap().inputs;
        (d["story"].clone(), d["task"].clone())
    };
    assert_eq!(inputs(SHA1), (json!("file:checks"), json!("check")));
    assert_eq!(inputs(SHA2), (json!("file:other"), json!("check")));
}

#[tokio::test]
async fn a_push_dispatches_the_workflow_and_a_passing_report_puts_the_task_in_review() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;

    let dispatch = s.dispatch_for(SHA1).unwrap();
    assert_eq!(dispatch.workflow, WORKFLOW);
    assert_eq!(dispatch.git_ref, "main", "on the default branch");
    // The story branch's head, to test the commit merged with it.
    let story_head = s.repo().branch_sha("taskgate/story-1").unwrap();
    assert_eq!(
        dispatch.inputs,
        json!({
            "story": "file:checks",
            "task": "check",
            "sha": SHA1,
            "base": story_head,
            "gates": "test,lint",
            "run_id": "story=file:checks task=check attempt=1",
        })
    );
    // The check runs wait for the workflow; the local runner left them alone.
    let runs = s.checks(SHA1);
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|c| c.status == "queued"), "{runs:#?}");
    let attempt = s
        .app
        .store()
        .attempt(
            &taskgate_core::ids::RepoName::parse(REPO).unwrap(),
            &taskgate_core::ids::StoryId::new("file:checks"),
            &taskgate_core::task::RunSubject::Task("check".into()),
            1,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(attempt.runner, taskgate_core::config::RunnerKind::Actions);

    s.repo().start_run(run_id);
    s.app.settle().await;
    assert!(s.checks(SHA1).iter().all(|c| c.status == "in_progress"));

    // The run takes a moment on GitHub's side: the runner's overhead
    // (GitHub's timestamps are whole seconds, so over one second of it).
    s.app.fake.advance(Duration::from_secs(2));
    s.complete_reporting(run_id, "success", SHA1, &[("test", true), ("lint", true)])
        .await;
    let runs = s.checks(SHA1);
    for name in GATES {
        assert_eq!(conclusion(&runs, &format!("taskgate/{name}")), "success");
    }
    assert!(s.task_labels().contains(&"state:review".to_owned()));
    // A redelivered `completed` changes nothing, and is not counted again.
    s.workflow_run_again("completed", run_id).await;
    assert_eq!(s.checks(SHA1).len(), 2);
    let text = s.app.metrics().await;
    let runs = "taskgate_runner_overhead_seconds_count{runner=\"actions\"}";
    assert_eq!(metric(&text, runs), 1.0);
    // From the dispatch to GitHub's completion of the run; the report's
    // commands took no time.
    let overhead = metric(
        &text,
        "taskgate_runner_overhead_seconds_sum{runner=\"actions\"}",
    );
    assert!((0.2..30.0).contains(&overhead), "{overhead}");
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_failing_report_fails_the_gate_with_its_summary() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    s.complete_reporting(run_id, "failure", SHA1, &[("test", false), ("lint", true)])
        .await;
    let runs = s.checks(SHA1);
    assert_eq!(conclusion(&runs, "taskgate/test"), "failure");
    assert_eq!(conclusion(&runs, "taskgate/lint"), "success");
    let test = runs.iter().find(|c| c.name == "taskgate/test").unwrap();
    assert!(
        test.summary
            .as_deref()
            .unwrap()
            .contains("expected 10 rows"),
        "{test:#?}"
    );
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_run_without_a_report_fails_as_a_tooling_error_linking_the_run() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    s.complete(run_id, "failure", &[]).await;
    let url = format!("https://github.com/{REPO}/actions/runs/{run_id}");
    let runs = s.checks(SHA1);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
        assert!(run.title.as_deref().unwrap().contains("tooling_error"));
        let summary = run.summary.as_deref().unwrap();
        assert!(
            summary.contains("no `taskgate-report` artifact"),
            "{summary}"
        );
        assert!(summary.contains("concluded `failure`"), "{summary}");
        assert!(summary.contains(&url), "{summary}");
    }
    let summary = runs[0]
        .summary
        .as_deref()
        .unwrap()
        .trim()
        .replace(&url, "{run}");
    insta::assert_snapshot!(summary, @r"
    **tooling_error**

    ```text
    the workflow run ended without a report: no `taskgate-report` artifact was uploaded (did the job reach its upload step?); the run concluded `failure`
    {run}
    ```

    **Warnings**

    - workflow run: {run}
    ");
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_artifact_too_large_or_not_a_zip_fails_as_a_tooling_error_saying_why() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    let zip = zipped(&report(SHA1, &[("test", true), ("lint", true)]));
    let repo = s.repo();
    s.app.fake.without_echoes(|| {
        let ids = repo.complete_run(run_id, "success", &[("taskgate-report", &zip)]);
        repo.set_artifact_reported_size(ids[0], 1 << 40);
    });
    s.workflow_run_again("completed", run_id).await;
    for run in s.checks(SHA1) {
        assert_eq!(run.conclusion.as_deref(), Some("failure"));
        let summary = run.summary.unwrap();
        assert!(summary.contains("artifact is too large"), "{summary}");
    }

    // A retry dispatches again; this time the artifact is not a zip.
    s.app
        .comment(s.task_issue, "octocat", "/taskgate retry")
        .await;
    eventually("the retry is dispatched", || async {
        s.repo().dispatches().len() == 2
    })
    .await;
    s.app.settle().await;
    let retry = s.repo().dispatches()[1].clone();
    assert_eq!(
        retry.inputs["run_id"],
        "story=file:checks task=check attempt=2"
    );
    s.complete(
        retry.run_id,
        "success",
        &[("taskgate-report", b"not a zip")],
    )
    .await;
    let runs = s.checks(SHA1);
    assert_eq!(runs.len(), 4);
    for run in runs.iter().filter(|c| c.id > runs[1].id) {
        assert_eq!(run.conclusion.as_deref(), Some("failure"));
        let summary = run.summary.as_deref().unwrap();
        assert!(summary.contains("not a readable zip archive"), "{summary}");
    }
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_report_for_another_commit_is_not_taken() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    s.complete_reporting(run_id, "success", SHA2, &[("test", true), ("lint", true)])
        .await;
    for run in s.checks(SHA1) {
        assert_eq!(run.conclusion.as_deref(), Some("failure"));
        assert!(run.summary.unwrap().contains(&format!("at {SHA2}")));
    }
}

#[tokio::test]
async fn a_workflow_run_taskgate_did_not_dispatch_is_ignored() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    let repo = s.repo();
    // Someone else's run of the same workflow, with a passing report.
    let zip = zipped(&report(SHA1, &[("test", true), ("lint", true)]));
    let stranger = s.app.fake.without_echoes(|| {
        let stranger = repo.add_workflow_run(WORKFLOW, "main", None);
        repo.complete_run(stranger, "success", &[("taskgate-report", &zip)]);
        stranger
    });
    let payload = payloads::workflow_run("completed", &repo, stranger);
    let (status, _) = s
        .app
        .deliver_as("workflow_run", "stranger-run", &payload)
        .await;
    assert_eq!(status, 202);
    // Another workflow whose title names taskgate's attempt is not believed.
    let other = s.app.fake.without_echoes(|| {
        let other = repo.add_workflow_run("ci.yml", "main", None);
        repo.complete_run(other, "success", &[("taskgate-report", &zip)]);
        other
    });
    let mut payload = payloads::workflow_run("completed", &repo, other);
    payload["workflow_run"]["display_title"] =
        json!("taskgate: check (run story=file:checks task=check attempt=1)");
    assert_eq!(s.app.deliver("workflow_run", &payload).await.0, 202);
    s.app.settle().await;

    let record = s
        .app
        .store()
        .delivery("stranger-run")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, "processed");
    assert!(
        record
            .outcome
            .as_deref()
            .unwrap()
            .contains("not dispatched by taskgate"),
        "{record:?}"
    );
    assert!(s.checks(SHA1).iter().all(|c| c.status == "queued"));
    // Taskgate's own run still counts.
    s.complete(run_id, "success", &[("taskgate-report", &zip)])
        .await;
    assert!(s
        .checks(SHA1)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
}

#[tokio::test]
async fn a_run_is_found_by_the_run_id_in_its_title_when_the_dispatch_named_none() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    s.push_and_dispatch(SHA1).await;
    // A host without `return_run_details`: the run taskgate hears about is
    // known only by its `run-name`.
    let repo = s.repo();
    let zip = zipped(&report(SHA1, &[("test", true), ("lint", true)]));
    let run = s.app.fake.without_echoes(|| {
        let run = repo.add_workflow_run(WORKFLOW, "main", None);
        repo.complete_run(run, "success", &[("taskgate-report", &zip)]);
        run
    });
    let title = format!("taskgate: check at {SHA1} (run story=file:checks task=check attempt=1)");
    // The same title on a fork's pull_request run is a forgery: ignored.
    let mut forged = payloads::workflow_run("completed", &repo, run);
    forged["workflow_run"]["display_title"] = json!(title);
    forged["workflow_run"]["event"] = json!("pull_request");
    forged["workflow_run"]["head_branch"] = json!("evil");
    assert_eq!(s.app.deliver("workflow_run", &forged).await.0, 202);
    s.app.settle().await;
    assert!(s.checks(SHA1).iter().all(|c| c.status == "queued"));

    let mut payload = payloads::workflow_run("completed", &repo, run);
    payload["workflow_run"]["display_title"] = json!(title);
    assert_eq!(s.app.deliver("workflow_run", &payload).await.0, 202);
    s.app.settle().await;
    assert!(s
        .checks(SHA1)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
}

#[tokio::test]
async fn a_newer_push_supersedes_the_dispatched_run() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let first = s.push_and_dispatch(SHA1).await;
    let second = s.push_and_dispatch(SHA2).await;
    assert_ne!(first, second);
    assert!(s
        .checks(SHA1)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("cancelled")));
    // The superseded run is cancelled on GitHub; its end changes nothing.
    let run = |id: u64| s.repo().runs().into_iter().find(|r| r.id == id).unwrap();
    assert_eq!(run(first).conclusion.as_deref(), Some("cancelled"));
    assert_eq!(run(second).status, "queued");
    s.workflow_run_again("completed", first).await;
    assert!(s
        .checks(SHA1)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("cancelled")));
    assert!(s.checks(SHA2).iter().all(|c| c.status == "queued"));
    s.complete_reporting(second, "success", SHA2, &[("test", true), ("lint", true)])
        .await;
    assert!(s
        .checks(SHA2)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
    assert!(s.task_labels().contains(&"state:review".to_owned()));
}

#[tokio::test]
async fn a_missing_workflow_file_is_reported_on_the_task_issue() {
    let s = ActionsStory::of(&test_and_lint())
        .without_workflow()
        .start()
        .await;
    s.push(SHA1).await;
    eventually("the refusal is posted on the task issue", || async {
        !s.app.bot_comments(s.task_issue).is_empty()
    })
    .await;
    s.app.settle().await;
    let comments = s.app.bot_comments(s.task_issue);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        comments[0].contains("Could not start workflow `taskgate-run.yml` on `main`"),
        "{}",
        comments[0]
    );
    assert!(
        comments[0].contains("GitHub answered 404"),
        "{}",
        comments[0]
    );
    assert!(s.repo().dispatches().is_empty());
    // The attempt's check runs do not hang queued: they say why nothing ran.
    eventually("the check runs are completed", || async {
        let runs = s.checks(SHA1);
        !runs.is_empty() && runs.iter().all(|c| c.status == "completed")
    })
    .await;
    for run in s.checks(SHA1) {
        assert_eq!(run.conclusion.as_deref(), Some("cancelled"));
        assert!(
            run.summary.as_deref().unwrap().contains("taskgate-run.yml"),
            "{run:#?}"
        );
    }
    s.app.assert_contract_kept();
}

/// GitHub does not promise the order of its webhooks: the task PR's
/// `opened` may arrive after the push's attempt already ended, refused.
/// Neither it nor a later label on the PR asks for the head to run again
/// (that is Retry's job): one refusal, one dispatch tried.
#[tokio::test]
async fn a_pull_request_event_after_a_refused_dispatch_does_not_try_again() {
    let s = ActionsStory::of(&test_and_lint())
        .without_workflow()
        .start()
        .await;
    s.push(SHA1).await;
    eventually("the refusal is posted on the task issue", || async {
        !s.app.bot_comments(s.task_issue).is_empty()
    })
    .await;
    s.app.settle().await;
    let pr = s
        .repo()
        .pulls()
        .into_iter()
        .find(|p| p.head == s.branch)
        .expect("the task PR");
    let late = payloads::pull_request("opened", &s.repo(), pr.number);
    // The body GitHub sent already (a duplicate) or a later one: either
    // way, nothing is dispatched again.
    let status = s.app.deliver("pull_request", &late).await.0;
    assert!(matches!(status, 200 | 202), "{status}");
    s.repo().add_labels(pr.number, &["looked-at"], "octocat");
    s.app.settle().await;
    let comments = s.app.bot_comments(s.task_issue);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let dispatches = s
        .app
        .statuses("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches");
    assert_eq!(dispatches, [404], "one dispatch tried");
}

#[tokio::test]
async fn a_dispatch_whose_answer_was_lost_is_not_sent_twice() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    // GitHub starts the run, then a proxy answers 502: the retry finds the
    // run the first try started instead of starting a second one.
    s.app.fake.inject(
        "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
        fakehub::Fault::StatusAfterApply { status: 502 },
    );
    let run_id = s.push_and_dispatch(SHA1).await;
    let posts = s
        .app
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/dispatches"))
        .count();
    assert_eq!(posts, 1, "one dispatch POST; the retry looked first");
    assert_eq!(s.repo().dispatches().len(), 1);
    // The run it found is the attempt's: its report completes the gates.
    s.complete_reporting(run_id, "success", SHA1, &[("test", true), ("lint", true)])
        .await;
    assert!(s
        .checks(SHA1)
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success")));
}

impl ActionsStory {
    /// How many times taskgate asked GitHub for run `run_id`.
    fn run_lookups(&self, run_id: u64) -> usize {
        let path = format!("/repos/{REPO}/actions/runs/{run_id}");
        self.app
            .fake
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path == path)
            .count()
    }

    /// Moves the clock one watch period on and waits until the watch has
    /// asked GitHub for run `run_id` once more and what it decided is done.
    async fn watch_after(&self, run_id: u64) {
        let before = self.run_lookups(run_id);
        self.app.clock.advance(NEXT_WATCH);
        eventually("the watch asks GitHub for the run", || async {
            self.run_lookups(run_id) > before
        })
        .await;
        self.app.settle().await;
    }
}

#[tokio::test]
async fn a_run_whose_webhooks_were_lost_is_followed_by_the_watch() {
    let s = watched_story().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    // The run starts and ends on GitHub; neither webhook reaches taskgate.
    s.app.fake.without_echoes(|| s.repo().start_run(run_id));
    s.watch_after(run_id).await;
    assert!(
        s.checks(SHA1).iter().all(|c| c.status == "in_progress"),
        "{:#?}",
        s.checks(SHA1)
    );
    let zip = zipped(&report(SHA1, &[("test", true), ("lint", false)]));
    s.app.fake.without_echoes(|| {
        s.repo()
            .complete_run(run_id, "failure", &[("taskgate-report", &zip)])
    });
    // GitHub stumbles once on the first look; the watch tries again.
    s.app.fake.inject(
        "GET /repos/{owner}/{repo}/actions/runs/{run_id}",
        fakehub::Fault::Status {
            status: 502,
            times: 1,
        },
    );
    s.watch_after(run_id).await;
    eventually("the report finishes the attempt", || async {
        s.checks(SHA1).iter().all(|c| c.status == "completed")
    })
    .await;
    s.app.settle().await;
    let runs = s.checks(SHA1);
    assert_eq!(conclusion(&runs, "taskgate/test"), "success");
    assert_eq!(conclusion(&runs, "taskgate/lint"), "failure");
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));

    // The lost webhook turns up late after all: nothing happens twice.
    s.workflow_run_again("completed", run_id).await;
    assert_eq!(s.checks(SHA1).len(), 2);
    // The attempt is closed: later periods leave GitHub alone. A newer
    // attempt, still open, shows the watch came round meanwhile.
    let lookups = s.run_lookups(run_id);
    let newer = s.push_and_dispatch(SHA2).await;
    s.watch_after(newer).await;
    assert_eq!(s.run_lookups(run_id), lookups);
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn the_watch_waits_for_a_queued_run_and_fails_a_deleted_one() {
    let s = watched_story().await;
    let run_id = s.push_and_dispatch(SHA1).await;
    // Not picked up by a runner yet: the attempt keeps waiting.
    s.watch_after(run_id).await;
    assert!(s.checks(SHA1).iter().all(|c| c.status == "queued"));

    // Someone deletes the run before it reports: it never will.
    s.repo().delete_run(run_id);
    s.watch_after(run_id).await;
    eventually("the attempt is given up", || async {
        s.checks(SHA1).iter().all(|c| c.status == "completed")
    })
    .await;
    s.app.settle().await;
    for run in s.checks(SHA1) {
        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
        let summary = run.summary.as_deref().unwrap();
        assert!(summary.contains("tooling_error"), "{summary}");
        assert!(
            summary.contains(&format!("workflow run {run_id} no longer exists on GitHub")),
            "{summary}"
        );
    }
    assert!(s.task_labels().contains(&"state:test-failed".to_owned()));
    s.app.assert_contract_kept();
}

/// The `run-name` of the workflow template `taskgate init` writes.
fn template_run_name() -> String {
    let template = include_str!("../../../templates/taskgate-run.yml");
    let line = template
        .lines()
        .find_map(|l| l.strip_prefix("run-name:"))
        .expect("the template has a run-name");
    line.trim().trim_matches('"').to_owned()
}

#[tokio::test]
async fn where_a_dispatch_names_no_run_the_watch_finds_it_by_its_title() {
    let s = watched_story().await;
    // An older GitHub Enterprise Server: the dispatch is answered 204.
    s.app.fake.withhold_dispatch_run_details();
    s.repo().set_run_name(WORKFLOW, &template_run_name());
    let run_id = s.push_and_dispatch(SHA1).await;
    let repo_name = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let attempt = taskgate_core::AttemptRef {
        story: "file:checks".into(),
        task: taskgate_core::task::RunSubject::Task("check".into()),
        attempt: 1,
    };
    let store = s.app.store();
    let known = store.workflow_runs_of_attempt(&repo_name, &attempt).await;
    assert!(known.unwrap().is_empty(), "the dispatch named no run");

    // The run reports; its webhooks are lost.
    let zip = zipped(&report(SHA1, &[("test", true), ("lint", true)]));
    s.app.fake.without_echoes(|| {
        s.repo()
            .complete_run(run_id, "success", &[("taskgate-report", &zip)])
    });
    s.app.clock.advance(NEXT_WATCH);
    eventually(
        "the watch finds the run and finishes the attempt",
        || async {
            s.checks(SHA1)
                .iter()
                .all(|c| c.conclusion.as_deref() == Some("success"))
        },
    )
    .await;
    s.app.settle().await;
    assert!(s.task_labels().contains(&"state:review".to_owned()));
    let known = store.workflow_runs_of_attempt(&repo_name, &attempt).await;
    assert_eq!(known.unwrap(), [run_id], "remembered for later looks");
    s.app.assert_contract_kept();
}
