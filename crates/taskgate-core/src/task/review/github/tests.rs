use super::*;
use crate::config::ReviewMode;
use crate::ids::{IssueNumber, UserId};
use crate::task::test_fixture::{sha, Fixture};
use crate::task::{AttemptStatus, GateVerdict, PullRef};

fn fixture() -> Fixture {
    Fixture::new(&["test"], ReviewMode::Human)
}

/// Proven at `a…`, its PR #20 ready.
fn in_review() -> TaskRecord {
    let mut r = TaskRecord {
        state: Some(TaskState::Review),
        pr: Some(PullRef {
            number: IssueNumber::new(20),
            draft: false,
        }),
        head: Some(sha('a')),
        attempts: 1,
        ..TaskRecord::default()
    };
    r.verdicts.insert(
        "test".into(),
        GateVerdict {
            sha: sha('a'),
            attempt: 1,
            passed: true,
            kind: None,
            summary: None,
        },
    );
    let _ = AttemptStatus::Passed;
    r
}

const MIA: Reviewer = Reviewer {
    id: UserId::new(78),
    login: "mia",
    written_at: None,
};

fn inputs() -> ReviewInputs<'static> {
    ReviewInputs {
        role: "coder",
        assignees: &[],
        agent_workflow: None,
        allow_self_approval: false,
    }
}

fn review(record: &TaskRecord, r: GitHubReview) -> Result<TaskDecision, ReviewRefusal> {
    on_github_review(record, r, MIA, &fixture().ctx(), &inputs())
}

#[test]
fn an_approve_review_of_the_head_approves_the_task_there_and_merges_it() {
    let a = sha('a');
    let d = review(
        &in_review(),
        GitHubReview::Approved {
            commit: &a,
            review: 5,
        },
    )
    .unwrap();
    let names: Vec<_> = d.effects.iter().map(crate::Effect::name).collect();
    assert_eq!(names, ["merge_pull_request"]);
    let approval = d.record.approval.unwrap();
    assert_eq!(
        (approval.sha, approval.review, approval.login.as_str()),
        (a, Some(5), "mia")
    );
}

#[test]
fn an_approve_review_of_an_older_head_approves_nothing_and_says_why() {
    let old = sha('0');
    let why = review(
        &in_review(),
        GitHubReview::Approved {
            commit: &old,
            review: 5,
        },
    )
    .unwrap_err();
    insta::assert_snapshot!(render_review_refused("mia", "Approve", &why), @"@mia your review (Approve) changed nothing on this task: it reviewed `0000000`, and the task's head is `aaaaaaa` now: a review approves the commit it saw; review `aaaaaaa` to approve it.");
}

#[test]
fn a_change_request_is_a_revise_with_the_reviews_text_capped() {
    let long = "x".repeat(65 * 1024);
    let d = review(&in_review(), GitHubReview::ChangesRequested { body: &long }).unwrap();
    assert_eq!(d.record.revisions, 1);
    assert_eq!(d.record.state, Some(TaskState::InProgress));
    let crate::Effect::PostComment { body, .. } = &d.effects[0] else {
        panic!("{:?}", d.effects)
    };
    assert!(body.len() < 10_000, "{}", body.len());
}

#[test]
fn a_dismissal_takes_back_the_approval_its_review_gave_and_nothing_else() {
    let a = sha('a');
    let approved = review(
        &in_review(),
        GitHubReview::Approved {
            commit: &a,
            review: 5,
        },
    )
    .unwrap()
    .record;
    let other = review(&approved, GitHubReview::Dismissed { review: 6 }).unwrap_err();
    assert_eq!(other, ReviewRefusal::DismissedNotCounted);
    let d = review(&approved, GitHubReview::Dismissed { review: 5 }).unwrap();
    assert_eq!(d.record.approval, None);
    assert!(d.effects.is_empty());
    let mut done = approved.clone();
    done.state = Some(TaskState::Completed);
    assert_eq!(
        review(&done, GitHubReview::Dismissed { review: 5 }).unwrap_err(),
        ReviewRefusal::Completed
    );
}

#[test]
fn the_pusher_s_own_approve_review_does_not_count() {
    let a = sha('a');
    let mut pushed = in_review();
    pushed.pushed_by = vec![MIA.id];
    let why = review(
        &pushed,
        GitHubReview::Approved {
            commit: &a,
            review: 5,
        },
    )
    .unwrap_err();
    assert_eq!(why, ReviewRefusal::SelfApproval);
}

#[test]
fn a_review_by_someone_without_permission_is_answered_with_what_it_needs() {
    insta::assert_snapshot!(
        render_review_not_permitted("bob", "Approve", crate::config::Permission::Write, Some(crate::config::Permission::Read)),
        @"@bob your review (Approve) changed nothing on this task: a review counts as `approve` or `revise` only from someone with write permission on the repository; @bob has read."
    );
}
