//! The `actions` runner tests a task's head merged with its story branch,
//! as CI on a pull request tests its merge (SPEC §3): the dispatch names
//! the story branch's head (`base`), the job merges it in (`taskgate run
//! --base`) and its report says what it tested. The report is untrusted:
//! it may say less than was dispatched (the head alone), never more.

use taskgate_core::report::Tested;

use crate::support::actions::{report, test_and_lint, zipped, ActionsStory, WORKFLOW};

const SHA3: &str = "3333333333333333333333333333333333333333";
const SHA4: &str = "4444444444444444444444444444444444444444";
const SHA5: &str = "5555555555555555555555555555555555555555";
const SHA6: &str = "6666666666666666666666666666666666666666";
const ELSEWHERE: &str = "abababababababababababababababababababab";

impl ActionsStory {
    /// The story branch's head on GitHub now.
    fn story_head(&self) -> String {
        let story = self
            .repo()
            .issues()
            .into_iter()
            .find(|i| i.labels.iter().any(|l| l == "taskgate:story"))
            .unwrap()
            .number;
        self.repo()
            .branch_sha(&format!("taskgate/story-{story}"))
            .unwrap()
    }

    /// Pushes `sha`, and the job reports both gates passed at it, having
    /// tested `tested`.
    async fn run_reporting(&self, sha: &str, tested: Option<Tested>) -> Vec<fakehub::CheckRun> {
        let run = self.push_and_dispatch(sha).await;
        let mut r = report(sha, &[("test", true), ("lint", true)]);
        r.tested = tested;
        self.complete(run, "success", &[("taskgate-report", &zipped(&r))])
            .await;
        let checks: Vec<_> = self
            .checks(sha)
            .into_iter()
            .filter(|c| c.name == "taskgate/test")
            .collect();
        assert_eq!(checks.len(), 1, "{checks:#?}");
        checks
    }
}

fn said(check: &fakehub::CheckRun) -> String {
    let (summary, text) = (check.summary.clone(), check.text.clone());
    format!(
        "{}\n{}",
        summary.unwrap_or_default(),
        text.unwrap_or_default()
    )
}

#[tokio::test]
async fn the_job_tests_the_head_merged_with_the_story_branch_and_may_not_claim_more() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let base = s.story_head();

    // The dispatch names the story head; the job merged it in.
    let merged = Tested::Merged {
        base: base.clone(),
        merge: ELSEWHERE.into(),
    };
    let checks = s.run_reporting(SHA3, Some(merged)).await;
    assert_eq!(s.dispatch_for(SHA3).unwrap().inputs["base"], base);
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    assert!(
        said(&checks[0]).contains(&format!(
            "tested merged with the story branch `taskgate/story-1` at `{}`",
            &base[..7]
        )),
        "{}",
        said(&checks[0])
    );

    // A report claiming another story head than the one dispatched is
    // not believed: the run has no usable report.
    let other = Tested::Merged {
        base: ELSEWHERE.into(),
        merge: ELSEWHERE.into(),
    };
    let checks = s.run_reporting(SHA4, Some(other)).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("failure"));
    let text = said(&checks[0]);
    assert!(text.contains("tooling_error"), "{text}");
    assert!(
        text.contains(&format!(
            "the report says the head was tested with the story branch at {ELSEWHERE}, but {base} was dispatched"
        )),
        "{text}"
    );

    // A job that does not say it merged (an older workflow) is taken for
    // what it is: the head alone, said on the gates.
    let checks = s.run_reporting(SHA5, None).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    let text = said(&checks[0]);
    assert!(
        text.contains("tested the head alone: the workflow run did not merge the story branch"),
        "{text}"
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_head_that_conflicts_with_its_story_branch_is_not_run_and_says_to_merge() {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    let base = s.story_head();
    let conflict = Tested::Conflict { base: base.clone() };
    let checks = s.run_reporting(SHA6, Some(conflict)).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("cancelled"));
    let summary = checks[0]
        .summary
        .clone()
        .unwrap()
        .replace(&base[..7], "<sha>");
    insta::assert_snapshot!(summary, @"Nothing was run: the head conflicts with the story branch `taskgate/story-1` at `<sha>`, so it cannot be tested merged with it as a pull request is; merge the story branch into the task branch and push. A newer push is tested by itself; press Retry to try again.");
    let todos = (s.repo().issues().into_iter())
        .filter(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .count();
    assert_eq!(todos, 0, "not a test failure: no branch todo");
    let labels = s.repo().issue(s.task_issue).unwrap().labels;
    assert!(
        !labels.iter().any(|l| l == "state:test-failed"),
        "{labels:?}"
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_workflow_from_an_older_init_is_dispatched_without_base_and_the_gates_say_how_to_update_it(
) {
    let s = ActionsStory::of(&test_and_lint()).start().await;
    // The workflow `taskgate init` wrote before `base` existed: GitHub
    // refuses a dispatch with an input it does not declare.
    s.repo()
        .declare_workflow_inputs(WORKFLOW, &["story", "task", "sha", "gates", "run_id"]);

    let checks = s.run_reporting(SHA3, None).await;
    let asked: Vec<u16> = s
        .app
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/dispatches"))
        .map(|r| r.status)
        .collect();
    assert_eq!(asked, [422, 200]);
    assert!(s.dispatch_for(SHA3).unwrap().inputs.get("base").is_none());
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    let text = said(&checks[0]);
    assert!(
        text.contains("tested the head alone: the workflow run did not merge the story branch")
            && text.contains("run `taskgate init --force` to update the workflow"),
        "{text}"
    );
    s.app.assert_contract_kept();
}
