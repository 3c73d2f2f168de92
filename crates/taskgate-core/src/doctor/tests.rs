use std::collections::BTreeMap;

use super::*;
use crate::ship::{BranchRule, Bypass, RuleKind};

/// `main` requires `taskgate/ship-gate`; the App bypasses it or not.
fn ship_gate_required(bypass: Bypass) -> BranchRules {
    BranchRules {
        branch: "main".into(),
        classic: false,
        merge_group_unsubscribed: false,
        queue: Default::default(),
        rules: vec![BranchRule {
            rule: RuleKind::RequiredChecks {
                contexts: vec!["taskgate/ship-gate".into()],
            },
            ruleset: Some(7),
            bypass,
        }],
    }
}

/// The rules of story branches with a ruleset requiring `checks`.
fn story_gates_required(checks: &[&str]) -> BranchRules {
    BranchRules {
        branch: STORY_BRANCH_PROBE.into(),
        rules: vec![BranchRule {
            rule: RuleKind::RequiredChecks {
                contexts: checks.iter().map(|c| (*c).to_owned()).collect(),
            },
            ruleset: Some(9),
            bypass: Bypass::Never,
        }],
        ..BranchRules::none(STORY_BRANCH_PROBE)
    }
}

fn needs() -> Needs {
    Needs::from_manifest(include_str!("../../../../app-manifest.yml")).unwrap()
}

fn granted(needs: &Needs) -> BTreeMap<String, String> {
    needs
        .permissions
        .iter()
        .map(|(k, v)| (k.clone(), v.name().to_owned()))
        .collect()
}

/// An installation and repository with nothing to change.
fn healthy() -> Facts {
    let needs = needs();
    Facts {
        repo: RepoName::parse("octo-org/hello-world").unwrap(),
        web: "https://github.com".into(),
        enterprise_server: false,
        app: Ok(AppFacts {
            slug: "taskgate".into(),
            owner: "octo-org".into(),
            owner_is_org: true,
            permissions: granted(&needs),
            events: needs.events.clone(),
        }),
        installation: Ok(Some(InstallationFacts {
            id: 31,
            html_url: "https://github.com/organizations/octo-org/settings/installations/31".into(),
            permissions: {
                let mut p = granted(&needs);
                p.insert("workflows".into(), "write".into());
                p
            },
            events: needs.events.clone(),
            suspended: false,
        })),
        repository: Some(RepoFacts {
            about: Ok(AboutRepo {
                default_branch: "main".into(),
                html_url: "https://github.com/octo-org/hello-world".into(),
                private: false,
                owner_is_org: true,
                plan: None,
            }),
            config_text: Ok(Some(
                "runner: actions\nroles:\n  coder: { assignees: [alice] }\n".into(),
            )),
            assignees: vec![("coder".into(), "alice".into(), Ok(true))],
            workflows: [(
                "taskgate-run.yml".to_owned(),
                Ok(WorkflowFacts::Present {
                    dispatchable: true,
                    state: "active".into(),
                }),
            )]
            .into_iter()
            .collect(),
            landing: Ok(ship_gate_required(Bypass::Always)),
            story_branches: Ok(story_gates_required(&["taskgate/unit"])),
        }),
        deliveries: Ok(DeliveryFacts::default()),
        sandbox: SandboxFacts::Works {
            processes_limited: true,
        },
        low_disk: None,
        host: "this host",
    }
}

fn repo(facts: &mut Facts) -> &mut RepoFacts {
    facts.repository.as_mut().unwrap()
}

fn about(facts: &mut Facts) -> &mut AboutRepo {
    repo(facts).about.as_mut().unwrap()
}

/// The findings that are not `ok`, as `level topic: says`.
fn problems(facts: &Facts) -> Vec<String> {
    diagnose(facts, &needs())
        .findings
        .into_iter()
        .filter(|f| f.level != Level::Ok)
        .map(|f| format!("{:?} {}: {}", f.level, f.topic, f.says))
        .collect()
}

#[test]
fn a_healthy_repository_has_nothing_to_change() {
    let report = diagnose(&healthy(), &needs());
    assert!(!report.blocks());
    insta::assert_snapshot!(render_terminal(&report), @r"
    taskgate doctor: octo-org/hello-world

    ok    Installation: installation 31 grants every permission and event app-manifest.yml asks for
    ok    Configuration: `.github/taskgate.yml` is valid (runner `actions`)
    ok    Draft pull requests: available (a public repository)
    ok    Assignees: `alice` (coder) can be assigned
    ok    Workflow `taskgate-run.yml`: the Actions runner's workflow is on `main` and can be dispatched
    ok    Landing on `main`: taskgate moves `main` to each tested commit itself
    ok    Story branches: GitHub merges a task pull request into its story branch only when `taskgate/unit` passes
    ok    Sandbox: bubblewrap runs task code in its sandbox on this host
    ok    Webhook deliveries: none for octo-org/hello-world failed in the last 3 days

    Nothing stops taskgate on octo-org/hello-world.
    ");
}

#[test]
fn a_missing_permission_says_which_setting_and_blocks() {
    let mut facts = healthy();
    let Ok(Some(inst)) = &mut facts.installation else {
        unreachable!()
    };
    inst.permissions.insert("issues".into(), "read".into());
    inst.permissions.remove("checks");
    inst.events.retain(|e| e != "check_suite");
    let report = diagnose(&facts, &needs());
    assert!(report.blocks());
    insta::assert_snapshot!(render_terminal(&report).lines().take(12).collect::<Vec<_>>().join("\n"), @r#"
    taskgate doctor: octo-org/hello-world

    FAIL  Permission `checks`: `write` needed, none granted
          The App asks for it; the installation has not accepted it yet: accept the new permissions on the installation.
          the App's permissions: https://github.com/organizations/octo-org/settings/apps/taskgate/permissions
          the installation: https://github.com/organizations/octo-org/settings/installations/31
    FAIL  Permission `issues`: `write` needed, `read` granted
          The App asks for it; the installation has not accepted it yet: accept the new permissions on the installation.
          the App's permissions: https://github.com/organizations/octo-org/settings/apps/taskgate/permissions
          the installation: https://github.com/organizations/octo-org/settings/installations/31
    FAIL  Events: not subscribed to `check_suite`: taskgate never hears of them
          Tick them under "Subscribe to events" in the App's permissions, then accept the change on the installation.
    "#);
}

#[test]
fn merge_queues_and_merge_group_missing_are_a_note_without_a_merge_queue_and_block_with_one() {
    let mut facts = healthy();
    let Ok(Some(inst)) = &mut facts.installation else {
        unreachable!()
    };
    inst.permissions.remove("merge_queues");
    inst.events.retain(|e| e != "merge_group");
    let report = diagnose(&facts, &needs());
    assert!(!report.blocks(), "no merge queue: nothing stops taskgate");
    insta::assert_snapshot!(problems(&facts).join("\n"), @r"
        Note Permission `merge_queues`: `read` needed, none granted: `main` has no merge queue, so taskgate needs none of it now; it will if a merge queue is added (GitHub sends the `merge_group` event only to an App with it)
        Note Events: not subscribed to `merge_group`: `main` has no merge queue, so taskgate needs none of it now; it will if a merge queue is added (taskgate is never asked to prove a merge group)
        ");
    let mut queued = ship_gate_required(Bypass::Never);
    queued.rules.push(rule(RuleKind::MergeQueue, Bypass::Never));
    repo(&mut facts).landing = Ok(queued);
    assert!(
        diagnose(&facts, &needs()).blocks(),
        "a merge queue needs them"
    );
    insta::assert_snapshot!(problems(&facts).join("\n"), @r"
        Block Permission `merge_queues`: `read` needed, none granted: `main` takes changes through GitHub's merge queue, and GitHub sends the `merge_group` event only to an App with it, so no story ships
        Block Events: not subscribed to `merge_group`: `main` takes changes through GitHub's merge queue, and taskgate is never asked to prove a merge group, so no story ships
        ");
}

#[test]
fn a_merge_queue_of_an_unknown_method_blocks_and_headgreen_says_what_a_proof_vouches_for() {
    let mut queued = ship_gate_required(Bypass::Never);
    queued.rules.push(rule(RuleKind::MergeQueue, Bypass::Never));
    queued.queue.grouping = crate::ship::QueueGrouping::HeadGreen;
    queued.queue.method = crate::ship::QueueMethod::Squash;
    insta::assert_snapshot!(landing(queued.clone()).join("\n"), @r"
        Ok taskgate puts each story pull request in GitHub's merge queue and proves its merge group, which GitHub lands (merge method squash: taskgate checks that the group's tree is its base with the story shipped merged; the App needs the `merge_group` event)
        Note the merge queue's grouping is `HEADGREEN`: GitHub lands the merge groups ahead of a passing group on its strength. A story's proof then vouches for the whole tree it tested, the pull requests queued ahead of the story included; and a pull request queued right behind a story gets a red `taskgate/ship-gate`, since its group would land the story unproven
        ");
    queued.queue.method = crate::ship::QueueMethod::parse("FAST_FORWARD");
    insta::assert_snapshot!(landing(queued).join("\n"), @"Block `main` takes changes through GitHub's merge queue, whose merge method `FAST_FORWARD` taskgate cannot judge: it could not tell whether a merge group holds exactly the story shipped, so no story ships");
}

#[test]
fn a_permission_the_app_itself_lacks_is_set_in_the_apps_settings() {
    let mut facts = healthy();
    if let Ok(app) = &mut facts.app {
        app.permissions.remove("actions");
    }
    if let Ok(Some(inst)) = &mut facts.installation {
        inst.permissions.remove("actions");
    }
    let report = diagnose(&facts, &needs());
    assert_eq!(
        report.findings[0].fix.as_deref(),
        Some("Set `actions` to \"Read and write\" in the App's permissions, then accept the new permissions on the installation.")
    );
}

#[test]
fn an_app_not_installed_on_the_repository_links_to_its_installation_page() {
    let mut facts = healthy();
    facts.installation = Ok(None);
    facts.repository = None;
    let report = diagnose(&facts, &needs());
    assert!(report.blocks());
    insta::assert_snapshot!(render_markdown(&report), @r"
    **taskgate doctor** for `octo-org/hello-world`

    - ❌ **Installation**: the App is not installed on octo-org/hello-world<br>Install it on the repository (or add the repository to its installation). ([install the App](https://github.com/apps/taskgate/installations/new))
    - ✅ **Sandbox**: bubblewrap runs task code in its sandbox on this host
    - ✅ **Webhook deliveries**: none for octo-org/hello-world failed in the last 3 days

    1 problem stops taskgate on octo-org/hello-world.
    ");
}

#[test]
fn drafts_are_missing_from_private_repositories_on_free_plans_only() {
    let drafts = |private, org, plan: Option<&str>, ghes| {
        let mut facts = healthy();
        facts.enterprise_server = ghes;
        let a = about(&mut facts);
        (a.private, a.owner_is_org, a.plan) = (private, org, plan.map(Into::into));
        problems(&facts)
    };
    let none: Vec<String> = Vec::new();
    assert_eq!(drafts(false, false, None, false), none);
    assert_eq!(drafts(true, true, Some("team"), false), none);
    assert_eq!(drafts(true, false, None, true), none);
    assert_eq!(
        drafts(true, false, None, false),
        ["Warn Draft pull requests: unavailable: a private repository of a personal account (GitHub Free or Pro)"]
    );
    assert_eq!(
        drafts(true, true, Some("free"), false),
        ["Warn Draft pull requests: unavailable: a private repository of an organisation on GitHub Free"]
    );
    assert_eq!(
        drafts(true, true, None, false),
        ["Note Draft pull requests: unknown: a private repository of an organisation whose plan GitHub shows only to an App with `organization_plan: read`"]
    );
}

#[test]
fn an_assignee_who_cannot_be_assigned_is_a_warning_naming_the_role() {
    let mut facts = healthy();
    repo(&mut facts).assignees = vec![
        ("coder".into(), "alice".into(), Ok(true)),
        ("tester".into(), "mallory".into(), Ok(false)),
    ];
    assert_eq!(
        problems(&facts),
        ["Warn Assignee `mallory`: role `tester` names `mallory`, who cannot be assigned in octo-org/hello-world: its issues go out without them"]
    );
    assert!(!diagnose(&facts, &needs()).blocks());
}

#[test]
fn the_runners_workflow_missing_undispatchable_or_disabled_blocks() {
    let workflow = |facts: WorkflowFacts| {
        let mut healthy = healthy();
        repo(&mut healthy)
            .workflows
            .insert("taskgate-run.yml".into(), Ok(facts));
        problems(&healthy)
    };
    assert_eq!(
        workflow(WorkflowFacts::Missing),
        ["Block Workflow `taskgate-run.yml`: the Actions runner's workflow is not on `main`: nothing can dispatch it"]
    );
    assert_eq!(
        workflow(WorkflowFacts::Present { dispatchable: false, state: "active".into() }),
        ["Block Workflow `taskgate-run.yml`: the Actions runner's workflow has no `workflow_dispatch` trigger: GitHub refuses to dispatch it"]
    );
    assert_eq!(
        workflow(WorkflowFacts::Present { dispatchable: true, state: "disabled_inactivity".into() }),
        ["Block Workflow `taskgate-run.yml`: the Actions runner's workflow is disabled on GitHub (`disabled_inactivity`): GitHub refuses to dispatch it"]
    );
}

#[test]
fn a_refused_config_blocks_with_each_problem_at_its_place() {
    let mut facts = healthy();
    repo(&mut facts).config_text = Ok(Some("runer: actions\n".into()));
    assert_eq!(
        problems(&facts),
        ["Block Configuration: `.github/taskgate.yml` is refused: .github/taskgate.yml:1:1: unknown key `runer` in the config (did you mean `runner`?)"]
    );
}

#[test]
fn failed_deliveries_warn_and_block_when_the_latest_failed() {
    let failed = FailedDelivery {
        guid: "g-1".into(),
        event: "issue_comment".into(),
        status: "failed to connect to host".into(),
        delivered_at: "2025-01-02T03:04:05Z".into(),
    };
    let mut facts = healthy();
    facts.deliveries = Ok(DeliveryFacts {
        failed: vec![failed.clone()],
        newest_failed: false,
    });
    assert_eq!(
        problems(&facts),
        ["Warn Webhook deliveries: 1 delivery failed in the last 3 days and never arrived (newest: `issue_comment` at 2025-01-02T03:04:05Z: failed to connect to host)"]
    );
    facts.deliveries = Ok(DeliveryFacts {
        failed: vec![failed],
        newest_failed: true,
    });
    assert_eq!(
        problems(&facts),
        ["Block Webhook deliveries: GitHub's latest delivery failed (`issue_comment` at 2025-01-02T03:04:05Z: failed to connect to host): taskgate does not hear from GitHub"]
    );
}

#[test]
fn a_sandbox_that_fails_blocks_only_where_the_local_runner_runs_tasks() {
    let mut facts = healthy();
    facts.sandbox = SandboxFacts::Fails("bubblewrap (`bwrap`) is not installed".into());
    assert_eq!(
        problems(&facts),
        ["Warn Sandbox: task code cannot run in the sandbox on this host; this repository's runner is `actions`, so its tasks do not run here"]
    );
    repo(&mut facts).config_text = Ok(None);
    repo(&mut facts).workflows.clear();
    assert_eq!(
        problems(&facts),
        ["Block Sandbox: task code cannot run in the sandbox on this host"]
    );
}

#[test]
fn what_could_not_be_read_is_said_not_guessed() {
    let mut facts = healthy();
    repo(&mut facts).assignees = vec![(
        "coder".into(),
        "alice".into(),
        Err("GitHub answered 502: Bad Gateway".into()),
    )];
    facts.deliveries = Err("GitHub answered 401: Bad credentials".into());
    assert_eq!(
        problems(&facts),
        [
            "Warn Assignee `alice`: could not ask whether they can be assigned: GitHub answered 502: Bad Gateway",
            "Warn Webhook deliveries: could not read the App's delivery log: GitHub answered 401: Bad credentials",
        ]
    );
}

fn landing(rules: BranchRules) -> Vec<String> {
    let mut facts = healthy();
    repo(&mut facts).landing = Ok(rules);
    diagnose(&facts, &needs())
        .findings
        .into_iter()
        .filter(|f| f.topic == "Landing on `main`")
        .map(|f| format!("{:?} {}", f.level, f.says))
        .collect()
}

fn rule(rule: RuleKind, bypass: Bypass) -> BranchRule {
    BranchRule {
        rule,
        ruleset: Some(7),
        bypass,
    }
}

#[test]
fn landing_says_how_taskgate_lands_and_what_can_hold_it_up() {
    let mut rules = ship_gate_required(Bypass::Never);
    rules
        .rules
        .push(rule(RuleKind::LinearHistory, Bypass::Never));
    rules.rules.push(rule(
        RuleKind::PullRequest {
            approvals: 1,
            methods: Vec::new(),
            review: Default::default(),
        },
        Bypass::Never,
    ));
    rules.rules.push(rule(
        RuleKind::RequiredChecks {
            contexts: vec!["ci/lint".into()],
        },
        Bypass::Never,
    ));
    assert_eq!(
        landing(rules),
        [
            "Ok taskgate lands each story by merging its story pull request (a squash), the landed tree checked against the tested one, as one linear commit (the branch requires linear history)",
            "Warn story pull requests need 1 approving review: GitHub refuses taskgate's merge until then, and a ship waits for the approvals",
            "Note `ci/lint` must pass on a story pull request too: GitHub merges it only then",
        ]
    );
}

#[test]
fn a_merge_queue_stops_every_landing_and_an_unrequired_ship_gate_is_noted() {
    let queued = BranchRules {
        branch: "main".into(),
        classic: false,
        merge_group_unsubscribed: false,
        queue: Default::default(),
        rules: vec![rule(RuleKind::MergeQueue, Bypass::Always)],
    };
    assert_eq!(
        landing(queued),
        ["Block `main` takes changes only through GitHub's merge queue, which does not require `taskgate/ship-gate`: it would land merge groups taskgate has not proven, so no story ships"]
    );
    let mut gated = ship_gate_required(Bypass::Never);
    gated.rules.push(rule(RuleKind::MergeQueue, Bypass::Never));
    assert_eq!(
        landing(gated),
        ["Ok taskgate puts each story pull request in GitHub's merge queue and proves its merge group, which GitHub lands (merge method merge: taskgate checks that the group's tree is its base with the story shipped merged; the App needs the `merge_group` event)"]
    );
    assert_eq!(
        landing(BranchRules::none("main")),
        [
            "Ok taskgate moves `main` to each tested commit itself",
            "Note `taskgate/ship-gate` is not a required check: a person can merge a story pull request taskgate has not proven",
        ]
    );
    let mut classic = ship_gate_required(Bypass::Never);
    classic.classic = true;
    classic.rules[0].ruleset = None;
    assert_eq!(
        landing(classic),
        [
            "Ok taskgate lands each story by merging its story pull request (a merge commit), the landed tree checked against the tested one",
            "Note classic branch protection is on, and the App sees only its required checks: reviews or push restrictions it asks for hold taskgate's merge up",
        ]
    );
}

#[test]
fn doctor_checks_the_workflow_of_an_agent_in_either_spelling() {
    let src = "roles:\n  coder: { agent: { workflow: agent.yml } }\n  tester: { agent_workflow: old.yml }\n  debugger: { agent: copilot }\n";
    let config = crate::config::load_config(Some(src)).unwrap();
    let files: Vec<(String, String)> = workflows_to_check(&config)
        .into_iter()
        .map(|(file, purpose, _)| (file, purpose))
        .collect();
    assert_eq!(
        files,
        [
            ("agent.yml".into(), "role `coder`'s agent workflow".into()),
            ("old.yml".into(), "role `tester`'s agent workflow".into()),
        ]
    );
}

/// The story branches' finding for `rules`, with its fix.
fn story_branches(rules: Checked<BranchRules>) -> Vec<String> {
    let mut facts = healthy();
    repo(&mut facts).story_branches = rules;
    diagnose(&facts, &needs())
        .findings
        .into_iter()
        .filter(|f| f.topic == "Story branches")
        .map(|f| format!("{:?} {} | {}", f.level, f.says, f.fix.unwrap_or_default()))
        .collect()
}

#[test]
fn story_branches_say_whether_github_refuses_a_red_task_prs_merge_and_how_to_make_it() {
    insta::assert_debug_snapshot!(
        story_branches(Ok(story_gates_required(&["taskgate/unit", "taskgate/lint", "ci/other"]))),
        @r#"
            [
                "Ok GitHub merges a task pull request into its story branch only when `taskgate/lint`, `taskgate/unit` pass | ",
            ]
        "#
    );
    // Only the ship gate, or no rule at all: nothing holds the merge.
    let unguarded = story_branches(Ok(story_gates_required(&["taskgate/ship-gate"])));
    assert_eq!(
        unguarded,
        story_branches(Ok(BranchRules::none(STORY_BRANCH_PROBE)))
    );
    insta::assert_debug_snapshot!(unguarded, @r#"
        [
            "Note no rule on `taskgate/story-*` requires taskgate's gate checks: anyone with write access, an agent included, can merge a task pull request whose gates failed. taskgate then holds the task (a merge is not a proof) and says so on the pull request, but GitHub does not stop the merge | Add a ruleset targeting `taskgate/story-*` that requires the status checks `taskgate/<gate>` of the gates your plans use (taskgate cannot add it: that needs the `administration` permission, which the App does not ask for).",
        ]
    "#);
    assert_eq!(
        story_branches(Err("GitHub answered 502: Bad Gateway".into())),
        ["Note could not read the rules of story branches: GitHub answered 502: Bad Gateway | "]
    );
}

#[test]
fn landing_names_each_review_rule_of_the_branch() {
    let mut rules = ship_gate_required(Bypass::Never);
    rules.rules.push(rule(
        RuleKind::PullRequest {
            approvals: 2,
            methods: Vec::new(),
            review: crate::ship::ReviewFlags {
                code_owners: true,
                last_push: true,
                dismiss_stale: true,
            },
        },
        Bypass::Never,
    ));
    let said = landing(rules);
    let line = said
        .iter()
        .find(|l| l.contains("approving"))
        .expect("the review rules");
    assert_eq!(
        line,
        "Warn story pull requests need 2 approving reviews; a code owner's approval for each changed path (`CODEOWNERS`); the last push approved by someone other than its pusher; approvals dismissed when the story branch moves: GitHub refuses taskgate's merge until then, and a ship waits for the approvals"
    );
}

#[test]
fn a_runner_host_below_its_free_space_floor_is_said_with_what_to_do() {
    let mut facts = healthy();
    facts.low_disk = Some(crate::host_disk::LowDisk {
        free_mib: 100,
        floor_mib: 2048,
    });
    insta::assert_snapshot!(problems(&facts).join("\n"), @"Warn Disk: taskgate's runner host has 100 MiB of disk free, below its floor of 2048 MiB (TASKGATE_MIN_FREE_MIB), so no run starts on this host");
}
