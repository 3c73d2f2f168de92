use super::*;
use crate::classify::FailureKind;
use crate::ids::IssueNumber;
use crate::task::{Attempt, GateVerdict, PullRef};

use crate::task::test_fixture::{sha, Fixture};

/// One gate, `test`; the review mode as given; the clock at 5 s.
fn fixture(review: ReviewMode) -> Fixture {
    Fixture {
        now: 5_000,
        ..Fixture::new(&["test"], review)
    }
}

fn attempt(number: u32, c: char, status: AttemptStatus) -> Attempt {
    Attempt {
        number,
        sha: sha(c),
        gates: vec!["test".into()],
        status,
        queued_at: 1,
        started_at: None,
        finished_at: None,
        runner: Some(crate::config::RunnerKind::Local),
    }
}

/// A task whose checker ran at `a…` with `passed`, its PR ready.
fn in_review(passed: bool) -> TaskRecord {
    let mut r = TaskRecord {
        state: Some(if passed {
            TaskState::Review
        } else {
            TaskState::TestFailed
        }),
        pr: Some(PullRef {
            number: IssueNumber::new(20),
            draft: false,
        }),
        head: Some(sha('a')),
        attempts: 1,
        current: Some(attempt(
            1,
            'a',
            if passed {
                AttemptStatus::Passed
            } else {
                AttemptStatus::Failed
            },
        )),
        ..TaskRecord::default()
    };
    r.verdicts.insert(
        "test".into(),
        GateVerdict {
            sha: sha('a'),
            attempt: 1,
            passed,
            kind: (!passed).then_some(FailureKind::TestFailure),
            summary: (!passed).then(|| "test_fetch: assert 0 == 10 (@alice broke it)".into()),
        },
    );
    r
}

const BOB: Reviewer = Reviewer {
    id: UserId::new(77),
    login: "bob",
    written_at: None,
};

fn inputs() -> ReviewInputs<'static> {
    ReviewInputs {
        role: "coder",
        assignees: &[],
        agent_workflow: Some("coder-agent.yml"),
        allow_self_approval: false,
    }
}

/// The decision and whether it did something; a refusal as the unchanged
/// record with its reason as the outcome.
fn run(record: &TaskRecord, command: ReviewCommand, f: &Fixture) -> (TaskDecision, bool) {
    outcome_of(
        record,
        on_review_command(record, &command, BOB, &f.ctx(), &inputs()),
    )
}

fn outcome_of(record: &TaskRecord, d: Result<TaskDecision, ReviewRefusal>) -> (TaskDecision, bool) {
    match d {
        Ok(d) => (d, true),
        Err(why) => (
            TaskDecision {
                record: record.clone(),
                effects: vec![],
                run: None,
                cancelled: None,
                verdict: None,
                outcome: why.to_string(),
            },
            false,
        ),
    }
}

/// Zero-width joiners (which keep `@name` from pinging) made visible.
fn visible(text: &str) -> String {
    text.replace('\u{200D}', "<zwj>")
}

fn names(effects: &[Effect]) -> Vec<&'static str> {
    effects.iter().map(Effect::name).collect()
}

fn approve(reason: Option<&str>) -> ReviewCommand {
    ReviewCommand::Approve {
        override_reason: reason.map(Into::into),
    }
}

#[test]
fn approve_in_human_review_merges_the_proven_head() {
    let f = fixture(ReviewMode::Human);
    let (d, done) = run(&in_review(true), approve(None), &f);
    assert!(done);
    assert_eq!(names(&d.effects), ["merge_pull_request"]);
    // Auto review merged it already (or will): nothing more to do.
    let (d, done) = run(&in_review(true), approve(None), &fixture(ReviewMode::Auto));
    assert!(done && d.effects.is_empty());
}

#[test]
fn approve_needs_a_passing_checker_unless_overridden_and_overrides_are_recorded() {
    let f = fixture(ReviewMode::Auto);
    let (d, done) = run(&in_review(false), approve(None), &f);
    assert!(!done);
    insta::assert_snapshot!(d.outcome, @"the task is test-failed, not in review with a passing checker at `aaaaaaa`; `approve --override <reason>` accepts it anyway");
    let (d, done) = run(&in_review(false), approve(Some("flaky upstream")), &f);
    assert!(done);
    assert_eq!(names(&d.effects), ["merge_pull_request"]);
    assert_eq!(
        d.record.overrides,
        vec![Override {
            actor: UserId::new(77),
            reason: "flaky upstream".into(),
            at: 5_000,
            sha: d.record.head.clone(),
        }]
    );
    assert_eq!(d.record.override_count, 1);
    // Its merge completes the task: a person accepted that head.
    let head = d.record.head.clone().expect("a head");
    let merged = crate::task::PullClosed::Merged {
        pr: IssueNumber::new(20),
        head: &head,
        by: None,
    };
    let closed = crate::task::on_pull_closed(&d.record, merged, &f.ctx());
    assert_eq!(closed.record.state, Some(TaskState::Completed));
    // However many overrides a task collects, the record keeps the last few
    // and counts them all.
    let mut record = in_review(false);
    for _ in 0..(crate::task::KEPT_OVERRIDES + 5) {
        record = run(&record, approve(Some("again")), &f).0.record;
        record.state = Some(TaskState::Review);
    }
    assert_eq!(record.overrides.len(), crate::task::KEPT_OVERRIDES);
    assert_eq!(
        record.override_count as usize,
        crate::task::KEPT_OVERRIDES + 5
    );
}

#[test]
fn a_draft_or_missing_pull_request_cannot_be_approved() {
    let f = fixture(ReviewMode::Human);
    let mut draft = in_review(true);
    draft.pr = Some(PullRef {
        number: IssueNumber::new(20),
        draft: true,
    });
    let (d, done) = run(&draft, approve(None), &f);
    assert!(!done);
    insta::assert_snapshot!(d.outcome, @"its pull request #20 is still a draft; mark it ready for review first");
    let none = TaskRecord::default();
    assert_eq!(
        run(&none, approve(None), &f).0.outcome,
        "the task has no pull request yet"
    );
}

#[test]
fn three_revisions_without_approval_pause_the_task() {
    let f = fixture(ReviewMode::Human);
    let revise = || ReviewCommand::Revise {
        feedback: "Handle the empty file, @carol <!-- taskgate:x -->".into(),
    };
    let (first, done) = run(&in_review(true), revise(), &f);
    assert!(done);
    assert_eq!(first.record.state, Some(TaskState::InProgress));
    assert_eq!(
        names(&first.effects),
        ["post_comment", "dispatch_workflow", "reconcile"]
    );
    let Effect::PostComment { body, issue, .. } = &first.effects[0] else {
        panic!()
    };
    assert_eq!(*issue, IssueNumber::new(20), "on the task PR");
    insta::assert_snapshot!(visible(body), @r"
    ### Revision requested

    For the `coder` role, from bob:

    > Handle the empty file, @<zwj>carol &lt;!-- taskgate:x -->

    Revision 1 of 3 without an approval; at 3 the task is paused. Push the changes to the task branch and the checker runs again.
    ");
    let Effect::DispatchWorkflow { inputs, .. } = &first.effects[1] else {
        panic!()
    };
    assert_eq!(inputs["role"], "coder");
    assert_eq!(inputs["branch"], "taskgate/task-14-data-loading");
    let (second, _) = run(&first.record, revise(), &f);
    let (third, _) = run(&second.record, revise(), &f);
    assert_eq!(third.record.state, Some(TaskState::Paused));
    assert_eq!(third.record.paused_from, Some(TaskState::InProgress));
    assert_eq!(third.outcome, "revision 3 requested; task paused");
    // Approving resets the count.
    let (approved, _) = run(&in_review(true), approve(None), &f);
    assert_eq!(approved.record.revisions, 0);
}

#[test]
fn reject_returns_the_task_to_planning_leaving_its_pr_open() {
    let f = fixture(ReviewMode::Human);
    let (d, done) = run(
        &in_review(true),
        ReviewCommand::Reject {
            reason: "Out of scope for this story.".into(),
        },
        &f,
    );
    assert!(done);
    assert_eq!(d.record.state, Some(TaskState::Rejected));
    assert_eq!(names(&d.effects), ["post_comment", "reconcile"]);
    let Effect::PostComment { body, issue, .. } = &d.effects[0] else {
        panic!()
    };
    assert_eq!(*issue, IssueNumber::new(14));
    insta::assert_snapshot!(visible(body), @r"
    ### Task rejected

    bob rejected this task and returned it to planning:

    > Out of scope for this story.

    No more runs start for it. Its pull request #20 is left open for reference. Change the task in the plan to bring it back.
    ");
    let (again, done) = run(&d.record, ReviewCommand::Pause, &f);
    assert!(!done, "{}", again.outcome);
}

#[test]
fn pause_cancels_the_active_attempt_and_resume_tests_what_was_pushed_meanwhile() {
    let f = fixture(ReviewMode::Auto);
    let mut testing = in_review(true);
    testing.state = Some(TaskState::Testing);
    testing.current = Some(attempt(2, 'b', AttemptStatus::Running));
    testing.attempts = 2;
    testing.head = Some(sha('b'));
    let (paused, done) = run(&testing, ReviewCommand::Pause, &f);
    assert!(done);
    assert_eq!(paused.cancelled, Some(2));
    assert_eq!(paused.record.state, Some(TaskState::Paused));
    assert_eq!(names(&paused.effects), ["update_check_run", "reconcile"]);
    // A push while paused runs nothing but is remembered.
    let pushed = super::super::on_trigger(
        &paused.record,
        &Trigger::Head {
            sha: sha('c'),
            pr: None,
            pusher: None,
            source: HeadSource::Taskgate,
        },
        &f.ctx(),
    );
    assert!(pushed.run.is_none());
    assert_eq!(pushed.record.head, Some(sha('c')));
    let (resumed, done) = run(&pushed.record, ReviewCommand::Resume, &f);
    assert!(done);
    assert_eq!(resumed.record.state, Some(TaskState::Testing));
    assert_eq!(resumed.run.map(|r| r.sha), Some(sha('c')));
    assert!(resumed.outcome.starts_with("resumed; attempt 3 queued"));
    let (d, done) = run(&resumed.record, ReviewCommand::Resume, &f);
    assert!(!done);
    assert_eq!(d.outcome, "the task is testing, not paused");
}

#[test]
fn resume_clears_an_escalation_and_its_needs_human_label() {
    let f = fixture(ReviewMode::Auto);
    let mut blocked = in_review(false);
    blocked.state = Some(TaskState::Blocked);
    blocked.failure.escalation = Some(crate::failure::Escalation {
        reason: crate::failure::Bound::Attempts,
        at: 10,
        round: 1,
        passed_since: false,
    });
    let (d, done) = run(&blocked, ReviewCommand::Resume, &f);
    assert!(done);
    assert!(d.record.failure.escalation.is_none());
    assert_eq!(d.record.state, Some(TaskState::TestFailed));
    assert_eq!(names(&d.effects), ["label_marked", "reconcile"]);
}

#[test]
fn the_checker_report_status_and_explain_texts() {
    let f = fixture(ReviewMode::Auto);
    let record = in_review(false);
    let current = record.current.clone().unwrap();
    let Some(Effect::UpsertComment { body, marker, .. }) =
        super::super::review_text::checker_report(&record, &current, &f.ctx())
    else {
        panic!()
    };
    assert_eq!(marker, "checker-report story=file:s task=data");
    insta::assert_snapshot!(visible(&body), @r"
    ### taskgate checker: failed at `aaaaaaa` (attempt 1)

    | gate | result | kind | summary |
    |---|---|---|---|
    | `test` | **failed** | `test_failure` | test_fetch: assert 0 == 10 (@<zwj>alice broke it) |

    This comment is updated after every run; the check runs hold the full logs.
    ");
    insta::assert_snapshot!(super::super::render_status("data", &record), @r"
    **Task `data`**: `test-failed`, head `aaaaaaa`, pull request #20.
    - last attempt: 1 at `aaaaaaa`, failed: `test` failed (test_failure)
    - no branch todo open
    ");
    insta::assert_snapshot!(visible(&super::super::render_explain("data", &record)), @r"
    **Why `data` fails** at `aaaaaaa`:
    - `test` (test_failure): test_fetch: assert 0 == 10 (@<zwj>alice broke it)
    ");
    insta::assert_snapshot!(
        super::super::render_explain("data", &TaskRecord::default()),
        @"`data` has no failure to explain: no gate has failed yet."
    );
}

#[test]
fn whoever_pushed_the_commits_cannot_approve_unless_the_repository_allows_it() {
    let f = Fixture::new(&["test"], ReviewMode::Human);
    let mut record = in_review(true);
    record.pushed_by = vec![UserId::new(5), BOB.id];
    let (d, done) = run(
        &record,
        ReviewCommand::Approve {
            override_reason: None,
        },
        &f,
    );
    assert!(!done && d.effects.is_empty());
    insta::assert_snapshot!(d.outcome, @"you pushed this task's commits, and a task is approved by someone else (`allow_self_approval: true` in .github/taskgate.yml allows it)");
    // Nor with an override.
    let approve = ReviewCommand::Approve {
        override_reason: Some("trust me".into()),
    };
    assert!(!run(&record, approve.clone(), &f).1);
    // Allowed by the repository: approved.
    let allowing = ReviewInputs {
        allow_self_approval: true,
        ..inputs()
    };
    let (d, done) = outcome_of(
        &record,
        on_review_command(&record, &approve, BOB, &f.ctx(), &allowing),
    );
    assert!(done, "{}", d.outcome);
}

#[test]
fn the_apis_accept_and_reject_follow_the_commands_state_rules() {
    let accept = approve(None);
    let reject = ReviewCommand::Reject {
        reason: "wrong plan".into(),
    };
    assert_eq!(api_review_refusal(Some(TaskState::Review), &accept), None);
    insta::assert_snapshot!(
        api_review_refusal(None, &accept).unwrap(),
        @"the task is not started; only a task in review can be accepted"
    );
    assert_eq!(api_review_refusal(Some(TaskState::Paused), &reject), None);
    for state in [TaskState::Completed, TaskState::Rejected] {
        let command = refusal_by_state(Some(state), &reject);
        assert_eq!(api_review_refusal(Some(state), &reject), command);
        assert!(command.is_some());
    }
}

mod binding;
mod merged_past;
