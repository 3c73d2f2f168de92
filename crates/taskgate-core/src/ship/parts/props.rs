//! Properties of the parts' state machine over any sequence of events,
//! answers late, repeated or about the wrong part included: a part never
//! lands before a part it depends on, nothing lands between a failure and
//! the next ship, and nothing lands where a freeze or missing approvals
//! hold it.

use proptest::prelude::*;

use super::*;

const REPOS: [&str; 4] = ["acme/a", "acme/b", "acme/c", "acme/d"];

fn repo(i: usize) -> RepoName {
    RepoName::parse(REPOS[i]).unwrap()
}

fn sha(n: u8) -> CommitSha {
    CommitSha::parse(&format!("{n:02x}").repeat(20)).unwrap()
}

/// Parts in a valid order: each may depend on any part before it.
fn parts() -> impl Strategy<Value = PartsState> {
    (1usize..=4)
        .prop_flat_map(|n| (Just(n), proptest::collection::vec(any::<u8>(), n)))
        .prop_map(|(n, masks)| {
            let order = (0..n)
                .map(|i| PartNode {
                    repo: repo(i),
                    after: (0..i)
                        .filter(|j| masks[i] & (1 << j) != 0)
                        .map(repo)
                        .collect(),
                })
                .collect();
            PartsState::new(order, |r| {
                IssueNumber::new(10 + REPOS.iter().position(|x| *x == r.as_str()).unwrap() as u64)
            })
        })
}

#[derive(Debug, Clone)]
enum Ev {
    Ship,
    Passed(usize, u8),
    Failed(usize),
    Landed(usize, u8),
    Refused(usize),
    Gates(usize),
    Rollback,
    /// The answer the current part waits for (its proof passed, its
    /// landing done), so that sequences reach the later parts.
    Right(u8),
}

fn events() -> impl Strategy<Value = Vec<(Ev, u8)>> {
    let ev = prop_oneof![
        Just(Ev::Ship),
        (0usize..4, any::<u8>()).prop_map(|(r, s)| Ev::Passed(r, s)),
        (0usize..4).prop_map(Ev::Failed),
        (0usize..4, any::<u8>()).prop_map(|(r, s)| Ev::Landed(r, s)),
        (0usize..4).prop_map(Ev::Refused),
        (0usize..4).prop_map(Ev::Gates),
        Just(Ev::Rollback),
        any::<u8>().prop_map(Ev::Right),
        any::<u8>().prop_map(Ev::Right),
        any::<u8>().prop_map(Ev::Right),
    ];
    // With each event, which repositories are frozen or lack approvals now.
    proptest::collection::vec((ev, any::<u8>()), 0..60)
}

fn gates(holds: u8) -> impl Fn(&RepoName) -> PartGates {
    move |r: &RepoName| {
        let i = REPOS.iter().position(|x| *x == r.as_str()).unwrap();
        PartGates {
            frozen: (holds & (1 << i) != 0).then(|| "frozen".into()),
            approvals_missing: if holds & (1 << (i + 4)) != 0 {
                vec!["1 approval".into()]
            } else {
                Vec::new()
            },
        }
    }
}

fn event(ev: &Ev, state: &PartsState) -> PartsEvent {
    match ev {
        Ev::Right(s) => match current_part(state) {
            Some(Part {
                repo,
                state: PartState::Landing { sha },
                ..
            }) => PartsEvent::Landed {
                repo: repo.clone(),
                sha: sha.clone(),
            },
            Some(Part {
                repo,
                state: PartState::Held { .. },
                ..
            }) => PartsEvent::GatesChanged { repo: repo.clone() },
            Some(part) => PartsEvent::ProofPassed {
                repo: part.repo.clone(),
                sha: sha(*s),
            },
            None => PartsEvent::Ship,
        },
        Ev::Ship => PartsEvent::Ship,
        Ev::Passed(r, s) => PartsEvent::ProofPassed {
            repo: repo(*r),
            sha: sha(*s),
        },
        Ev::Failed(r) => PartsEvent::ProofFailed {
            repo: repo(*r),
            why: "red".into(),
        },
        Ev::Landed(r, s) => PartsEvent::Landed {
            repo: repo(*r),
            sha: sha(*s),
        },
        Ev::Refused(r) => PartsEvent::LandRefused {
            repo: repo(*r),
            why: "refused".into(),
        },
        Ev::Gates(r) => PartsEvent::GatesChanged { repo: repo(*r) },
        Ev::Rollback => PartsEvent::Rollback,
    }
}

proptest! {
    #[test]
    fn parts_land_in_order_and_nothing_lands_after_a_failure(
        start in parts(),
        evs in events(),
    ) {
        let mut state = start;
        // Landings asked for (a `Land` effect), and whether a failure
        // stopped the ship since the last `Ship`.
        let mut asked: Vec<RepoName> = Vec::new();
        let mut stopped = false;
        for (ev, holds) in &evs {
            let e = event(ev, &state);
            let gates = gates(*holds);
            let (next, effects) = on_parts_event(&state, &e, &gates);
            for fx in &effects {
                if let PartsEffect::Land { repo, .. } = fx {
                    prop_assert!(!stopped, "{repo} lands after a failure");
                    let part = next.parts.iter().find(|p| p.repo == *repo).unwrap();
                    for dep in &part.after {
                        let landed = next.parts.iter().any(|p| {
                            p.repo == *dep && matches!(p.state, PartState::Landed { .. })
                        });
                        prop_assert!(landed, "{repo} lands before {dep}");
                    }
                    prop_assert_eq!(gates(repo).hold(), None, "{} lands while held", repo);
                    let before = state.parts.iter().find(|p| p.repo == *repo).unwrap();
                    let again = matches!(before.state, PartState::Landed { .. });
                    prop_assert!(!again, "{} lands again", repo);
                    asked.push(repo.clone());
                }
            }
            // At most one part is under way at a time.
            let under_way = next
                .parts
                .iter()
                .filter(|p| {
                    matches!(
                        p.state,
                        PartState::Proving | PartState::Held { .. } | PartState::Landing { .. }
                    )
                })
                .count();
            prop_assert!(under_way <= 1, "{} parts under way", under_way);
            // Judged by the events taken, not by the phase the machine
            // says: a failure taken stops landings until a ship is taken.
            let taken = next != state;
            match e {
                PartsEvent::ProofFailed { .. } | PartsEvent::LandRefused { .. } if taken => {
                    stopped = true;
                }
                PartsEvent::Ship if taken => stopped = false,
                _ => {}
            }
            // A part is landed only if it was asked to land.
            for p in &next.parts {
                if matches!(p.state, PartState::Landed { .. }) {
                    prop_assert!(asked.contains(&p.repo));
                }
            }
            state = next;
        }
    }
}
