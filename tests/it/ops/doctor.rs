//! `taskgate doctor OWNER/REPO` (the real binary) and `/taskgate doctor` in
//! a comment, against the fake GitHub: a repository with nothing to change,
//! one with every problem the doctor knows, one the App is not installed on.
//!
//! The sandbox line depends on the host running the tests (bubblewrap, and
//! whether taskgate runs as root, where no process limit applies), so the
//! snapshots show it as `[sandbox]` and the tests check it apart.

use fakehub::{BypassActor, FakeGitHub, Rule, Ruleset};
use serde_json::json;

use crate::support::{TestApp, INSTALLATION, REPO, SECRET};

/// Where GitHub posted while taskgate was not listening.
const DOWN: &str = "http://127.0.0.1:9/webhook";

/// Runs `taskgate doctor repo` against `fake` in an empty directory, with
/// the App's credentials and `envs`: its exit code and what it printed.
async fn doctor(fake: &FakeGitHub, repo: &str, envs: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .args(["doctor", repo])
        .current_dir(dir.path())
        .env_remove("PRIVATE_KEY_PATH")
        .env_remove("TASKGATE_UNSANDBOXED")
        .env_remove("TASKGATE_BWRAP")
        .env("APP_ID", fake.app_id().to_string())
        .env("PRIVATE_KEY", FakeGitHub::private_key_pem())
        .env("GITHUB_API_URL", fake.url())
        .envs(envs.iter().copied())
        .output()
        .await
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !stdout.is_empty(),
        "no report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("an exit code"), stdout)
}

/// `report` with the host-dependent sandbox finding (its line, and what
/// to change under it) as `[sandbox]`, after checking it is one a host
/// that can sandbox gives.
fn sandbox_apart(report: &str) -> String {
    let mut out = Vec::new();
    let mut in_sandbox = false;
    for line in report.lines() {
        let sandbox = line.contains("Sandbox**: ")
            || line.get(6..).is_some_and(|l| l.starts_with("Sandbox: "));
        if sandbox {
            assert!(
                line.contains("bubblewrap runs task code"),
                "this host cannot sandbox: {line}"
            );
            out.push("[sandbox]".to_owned());
            in_sandbox = true;
        } else if in_sandbox && line.starts_with("      ") {
            // what to change under it (a root host's process limit)
        } else {
            in_sandbox = false;
            out.push(line.to_owned());
        }
    }
    out.join("\n")
}

/// A repository of an organisation, with a config naming an assignee and
/// the Actions runner, that runner's workflow on `main`, `main`
/// requiring `taskgate/ship-gate` with the App a bypass actor, and story
/// branches requiring the gate `unit`'s check.
fn healthy_repository(fake: &FakeGitHub) -> fakehub::RepoHandle {
    fake.add_org("octo-org", "team");
    let repo = fake.install(INSTALLATION, REPO);
    fake.add_user("alice", 501, "write");
    repo.with_file(
        "main",
        ".github/taskgate.yml",
        "runner: actions\nroles:\n  coder: { assignees: [alice] }\n",
    )
    .with_file(
        "main",
        ".github/workflows/taskgate-run.yml",
        "on:\n  workflow_dispatch:\n    inputs: {}\n",
    );
    repo.with_ruleset(
        Ruleset::new("main")
            .rule(Rule::required_checks(&["taskgate/ship-gate"]))
            .bypass(BypassActor::App(fake.app_id())),
    );
    // The merge guard: a red task pull request stays out of its story.
    repo.with_ruleset(
        Ruleset::new("taskgate stories")
            .on(&["refs/heads/taskgate/story-*"])
            .rule(Rule::required_checks(&["taskgate/unit"])),
    );
    repo
}

#[tokio::test]
async fn a_healthy_repository_has_nothing_to_change_and_the_doctor_exits_0() {
    let fake = FakeGitHub::start().await;
    healthy_repository(&fake);
    let (code, out) = doctor(&fake, REPO, &[]).await;
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(sandbox_apart(&out), @r"
    taskgate doctor: octo-org/hello-world

    ok    Installation: installation 31 grants every permission and event app-manifest.yml asks for
    note  Permission `workflows`: not granted: GitHub refuses taskgate's writes of a story or proof that changes `.github/workflows/`
          Grant `workflows: write` to the App if stories will change workflows.
          the App's permissions: https://github.com/settings/apps/taskgate-test/permissions
    ok    Configuration: `.github/taskgate.yml` is valid (runner `actions`)
    ok    Draft pull requests: available (a public repository)
    ok    Assignees: `alice` (coder) can be assigned
    ok    Workflow `taskgate-run.yml`: the Actions runner's workflow is on `main` and can be dispatched
    ok    Landing on `main`: taskgate moves `main` to each tested commit itself
    ok    Story branches: GitHub merges a task pull request into its story branch only when `taskgate/unit` passes
    [sandbox]
    ok    Webhook deliveries: none for octo-org/hello-world failed in the last 3 days

    Nothing stops taskgate on octo-org/hello-world.
    ");
    fake.assert_contract_kept();
}

#[tokio::test]
async fn each_problem_is_said_with_what_to_change_and_the_doctor_exits_1() {
    let fake = FakeGitHub::start().await;
    let repo = fake.install(INSTALLATION, REPO);
    repo.make_private();
    fake.grant(
        INSTALLATION,
        json!({"actions": "write", "checks": "write", "contents": "write", "issues": "read",
               "metadata": "read"}),
    );
    fake.subscribe(
        INSTALLATION,
        &[
            "issues",
            "issue_comment",
            "pull_request",
            "pull_request_review",
            "push",
            "check_run",
            "workflow_run",
            "merge_group",
        ],
    );
    fake.add_user("alice", 501, "write");
    repo.with_file(
        "main",
        ".github/taskgate.yml",
        "deploy_workflow: deploy.yml\nvalidation_workflow: validate.yml\n\
         roles:\n  coder: { assignees: [alice, mallory], agent_workflow: agent.yml }\n",
    )
    .with_file("main", ".github/workflows/deploy.yml", "on: push\n")
    .with_file(
        "main",
        ".github/workflows/agent.yml",
        "on: workflow_dispatch\n",
    )
    .disable_workflow("agent.yml");
    // Reviews and linear history required; taskgate may bypass neither.
    repo.with_ruleset(
        Ruleset::new("main")
            .rule(Rule::approvals(1))
            .rule(Rule::RequiredLinearHistory),
    );
    // GitHub's latest delivery for the repository did not reach taskgate.
    let issue = repo.create_issue("Plan the work", "", "alice");
    let comment = repo.add_comment(issue, "/taskgate help", "alice");
    let payload = fakehub::payloads::issue_comment_created(&repo, issue, &comment);
    fake.deliver(DOWN, SECRET, "issue_comment", "guid-down", &payload)
        .await;

    let (code, out) = doctor(&fake, REPO, &[("TASKGATE_BWRAP", "/nonexistent/bwrap")]).await;
    assert_eq!(code, 1, "{out}");
    let out = out.replace(
        &fake.hook_deliveries()[0]["delivered_at"]
            .as_str()
            .unwrap()
            .to_owned(),
        "[time]",
    );
    insta::assert_snapshot!(out);
    fake.assert_contract_kept();
}

/// Installed before the manifest asked for "Merge queues": the
/// installation has neither that permission nor the `merge_group` event.
fn without_merge_queues(fake: &FakeGitHub) {
    fake.grant(
        INSTALLATION,
        json!({"actions": "write", "checks": "write", "contents": "write", "issues": "write",
               "metadata": "read", "pull_requests": "write"}),
    );
    fake.subscribe(
        INSTALLATION,
        &[
            "issues",
            "issue_comment",
            "pull_request",
            "pull_request_review",
            "push",
            "check_run",
            "check_suite",
            "workflow_run",
        ],
    );
}

#[tokio::test]
async fn without_a_merge_queue_an_app_that_cannot_hear_merge_groups_is_a_note_and_the_doctor_exits_0(
) {
    let fake = FakeGitHub::start().await;
    healthy_repository(&fake);
    without_merge_queues(&fake);
    let (code, out) = doctor(&fake, REPO, &[]).await;
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(sandbox_apart(&out), @r#"
        taskgate doctor: octo-org/hello-world

        note  Permission `merge_queues`: `read` needed, none granted: `main` has no merge queue, so taskgate needs none of it now; it will if a merge queue is added (GitHub sends the `merge_group` event only to an App with it)
              The App asks for it; the installation has not accepted it yet: accept the new permissions on the installation.
              the App's permissions: https://github.com/settings/apps/taskgate-test/permissions
              the installation: https://github.com/organizations/octo-org/settings/installations/31
        note  Events: not subscribed to `merge_group`: `main` has no merge queue, so taskgate needs none of it now; it will if a merge queue is added (taskgate is never asked to prove a merge group)
              Tick "Merge group" under "Subscribe to events" in the App's permissions (it needs the "Merge queues" permission), then accept the change on the installation.
              the App's permissions: https://github.com/settings/apps/taskgate-test/permissions
              the installation: https://github.com/organizations/octo-org/settings/installations/31
        note  Permission `workflows`: not granted: GitHub refuses taskgate's writes of a story or proof that changes `.github/workflows/`
              Grant `workflows: write` to the App if stories will change workflows.
              the App's permissions: https://github.com/settings/apps/taskgate-test/permissions
        ok    Configuration: `.github/taskgate.yml` is valid (runner `actions`)
        ok    Draft pull requests: available (a public repository)
        ok    Assignees: `alice` (coder) can be assigned
        ok    Workflow `taskgate-run.yml`: the Actions runner's workflow is on `main` and can be dispatched
        ok    Landing on `main`: taskgate moves `main` to each tested commit itself
        ok    Story branches: GitHub merges a task pull request into its story branch only when `taskgate/unit` passes
        [sandbox]
        ok    Webhook deliveries: none for octo-org/hello-world failed in the last 3 days

        Nothing stops taskgate on octo-org/hello-world.
        "#);
    fake.assert_contract_kept();
}

#[tokio::test]
async fn with_a_merge_queue_an_app_that_cannot_hear_merge_groups_stops_taskgate() {
    let fake = FakeGitHub::start().await;
    let repo = healthy_repository(&fake);
    repo.with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::merge_queue("SQUASH"))
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    without_merge_queues(&fake);
    let (code, out) = doctor(&fake, REPO, &[]).await;
    assert_eq!(code, 1, "{out}");
    let problems: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("FAIL") || l.contains("merge method"))
        .collect();
    insta::assert_snapshot!(problems.join("\n"), @r"
        FAIL  Permission `merge_queues`: `read` needed, none granted: `main` takes changes through GitHub's merge queue, and GitHub sends the `merge_group` event only to an App with it, so no story ships
        FAIL  Events: not subscribed to `merge_group`: `main` takes changes through GitHub's merge queue, and taskgate is never asked to prove a merge group, so no story ships
        ok    Landing on `main`: taskgate puts each story pull request in GitHub's merge queue and proves its merge group, which GitHub lands (merge method squash: taskgate checks that the group's tree is its base with the story shipped merged; the App needs the `merge_group` event)
        ");
    fake.assert_contract_kept();
}

#[tokio::test]
async fn an_app_not_installed_on_the_repository_is_told_where_to_install_it() {
    let fake = FakeGitHub::start().await;
    fake.install(INSTALLATION, REPO);
    fake.repo("octo-org/elsewhere");
    let (code, out) = doctor(&fake, "octo-org/elsewhere", &[]).await;
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!(sandbox_apart(&out), @r"
    taskgate doctor: octo-org/elsewhere

    FAIL  Installation: the App is not installed on octo-org/elsewhere
          Install it on the repository (or add the repository to its installation).
          install the App: https://github.com/apps/taskgate-test/installations/new
    [sandbox]
    ok    Webhook deliveries: none for octo-org/elsewhere failed in the last 3 days

    1 problem stops taskgate on octo-org/elsewhere.
    ");
    fake.assert_contract_kept();
}

#[tokio::test]
async fn a_reader_asks_in_a_comment_and_gets_the_report_in_one_reply() {
    let app = TestApp::start().await;
    app.fake.add_user("reader", 777, "read");
    let issue = app
        .fake
        .repo(REPO)
        .create_issue("Is it set up?", "", "octocat");
    app.comment(issue, "reader", "/taskgate doctor").await;
    app.settle().await;

    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 1, "{replies:?}");
    let reply = replies[0].split("\n<!--").next().unwrap();
    insta::assert_snapshot!(sandbox_apart(reply), @r"
    @reader **taskgate doctor** for `octo-org/hello-world`

    - ✅ **Installation**: installation 31 grants every permission and event app-manifest.yml asks for
    - ℹ️ **Permission `workflows`**: not granted: GitHub refuses taskgate's writes of a story or proof that changes `.github/workflows/`<br>Grant `workflows: write` to the App if stories will change workflows. ([the App's permissions](https://github.com/settings/apps/taskgate-test/permissions))
    - ✅ **Configuration**: no `.github/taskgate.yml`: the defaults apply (runner `local`)
    - ✅ **Draft pull requests**: available (a public repository)
    - ✅ **Assignees**: no role names assignees
    - ✅ **Landing on `main`**: taskgate moves `main` to each tested commit itself
    - ℹ️ **Landing on `main`**: `taskgate/ship-gate` is not a required check: a person can merge a story pull request taskgate has not proven<br>Require `taskgate/ship-gate` in a ruleset of the branch. ([rulesets](https://github.com/octo-org/hello-world/settings/rules))
    - ℹ️ **Story branches**: no rule on `taskgate/story-*` requires taskgate's gate checks: anyone with write access, an agent included, can merge a task pull request whose gates failed. taskgate then holds the task (a merge is not a proof) and says so on the pull request, but GitHub does not stop the merge<br>Add a ruleset targeting `taskgate/story-*` that requires the status checks `taskgate/<gate>` of the gates your plans use (taskgate cannot add it: that needs the `administration` permission, which the App does not ask for). ([rulesets](https://github.com/octo-org/hello-world/settings/rules))
    [sandbox]
    - ✅ **Webhook deliveries**: none for octo-org/hello-world failed in the last 3 days

    Nothing stops taskgate on octo-org/hello-world.
    ");
    app.assert_contract_kept();
}

/// The lines of `report` about drafts: the finding and what to change.
fn drafts_lines(report: &str) -> String {
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("Draft pull requests"))
        .expect("a drafts finding");
    let mut out = vec![lines[at]];
    out.extend(
        lines[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("      ")),
    );
    out.join("\n")
}

#[tokio::test]
async fn drafts_in_a_private_organisation_repository_are_unknown_until_the_first_task_pr_without_the_plan(
) {
    let fake = FakeGitHub::start().await;
    let repo = healthy_repository(&fake);
    repo.make_private();
    let (code, out) = doctor(&fake, REPO, &[]).await;
    assert_eq!(code, 0, "nothing stops taskgate: {out}");
    insta::assert_snapshot!(drafts_lines(&out), @r"
    note  Draft pull requests: unknown: a private repository of an organisation whose plan GitHub shows only to an App with `organization_plan: read`
          Nothing to change: taskgate asks for a draft at the first task pull request and, where GitHub refuses it, opens a normal pull request and remembers that for this repository. To know now, grant the App `organization_plan: read`.
          GitHub's plans: https://docs.github.com/en/get-started/learning-about-github/githubs-plans
    ");

    // With the organisation's plan shown to the App, the doctor knows.
    fake.grant(
        INSTALLATION,
        json!({"checks": "write", "issues": "write", "pull_requests": "write",
               "contents": "write", "actions": "write", "metadata": "read",
               "organization_plan": "read"}),
    );
    let (_, out) = doctor(&fake, REPO, &[]).await;
    insta::assert_snapshot!(drafts_lines(&out), @"ok    Draft pull requests: available (a private repository on the `team` plan)");
}
