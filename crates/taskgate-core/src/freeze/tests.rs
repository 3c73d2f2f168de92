use super::*;
use crate::config::{load_config, parse_config, CONFIG_PATH};
use crate::plan::render_problems;

/// Friday 2026-11-27 00:00 UTC.
const FRIDAY: i64 = 1_795_737_600;
const HOUR: i64 = 3_600;
const MINUTE: i64 = 60;

fn repo() -> RepoName {
    RepoName::parse("acme/strategies").unwrap()
}

fn alice() -> AuditActor<'static> {
    AuditActor::user(UserId::new(7), "alice")
}

fn window(days: &[Weekday], from: &str, to: &str, reason: Option<&str>) -> FreezeWindow {
    FreezeWindow {
        days: days.to_vec(),
        from_min: parse_time(from).unwrap(),
        to_min: parse_time(to).unwrap(),
        reason: reason.map(str::to_owned),
    }
}

fn manual(since_s: i64) -> Freeze {
    Freeze {
        reason: "release in progress".into(),
        by_login: "alice".into(),
        by_id: Some(UserId::new(7)),
        since_s,
    }
}

fn problems(src: &str) -> String {
    render_problems(CONFIG_PATH, &parse_config(src).1)
}

#[test]
fn the_reference_friday_is_a_friday_at_midnight() {
    let t = DateTime::from_timestamp(FRIDAY, 0).unwrap();
    assert_eq!((t.weekday(), t.hour(), t.minute()), (Weekday::Fri, 0, 0));
}

#[test]
fn a_window_covers_from_and_not_to() {
    let w = window(&[Weekday::Fri], "16:00", "24:00", Some("weekend"));
    assert!(!w.contains(FRIDAY + 16 * HOUR - 1), "15:59:59");
    assert!(w.contains(FRIDAY + 16 * HOUR), "16:00 exactly");
    assert!(w.contains(FRIDAY + 24 * HOUR - 1), "23:59:59");
    assert!(!w.contains(FRIDAY + 24 * HOUR), "Saturday 00:00");
    assert!(
        !w.contains(FRIDAY + 16 * HOUR - 7 * 24 * HOUR + 24 * HOUR),
        "Saturday a week before"
    );
    assert!(
        w.contains(FRIDAY + 7 * 24 * HOUR + 17 * HOUR),
        "the next Friday"
    );
    let morning = window(&[Weekday::Fri], "00:00", "09:30", None);
    assert!(
        morning.contains(FRIDAY),
        "midnight is in a window from 00:00"
    );
    assert!(morning.contains(FRIDAY + 9 * HOUR + 29 * MINUTE + 59));
    assert!(!morning.contains(FRIDAY + 9 * HOUR + 30 * MINUTE));
}

#[test]
fn a_window_on_several_days_holds_on_each_and_only_those() {
    let w = window(&[Weekday::Sat, Weekday::Sun], "00:00", "24:00", None);
    let day = 24 * HOUR;
    assert!(!w.contains(FRIDAY + 12 * HOUR));
    assert!(w.contains(FRIDAY + day + 12 * HOUR), "Saturday");
    assert!(w.contains(FRIDAY + 2 * day + 12 * HOUR), "Sunday");
    assert!(!w.contains(FRIDAY + 3 * day), "Monday 00:00");
}

#[test]
fn nothing_in_force_without_a_freeze_or_a_window() {
    assert_eq!(freeze_in_force(None, &[], FRIDAY), None);
    let w = window(&[Weekday::Fri], "16:00", "24:00", None);
    assert_eq!(freeze_in_force(None, &[w], FRIDAY + 12 * HOUR), None);
}

#[test]
fn the_first_window_in_force_is_named() {
    let early = window(&[Weekday::Fri], "12:00", "18:00", Some("lunch"));
    let late = window(&[Weekday::Fri], "16:00", "24:00", Some("weekend"));
    let both = [early.clone(), late.clone()];
    assert_eq!(
        freeze_in_force(None, &both, FRIDAY + 13 * HOUR),
        Some(FrozenBecause::Window(early.clone()))
    );
    assert_eq!(
        freeze_in_force(None, &both, FRIDAY + 17 * HOUR),
        Some(FrozenBecause::Window(early))
    );
    assert_eq!(
        freeze_in_force(None, &both, FRIDAY + 18 * HOUR),
        Some(FrozenBecause::Window(late))
    );
    assert_eq!(freeze_in_force(None, &both, FRIDAY + 11 * HOUR), None);
}

#[test]
fn a_manual_freeze_holds_at_any_time_and_wins_over_a_window() {
    let f = manual(FRIDAY + 9 * HOUR);
    let w = window(&[Weekday::Fri], "16:00", "24:00", Some("weekend"));
    for at in [
        FRIDAY + 10 * HOUR,
        FRIDAY + 17 * HOUR,
        FRIDAY + 3 * 24 * HOUR,
    ] {
        assert_eq!(
            freeze_in_force(Some(&f), std::slice::from_ref(&w), at),
            Some(FrozenBecause::Manual(f.clone()))
        );
    }
}

#[test]
fn why_it_is_frozen_reads_as_one_sentence() {
    let f = FrozenBecause::Manual(manual(FRIDAY + 9 * HOUR));
    insta::assert_snapshot!(f.render(), @"frozen by @alice since 2026-11-27 09:00 UTC: release in progress");
    let w = FrozenBecause::Window(window(&[Weekday::Fri], "16:00", "24:00", Some("weekend")));
    insta::assert_snapshot!(w.to_string(), @"inside the freeze window Fri 16:00–24:00 UTC (weekend)");
    let plain = window(&[Weekday::Sat, Weekday::Sun], "00:00", "06:30", None);
    insta::assert_snapshot!(plain.render(), @"Sat, Sun 00:00–06:30 UTC");
}

#[test]
fn freezing_records_the_freeze_and_its_audit_entry_together() {
    let d = on_freeze(&repo(), None, "release in progress", alice(), FRIDAY);
    assert_eq!(d.changes.len(), 2);
    assert_eq!(
        d.changes[0],
        Change::FreezeChanged {
            repo: repo(),
            freeze: Some(manual(FRIDAY)),
        }
    );
    let Change::Audited(entry) = &d.changes[1] else {
        panic!("an audit entry: {:?}", d.changes[1]);
    };
    assert_eq!(entry.action, AuditAction::Freeze);
    assert_eq!(entry.object, "repository");
    assert_eq!(entry.reason.as_deref(), Some("release in progress"));
    assert_eq!((entry.at_s, entry.actor_id), (FRIDAY, Some(UserId::new(7))));
    assert!(d.effects.is_empty());
    assert_eq!(d.outcome, "acme/strategies frozen: release in progress");
    assert_eq!(unfrozen(&d.changes).count(), 0);
}

#[test]
fn freezing_a_frozen_repository_updates_the_reason_and_keeps_when_it_began() {
    let before = manual(FRIDAY);
    let bob = AuditActor::user(UserId::new(8), "bob");
    let d = on_freeze(&repo(), Some(&before), "hotfix first", bob, FRIDAY + HOUR);
    let Change::FreezeChanged {
        freeze: Some(after),
        ..
    } = &d.changes[0]
    else {
        panic!("{:?}", d.changes);
    };
    assert_eq!(after.reason, "hotfix first");
    assert_eq!(after.by_login, "bob");
    assert_eq!(after.since_s, FRIDAY, "frozen since the first freeze");
    assert!(matches!(&d.changes[1], Change::Audited(e) if e.at_s == FRIDAY + HOUR));
    assert_eq!(
        d.outcome,
        "acme/strategies stays frozen, now because: hotfix first"
    );
}

#[test]
fn unfreezing_lifts_the_freeze_and_marks_the_repository_unfrozen() {
    let d = on_unfreeze(&repo(), Some(&manual(FRIDAY)), &[], alice(), FRIDAY + HOUR).unwrap();
    assert_eq!(
        d.changes[0],
        Change::FreezeChanged {
            repo: repo(),
            freeze: None
        }
    );
    assert!(
        matches!(&d.changes[1], Change::Audited(e) if e.action == AuditAction::Unfreeze && e.reason.is_none())
    );
    assert_eq!(unfrozen(&d.changes).collect::<Vec<_>>(), vec![&repo()]);
}

#[test]
fn unfreezing_a_repository_that_is_not_frozen_is_refused_and_changes_nothing() {
    let refused = on_unfreeze(&repo(), None, &[], alice(), FRIDAY).unwrap_err();
    assert_eq!(refused.refusal, Refusal::Freeze(FreezeRefusal::NotFrozen));
    assert!(refused.decision.changes.is_empty() && refused.decision.effects.is_empty());
    insta::assert_snapshot!(
        refused.refusal.render("unfreeze", &crate::commands::Syntax::default()),
        @"`/taskgate unfreeze` did nothing: the repository is not frozen."
    );
    // Inside a window: the reply says only the config lifts it.
    let w = window(&[Weekday::Fri], "00:00", "24:00", Some("release day"));
    let refused = on_unfreeze(&repo(), None, &[w], alice(), FRIDAY).unwrap_err();
    insta::assert_snapshot!(
        refused.refusal.render("unfreeze", &crate::commands::Syntax::default()),
        @"`/taskgate unfreeze` did nothing: the repository is not frozen by a command; it is inside the freeze window Fri 00:00–24:00 UTC (release day), which `freeze_windows` in .github/taskgate.yml sets."
    );
}

#[test]
fn times_are_hh_mm_up_to_24_00() {
    assert_eq!(parse_time("00:00"), Some(0));
    assert_eq!(parse_time("9:05"), Some(545));
    assert_eq!(parse_time("16:00"), Some(960));
    assert_eq!(parse_time("24:00"), Some(1440));
    for bad in [
        "24:01", "25:00", "12:60", "12", "12:5", "noon", "-1:00", "12:00:00", "",
    ] {
        assert_eq!(parse_time(bad), None, "{bad}");
    }
}

#[test]
fn freeze_windows_are_read_from_the_config() {
    let src = r#"
freeze_windows:
  - { days: [fri], from: "16:00", to: "24:00", reason: "weekend" }
  - { days: [Saturday, sun], from: "00:00", to: "24:00" }
"#;
    let c = load_config(Some(src)).unwrap();
    assert_eq!(
        c.freeze_windows,
        vec![
            window(&[Weekday::Fri], "16:00", "24:00", Some("weekend")),
            window(&[Weekday::Sat, Weekday::Sun], "00:00", "24:00", None),
        ]
    );
    assert!(load_config(None).unwrap().freeze_windows.is_empty());
}

#[test]
fn bad_freeze_windows_are_reported_with_their_place() {
    let src = r#"
freeze_windows:
  - { days: [fry], from: "16:00", to: "24:00" }
  - { days: [mon], from: "25:00", to: "7pm" }
  - { days: [tue], from: "18:00", to: "16:00" }
  - { days: [], from: "08:00", to: "09:00", when: always }
  - { from: "08:00" }
"#;
    insta::assert_snapshot!(problems(src), @r"
    .github/taskgate.yml:3:14: error: `freeze_windows[0].days: fry` is not valid; expected one of: mon, tue, wed, thu, fri, sat, sun (did you mean `fri`?)
    .github/taskgate.yml:4:26: error: `freeze_windows[1].from`: `25:00` is not a time of day; write HH:MM in UTC, from 00:00 to 24:00
    .github/taskgate.yml:4:39: error: `freeze_windows[1].to`: `7pm` is not a time of day; write HH:MM in UTC, from 00:00 to 24:00
    .github/taskgate.yml:5:5: error: `freeze_windows[2]`: `from` (18:00) must be before `to` (16:00); a window across midnight is written as two windows
    .github/taskgate.yml:6:13: error: `freeze_windows[3].days`: names no day
    .github/taskgate.yml:6:45: error: unknown key `when` in freeze_windows[3]
    .github/taskgate.yml:7:5: error: `days` is missing in freeze_windows[4]
    .github/taskgate.yml:7:5: error: `to` is missing in freeze_windows[4]
    ");
    assert!(load_config(Some(src)).is_err());
    insta::assert_snapshot!(problems("freeze_windows: fri\n"), @".github/taskgate.yml:1:17: error: `freeze_windows` should be a list of windows, found a string");
}
