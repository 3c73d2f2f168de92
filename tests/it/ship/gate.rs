//! The ship gate end to end (SPEC §7): a one-task story whose task passes
//! and merges becomes shippable; a person ships it by label or API; the
//! story PR merges, deploy and validation follow. Refusals are visible.

use fakehub::payloads;
use serde_json::{json, Value};

use crate::support::shipped::Shipped;
use crate::support::{eventually, REPO};

const CONFIG: &str = "deploy_workflow: deploy.yml\nvalidation_workflow: smoke.yml\n";

#[tokio::test]
async fn a_red_gate_turns_green_and_the_ship_label_merges_deploys_and_validates() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let repo = sh.repo();
    repo.add_workflow("deploy.yml");
    repo.add_workflow("smoke.yml");
    // A person opens the story PR early: the gate says what is missing.
    let number = repo.create_pull(&sh.branch, "main", "Shipped work", "octocat");
    sh.s.app.settle().await;
    let red = sh.gate();
    assert_eq!(red.conclusion.as_deref(), Some("failure"));
    assert!(
        red.summary
            .as_deref()
            .unwrap()
            .contains("task `check` (Make the check pass) is not started"),
        "{red:#?}"
    );
    assert_eq!(sh.state().await, "building");

    sh.complete_the_task().await;
    let green = sh.gate();
    assert_eq!(green.conclusion.as_deref(), Some("success"), "{green:#?}");
    assert!(sh.pr_labels().contains(&"shippable".to_owned()));
    let body = sh.story_pr().unwrap().body.unwrap();
    assert!(body.contains("`test` passed at"), "{body}");
    assert_eq!(sh.state().await, "shippable");

    // The label, and its webhook delivered twice more at once: one merge.
    // The two copies are one body under two new ids: at most one is
    // recorded (the other, or both, a replay of a body seen: issue 45).
    sh.add_ship_label().await;
    let (a, b) = tokio::join!(sh.ship_label_again(), sh.ship_label_again());
    let recorded = [a.0, b.0].iter().filter(|s| **s == 202).count();
    assert!(
        recorded <= 1 && [a.0, b.0].iter().all(|s| matches!(s, 200 | 202)),
        "{a:?} {b:?}"
    );
    sh.landed().await;
    assert_eq!(sh.merges(), 1);
    assert!(sh.story_pr().unwrap().merged);
    assert_eq!(sh.story_pr().unwrap().number, number);
    assert_eq!(repo.dispatches().len(), 1, "deploy dispatched");

    sh.finish_run("deploy.yml", "success").await;
    assert_eq!(sh.state().await, "deployed");
    assert!(sh.pr_labels().contains(&"deployed".to_owned()));
    sh.finish_run("smoke.yml", "success").await;
    assert_eq!(sh.state().await, "review-ready");
    assert!(sh.pr_labels().contains(&"review-ready".to_owned()));
    let story = sh.story_json().await;
    assert_eq!(story["shipped_by"]["via"], "label");
    assert_eq!(story["shipped_by"]["login"], "octocat");
    assert_eq!(story["tasks"][0]["state"], "completed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_draft_story_pr_opened_by_hand_is_marked_ready_once_the_story_is_shippable() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let repo = sh.repo();
    let number = repo.create_pull(&sh.branch, "main", "Shipped work", "octocat");
    repo.set_draft(number, true, "octocat");
    sh.s.app.settle().await;
    assert!(sh.story_pr().unwrap().draft, "left a draft while building");

    // GitHub's GraphQL endpoint stumbles twice; the executor tries again.
    sh.s.app.fake.inject(
        "POST /graphql",
        fakehub::Fault::Status {
            status: 502,
            times: 2,
        },
    );
    sh.complete_the_task().await;
    assert_eq!(sh.state().await, "shippable");
    let pr = sh.story_pr().unwrap();
    assert_eq!(pr.number, number);
    assert!(!pr.draft, "marked ready for review");
    // GitHub said so (ready_for_review, echoed); nothing is asked twice.
    let mutations =
        sh.s.app
            .fake
            .requests()
            .iter()
            .filter(|r| r.route.as_deref() == Some("/graphql"))
            .count();
    assert_eq!(mutations, 3, "two refused, one that took");
    // Ready, it ships.
    sh.add_ship_label().await;
    sh.landed().await;
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_pull_request_from_a_fork_named_like_the_story_branch_is_not_the_story_pr() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let repo = sh.repo();
    // A fork's branch of the same name, its repository since deleted
    // (GitHub then says `head.repo: null`); or one renamed to this name.
    let number =
        sh.s.app
            .fake
            .without_echoes(|| repo.create_pull(&sh.branch, "main", "Mine now", "mallory"));
    let mut deleted = payloads::pull_request("opened", &repo, number);
    deleted["pull_request"]["head"]["repo"] = Value::Null;
    let mut same_name = payloads::pull_request("reopened", &repo, number);
    same_name["pull_request"]["head"]["repo"]["id"] = json!(repo.id() + 1000);
    for payload in [deleted, same_name] {
        assert_eq!(sh.s.app.deliver("pull_request", &payload).await.0, 202);
        sh.s.app.settle().await;
    }
    let gates = repo
        .check_runs()
        .into_iter()
        .filter(|c| c.name == "taskgate/ship-gate")
        .count();
    assert_eq!(gates, 0, "no ship gate on a fork's head");
    let story = sh.story_json().await;
    assert_eq!(story["pr"], Value::Null, "{story}");
}

#[tokio::test]
async fn the_ship_label_on_a_story_not_shippable_is_taken_off_with_what_is_missing() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let number = sh
        .repo()
        .create_pull(&sh.branch, "main", "Shipped work", "octocat");
    sh.s.app.settle().await;
    sh.add_ship_label().await;
    sh.s.app.settle().await;
    assert!(
        !sh.pr_labels().contains(&"ship".to_owned()),
        "label removed"
    );
    let reply = sh.s.app.bot_comments(number);
    assert_eq!(reply.len(), 1, "{reply:#?}");
    assert!(
        reply[0].contains("task `check` (Make the check pass) is not started"),
        "{}",
        reply[0]
    );
    assert_eq!(sh.merges(), 0);
}

#[tokio::test]
async fn the_ship_label_from_a_writer_is_taken_off_for_lack_of_permission() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.s.app.fake.set_permission("octocat", "write");
    sh.add_ship_label().await;
    sh.s.app.settle().await;
    assert!(
        !sh.pr_labels().contains(&"ship".to_owned()),
        "label removed"
    );
    assert_eq!(sh.merges(), 0);
    let pr = sh.story_pr().unwrap().number;
    let reply = sh.s.app.bot_comments(pr);
    assert!(
        reply
            .iter()
            .any(|c| c.contains("needs maintain permission")),
        "{reply:#?}"
    );
}

#[tokio::test]
async fn a_missing_deploy_workflow_is_reported() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.add_ship_label().await;
    sh.s.app.settle().await;
    eventually("the story needs a fix", || async {
        sh.state().await == "needs-fix"
    })
    .await;
    let notes = sh.s.app.bot_comments(sh.story_issue);
    assert!(notes.iter().any(|c| c.contains("deploy.yml")), "{notes:#?}");
}

#[tokio::test]
async fn a_story_pr_closed_or_merged_by_hand_is_recorded() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    // Merged by hand, without a ship request: past the gate.
    let repo = sh.repo();
    let number = sh.story_pr().unwrap().number;
    repo.merge_pull(number, "octocat");
    sh.s.app.settle().await;
    let story = sh.story_json().await;
    assert_eq!(story["merged_past_gate"], true);
    let notes = sh.s.app.bot_comments(sh.story_issue);
    assert!(
        notes
            .iter()
            .any(|c| c.contains("Merged past the ship gate")),
        "{notes:#?}"
    );
    assert!(repo.dispatches().is_empty(), "nothing deployed");

    // Another story: its PR closed without merging.
    let other = Shipped::story().config(CONFIG).shippable().await;
    let number = other.story_pr().unwrap().number;
    other.repo().close_issue(number, "octocat");
    other.s.app.settle().await;
    let notes = other.s.app.bot_comments(other.story_issue);
    assert!(
        notes.iter().any(|c| c.contains("closed without merging")),
        "{notes:#?}"
    );
    let story = other.story_json().await;
    assert_eq!(story["pr"], Value::Null);
}

#[tokio::test]
async fn the_api_needs_its_token_and_ships_only_a_shippable_story() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let ship = format!("/api/stories/{}/ship", sh.story_issue);
    assert_eq!(sh.api("POST", &ship, None).await.0, 401);
    assert_eq!(sh.api("POST", &ship, Some("wrong")).await.0, 401);
    assert_eq!(sh.api("GET", "/api/stories", Some("wrong")).await.0, 401);
    assert_eq!(
        sh.api("POST", "/api/stories/999/ship", Some("api-token"))
            .await
            .0,
        404
    );
    sh.s.app.settle().await;
    let (status, v) = sh.api("POST", &ship, Some("api-token")).await;
    assert_eq!(status, 409, "{v}");
    assert_eq!(
        v["reasons"],
        json!(["task `check` (Make the check pass) is not started"])
    );

    sh.complete_the_task().await;
    sh.repo().add_workflow("deploy.yml");
    let (status, v) = sh.api("POST", &ship, Some("api-token")).await;
    assert_eq!(status, 202, "{v}");
    sh.landed().await;
    let (_, list) = sh.api("GET", "/api/stories", Some("api-token")).await;
    assert_eq!(list["stories"][0]["shipped_by"]["via"], "API");
    // Filtered by repository, as the dashboard is.
    let of = |repo: &str| format!("/api/stories?repo={repo}");
    let (status, list) = sh.api("GET", &of(REPO), Some("api-token")).await;
    assert_eq!(
        (status, list["stories"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    let (status, list) = sh
        .api("GET", &of("octo/elsewhere"), Some("api-token"))
        .await;
    assert_eq!((status, list), (200, json!({ "stories": [] })));
    let (status, v) = sh.api("GET", &of("nope"), Some("api-token")).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"], "`nope` is not of the form owner/name");
}

#[tokio::test]
async fn without_a_configured_token_every_api_call_is_refused() {
    let fake = fakehub::FakeGitHub::start().await;
    let app = crate::support::TestApp::with_config(fake, |c| c.api_token = None).await;
    assert_every_route_refuses(&app.url, "").await;
}

#[tokio::test]
async fn a_wrong_token_is_refused_on_every_route_before_anything_else_is_read() {
    let app = crate::support::TestApp::start().await;
    // The reject has no body: still 401, not 400.
    assert_every_route_refuses(&app.url, "not-the-token").await;
}

async fn assert_every_route_refuses(base: &str, token: &str) {
    let client = reqwest::Client::new();
    for (method, path) in [
        ("GET", "/api/stories"),
        ("GET", "/api/stories/1"),
        ("POST", "/api/stories/1/ship"),
        ("POST", "/api/tasks/1/accept"),
        ("POST", "/api/tasks/1/reject"),
    ] {
        let url = format!("{base}{path}");
        let req = if method == "POST" {
            client.post(url)
        } else {
            client.get(url)
        };
        let status = req.bearer_auth(token).send().await.unwrap().status();
        assert_eq!(status.as_u16(), 401, "{method} {path}");
    }
}

#[tokio::test]
async fn the_ship_command_ships_and_is_refused_outside_a_story() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    // On the task's PR (not the story's): nothing ships, a reply says where.
    let task_pr = sh.s.pull().number;
    sh.s.app.comment(task_pr, "octocat", "/taskgate ship").await;
    sh.s.app.settle().await;
    assert_eq!(sh.merges(), 0);
    assert!(
        sh.s.app
            .bot_comments(task_pr)
            .iter()
            .any(|c| c.contains("works on a story's issue or its pull request")),
        "{:#?}",
        sh.s.app.bot_comments(task_pr)
    );
    // On the story issue, by a maintainer: merged.
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate ship")
        .await;
    sh.landed().await;
    assert_eq!(sh.merges(), 1);
}

#[tokio::test]
async fn the_api_refuses_a_story_whose_pr_was_closed_as_the_command_does() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    let number = sh.story_pr().unwrap().number;
    sh.repo().close_issue(number, "octocat");
    sh.s.app.settle().await;
    let ship = format!("/api/stories/{}/ship", sh.story_issue);
    let (status, v) = sh.api("POST", &ship, Some("api-token")).await;
    assert_eq!(status, 409, "{v}");
    assert_eq!(
        v["reasons"],
        json!(["the story pull request was closed; reopen it to ship"])
    );
    // The command gives the same reason.
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate ship")
        .await;
    sh.s.app.settle().await;
    assert_eq!(sh.merges(), 0);
    let replies = sh.s.app.bot_comments(sh.story_issue);
    assert!(
        replies.iter().any(|c| c.contains(
            "did nothing: ship refused: the story pull request was closed; reopen it to ship"
        )),
        "{replies:#?}"
    );
}
