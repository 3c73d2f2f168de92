use super::*;
use crate::plan::render_problems;

fn problems(src: &str) -> String {
    render_problems(CONFIG_PATH, &parse_config(src).1)
}

#[test]
fn a_missing_file_means_the_defaults() {
    let c = load_config(None).unwrap();
    assert_eq!(c, RepoConfig::default());
    assert_eq!(c.runner, RunnerKind::Local);
    assert_eq!(
        (
            c.limits.max_debug_attempts,
            c.limits.max_branch_depth,
            c.limits.max_concurrent_branches
        ),
        (3, 2, 5)
    );
    assert_eq!(c.role_for("test_failure"), "coder");
    assert_eq!(c.role_for("spec_mismatch"), "architect");
    assert_eq!(c.role_for("flaky_test"), "tester");
    assert_eq!(c.role_for("unknown"), "debugger");
    assert_eq!(c.required_permission("retry"), Permission::Write);
    assert_eq!(c.required_permission("ship"), Permission::Maintain);
    assert_eq!(c.required_permission("override"), Permission::Maintain);
    assert_eq!(c.required_permission("help"), Permission::Read);
    assert_eq!(
        (c.commands.prefix.as_str(), c.commands.short_form),
        ("/taskgate", true)
    );
    assert_eq!(load_config(Some("")).unwrap(), RepoConfig::default());
}

#[test]
fn a_full_config_is_read() {
    let src = r#"
runner: actions
roles:
  coder: { assignees: [alice], labels: [agent:coder], agent_workflow: coder-agent.yml }
  qa: { assignees: [bob] }
routing: { flaky_test: qa }
limits: { max_debug_attempts: 5, max_concurrent_runs: 8 }
review: human
auto_fix: false
merge_method: rebase
ship_label: release
deploy_workflow: deploy.yml
validation_workflow: smoke.yml
commands: { prefix: /tg, short_form: false, permissions: { ship: admin, retry: triage } }
"#;
    let c = load_config(Some(src)).unwrap();
    assert_eq!(c.runner, RunnerKind::Actions);
    assert!(!c.runner_network, "no network unless asked");
    let c = load_config(Some("runner_network: true\n")).unwrap();
    assert!(c.runner_network);
    let c = load_config(Some(src)).unwrap();
    assert_eq!(c.roles["coder"].agent_workflow(), Some("coder-agent.yml"));
    assert!(c.roles.contains_key("debugger"), "default roles stay");
    assert_eq!(c.role_for("flaky_test"), "qa");
    assert_eq!(
        c.role_for("timeout"),
        "tester",
        "other routes keep their default"
    );
    assert_eq!(
        (
            c.limits.max_debug_attempts,
            c.limits.max_concurrent_runs,
            c.limits.max_branch_depth
        ),
        (5, 8, 2)
    );
    assert_eq!(
        (c.review, c.auto_fix, c.merge_method),
        (ReviewMode::Human, false, MergeMethod::Rebase)
    );
    assert_eq!(c.ship_label, "release");
    assert_eq!(c.deploy_workflow.as_deref(), Some("deploy.yml"));
    assert_eq!(c.validation_workflow.as_deref(), Some("smoke.yml"));
    assert_eq!(
        (c.commands.prefix.as_str(), c.commands.short_form),
        ("/tg", false)
    );
    assert_eq!(c.required_permission("ship"), Permission::Admin);
    assert_eq!(c.required_permission("retry"), Permission::Triage);
}

#[test]
fn story_settings_override_limits() {
    let c = RepoConfig::default();
    let s = Settings {
        max_debug_attempts: Some(1),
        max_depth: Some(4),
        ..Settings::default()
    };
    let l = c.effective_limits(&s);
    assert_eq!(
        (l.max_debug_attempts, l.max_plan_depth, l.max_branch_depth),
        (1, 4, 2)
    );
}

#[test]
fn every_config_problem_is_reported_with_its_place() {
    let src = "runer: actions\nrouting:\n  test_failure: codr\n  timout: tester\nlimits: { max_debug_attempts: 0, max_branchdepth: 2 }\nreview: manual\ncommands:\n  permissions: { shipp: admin, retry: owner }\n";
    insta::assert_snapshot!(problems(src), @r"
    .github/taskgate.yml:1:1: error: unknown key `runer` in the config (did you mean `runner`?)
    .github/taskgate.yml:3:17: error: `routing.test_failure` names unknown role `codr` (did you mean `coder`?); known roles: architect, coder, debugger, tester
    .github/taskgate.yml:4:3: error: unknown failure kind `timout` (did you mean `timeout`?)
    .github/taskgate.yml:5:31: error: `max_debug_attempts` is 0, outside the allowed range 1..=10
    .github/taskgate.yml:5:34: error: unknown key `max_branchdepth` in limits (did you mean `max_branch_depth`?)
    .github/taskgate.yml:6:9: error: `review: manual` is not valid; expected one of: auto, human
    .github/taskgate.yml:8:18: error: unknown command `shipp` (did you mean `ship`?)
    .github/taskgate.yml:8:39: error: `permissions.retry: owner` is not valid; expected one of: read, triage, write, maintain, admin
    ");
    assert!(load_config(Some(src)).is_err());
}

#[test]
fn the_ship_train_is_on_unless_turned_off() {
    assert!(RepoConfig::default().ship_train);
    assert!(!load_config(Some("ship_train: false\n")).unwrap().ship_train);
}

#[test]
fn syntax_errors_in_config() {
    insta::assert_snapshot!(problems("runner: [local\n"), @r"
    .github/taskgate.yml:2:1: error: YAML syntax error: while parsing a flow sequence, expected ',' or ']'
    ");
}

#[test]
fn flaky_quarantine_keys_are_read_and_checked() {
    let c = load_config(Some("flaky: { quarantine_after: 5, quarantine_days: 7 }\n")).unwrap();
    assert_eq!(
        c.flaky,
        FlakyConfig {
            quarantine_after: 5,
            quarantine_days: 7,
            ..FlakyConfig::default()
        }
    );
    let globs = RepoConfig::default().flaky.unrelated_globs();
    assert!(globs.is_match("README.md") && globs.is_match("docs/guide/x.txt"));
    assert!(!globs.is_match("src/app.py") && !globs.is_match("tests/test_x.py"));
    let own = load_config(Some("flaky: { unrelated_paths: ['notes/**'] }\n")).unwrap();
    assert_eq!(
        own.flaky.unrelated_paths,
        ["notes/**"],
        "the list replaces the default"
    );
    insta::assert_snapshot!(problems("flaky: { unrelated_paths: ['a/[b'] }\n"), @r"
        .github/taskgate.yml:1:28: error: `flaky.unrelated_paths: a/[b` cannot be used: unclosed character class; missing ']'
    ");
    assert_eq!(RepoConfig::default().flaky.quarantine_after, 3);
    assert_eq!(RepoConfig::default().flaky.quarantine_days, 14);
    let src = "flaky: { quarantine_after: 0, quarantine_dayz: 7 }\n";
    insta::assert_snapshot!(problems(src), @r"
        .github/taskgate.yml:1:28: error: `quarantine_after` is 0, outside the allowed range 1..=100
        .github/taskgate.yml:1:31: error: unknown key `quarantine_dayz` in flaky (did you mean `quarantine_days`?)
    ");
    assert!(load_config(Some(src)).is_err());
}

#[test]
fn a_roles_agent_is_read_in_each_of_its_forms() {
    let src = r#"
roles:
  coder: { agent: copilot }
  tester: { agent: { mention: "@claude" } }
  debugger: { agent: { label: fix-me } }
  architect: { agent: { workflow: agent.yml } }
  old: { agent_workflow: coder-agent.yaml }
  human: { assignees: [alice] }
"#;
    let c = load_config(Some(src)).unwrap();
    let agent = |role: &str| c.roles[role].agent.clone();
    assert_eq!(agent("coder"), Some(AgentRoute::Copilot));
    assert_eq!(agent("tester"), Some(AgentRoute::Mention("@claude".into())));
    assert_eq!(agent("debugger"), Some(AgentRoute::Label("fix-me".into())));
    assert_eq!(
        agent("architect"),
        Some(AgentRoute::Workflow("agent.yml".into()))
    );
    assert_eq!(
        agent("old"),
        Some(AgentRoute::Workflow("coder-agent.yaml".into())),
        "`agent_workflow` is the older spelling of `agent: {{ workflow }}`"
    );
    assert_eq!(agent("human"), None);
    assert_eq!(c.roles["architect"].agent_workflow(), Some("agent.yml"));
    assert_eq!(c.roles["coder"].agent_workflow(), None);
}

#[test]
fn a_bad_agent_is_refused_at_its_place() {
    let src = r#"roles:
  a: { agent: robot }
  b: { agent: { mention: claude } }
  c: { agent: { mention: "@my bot" } }
  d: { agent: { label: "" } }
  e: { agent: { workflow: .github/workflows/agent.yml } }
  f: { agent: { workflow: agent } }
  g: { agent: { mention: "@claude", label: fix-me } }
  h: { agent: {} }
  i: { agent: { mentoin: "@claude" } }
  j: { agent: [copilot] }
  k: { agent: copilot, agent_workflow: agent.yml }
  l: { agent_workflow: agent.sh }
"#;
    insta::assert_snapshot!(problems(src), @r#"
    .github/taskgate.yml:2:15: error: `roles.a.agent`: `robot` is not a way to reach an agent; write `copilot`, `{ mention: "@handle" }`, `{ label: <label> }` or `{ workflow: <file>.yml }`
    .github/taskgate.yml:3:26: error: `roles.b.agent.mention`: `claude` is not a mention: write the handle with its `@`, as in `@claude`
    .github/taskgate.yml:4:26: error: `roles.c.agent.mention`: `@my bot` is not a mention: a GitHub handle has no spaces
    .github/taskgate.yml:5:24: error: `roles.d.agent.label`: the label is empty: name the label the agent watches, e.g. `fix-me`
    .github/taskgate.yml:6:27: error: `roles.e.agent.workflow`: `.github/workflows/agent.yml` is not a workflow file name: write the name of a file in `.github/workflows/` ending in `.yml` or `.yaml`, e.g. `agent.yml`
    .github/taskgate.yml:7:27: error: `roles.f.agent.workflow`: `agent` is not a workflow file name: write the name of a file in `.github/workflows/` ending in `.yml` or `.yaml`, e.g. `agent.yml`
    .github/taskgate.yml:8:15: error: `roles.g.agent`: it names two agents, `mention` and `label`; a role's todos reach one agent: keep one
    .github/taskgate.yml:9:15: error: `roles.h.agent`: no agent is named; write `copilot`, `{ mention: "@handle" }`, `{ label: <label> }` or `{ workflow: <file>.yml }`
    .github/taskgate.yml:10:17: error: unknown key `mentoin` in role `i`'s agent (did you mean `mention`?)
    .github/taskgate.yml:11:15: error: `roles.j.agent` should be `copilot` or a mapping, found a list
    .github/taskgate.yml:12:15: error: `roles.k.agent`: `agent_workflow` and `agent` both name the agent; `agent_workflow: <file>` is the older spelling of `agent: { workflow: <file> }`: keep one
    .github/taskgate.yml:13:24: error: `roles.l.agent_workflow`: `agent.sh` is not a workflow file name: write the name of a file in `.github/workflows/` ending in `.yml` or `.yaml`, e.g. `agent.yml`
    "#);
    assert!(load_config(Some(src)).is_err());
}

#[test]
fn a_roles_agent_may_keep_the_draft_for_a_person() {
    let src = r#"roles:
  coder: { agent: { mention: "@claude", ready: never } }
  tester: { agent: { label: fix-me, ready: auto } }
  debugger: { agent: { workflow: agent.yml } }
  architect: { agent: copilot }
"#;
    let c = load_config(Some(src)).unwrap();
    let ready = |role: &str| c.roles[role].ready;
    assert_eq!(ready("coder"), AgentReady::Never);
    assert_eq!(
        c.roles["coder"].agent,
        Some(AgentRoute::Mention("@claude".into()))
    );
    assert_eq!(ready("tester"), AgentReady::Auto);
    assert_eq!(ready("debugger"), AgentReady::Auto, "auto unless said");
    assert_eq!(ready("architect"), AgentReady::Auto);
    let bad = "roles:\n  a: { agent: { label: fix-me, ready: nevr } }\n  b: { agent: { ready: never } }\n";
    insta::assert_snapshot!(problems(bad), @r#"
    .github/taskgate.yml:2:39: error: `roles.a.agent.ready: nevr` is not valid; expected one of: auto, never (did you mean `never`?)
    .github/taskgate.yml:3:15: error: `roles.b.agent`: no agent is named; write `copilot`, `{ mention: "@handle" }`, `{ label: <label> }` or `{ workflow: <file>.yml }`
    "#);
    assert!(load_config(Some(bad)).is_err());
}

#[test]
fn a_refused_agent_changes_nothing_else() {
    let src = "roles:\n  coder: { assignees: [alice], agent: robot }\nreview: human\n";
    let (c, problems) = parse_config(src);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(c.roles["coder"].assignees, ["alice"]);
    assert_eq!(c.roles["coder"].agent, None);
    assert_eq!(c.review, ReviewMode::Human);
}

#[test]
fn the_ship_trains_batch_and_parallel_are_read_and_checked() {
    let defaults = RepoConfig::default().train_settings();
    assert_eq!((defaults.batch_max, defaults.parallel), (4, 2));
    assert_eq!(
        defaults.batch_wait_ms,
        i64::from(DEFAULT_SHIP_BATCH_WAIT_S) * 1_000
    );
    let c = load_config(Some("ship_batch_max: 1\nship_parallel: 3\n")).unwrap();
    assert_eq!((c.ship_batch_max, c.ship_parallel), (1, 3));
    let src = "ship_batch_max: 0\nship_parallel: 101\n";
    insta::assert_snapshot!(problems(src), @r"
        .github/taskgate.yml:1:17: error: `ship_batch_max` is 0, outside the allowed range 1..=100
        .github/taskgate.yml:2:16: error: `ship_parallel` is 101, outside the allowed range 1..=100
    ");
    assert!(load_config(Some(src)).is_err());
}

#[test]
fn the_ship_trains_batching_wait_is_read_in_seconds_and_checked() {
    let c = load_config(Some("ship_batch_wait: 0\n")).unwrap();
    assert_eq!(c.train_settings().batch_wait_ms, 0);
    let c = load_config(Some("ship_batch_wait: 45\n")).unwrap();
    assert_eq!(c.train_settings().batch_wait_ms, 45_000);
    let src = "ship_batch_wait: 7200\n";
    insta::assert_snapshot!(problems(src), @".github/taskgate.yml:1:18: error: `ship_batch_wait` is 7200, outside the allowed range 0..=3600");
    assert!(load_config(Some(src)).is_err());
}

#[test]
fn the_ship_trains_split_is_by_attribution_unless_halves_are_asked_for() {
    assert!(RepoConfig::default().train_settings().attribution);
    let c = load_config(Some("ship_bisect: halves\n")).unwrap();
    assert!(!c.train_settings().attribution);
    let c = load_config(Some("ship_bisect: attribution\n")).unwrap();
    assert!(c.train_settings().attribution);
    let src = "ship_bisect: thirds\n";
    insta::assert_snapshot!(problems(src), @".github/taskgate.yml:1:14: error: `ship_bisect: thirds` is not valid; expected one of: attribution, halves");
    assert!(load_config(Some(src)).is_err());
}

/// A plan whose story carries `settings` and whose one task carries
/// `task` (YAML mapping entries, or nothing).
fn plan_with(settings: &str, task: &str) -> crate::plan::Plan {
    let task = if task.is_empty() {
        String::new()
    } else {
        format!(", {task}")
    };
    let src = format!(
        "story: Settings\nsettings: {{ {settings} }}\ntasks:\n  - {{ id: t, title: T, acceptance: {{ tests: [{{ cmd: 'true' }}] }}{task} }}\n"
    );
    let (plan, problems) = crate::plan::parse_plan(&src);
    assert!(problems.is_empty(), "{problems:?}");
    plan.expect("a plan")
}

/// The review mode of the plan's one task under the repository's `config`.
fn review_of(config: &str, plan: &crate::plan::Plan) -> ReviewMode {
    let c = load_config(Some(config)).expect("config");
    c.effective_review(&plan.settings, plan.tasks[0].review)
}

#[test]
fn review_is_the_tasks_then_the_storys_then_the_repositorys() {
    let story_human = plan_with("review: human", "");
    assert_eq!(review_of("review: auto\n", &story_human), ReviewMode::Human);
    let task_auto = plan_with("review: human", "review: auto");
    assert_eq!(review_of("review: human\n", &task_auto), ReviewMode::Auto);
    let none = plan_with("auto_fix: true", "");
    assert_eq!(review_of("review: human\n", &none), ReviewMode::Human);
    assert_eq!(review_of("runner: local\n", &none), ReviewMode::Auto);
}

#[test]
fn auto_fix_is_the_storys_then_the_repositorys() {
    let c = load_config(Some("auto_fix: true\n")).unwrap();
    assert!(!c.effective_auto_fix(&plan_with("auto_fix: false", "").settings));
    assert!(c.effective_auto_fix(&plan_with("review: auto", "").settings));
    let manual = load_config(Some("auto_fix: false\n")).unwrap();
    assert!(manual.effective_auto_fix(&plan_with("auto_fix: true", "").settings));
}

#[test]
fn max_debug_attempts_is_the_tasks_max_retries_then_the_storys_then_the_repositorys() {
    let c = load_config(Some("limits: { max_debug_attempts: 5 }\n")).unwrap();
    let attempts = |plan: &crate::plan::Plan| {
        crate::failure::max_attempts(&plan.tasks[0], &c.effective_limits(&plan.settings))
    };
    assert_eq!(
        attempts(&plan_with("max_debug_attempts: 2", "max_retries: 1")),
        1
    );
    assert_eq!(attempts(&plan_with("max_debug_attempts: 2", "")), 2);
    assert_eq!(attempts(&plan_with("review: auto", "")), 5);
}

#[test]
fn the_branch_limits_and_plan_depth_are_the_storys_then_the_repositorys() {
    let c = load_config(Some(
        "limits: { max_branch_depth: 3, branch_timeout_seconds: 600, max_concurrent_branches: 4, max_plan_depth: 2 }\n",
    ))
    .unwrap();
    let story = plan_with(
        "max_branch_depth: 1, branch_timeout_seconds: 60, max_concurrent_branches: 1, max_depth: 3",
        "",
    );
    let l = c.effective_limits(&story.settings);
    assert_eq!(
        (
            l.max_branch_depth,
            l.branch_timeout_seconds,
            l.max_concurrent_branches,
            l.max_plan_depth
        ),
        (1, 60, 1, 3)
    );
    let l = c.effective_limits(&plan_with("review: auto", "").settings);
    assert_eq!(
        (
            l.max_branch_depth,
            l.branch_timeout_seconds,
            l.max_concurrent_branches,
            l.max_plan_depth
        ),
        (3, 600, 4, 2)
    );
}
