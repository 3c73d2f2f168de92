use super::*;
use crate::plan::parse_plan;
use crate::task::GateVerdict;

const PLAN: &str = "story: Checkout v2
tasks:
  - { id: api, repo: acme/payments-api, acceptance: { tests: [\"cargo test\"] } }
  - { id: schema, acceptance: { tests: [\"make schema\"] } }
  - id: client
    tasks:
      - { id: client-core, acceptance: { tests: [\"make core\"] } }
      - { id: client_ui, acceptance: { tests: [\"make ui\"] } }
  - id: web
    repo: acme/web
    depends_on: [api, schema, client, local]
    acceptance: { tests: [\"npm test\"] }
  - { id: local, repo: acme/web, acceptance: { tests: [\"npm run lint\"] } }
  - { id: home-task, depends_on: [api, schema], acceptance: { tests: [\"make\"] } }
";

fn plan() -> Plan {
    let (plan, problems) = parse_plan(PLAN);
    plan.unwrap_or_else(|| panic!("{problems:?}"))
}

fn home() -> RepoName {
    RepoName::parse("acme/home").unwrap()
}

fn sha(c: char) -> CommitSha {
    CommitSha::parse(&c.to_string().repeat(40)).unwrap()
}

fn deps_of(id: &str, proven: &[(&str, char)]) -> Vec<(String, String, String)> {
    let plan = plan();
    let task = plan.task(&TaskId::new(id)).unwrap();
    run_deps(&plan, task, &home(), |t| {
        proven
            .iter()
            .find(|(p, _)| t.as_str() == *p)
            .map(|(_, c)| sha(*c))
    })
    .into_iter()
    .map(|d| {
        (
            d.task.as_str().to_owned(),
            d.repo.as_str().to_owned(),
            d.sha.as_str()[..1].to_owned(),
        )
    })
    .collect()
}

#[test]
fn a_run_carries_each_proven_dependency_of_another_repository_with_its_head() {
    let all = [
        ("api", 'a'),
        ("schema", 'b'),
        ("client-core", 'c'),
        ("client_ui", 'd'),
        ("local", 'e'),
    ];
    let got = deps_of("web", &all);
    let want = [
        ("api", "acme/payments-api", "a"),
        // Without `repo:`, a task lives in the plan's repository.
        ("schema", "acme/home", "b"),
        // A parent stands for its leaves, which inherit nothing: each
        // names its own repository (here the home's).
        ("client-core", "acme/home", "c"),
        ("client_ui", "acme/home", "d"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want, "`local` is in web's own repository: not carried");
}

#[test]
fn a_dependency_not_proven_or_in_the_same_repository_is_not_carried() {
    assert_eq!(
        deps_of("web", &[("schema", 'b')]),
        [("schema".into(), "acme/home".into(), "b".into())]
    );
    assert_eq!(deps_of("web", &[]), []);
    // home-task lives in the home: `schema` is on its story branch.
    assert_eq!(
        deps_of("home-task", &[("api", 'a'), ("schema", 'b')]),
        [("api".into(), "acme/payments-api".into(), "a".into())]
    );
    assert_eq!(deps_of("api", &[("schema", 'b')]), [], "no depends_on");
}

#[test]
fn the_variable_upper_cases_the_id_and_writes_every_other_character_as_underscore() {
    let dep = |id: &str| RunDep {
        task: TaskId::new(id),
        repo: home(),
        sha: sha('a'),
    };
    assert_eq!(dep("api").env_name(), "TASKGATE_DEP_API_SHA");
    assert_eq!(dep("api-v2").env_name(), "TASKGATE_DEP_API_V2_SHA");
    assert_eq!(dep("Client_ui9").env_name(), "TASKGATE_DEP_CLIENT_UI9_SHA");
    assert_eq!(dep("api-v2").dir(), "deps/api-v2");
}

fn verdict(c: char, passed: bool) -> GateVerdict {
    GateVerdict {
        sha: sha(c),
        attempt: 1,
        passed,
        kind: None,
        summary: None,
    }
}

#[test]
fn proven_means_completed_with_every_gate_passed_at_the_head() {
    let mut r = TaskRecord {
        state: Some(TaskState::Completed),
        head: Some(sha('a')),
        ..TaskRecord::default()
    };
    assert_eq!(
        proven_head(&r),
        None,
        "no verdict: accepted by a person only"
    );
    r.verdicts.insert("test".into(), verdict('a', true));
    r.verdicts.insert("lint".into(), verdict('a', true));
    assert_eq!(proven_head(&r), Some(sha('a')));
    r.verdicts.insert("lint".into(), verdict('b', true));
    assert_eq!(proven_head(&r), None, "a gate passed at another commit");
    r.verdicts.insert("lint".into(), verdict('a', false));
    assert_eq!(proven_head(&r), None, "a gate failed");
    r.verdicts.insert("lint".into(), verdict('a', true));
    r.state = Some(TaskState::Review);
    assert_eq!(proven_head(&r), None, "not completed");
}

#[test]
fn the_actions_runner_says_it_does_not_carry_dependencies_yet() {
    assert_eq!(render_actions_unsupported(&[]), None);
    let deps = [RunDep {
        task: TaskId::new("api"),
        repo: RepoName::parse("acme/payments-api").unwrap(),
        sha: sha('a'),
    }];
    insta::assert_snapshot!(render_actions_unsupported(&deps).unwrap());
}
