use super::*;
use crate::config::RepoConfig;
use crate::plan::{parse_plan, validate_plan, NoFiles, ProblemKind};

fn repo(name: &str) -> RepoName {
    RepoName::parse(name).unwrap()
}

fn sha(c: char) -> CommitSha {
    CommitSha::parse(&c.to_string().repeat(40)).unwrap()
}

fn plan(src: &str) -> Plan {
    let (plan, problems) = parse_plan(src);
    plan.unwrap_or_else(|| panic!("{problems:?}"))
}

const THREE: &str = "story: Checkout v2
tasks:
  - { id: web, repo: acme/web, depends_on: [api, sdk], acceptance: { tests: [\"npm test\"] } }
  - { id: docs, acceptance: { tests: [\"make docs\"] } }
  - { id: sdk, repo: acme/sdk, depends_on: [api], acceptance: { tests: [\"make\"] } }
  - { id: api, repo: acme/payments-api, acceptance: { tests: [\"cargo test\"] } }
";

fn names(order: &[PartNode]) -> Vec<&str> {
    order.iter().map(|p| p.repo.as_str()).collect()
}

#[test]
fn parts_land_after_the_parts_they_depend_on_else_in_plan_order() {
    let order = part_order(&plan(THREE), &repo("acme/home")).unwrap();
    // The plan names web first, but web waits for api and sdk, and sdk
    // for api; the home (docs) depends on nothing and keeps its place.
    assert_eq!(
        names(&order),
        ["acme/home", "acme/payments-api", "acme/sdk", "acme/web"]
    );
    let web = &order[3];
    assert_eq!(
        web.after,
        [repo("acme/payments-api"), repo("acme/sdk")].into(),
        "web's part waits for both its providers' parts"
    );
    assert!(order[0].after.is_empty() && order[1].after.is_empty());
}

#[test]
fn a_plan_in_one_repository_is_one_part() {
    let p = plan("story: s\ntasks:\n  - { id: a, acceptance: { tests: [\"x\"] } }\n  - { id: b, depends_on: [a], acceptance: { tests: [\"y\"] } }\n");
    let order = part_order(&p, &repo("acme/home")).unwrap();
    assert_eq!(names(&order), ["acme/home"]);
    assert!(order[0].after.is_empty(), "a part never waits for itself");
}

#[test]
fn a_dependency_on_a_parent_makes_the_part_wait_for_its_leaves_repositories() {
    let p = plan("story: s\ntasks:\n  - id: lib\n    tasks:\n      - { id: core, repo: acme/core, acceptance: { tests: [\"x\"] } }\n  - { id: app, repo: acme/app, depends_on: [lib], acceptance: { tests: [\"y\"] } }\n");
    let order = part_order(&p, &repo("acme/home")).unwrap();
    assert_eq!(names(&order), ["acme/core", "acme/app"]);
}

#[test]
fn repositories_that_depend_on_each_other_through_different_tasks_have_no_order() {
    let p = plan("story: s\ntasks:\n  - { id: api-1, repo: acme/api, acceptance: { tests: [\"x\"] } }\n  - { id: web, repo: acme/web, depends_on: [api-1], acceptance: { tests: [\"y\"] } }\n  - { id: api-2, repo: acme/api, depends_on: [web], acceptance: { tests: [\"z\"] } }\n");
    let err = part_order(&p, &repo("acme/home")).unwrap_err();
    assert_eq!(err.repos, [repo("acme/api"), repo("acme/web")]);
    insta::assert_snapshot!(err.to_string(), @"the parts of acme/api, acme/web depend on each other in a cycle: no order lands each after what it depends on");
}

#[test]
fn a_task_cycle_across_repositories_is_refused_at_plan_validation() {
    let src = "story: s\ntasks:\n  - { id: api, repo: acme/api, depends_on: [web], acceptance: { tests: [\"x\"] } }\n  - { id: web, repo: acme/web, depends_on: [api], acceptance: { tests: [\"y\"] } }\n";
    let (plan, mut problems) = parse_plan(src);
    problems.extend(validate_plan(
        &plan.unwrap(),
        &RepoConfig::default(),
        &NoFiles,
    ));
    assert!(
        problems
            .iter()
            .any(|p| matches!(&p.kind, ProblemKind::DependencyCycle { .. })),
        "{problems:?}"
    );
}

/// api ← sdk ← web, story PRs #11, #12, #13.
fn three() -> PartsState {
    let order = vec![
        node("acme/api", &[]),
        node("acme/sdk", &["acme/api"]),
        node("acme/web", &["acme/api", "acme/sdk"]),
    ];
    PartsState::new(order, |r| {
        IssueNumber::new(match r.as_str() {
            "acme/api" => 11,
            "acme/sdk" => 12,
            _ => 13,
        })
    })
}

fn node(r: &str, after: &[&str]) -> PartNode {
    PartNode {
        repo: repo(r),
        after: after.iter().map(|a| repo(a)).collect(),
    }
}

fn open(_: &RepoName) -> PartGates {
    PartGates::default()
}

fn step(state: &PartsState, event: PartsEvent) -> (PartsState, Vec<PartsEffect>) {
    on_parts_event(state, &event, open)
}

fn passed(r: &str, c: char) -> PartsEvent {
    PartsEvent::ProofPassed {
        repo: repo(r),
        sha: sha(c),
    }
}

fn landed(r: &str, c: char) -> PartsEvent {
    PartsEvent::Landed {
        repo: repo(r),
        sha: sha(c),
    }
}

fn prove(r: &str) -> PartsEffect {
    PartsEffect::Prove { repo: repo(r) }
}

fn land(r: &str, c: char) -> PartsEffect {
    PartsEffect::Land {
        repo: repo(r),
        sha: sha(c),
    }
}

fn comment(effects: &[PartsEffect]) -> &str {
    match effects {
        [PartsEffect::Comment { body }] => body,
        other => panic!("one comment expected: {other:?}"),
    }
}

#[test]
fn each_part_is_proven_then_landed_before_the_next_is_proven() {
    let s = three();
    let (s, fx) = step(&s, PartsEvent::Ship);
    assert_eq!((s.phase, fx), (Phase::Shipping, vec![prove("acme/api")]));
    let (s, fx) = step(&s, passed("acme/api", 'a'));
    assert_eq!(fx, [land("acme/api", 'a')]);
    let (s, fx) = step(&s, landed("acme/api", 'a'));
    assert_eq!(fx, [prove("acme/sdk")]);
    let (s, fx) = step(&s, passed("acme/sdk", 'b'));
    assert_eq!(fx, [land("acme/sdk", 'b')]);
    let (s, fx) = step(&s, landed("acme/sdk", 'b'));
    assert_eq!(fx, [prove("acme/web")]);
    let (s, fx) = step(&s, passed("acme/web", 'c'));
    assert_eq!(fx, [land("acme/web", 'c')]);
    let (s, fx) = step(&s, landed("acme/web", 'c'));
    assert_eq!(s.phase, Phase::Landed);
    insta::assert_snapshot!(comment(&fx));
}

#[test]
fn answers_about_a_part_not_at_that_step_change_nothing() {
    let (s, _) = step(&three(), PartsEvent::Ship);
    for late in [
        passed("acme/sdk", 'b'),
        landed("acme/api", 'a'),
        PartsEvent::ProofFailed {
            repo: repo("acme/web"),
            why: "late".into(),
        },
        PartsEvent::LandRefused {
            repo: repo("acme/api"),
            why: "not landing".into(),
        },
        PartsEvent::GatesChanged {
            repo: repo("acme/api"),
        },
        passed("acme/other", 'f'),
        PartsEvent::Ship,
        PartsEvent::Rollback,
    ] {
        let (next, fx) = step(&s, late.clone());
        assert_eq!((&next, fx), (&s, vec![]), "{late:?}");
    }
    // Nothing is under way before a ship: a proof's answer is ignored.
    let (next, fx) = step(&three(), passed("acme/api", 'a'));
    assert_eq!((next, fx), (three(), vec![]));
}

fn shipped_to_web_proving() -> PartsState {
    let mut s = three();
    for e in [
        PartsEvent::Ship,
        passed("acme/api", 'a'),
        landed("acme/api", 'a'),
        passed("acme/sdk", 'b'),
        landed("acme/sdk", 'b'),
    ] {
        s = step(&s, e).0;
    }
    s
}

#[test]
fn a_part_failing_after_others_landed_stops_everything_and_offers_the_two_choices() {
    let s = shipped_to_web_proving();
    let (s, fx) = step(
        &s,
        PartsEvent::ProofFailed {
            repo: repo("acme/web"),
            why: "gate `unit` failed: checkout.test.ts expects `intent.id`".into(),
        },
    );
    assert_eq!(s.phase, Phase::Stopped);
    insta::assert_snapshot!(comment(&fx));
    // Nothing lands after it: a late proof answer is ignored.
    let (after, fx) = step(&s, passed("acme/web", 'c'));
    assert_eq!((after, fx), (s.clone(), vec![]));
    // Rollback: one revert per landed repository, newest first.
    let (rolled, fx) = step(&s, PartsEvent::Rollback);
    assert_eq!(rolled.phase, Phase::RollingBack);
    assert_eq!(
        fx,
        [
            PartsEffect::Revert {
                repo: repo("acme/sdk"),
                landed: sha('b')
            },
            PartsEffect::Revert {
                repo: repo("acme/api"),
                landed: sha('a')
            },
        ]
    );
    let (again, fx) = step(&rolled, PartsEvent::Rollback);
    assert_eq!((again, fx), (rolled, vec![]), "asked once");
}

#[test]
fn shipping_again_after_a_stop_ships_the_rest_from_the_failed_part() {
    let s = shipped_to_web_proving();
    let (s, _) = step(
        &s,
        PartsEvent::ProofFailed {
            repo: repo("acme/web"),
            why: "red".into(),
        },
    );
    let (s, fx) = step(&s, PartsEvent::Ship);
    assert_eq!((s.phase, fx), (Phase::Shipping, vec![prove("acme/web")]));
    let (s, fx) = step(&s, passed("acme/web", 'c'));
    assert_eq!(fx, [land("acme/web", 'c')]);
    let (s, _) = step(&s, landed("acme/web", 'c'));
    assert_eq!(s.phase, Phase::Landed);
}

#[test]
fn a_landing_refused_stops_everything_like_a_failed_proof() {
    let (s, _) = step(&three(), PartsEvent::Ship);
    let (s, _) = step(&s, passed("acme/api", 'a'));
    let (s, fx) = step(
        &s,
        PartsEvent::LandRefused {
            repo: repo("acme/api"),
            why: "the App is no longer installed on acme/api".into(),
        },
    );
    assert_eq!(s.phase, Phase::Stopped);
    insta::assert_snapshot!(comment(&fx));
    let (s2, fx) = step(&s, PartsEvent::Rollback);
    assert_eq!(s2.phase, Phase::Stopped, "nothing landed, nothing reverted");
    assert_eq!(
        comment(&fx),
        "Nothing of this story landed: there is nothing to roll back.\n"
    );
}

#[test]
fn a_frozen_repository_holds_its_part_proven_and_nothing_after_it() {
    let frozen = |r: &RepoName| PartGates {
        frozen: (r.as_str() == "acme/sdk")
            .then(|| "frozen by @alice since 2026-11-27 09:00 UTC: release".into()),
        approvals_missing: Vec::new(),
    };
    let mut s = three();
    for e in [
        PartsEvent::Ship,
        passed("acme/api", 'a'),
        landed("acme/api", 'a'),
    ] {
        s = on_parts_event(&s, &e, frozen).0;
    }
    let (s, fx) = on_parts_event(&s, &passed("acme/sdk", 'b'), frozen);
    insta::assert_snapshot!(comment(&fx));
    assert!(matches!(s.parts[1].state, PartState::Held { .. }));
    let changed = PartsEvent::GatesChanged {
        repo: repo("acme/sdk"),
    };
    let (same, fx) = on_parts_event(&s, &changed, frozen);
    assert_eq!(
        (same, fx),
        (s.clone(), vec![]),
        "the same hold is said once"
    );
    let (s, fx) = on_parts_event(&s, &changed, open);
    assert_eq!(fx, [land("acme/sdk", 'b')], "lands once the freeze ends");
    assert_eq!(s.parts[1].state, PartState::Landing { sha: sha('b') });
}

#[test]
fn missing_approvals_hold_a_part_until_given() {
    let missing = |r: &RepoName| PartGates {
        frozen: None,
        approvals_missing: if r.as_str() == "acme/api" {
            vec!["1 approval from a code owner of `src/` (@acme/payments)".into()]
        } else {
            Vec::new()
        },
    };
    let (s, _) = on_parts_event(&three(), &PartsEvent::Ship, missing);
    let (s, fx) = on_parts_event(&s, &passed("acme/api", 'a'), missing);
    insta::assert_snapshot!(comment(&fx));
    let changed = PartsEvent::GatesChanged {
        repo: repo("acme/api"),
    };
    let (_, fx) = on_parts_event(&s, &changed, open);
    assert_eq!(fx, [land("acme/api", 'a')]);
}

#[test]
fn a_ship_while_under_way_or_landed_does_nothing() {
    let (s, _) = step(&three(), PartsEvent::Ship);
    assert_eq!(step(&s, PartsEvent::Ship), (s.clone(), vec![]));
    let mut done = three();
    for e in [
        PartsEvent::Ship,
        passed("acme/api", 'a'),
        landed("acme/api", 'a'),
        passed("acme/sdk", 'b'),
        landed("acme/sdk", 'b'),
        passed("acme/web", 'c'),
        landed("acme/web", 'c'),
    ] {
        done = step(&done, e).0;
    }
    assert_eq!(step(&done, PartsEvent::Ship), (done.clone(), vec![]));
    // After every part landed, a rollback reverts all three, newest first.
    let (_, fx) = step(&done, PartsEvent::Rollback);
    let reverted: Vec<&str> = fx
        .iter()
        .map(|e| match e {
            PartsEffect::Revert { repo, .. } => repo.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(reverted, ["acme/web", "acme/sdk", "acme/api"]);
}

#[test]
fn the_state_round_trips_through_json() {
    let s = shipped_to_web_proving();
    let text = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<PartsState>(&text).unwrap(), s);
}
