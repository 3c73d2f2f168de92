//! A task branch's heads in the order GitHub made them, whatever the order
//! its webhooks arrive in.
//!
//! GitHub promises neither the order of its webhooks nor that each comes
//! once: the task PR's `opened` (head `A`) may arrive after the push that
//! moved the branch on to `B`. Taken as news, it would move the task back
//! to `A` and test a commit nobody works on any more. So a task remembers
//! the heads it replaced ([`TaskRecord::superseded`], the last
//! [`KEPT_SUPERSEDED`]), and a webhook naming one of them is late: it
//! changes nothing but the pull request it names. A push that says it
//! replaced the current head (its `before`) is news even so: the branch
//! really was moved back (a force-push, a reset). taskgate's own triggers
//! (a proof, a milestone, a resume) are never late.
//!
//! Owns: what is late, and the list kept. Must not: decide what runs
//! (`decide`).

use super::decide::{short, Trigger};
use super::{PullRef, TaskDecision, TaskRecord};
use crate::ids::CommitSha;

/// Heads replaced that a task remembers, the most recent.
pub const KEPT_SUPERSEDED: usize = 20;

/// Where a [`Trigger::Head`] comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadSource {
    /// A webhook (a push, a pull request event), which may be late.
    /// `before`: the head it replaced, when it says (a push's `before`,
    /// a `synchronize`'s). `opened`: a pull request's `opened`, the first
    /// event of its life, so late once any other head is known; only
    /// for a record that belongs to one pull request (an agent's fix): a
    /// task's record outlives its pull requests.
    Webhook {
        before: Option<CommitSha>,
        opened: bool,
    },
    /// taskgate's own decision: a proof, a milestone, a resume, the
    /// dependencies complete. Never late.
    Taskgate,
}

/// The decision for a late webhook: nothing runs and the head stays; the
/// pull request it names is adopted (it exists, whatever its head was).
/// `None` when the trigger is news.
pub(super) fn late(record: &TaskRecord, trigger: &Trigger) -> Option<TaskDecision> {
    let Trigger::Head {
        sha,
        pr,
        source: HeadSource::Webhook { before, opened },
        ..
    } = trigger
    else {
        return None;
    };
    let head = record.head.as_ref()?;
    let replaced = record.superseded.contains(sha) || *opened;
    if head == sha || before.as_ref() == Some(head) || !replaced {
        return None;
    }
    let mut next = record.clone();
    adopt(&mut next, *pr);
    Some(TaskDecision {
        record: next,
        effects: vec![],
        run: None,
        cancelled: None,
        verdict: None,
        outcome: format!(
            "{} was replaced by {}: a late webhook, ignored",
            short(sha),
            short(head)
        ),
    })
}

fn adopt(next: &mut TaskRecord, pr: Option<PullRef>) {
    if let Some(pr) = pr {
        next.pr = Some(pr);
        next.pr_requested = false;
    }
}

/// Moves `next`'s head to `sha`, remembering the head it replaces and the
/// one the trigger says it replaced.
pub(super) fn move_head(next: &mut TaskRecord, sha: &CommitSha, trigger: &Trigger, now: i64) {
    if next.head.as_ref() != Some(sha) {
        next.head_seen_at = Some(now);
    }
    let before = match trigger {
        Trigger::Head {
            source:
                HeadSource::Webhook {
                    before: Some(before),
                    ..
                },
            ..
        } => Some(before.clone()),
        _ => None,
    };
    let replaced = next.head.replace(sha.clone());
    next.superseded.retain(|s| s != sha);
    for old in [replaced, before].into_iter().flatten() {
        if old != *sha && !is_zero(&old) && !next.superseded.contains(&old) {
            next.superseded.push(old);
        }
    }
    let extra = next.superseded.len().saturating_sub(KEPT_SUPERSEDED);
    next.superseded.drain(..extra);
}

/// GitHub's `0000…` (no commit: a push that created the branch).
fn is_zero(sha: &CommitSha) -> bool {
    sha.as_str().bytes().all(|b| b == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReviewMode;
    use crate::ids::IssueNumber;
    use crate::task::on_trigger;
    use crate::task::test_fixture::{sha, Fixture};

    fn webhook(c: char, before: Option<char>, pr: Option<PullRef>) -> Trigger {
        Trigger::Head {
            sha: sha(c),
            pr,
            pusher: None,
            source: HeadSource::Webhook {
                before: before.map(sha),
                opened: false,
            },
        }
    }

    fn pull() -> PullRef {
        PullRef {
            number: IssueNumber::new(20),
            draft: true,
        }
    }

    /// The task after pushes `a` then `b`, each tested.
    fn moved_on(f: &Fixture) -> TaskRecord {
        let d = on_trigger(&TaskRecord::default(), &webhook('a', None, None), &f.ctx());
        let d = on_trigger(&d.record, &webhook('b', Some('a'), None), &f.ctx());
        assert!(d.run.is_some());
        d.record
    }

    #[test]
    fn a_pull_request_event_for_a_replaced_head_runs_nothing_and_keeps_the_head() {
        let f = Fixture::new(&["test"], ReviewMode::Auto);
        let record = moved_on(&f);
        let d = on_trigger(&record, &webhook('a', None, Some(pull())), &f.ctx());
        assert!(d.run.is_none());
        assert!(d.effects.is_empty(), "{:?}", d.effects);
        assert_eq!(d.record.head, Some(sha('b')));
        assert_eq!(d.record.pr, Some(pull()), "the PR is adopted all the same");
        assert_eq!(d.record.current, record.current);
        insta::assert_snapshot!(d.outcome, @"aaaaaaa was replaced by bbbbbbb: a late webhook, ignored");
    }

    #[test]
    fn a_push_late_behind_the_push_that_replaced_it_is_ignored() {
        let f = Fixture::new(&["test"], ReviewMode::Auto);
        // `x` → `a` → `b`, delivered `x`, then `a` → `b`, then the late `x` → `a`.
        let d = on_trigger(&TaskRecord::default(), &webhook('x', None, None), &f.ctx());
        let d = on_trigger(&d.record, &webhook('b', Some('a'), None), &f.ctx());
        let late = on_trigger(&d.record, &webhook('a', Some('x'), None), &f.ctx());
        assert!(late.run.is_none());
        assert_eq!(late.record.head, Some(sha('b')));
    }

    #[test]
    fn a_pull_requests_opened_late_behind_its_other_events_is_ignored() {
        let f = Fixture::new(&["test"], ReviewMode::Auto);
        // An agent's fix: `ready_for_review` at `b` arrives first, then
        // the `opened` at `a` it came before; then a duplicate of it.
        let d = on_trigger(&TaskRecord::default(), &webhook('b', None, None), &f.ctx());
        let opened = Trigger::Head {
            sha: sha('a'),
            pr: None,
            pusher: None,
            source: HeadSource::Webhook {
                before: None,
                opened: true,
            },
        };
        let late = on_trigger(&d.record, &opened, &f.ctx());
        assert!(late.run.is_none(), "{}", late.outcome);
        assert!(late.cancelled.is_none());
        assert_eq!(late.record.head, Some(sha('b')));
        // The first event of all is news, as any head is.
        let first = on_trigger(&TaskRecord::default(), &opened, &f.ctx());
        assert!(first.run.is_some());
        let again = on_trigger(&first.record, &opened, &f.ctx());
        assert_eq!(again.record.head, Some(sha('a')));
    }

    #[test]
    fn a_branch_moved_back_by_a_push_is_news() {
        let f = Fixture::new(&["test"], ReviewMode::Auto);
        let record = moved_on(&f);
        // A force-push from `b` back to `a`: its `before` is the head.
        let d = on_trigger(&record, &webhook('a', Some('b'), None), &f.ctx());
        assert_eq!(d.record.head, Some(sha('a')));
        assert!(d.run.is_some(), "{}", d.outcome);
        assert_eq!(d.record.superseded, [sha('b')]);
    }

    #[test]
    fn taskgates_own_trigger_is_never_late() {
        let f = Fixture::new(&["test"], ReviewMode::Auto);
        let record = moved_on(&f);
        let own = Trigger::Head {
            sha: sha('a'),
            pr: None,
            pusher: None,
            source: HeadSource::Taskgate,
        };
        let d = on_trigger(&record, &own, &f.ctx());
        assert_eq!(d.record.head, Some(sha('a')));
        assert!(d.run.is_some());
    }

    #[test]
    fn the_last_twenty_replaced_heads_are_kept() {
        let mut record = TaskRecord::default();
        let heads: Vec<CommitSha> = (0..30)
            .map(|n| crate::ids::sha(&format!("{n:040x}")))
            .collect();
        for h in &heads {
            move_head(&mut record, h, &webhook('f', None, None), 0);
        }
        assert_eq!(record.superseded.len(), KEPT_SUPERSEDED);
        assert_eq!(record.superseded.first(), Some(&heads[9]));
        assert_eq!(record.superseded.last(), Some(&heads[28]));
    }
}
