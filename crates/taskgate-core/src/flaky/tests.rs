use super::*;
use crate::ids::UserId;

const DAY: i64 = DAY_S;
const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const SHA_C: &str = "cccccccccccccccccccccccccccccccccccccccc";

fn repo() -> RepoName {
    RepoName::parse("acme/app").unwrap()
}

fn run(test: &str, attempt: u32, sha: &str, result: RunResult) -> TestRun {
    TestRun {
        task: "s/check".into(),
        attempt,
        sha: sha.into(),
        test_id: TestId::new(test),
        result,
        file: Some("tests/test_x.py".into()),
    }
}

use RunResult::{Fail, Pass, Skip};

const UNKNOWN: Changes<'static> = Changes::UNKNOWN;

/// Changes where `files(pair)` is known and only `.md` files are unrelated.
fn known<'a>(files: &'a dyn Fn(&CommitPair) -> Option<Vec<String>>) -> Changes<'a> {
    Changes {
        files,
        unrelated: &|path: &str| path.ends_with(".md"),
    }
}

/// Fail then pass on the same commit, `n` times: attempts 1..=2n.
fn flips(test: &str, n: u32) -> Vec<TestRun> {
    (0..n)
        .flat_map(|i| {
            [
                run(test, 2 * i + 1, SHA_A, Fail),
                run(test, 2 * i + 2, SHA_A, Pass),
            ]
        })
        .collect()
}

fn policy(after: u32) -> FlakyConfig {
    FlakyConfig {
        quarantine_after: after,
        quarantine_days: 14,
        ..FlakyConfig::default()
    }
}

fn events_of(runs: &[TestRun]) -> Vec<(u32, EventKind)> {
    flaky_events(runs, UNKNOWN)
        .into_values()
        .flatten()
        .map(|e| (e.attempt, e.kind))
        .collect()
}

#[test]
fn a_failure_then_a_pass_on_the_same_commit_is_one_event_at_the_pass() {
    let runs = vec![
        run("t", 1, SHA_A, Fail),
        run("t", 2, SHA_A, Fail),
        run("t", 3, SHA_A, Pass),
        run("t", 4, SHA_A, Pass),
    ];
    assert_eq!(events_of(&runs), [(3, EventKind::Retry)]);
    assert_eq!(events_of(&flips("t", 3)).len(), 3);
}

#[test]
fn a_test_that_always_fails_is_never_flaky() {
    let runs: Vec<TestRun> = (1..=10)
        .map(|a| run("broken", a, if a % 2 == 0 { SHA_A } else { SHA_B }, Fail))
        .collect();
    let readme = |_: &CommitPair| Some(vec!["README.md".to_string()]);
    assert!(flaky_events(&runs, known(&readme)).is_empty());
    let quarantined = new_quarantines(&flaky_events(&runs, known(&readme)), &[], &policy(1), 0);
    assert!(quarantined.is_empty());
}

#[test]
fn a_pass_then_a_failure_or_skips_are_no_event() {
    let runs = vec![
        run("t", 1, SHA_A, Pass),
        run("t", 2, SHA_A, Fail),
        run("t", 3, SHA_A, Skip),
        run("u", 1, SHA_A, Fail),
        run("u", 2, SHA_A, Skip),
    ];
    assert!(events_of(&runs).is_empty());
}

#[test]
fn a_fix_on_a_new_commit_is_not_a_retry_event() {
    let runs = vec![run("t", 1, SHA_A, Fail), run("t", 2, SHA_B, Pass)];
    assert!(
        events_of(&runs).is_empty(),
        "unknown changes: nothing concluded"
    );
}

#[test]
fn a_flip_across_commits_counts_only_when_the_commit_touched_none_of_the_tests_files() {
    let runs = vec![
        run("t", 1, SHA_A, Pass),
        run("t", 2, SHA_B, Fail),
        run("t", 3, SHA_C, Pass),
        run("t", 4, SHA_A, Fail),
    ];
    let files = |pair: &CommitPair| {
        Some(match pair.head.as_str() {
            // Only documentation: the test was not touched.
            SHA_B => vec!["README.md".to_string(), "docs/x.md".to_string()],
            // Its own file (even if it matched an unrelated glob).
            SHA_C => vec!["tests/test_x.py".to_string()],
            // Code it may read.
            _ => vec!["README.md".to_string(), "src/app.py".to_string()],
        })
    };
    let events: Vec<(u32, EventKind)> = flaky_events(&runs, known(&files))
        .into_values()
        .flatten()
        .map(|e| (e.attempt, e.kind))
        .collect();
    assert_eq!(events, [(2, EventKind::Untouched)]);
    // A commit that changed nothing at all (a re-push of the same tree).
    let nothing = |_: &CommitPair| Some(vec![]);
    assert_eq!(flaky_events(&runs, known(&nothing)).len(), 1);
    assert_eq!(
        flaky_events(&runs, known(&nothing))[&TestId::new("t")].len(),
        3
    );
    // Unknown changes: nothing concluded.
    assert!(flaky_events(&runs, UNKNOWN).is_empty());
}

#[test]
fn the_pairs_to_compare_are_the_flips_across_commits() {
    let runs = vec![
        run("t", 1, SHA_A, Pass),
        run("t", 2, SHA_A, Fail),
        run("t", 3, SHA_B, Fail),
        run("t", 4, SHA_C, Skip),
        run("t", 5, SHA_C, Pass),
        run("u", 1, SHA_A, Pass),
        run("u", 5, SHA_C, Pass),
    ];
    let pair = |base: &str, head: &str| CommitPair {
        base: base.into(),
        head: head.into(),
    };
    assert_eq!(flips_across_commits(&runs), [pair(SHA_B, SHA_C)]);
}

#[test]
fn one_failing_gate_makes_the_attempt_a_failure() {
    // Two gates ran the same test in attempt 1: one failed.
    let runs = vec![
        run("t", 1, SHA_A, Pass),
        run("t", 1, SHA_A, Fail),
        run("t", 2, SHA_A, Pass),
    ];
    assert_eq!(events_of(&runs), [(2, EventKind::Retry)]);
}

#[test]
fn the_nth_event_quarantines_for_the_configured_days() {
    let now = 1_000 * DAY;
    let two = flaky_events(&flips("t", 2), UNKNOWN);
    assert!(new_quarantines(&two, &[], &policy(3), now).is_empty());
    let three = flaky_events(&flips("t", 3), UNKNOWN);
    let started = new_quarantines(&three, &[], &policy(3), now);
    assert_eq!(started.len(), 1);
    let q = &started[0];
    assert_eq!((q.since_s, q.until_s), (now, now + 14 * DAY));
    assert_eq!(q.events.len(), 3);
    assert!(q.in_force(now) && q.in_force(now + 14 * DAY - 1));
    assert!(!q.in_force(now + 14 * DAY), "expired by the clock");
    // Already in force: nothing new.
    assert!(new_quarantines(&three, &started, &policy(3), now + DAY).is_empty());
}

#[test]
fn after_expiry_or_a_lift_only_new_events_count() {
    let now = 1_000 * DAY;
    let three = flaky_events(&flips("t", 3), UNKNOWN);
    let first = new_quarantines(&three, &[], &policy(3), now);
    let later = now + 15 * DAY;
    assert!(
        new_quarantines(&three, &first, &policy(3), later).is_empty(),
        "the same events do not quarantine twice"
    );
    let six = flaky_events(&flips("t", 6), UNKNOWN);
    let again = new_quarantines(&six, &first, &policy(3), later);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].since_s, later);
    let lifted = Quarantine {
        lifted_by: Some("alice".into()),
        ..first[0].clone()
    };
    assert!(!lifted.in_force(now + DAY));
    assert!(
        new_quarantines(&three, std::slice::from_ref(&lifted), &policy(3), now + DAY).is_empty()
    );
    assert_eq!(
        new_quarantines(&six, &[lifted], &policy(3), now + DAY).len(),
        1
    );
}

fn quarantined(test: &str, since_s: i64) -> Quarantine {
    new_quarantines(
        &flaky_events(&flips(test, 3), UNKNOWN),
        &[],
        &policy(3),
        since_s,
    )
    .remove(0)
}

#[test]
fn the_tracking_issue_is_created_once_then_updated_in_place() {
    let now = 1_785_000_000;
    let q = quarantined("tests/test_x.py::test_net", now);
    let first = on_new_quarantines(&repo(), &[], vec![q.clone()], "/taskgate", now);
    assert!(matches!(
        first.effects.as_slice(),
        [Effect::CreateIssue { marker, title, .. }] if marker == TRACKING_MARKER && title == "Flaky tests"
    ));
    assert!(matches!(
        first.changes.as_slice(),
        [Change::QuarantineStarted { .. }]
    ));
    let second = quarantined("tests/test_x.py::test_db", now + 60);
    let next = on_new_quarantines(&repo(), &[q], vec![second], "/taskgate", now + 60);
    let [Effect::UpdateIssue {
        marker,
        body: Some(body),
        title: None,
        ..
    }] = next.effects.as_slice()
    else {
        panic!("an update in place: {:?}", next.effects);
    };
    assert_eq!(marker, TRACKING_MARKER);
    insta::assert_snapshot!(body, @r"
        taskgate quarantines a test after it fails and then passes on the same commit, or changes result across commits that touched none of its files, often enough: its failures no longer fail a gate (each check run shows them as warnings) until the quarantine ends.

        | test | since | until | flaky events |
        |---|---|---|---|
        | `tests/test_x.py::test_db` | 2026-07-25 17:21 UTC | 2026-08-08 17:21 UTC | `aaaaaaa` attempt 2, `aaaaaaa` attempt 4, `aaaaaaa` attempt 6 |
        | `tests/test_x.py::test_net` | 2026-07-25 17:20 UTC | 2026-08-08 17:20 UTC | `aaaaaaa` attempt 2, `aaaaaaa` attempt 4, `aaaaaaa` attempt 6 |

        To lift a quarantine now, comment `/taskgate unquarantine <test id>` on any issue or pull request of this repository.

        <!-- taskgate:flaky-tests -->
    ");
    assert!(on_new_quarantines(&repo(), &[], vec![], "/taskgate", now)
        .effects
        .is_empty());
}

#[test]
fn the_tracking_body_leaves_out_expired_and_lifted_quarantines() {
    let now = 1_785_000_000;
    let mut lifted = quarantined("b", now);
    lifted.lifted_by = Some("alice".into());
    let body = render_tracking_body(&[quarantined("a", now - 20 * DAY), lifted], "/tg", now);
    insta::assert_snapshot!(body, @r"
        taskgate quarantines a test after it fails and then passes on the same commit, or changes result across commits that touched none of its files, often enough: its failures no longer fail a gate (each check run shows them as warnings) until the quarantine ends.

        No test is quarantined now.

        <!-- taskgate:flaky-tests -->
    ");
}

#[test]
fn an_ended_quarantine_rewrites_the_tracking_issue_unless_quarantined_again() {
    let now = 1_785_000_000;
    let ended = quarantined("t", now - 20 * DAY);
    let test = TestId::new("t");
    let d = on_quarantine_ended(&repo(), std::slice::from_ref(&ended), &test, "/tg", now);
    let [Effect::UpdateIssue {
        body: Some(body), ..
    }] = d.effects.as_slice()
    else {
        panic!("an update in place: {:?}", d.effects);
    };
    assert!(body.contains("No test is quarantined now."), "{body}");
    assert!(
        d.changes.is_empty(),
        "nothing to store: the end is a matter of time"
    );
    let again = quarantined("t", now - DAY);
    let d = on_quarantine_ended(&repo(), &[ended, again], &test, "/tg", now);
    assert!(
        d.effects.is_empty(),
        "in force again: the issue lists it rightly"
    );
}

fn alice() -> AuditActor<'static> {
    AuditActor::user(UserId::new(7), "alice")
}

#[test]
fn unquarantine_lifts_audits_and_updates_the_issue() {
    let now = 1_785_000_000;
    let q = quarantined("tests/test_x.py::test_net", now);
    let d = on_unquarantine(
        &repo(),
        std::slice::from_ref(&q),
        "tests/test_x.py::test_net",
        alice(),
        "/taskgate",
        now + DAY,
    )
    .unwrap();
    assert!(d.changes.contains(&Change::QuarantineLifted {
        repo: repo(),
        test_id: q.test_id.clone(),
        since_s: now,
        by: "alice".into(),
    }));
    let audited = d.changes.iter().find_map(|c| match c {
        Change::Audited(e) => Some(e),
        _ => None,
    });
    let audited = audited.expect("an audit entry");
    assert_eq!(audited.action, AuditAction::Unquarantine);
    assert_eq!(audited.object, "test tests/test_x.py::test_net");
    let [Effect::UpdateIssue {
        body: Some(body), ..
    }] = d.effects.as_slice()
    else {
        panic!("the tracking issue updated: {:?}", d.effects);
    };
    assert!(body.contains("No test is quarantined now."), "{body}");
}

#[test]
fn unquarantine_of_an_unknown_test_names_the_closest_quarantined_ones() {
    let now = 1_785_000_000;
    let all = [
        quarantined("tests/test_x.py::test_net", now),
        quarantined("tests/test_x.py::test_db", now),
        quarantined("pkg.Other.case", now),
        quarantined("tests/test_y.py::test_ne", now),
    ];
    let refused = on_unquarantine(
        &repo(),
        &all,
        "tests/test_x.py::test_nett",
        alice(),
        "/taskgate",
        now,
    )
    .unwrap_err();
    insta::assert_snapshot!(refused, @"`/taskgate unquarantine` did nothing: `tests/test_x.py::test_nett` is not quarantined. Quarantined now: `tests/test_x.py::test_net`, `tests/test_y.py::test_ne`, `tests/test_x.py::test_db`.");
    let none = on_unquarantine(&repo(), &[], "x", alice(), "/taskgate", now).unwrap_err();
    insta::assert_snapshot!(none, @"`/taskgate unquarantine` did nothing: `x` is not quarantined. No test of this repository is quarantined now.");
    // An expired quarantine cannot be lifted.
    let expired = on_unquarantine(
        &repo(),
        &all,
        "pkg.Other.case",
        alice(),
        "/taskgate",
        now + 15 * DAY,
    );
    assert!(expired.is_err());
}
