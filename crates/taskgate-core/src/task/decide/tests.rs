use super::*;
use crate::classify::FailureKind;
use crate::report::{GateResult, RunReport, REPORT_VERSION};

use crate::task::test_fixture::{sha, Fixture};

/// The fixture with auto review, as most of these tests want.
fn fixture(gates: &[&str]) -> Fixture {
    Fixture::new(gates, ReviewMode::Auto)
}

fn push(record: &TaskRecord, c: char, f: &Fixture) -> TaskDecision {
    on_trigger(
        record,
        &Trigger::Head {
            sha: sha(c),
            pr: None,
            pusher: None,
            source: HeadSource::Taskgate,
        },
        &f.ctx(),
    )
}

/// The pull request `pr` at head `c` (opened, synchronised, reopened).
fn pr_event(record: &TaskRecord, c: char, pr: PullRef, f: &Fixture) -> TaskDecision {
    on_trigger(
        record,
        &Trigger::Head {
            sha: sha(c),
            pr: Some(pr),
            pusher: None,
            source: HeadSource::Taskgate,
        },
        &f.ctx(),
    )
}

fn gate(name: &str, passed: bool) -> GateResult {
    GateResult {
        gate: name.into(),
        passed,
        kind: (!passed).then_some(FailureKind::TestFailure),
        summary: (!passed).then(|| "test_fetch failed: assert 0 == 10".into()),
        commands: vec![],
        missing_artifacts: vec![],
        metric_failures: vec![],
        warnings: vec![],
        cancelled: false,
        tests: None,
    }
}

fn finished(attempt: u32, c: char, gates: Vec<GateResult>) -> RunProgress {
    RunProgress::Finished {
        attempt,
        report: RunReport {
            version: REPORT_VERSION,
            task: crate::task::RunSubject::Task("data".into()),
            sha: Some(sha(c).into_string()),
            gates,
            duration_ms: 10,
            cancelled: false,
            runner_fault: None,
            tested: None,
        },
        workspace: String::new(),
    }
}

fn names(effects: &[Effect]) -> Vec<&'static str> {
    effects.iter().map(Effect::name).collect()
}

fn conclusions(effects: &[Effect]) -> Vec<(String, Option<String>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::UpdateCheckRun { key, update, .. } => Some((
                key.clone(),
                update.conclusion.map(|c| c.as_str().to_owned()),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn first_push_opens_a_draft_pr_and_queues_one_check_run_per_gate() {
    let f = fixture(&["unit", "lint"]);
    let d = push(&TaskRecord::default(), 'a', &f);
    assert_eq!(
        names(&d.effects),
        [
            "create_pull_request",
            "open_check_run",
            "open_check_run",
            "reconcile"
        ]
    );
    let Effect::CreatePullRequest {
        head, base, draft, ..
    } = &d.effects[0]
    else {
        panic!()
    };
    assert_eq!(
        (head.as_str(), base.as_str(), *draft),
        ("taskgate/task-14-data-loading", "taskgate/story-12", true)
    );
    let Effect::OpenCheckRun { name, key, .. } = &d.effects[1] else {
        panic!()
    };
    assert_eq!(name, "taskgate/unit");
    assert_eq!(key, "story=file:s task=data attempt=1 gate=unit");
    assert_eq!(d.record.state, Some(TaskState::Testing));
    assert!(d.record.pr_requested);
    let job = d.run.expect("a run is queued");
    assert_eq!((job.attempt, job.gates.len()), (1, 2));
}

#[test]
fn the_same_commit_is_not_tested_twice_and_a_known_pr_is_not_recreated() {
    let f = fixture(&["test"]);
    let first = push(&TaskRecord::default(), 'a', &f);
    // GitHub then reports the PR it opened, and a check suite, for the same head.
    let pr = PullRef {
        number: IssueNumber::new(20),
        draft: true,
    };
    let again = pr_event(&first.record, 'a', pr, &f);
    assert!(again.effects.is_empty() && again.run.is_none());
    assert_eq!(again.record.pr, Some(pr));
    assert!(!again.record.pr_requested);
    let third = push(&again.record, 'a', &f);
    assert!(third.effects.is_empty() && third.run.is_none());
}

#[test]
fn a_newer_push_supersedes_the_running_attempt() {
    let f = fixture(&["unit", "lint"]);
    let first = push(&TaskRecord::default(), 'a', &f);
    let started = on_run_progress(
        &first.record,
        &RunProgress::Started { attempt: 1 },
        &f.ctx(),
    );
    assert_eq!(
        names(&started.effects),
        ["update_check_run", "update_check_run"]
    );
    let second = push(&started.record, 'b', &f);
    assert_eq!(second.cancelled, Some(1));
    assert_eq!(
        conclusions(&second.effects),
        [
            (
                "story=file:s task=data attempt=1 gate=unit".to_string(),
                Some("cancelled".to_string())
            ),
            (
                "story=file:s task=data attempt=1 gate=lint".to_string(),
                Some("cancelled".to_string())
            ),
        ]
    );
    assert_eq!(second.run.as_ref().unwrap().attempt, 2);
    // The superseded run's report arrives late: ignored.
    let late = on_run_progress(
        &second.record,
        &finished(1, 'a', vec![gate("unit", true), gate("lint", true)]),
        &f.ctx(),
    );
    assert!(late.effects.is_empty());
    assert_eq!(late.record, second.record);
}

#[test]
fn a_passing_run_moves_to_review_and_merges_a_ready_pr_in_auto_mode() {
    let f = fixture(&["test"]);
    let mut record = push(&TaskRecord::default(), 'a', &f).record;
    record.pr = Some(PullRef {
        number: IssueNumber::new(20),
        draft: false,
    });
    let d = on_run_progress(
        &record,
        &finished(1, 'a', vec![gate("test", true)]),
        &f.ctx(),
    );
    assert_eq!(d.verdict, Some(true));
    assert_eq!(d.record.state, Some(TaskState::Review));
    assert_eq!(
        names(&d.effects),
        [
            "update_check_run",
            "merge_pull_request",
            "upsert_comment",
            "reconcile"
        ]
    );
    let mut human = fixture(&["test"]);
    human.review = ReviewMode::Human;
    let d = on_run_progress(
        &record,
        &finished(1, 'a', vec![gate("test", true)]),
        &human.ctx(),
    );
    assert_eq!(
        names(&d.effects),
        ["update_check_run", "upsert_comment", "reconcile"]
    );
}

#[test]
fn a_draft_pr_is_merged_once_it_is_ready_for_review_without_a_rerun() {
    let f = fixture(&["test"]);
    let record = push(&TaskRecord::default(), 'a', &f).record;
    let passed = on_run_progress(
        &record,
        &finished(1, 'a', vec![gate("test", true)]),
        &f.ctx(),
    );
    assert!(!names(&passed.effects).contains(&"merge_pull_request"));
    let pr = PullRef {
        number: IssueNumber::new(20),
        draft: false,
    };
    let ready = on_ready_for_review(&passed.record, pr, &sha('a'), Doer::Person, &f.ctx());
    assert_eq!(names(&ready.effects), ["merge_pull_request"]);
    assert!(ready.run.is_none());
    // Ready for review at an untested head: tested first.
    let ready = on_ready_for_review(&passed.record, pr, &sha('b'), Doer::Person, &f.ctx());
    assert_eq!(ready.run.unwrap().attempt, 2);
}

#[test]
fn a_failing_run_marks_the_task_test_failed_with_annotations_in_batches_of_fifty() {
    let f = fixture(&["test"]);
    let record = push(&TaskRecord::default(), 'a', &f).record;
    let mut failing = gate("test", false);
    failing.commands.push(crate::report::CommandResult {
        cmd: "pytest".into(),
        gate: "test".into(),
        exit_code: Some(1),
        signal: None,
        timed_out: false,
        timeout_seconds: 30,
        duration_ms: 5,
        output: String::new(),
        output_bytes: 0,
        truncated: false,
        flaky: false,
        classification: Some(crate::classify::Classification {
            kind: FailureKind::TestFailure,
            summary: "failed".into(),
            findings: (1..=120)
                .map(|line| crate::classify::Finding {
                    path: "tests/test_a.py".into(),
                    line,
                    column: None,
                    message: format!("failure {line}"),
                })
                .collect(),
        }),
    });
    let d = on_run_progress(&record, &finished(1, 'a', vec![failing]), &f.ctx());
    assert_eq!(d.verdict, Some(false));
    assert_eq!(d.record.state, Some(TaskState::TestFailed));
    let batches: Vec<usize> = d
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::UpdateCheckRun { update, .. } => {
                Some(update.output.as_ref().unwrap().annotations.len())
            }
            _ => None,
        })
        .collect();
    assert_eq!(batches, [50, 50, 20]);
    let retry_buttons = d
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::UpdateCheckRun { update, .. } if update.retry_button))
        .count();
    assert_eq!(retry_buttons, 1);
}

#[test]
fn retry_runs_one_gate_and_the_task_passes_when_every_gate_passed_at_the_head() {
    let f = fixture(&["unit", "lint"]);
    let record = push(&TaskRecord::default(), 'a', &f).record;
    let failed = on_run_progress(
        &record,
        &finished(1, 'a', vec![gate("unit", true), gate("lint", false)]),
        &f.ctx(),
    );
    let retry = on_trigger(
        &failed.record,
        &Trigger::Retry {
            sha: None,
            gate: Some("lint".into()),
            by: crate::task::Doer::Person,
        },
        &f.ctx(),
    );
    let job = retry.run.clone().unwrap();
    assert_eq!((job.attempt, job.gates), (2, vec!["lint".to_string()]));
    let passed = on_run_progress(
        &retry.record,
        &finished(2, 'a', vec![gate("lint", true)]),
        &f.ctx(),
    );
    assert_eq!(passed.verdict, Some(true));
    assert_eq!(passed.record.state, Some(TaskState::Review));

    let unknown = on_trigger(
        &failed.record,
        &Trigger::Retry {
            sha: None,
            gate: Some("nope".into()),
            by: crate::task::Doer::Person,
        },
        &f.ctx(),
    );
    assert!(unknown.run.is_none() && unknown.effects.is_empty());
    assert_eq!(unknown.outcome, "the task has no gate `nope`");
    let nothing = on_trigger(
        &TaskRecord::default(),
        &Trigger::Retry {
            sha: None,
            gate: None,
            by: crate::task::Doer::Person,
        },
        &f.ctx(),
    );
    assert!(nothing.run.is_none());
}

/// The current attempt's run ends with the one gate `test` passed or not.
fn finish(record: &TaskRecord, f: &Fixture, passed: bool) -> TaskDecision {
    let attempt = record.current.as_ref().expect("a run").number;
    let head = record.head.as_ref().expect("a head");
    let c = head.as_str().chars().next().expect("a sha");
    on_run_progress(
        record,
        &finished(attempt, c, vec![gate("test", passed)]),
        &f.ctx(),
    )
}

fn merged_at<'a>(head: &'a CommitSha) -> PullClosed<'a> {
    PullClosed::Merged {
        pr: IssueNumber::new(7),
        head,
        by: Some("claude[bot]"),
    }
}

#[test]
fn a_pr_merged_at_its_proven_head_completes_the_task() {
    let f = fixture(&["test"]);
    let a = push(&TaskRecord::default(), 'a', &f);
    let proven = finish(&a.record, &f, true);
    let head = proven.record.head.clone().expect("pushed");
    let d = on_pull_closed(&proven.record, merged_at(&head), &f.ctx());
    assert_eq!(d.record.state, Some(TaskState::Completed));
    let after = push(&d.record, 'b', &f);
    assert!(after.run.is_none(), "a completed task is not run again");
    let closed = on_pull_closed(&a.record, PullClosed::Unmerged, &f.ctx());
    assert_eq!(closed.record.pr, None);
    assert_eq!(closed.record.state, Some(TaskState::Testing));
}

#[test]
fn a_pr_merged_before_its_gates_passed_leaves_the_task_unfinished_until_they_pass_there() {
    let f = fixture(&["test"]);
    let a = push(&TaskRecord::default(), 'a', &f).record;
    let head = a.head.clone().expect("pushed");
    let d = on_pull_closed(&a, merged_at(&head), &f.ctx());
    assert_eq!(
        d.record.state,
        Some(TaskState::Testing),
        "a merge is not a proof"
    );
    assert_eq!(d.cancelled, None, "the run at the merged head goes on");
    assert_eq!(d.record.pr, None, "the next push opens a new pull request");
    let Some(Effect::PostComment { issue, body, .. }) = d.effects.first() else {
        panic!("the merged PR is told: {:?}", d.effects)
    };
    assert_eq!(*issue, IssueNumber::new(7));
    insta::assert_snapshot!(body, @r"
    **Merged before its gates passed.** @claude[bot] merged this pull request into `taskgate/story-12` at `aaaaaaa`, where:

    - `taskgate/test`: not finished

    A merge is not a proof: task #14 is not complete, and the story does not ship until it is. It completes when its gates pass at `aaaaaaa`, or when a later task pull request merges proven: push a fix to `taskgate/task-14-data-loading` and taskgate tests it and opens one.

    **To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires the status checks `taskgate/test` (Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.
    ");
    let proven = finish(&d.record, &f, true);
    assert_eq!(proven.record.state, Some(TaskState::Completed));
    assert_eq!(proven.record.merged_unproven, None);
}

#[test]
fn a_pr_merged_red_stays_unfinished_after_the_failure() {
    let f = fixture(&["test"]);
    let a = push(&TaskRecord::default(), 'a', &f).record;
    let red = finish(&a, &f, false).record;
    let head = red.head.clone().expect("pushed");
    let d = on_pull_closed(&red, merged_at(&head), &f.ctx());
    assert_eq!(d.record.state, Some(TaskState::TestFailed));
    let fixed = push(&d.record, 'b', &f);
    assert!(
        fixed.run.is_some(),
        "a fix pushed after the merge is tested"
    );
    let green = finish(&fixed.record, &f, true);
    assert_eq!(
        green.record.state,
        Some(TaskState::Review),
        "proven at a new head: it completes when its new PR merges"
    );
}

#[test]
fn a_task_without_tests_waits_for_its_merge() {
    let f = fixture(&[]);
    let d = push(&TaskRecord::default(), 'a', &f);
    assert!(d.run.is_none());
    assert_eq!(d.record.state, Some(TaskState::InProgress));
}

#[test]
fn a_vanished_commit_is_reported_as_not_run_and_waiting_is_shown() {
    let f = fixture(&["test"]);
    let record = push(&TaskRecord::default(), 'a', &f).record;
    let waiting = on_run_progress(
        &record,
        &RunProgress::Waiting {
            attempt: 1,
            ahead: 3,
        },
        &f.ctx(),
    );
    let Effect::UpdateCheckRun { update, .. } = &waiting.effects[0] else {
        panic!()
    };
    assert_eq!(
        update.output.as_ref().unwrap().title,
        "Queued behind 3 runs"
    );
    let skipped = on_run_progress(
        &record,
        &RunProgress::Skipped {
            attempt: 1,
            why: "commit gone".into(),
        },
        &f.ctx(),
    );
    assert_eq!(
        conclusions(&skipped.effects)[0].1.as_deref(),
        Some("cancelled")
    );
    assert_eq!(
        skipped.record.current.unwrap().status,
        AttemptStatus::Skipped
    );
    assert!(skipped.verdict.is_none());
}

#[test]
fn retrying_an_older_commit_does_not_move_the_task_back() {
    let f = fixture(&["test"]);
    let first = push(&TaskRecord::default(), 'a', &f);
    let second = push(&first.record, 'b', &f);
    let old = on_trigger(
        &second.record,
        &Trigger::Retry {
            sha: Some(sha('a')),
            gate: Some("test".into()),
            by: crate::task::Doer::Person,
        },
        &f.ctx(),
    );
    assert!(old.run.is_none() && old.effects.is_empty());
    assert_eq!(old.record.head, Some(sha('b')));
    assert!(
        old.outcome.contains("not the branch's head"),
        "{}",
        old.outcome
    );
}

#[test]
fn a_pending_task_is_not_run_and_its_pushed_head_waits_for_its_dependencies() {
    let mut f = fixture(&["unit"]);
    f.waiting_for = vec![IssueNumber::new(3), IssueNumber::new(5)];
    let d = push(&TaskRecord::default(), 'a', &f);
    assert!(d.run.is_none() && d.verdict.is_none());
    assert_eq!(d.record.state, None, "a pending task's state does not move");
    assert_eq!(d.record.head, Some(sha('a')));
    assert_eq!(d.record.attempts, 0);
    let [Effect::CreateCheckRun { check, .. }] = d.effects.as_slice() else {
        panic!("one neutral check run: {:?}", names(&d.effects))
    };
    assert_eq!(check.conclusion.as_str(), "neutral");
    insta::assert_snapshot!(format!("{}\n\n{}", check.title, check.summary), @"
    Not run: waiting for #3 and #5

    This task depends on work that is not complete yet (waiting for #3 and #5), so its acceptance tests do not run now: a failure here would only reflect the missing work. The latest commit pushed here is tested as soon as the last dependency completes.
    ");
    // The same head again (its PR's webhook, a redelivery): nothing more.
    let again = push(&d.record, 'a', &f);
    assert!(again.effects.is_empty() && again.run.is_none());
    // A retry is refused with the reason.
    let retry = on_trigger(
        &d.record,
        &Trigger::Retry {
            sha: None,
            gate: None,
            by: crate::task::Doer::Person,
        },
        &f.ctx(),
    );
    assert!(retry.run.is_none() && retry.effects.is_empty());
    assert_eq!(retry.outcome, "pending, waiting for #3 and #5: not run");
}

#[test]
fn the_work_pushed_while_pending_is_tested_once_its_branch_is_started() {
    use crate::story::{BranchStart, StartHow};
    let mut f = fixture(&["unit"]);
    f.waiting_for = vec![IssueNumber::new(3)];
    let waiting = push(&TaskRecord::default(), 'a', &f).record;
    f.waiting_for.clear();
    // The dependency completed: the branch is brought up to date first.
    assert!(on_dependencies_complete(&waiting, &f.ctx()).is_none());
    let start = |how| BranchStart {
        story_branch: "taskgate/story-1".into(),
        story_sha: sha('b'),
        how,
    };
    // The story branch merged in: the merge's push runs it, not the start.
    let merged = start(StartHow::Merged { merge: sha('c') });
    assert!(on_branch_started(&waiting, &merged, &f.ctx()).is_none());
    // Up to date already, or conflicting: no push follows, the recorded
    // head runs now, once.
    for how in [StartHow::UpToDate, StartHow::Conflict] {
        let d = on_branch_started(&waiting, &start(how), &f.ctx()).expect("a run starts");
        assert_eq!(d.run.as_ref().unwrap().sha, sha('a'));
        assert_eq!(d.record.state, Some(TaskState::Testing));
        assert!(d.record.branch.is_some());
        assert!(names(&d.effects).contains(&"create_pull_request"));
        let again = start(StartHow::UpToDate);
        assert!(on_branch_started(&d.record, &again, &f.ctx()).is_none());
        // Once started, a completion tests a head not tested yet.
        assert!(on_dependencies_complete(&d.record, &f.ctx()).is_none());
    }
    // Nothing pushed while pending: nothing to run.
    let up_to_date = start(StartHow::UpToDate);
    assert!(on_branch_started(&TaskRecord::default(), &up_to_date, &f.ctx()).is_none());
}

#[test]
fn a_ready_pr_opened_by_hand_after_the_head_went_green_is_merged() {
    let f = fixture(&["test"]);
    let record = push(&TaskRecord::default(), 'a', &f).record;
    let passed = on_run_progress(
        &record,
        &finished(1, 'a', vec![gate("test", true)]),
        &f.ctx(),
    )
    .record;
    let by_hand = PullRef {
        number: IssueNumber::new(21),
        draft: false,
    };
    let opened = pr_event(&passed, 'a', by_hand, &f);
    assert_eq!(names(&opened.effects), ["merge_pull_request"]);
    assert!(opened.run.is_none());
    assert_eq!(opened.record.pr, Some(by_hand));
    // Opened as a draft: it waits for ready_for_review.
    let draft = pr_event(
        &passed,
        'a',
        PullRef {
            draft: true,
            ..by_hand
        },
        &f,
    );
    assert!(draft.effects.is_empty());
}

#[test]
fn the_draft_pr_is_asked_for_again_at_a_new_head_until_its_webhook_arrives() {
    let f = fixture(&["test"]);
    let first = push(&TaskRecord::default(), 'a', &f);
    assert!(first.record.pr_requested);
    // GitHub refused it ("No commits between"), or its webhook is late.
    let second = push(&first.record, 'b', &f);
    assert_eq!(names(&second.effects)[0], "create_pull_request");
}

/// Issue 33: the runner's own failure (bwrap's complaint, a host that
/// cannot sandbox) is no verdict: the gates fail as `tooling_error` naming
/// the runner, no verdict goes to the failure loop (so no branch todo), the
/// task is back in progress, and one comment on the task issue says it.
#[test]
fn a_runner_fault_fails_the_checks_without_a_verdict_and_says_so_once_on_the_task() {
    let f = fixture(&["unit"]);
    let queued = push(&TaskRecord::default(), 'a', &f);
    let mut done = finished(1, 'a', vec![gate("unit", false)]);
    if let RunProgress::Finished { report, .. } = &mut done {
        report.runner_fault =
            Some("the sandbox did not start (bwrap: Can't find source path taskgate-work/workspaces/x: No such file or directory)".into());
    }
    let d = on_run_progress(&queued.record, &done, &f.ctx());
    assert_eq!(
        d.verdict, None,
        "no verdict: the failure loop opens nothing"
    );
    assert_eq!(d.record.state, Some(TaskState::InProgress));
    assert_eq!(
        d.record.current.as_ref().map(|a| a.status),
        Some(AttemptStatus::Skipped)
    );
    assert_eq!(
        conclusions(&d.effects),
        [(
            "story=file:s task=data attempt=1 gate=unit".to_string(),
            Some("failure".to_string())
        )]
    );
    let Some(Effect::UpdateCheckRun { update, .. }) = d.effects.first() else {
        panic!("{:?}", d.effects)
    };
    let output = update.output.as_ref().unwrap();
    insta::assert_snapshot!(format!("{}\n\n{}", output.title, output.summary), @r"
    Not run — tooling_error (taskgate's runner)

    taskgate could not run this gate: the sandbox did not start (bwrap: Can't find source path taskgate-work/workspaces/x: No such file or directory). This is a fault of taskgate's runner on its host, not a verdict on the code: no branch todo was opened. Press Retry once the host is fixed (`taskgate doctor` on the host says what it lacks).
    ");
    let Some(Effect::UpsertComment { marker, body, .. }) = d
        .effects
        .iter()
        .find(|e| matches!(e, Effect::UpsertComment { .. }))
    else {
        panic!("{:?}", d.effects)
    };
    assert_eq!(marker, "runner-fault story=file:s task=data");
    insta::assert_snapshot!(body, @r"
    **taskgate could not run this task's acceptance tests** (attempt 1, commit `aaaaaaa`).

    > the sandbox did not start (bwrap: Can't find source path taskgate-work/workspaces/x: No such file or directory)

    This is a fault of taskgate's runner on its host, not of the code: no branch todo was opened and the attempt does not count against the task's bounds.

    **To fix it**, whoever runs taskgate: run `taskgate doctor` on the host, which says what it lacks, then comment `/taskgate retry` here or press Retry on a check run.
    ");
}
