//! `review: human` cannot be gone around (issue 45): a task pull request
//! merged on GitHub without an approval of its merged head does not
//! complete the task; an approval of that head does.

use super::*;
use crate::report::{GateResult, RunReport, REPORT_VERSION};
use crate::task::{on_pull_closed, on_run_progress, PullClosed, RunProgress};

fn merged_at(head: &CommitSha) -> PullClosed<'_> {
    PullClosed::Merged {
        pr: IssueNumber::new(20),
        head,
        by: Some("claude[bot]"),
    }
}

/// The run of attempt 1 at `a…` finished with the gate `test` passed.
fn passed_at_a() -> RunProgress {
    RunProgress::Finished {
        attempt: 1,
        report: RunReport {
            version: REPORT_VERSION,
            task: crate::task::RunSubject::Task("data".into()),
            sha: Some(sha('a').into_string()),
            gates: vec![GateResult {
                gate: "test".into(),
                passed: true,
                kind: None,
                summary: None,
                commands: vec![],
                missing_artifacts: vec![],
                metric_failures: vec![],
                warnings: vec![],
                cancelled: false,
                tests: None,
            }],
            duration_ms: 10,
            cancelled: false,
            runner_fault: None,
            tested: None,
        },
        workspace: String::new(),
    }
}

#[test]
fn a_merge_under_human_review_without_an_approval_leaves_the_task_unfinished() {
    let f = fixture(ReviewMode::Human);
    let d = on_pull_closed(&in_review(true), merged_at(&sha('a')), &f.ctx());
    assert_eq!(
        d.record.state,
        Some(TaskState::Review),
        "a merge is not a review"
    );
    assert_eq!(d.record.merged_unreviewed, Some(sha('a')));
    assert_eq!(d.record.pr, None, "the next push opens a new pull request");
    let Some(Effect::PostComment { issue, body, .. }) = d.effects.first() else {
        panic!("the merged PR is told: {:?}", d.effects)
    };
    assert_eq!(*issue, IssueNumber::new(20));
    insta::assert_snapshot!(body, @r"
        **Merged without an approval.** @claude[bot] merged this pull request into `taskgate/story-12` at `aaaaaaa`. Its gates passed there, but task #14 is under human review (`review: human`) and no one other than its pusher approved `aaaaaaa`.

        A merge is not a review: task #14 is not complete, and the story does not ship until it is. **To complete it**, someone with write permission who did not push its commits comments `/taskgate approve` on task #14: that approves `aaaaaaa`, the head that was merged.

        **To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires a pull request with at least one approving review (Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.
        ");

    // Approving the merged head completes it; nothing is merged again.
    let (approved, done) = run(&d.record, approve(None), &f);
    assert!(done, "{}", approved.outcome);
    assert_eq!(approved.record.state, Some(TaskState::Completed));
    assert_eq!(approved.record.merged_unreviewed, None);
    assert_eq!(names(&approved.effects), ["reconcile"]);
    let approval = approved.record.approval.expect("recorded");
    assert_eq!((approval.login.as_str(), approval.sha), ("bob", sha('a')));
}

#[test]
fn the_pusher_cannot_approve_the_head_merged_past_review() {
    let f = fixture(ReviewMode::Human);
    let mut pushed = in_review(true);
    pushed.pushed_by = vec![BOB.id];
    let d = on_pull_closed(&pushed, merged_at(&sha('a')), &f.ctx());
    let (refused, done) = run(&d.record, approve(None), &f);
    assert!(!done);
    assert_eq!(refused.record.state, Some(TaskState::Review));
    assert!(
        refused.outcome.contains("you pushed"),
        "{}",
        refused.outcome
    );
}

#[test]
fn the_merge_of_the_approved_head_completes_the_task() {
    let f = fixture(ReviewMode::Human);
    let (approved, _) = run(&in_review(true), approve(None), &f);
    let d = on_pull_closed(&approved.record, merged_at(&sha('a')), &f.ctx());
    assert_eq!(d.record.state, Some(TaskState::Completed));
}

#[test]
fn an_approval_of_an_older_head_does_not_cover_the_merge_of_a_newer_one() {
    let f = fixture(ReviewMode::Human);
    let (approved, _) = run(&in_review(true), approve(None), &f);
    let mut moved = approved.record;
    moved.head = Some(sha('b'));
    for v in moved.verdicts.values_mut() {
        v.sha = sha('b');
    }
    let d = on_pull_closed(&moved, merged_at(&sha('b')), &f.ctx());
    assert_eq!(d.record.state, Some(TaskState::Review));
    assert_eq!(d.record.merged_unreviewed, Some(sha('b')));
}

#[test]
fn auto_review_completes_on_the_merge_of_a_proven_head() {
    let f = fixture(ReviewMode::Auto);
    let d = on_pull_closed(&in_review(true), merged_at(&sha('a')), &f.ctx());
    assert_eq!(d.record.state, Some(TaskState::Completed));
}

#[test]
fn merged_before_its_gates_passed_under_human_review_it_still_waits_for_an_approval() {
    let f = fixture(ReviewMode::Human);
    let mut running = in_review(true);
    running.state = Some(TaskState::Testing);
    running.verdicts.clear();
    running.current = Some(attempt(1, 'a', AttemptStatus::Running));
    let d = on_pull_closed(&running, merged_at(&sha('a')), &f.ctx());
    let Some(Effect::PostComment { body, .. }) = d.effects.first() else {
        panic!("the merged PR is told: {:?}", d.effects)
    };
    insta::assert_snapshot!(body, @r"
        **Merged before its gates passed.** @claude[bot] merged this pull request into `taskgate/story-12` at `aaaaaaa`, where:

        - `taskgate/test`: not finished

        A merge is not a proof: task #14 is not complete, and the story does not ship until it is. It completes when its gates pass at `aaaaaaa`, or when a later task pull request merges proven: push a fix to `taskgate/task-14-data-loading` and taskgate tests it and opens one.

        **To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires the status checks `taskgate/test` (Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.

        The task is also under human review (`review: human`) and no one approved `aaaaaaa`: once its gates pass there, it completes when someone with write permission who did not push its commits comments `/taskgate approve` on task #14.
        ");
    let proven = on_run_progress(&d.record, &passed_at_a(), &f.ctx());
    assert_eq!(
        proven.record.state,
        Some(TaskState::Review),
        "proven, not approved"
    );
    assert_eq!(proven.record.merged_unreviewed, Some(sha('a')));
    let (approved, done) = run(&proven.record, approve(None), &f);
    assert!(done);
    assert_eq!(approved.record.state, Some(TaskState::Completed));
}
