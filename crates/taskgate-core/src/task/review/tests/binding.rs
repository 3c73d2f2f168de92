//! An approval binds to what the person saw (issue 45): the head the task
//! had when the comment was written.

use super::*;

/// `bob`, writing at `at` (unix seconds).
fn bob_at(at: i64) -> Reviewer<'static> {
    Reviewer {
        written_at: Some(at),
        ..BOB
    }
}

#[test]
fn an_approval_written_before_the_head_arrived_approves_nothing() {
    let f = fixture(ReviewMode::Human);
    let mut record = in_review(true);
    record.head_seen_at = Some(100);
    let refusals: Vec<String> = [approve(None), approve(Some("the flake is the CI's"))]
        .iter()
        .map(|command| {
            let d = on_review_command(&record, command, bob_at(99), &f.ctx(), &inputs());
            d.expect_err("written before `a…` was pushed").to_string()
        })
        .collect();
    assert_eq!(refusals[0], refusals[1], "an override too");
    insta::assert_snapshot!(refusals[0], @"commit `aaaaaaa` was pushed to the task after your comment was written, and an approval is for the commit you saw: look at `aaaaaaa`, then approve again");
    let d = on_review_command(&record, &approve(None), bob_at(100), &f.ctx(), &inputs());
    let approved = d.expect("written once `a…` was there");
    assert_eq!(names(&approved.effects), ["merge_pull_request"]);
    assert_eq!(approved.record.approval.map(|a| a.sha), Some(sha('a')));
}

#[test]
fn a_new_head_is_seen_when_it_arrives() {
    let f = Fixture {
        now: 42,
        ..fixture(ReviewMode::Human)
    };
    let d = crate::task::on_trigger(
        &in_review(true),
        &crate::task::Trigger::Head {
            sha: sha('b'),
            pr: None,
            pusher: None,
            source: crate::task::HeadSource::Taskgate,
        },
        &f.ctx(),
    );
    assert_eq!(d.record.head_seen_at, Some(42));
}
