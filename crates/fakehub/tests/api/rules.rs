//! Branch rules as GitHub applies them: a ruleset's (or classic branch
//! protection's) rules read back through the rules API and `protected`,
//! and the refusals of every call that moves a branch — a ref update
//! (422), the merges API (409), a pull request's merge (405) — in
//! GitHub's words, with a bypass actor let through.

use fakehub::{BypassActor, Rule, Ruleset};
use serde_json::{json, Value};

use crate::*;

const MAIN_REF: &str = "/repos/acme/widgets/git/refs/heads/main";

/// A commit on `feature` one ahead of `main` (a fast-forward of it).
pub(crate) fn ahead(repo: &fakehub::RepoHandle) -> String {
    repo.push_files("feature", &[("f.txt", "f\n")], "Feature", "alice")
}

async fn move_main(c: &Client, sha: &str, force: bool) -> Resp {
    c.call("PATCH", MAIN_REF, Some(json!({"sha": sha, "force": force})))
        .await
}

pub(crate) fn message(r: &Resp) -> &str {
    r.body["message"].as_str().unwrap_or_default()
}

pub(crate) fn violation(line: &str) -> String {
    format!("Repository rule violations found\n\n{line}\n\n")
}

/// A completed (or, with `None`, in-progress) check run `name` on `sha`.
async fn check(c: &Client, sha: &str, name: &str, conclusion: Option<&str>) {
    let mut body = json!({"name": name, "head_sha": sha, "status": "in_progress"});
    if let Some(conclusion) = conclusion {
        body["status"] = json!("completed");
        body["conclusion"] = json!(conclusion);
    }
    let r = c.post("/repos/acme/widgets/check-runs", body).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn a_branch_lists_its_active_rules_and_the_app_reads_whether_it_may_bypass_them() {
    let (gh, repo, c) = setup().await;
    let id = repo.with_ruleset(
        Ruleset::new("protect main")
            .rule(Rule::pull_request())
            .rule(Rule::required_checks(&["taskgate/ship-gate"]))
            .rule(Rule::RequiredLinearHistory)
            .rule(Rule::NonFastForward)
            .rule(Rule::Deletion),
    );
    let bypassed = repo.with_ruleset(
        Ruleset::new("no merge queue for the bot")
            .rule(Rule::MergeQueue)
            .bypass(BypassActor::App(gh.app_id())),
    );
    let r = c.get("/repos/acme/widgets/rules/branches/main").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rules = r.body.as_array().unwrap();
    let kinds: Vec<(&str, u64)> = rules
        .iter()
        .map(|v| {
            (
                v["type"].as_str().unwrap(),
                v["ruleset_id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("pull_request", id),
            ("required_status_checks", id),
            ("required_linear_history", id),
            ("non_fast_forward", id),
            ("deletion", id),
            ("merge_queue", bypassed),
        ]
    );
    assert_eq!(
        rules[1]["parameters"]["required_status_checks"],
        json!([{"context": "taskgate/ship-gate"}])
    );
    assert_eq!(rules[0]["ruleset_source"], "acme/widgets");
    // Another branch: no rule targets it.
    let r = c.get("/repos/acme/widgets/rules/branches/feature").await;
    assert_eq!(r.body, json!([]));

    let r = c.get(&format!("/repos/acme/widgets/rulesets/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["current_user_can_bypass"], "never");
    assert_eq!(
        r.body["conditions"]["ref_name"]["include"],
        json!(["~DEFAULT_BRANCH"])
    );
    let r = c
        .get(&format!("/repos/acme/widgets/rulesets/{bypassed}"))
        .await;
    assert_eq!(r.body["current_user_can_bypass"], "always");

    let branch = c.get("/repos/acme/widgets/branches/main").await;
    assert_eq!(branch.body["protected"], true);
    ahead(&repo);
    let branch = c.get("/repos/acme/widgets/branches/feature").await;
    assert_eq!(branch.body["protected"], false);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn classic_protection_protects_the_branch_but_is_no_ruleset() {
    let (gh, repo, c) = setup().await;
    let id = repo.with_ruleset(
        Ruleset::classic("main")
            .rule(Rule::pull_request())
            .rule(Rule::required_checks(&["ci"])),
    );
    let r = c.get("/repos/acme/widgets/rules/branches/main").await;
    assert_eq!(r.body, json!([]), "classic protection is not listed");
    let r = c.get(&format!("/repos/acme/widgets/rulesets/{id}")).await;
    assert_eq!(r.status, 404);
    let branch = c.get("/repos/acme/widgets/branches/main").await;
    assert_eq!(branch.body["protected"], true);
    assert_eq!(branch.body["protection"]["enabled"], true);
    assert_eq!(
        branch.body["protection"]["required_status_checks"]["contexts"],
        json!(["ci"])
    );
    // Its refusal is one line, without the ruleset's heading.
    let before = repo.branch_sha("main");
    let r = move_main(&c, &ahead(&repo), false).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        message(&r),
        "Changes must be made through a pull request. Required status check \"ci\" is expected."
    );
    assert_eq!(repo.branch_sha("main"), before);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_pull_request_rule_refuses_moving_the_branch_unless_the_app_may_bypass_it() {
    let (gh, repo, c) = setup().await;
    let id = repo.with_ruleset(Ruleset::new("through PRs").rule(Rule::pull_request()));
    let before = repo.branch_sha("main").unwrap();
    let next = ahead(&repo);
    let r = move_main(&c, &next, false).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Changes must be made through a pull request.")
    );
    // The merges API moves the base too: 409, and the base stays.
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "feature"}),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Changes must be made through a pull request.")
    );
    assert_eq!(repo.branch_sha("main"), Some(before));
    // A pull request's merge is what the rule asks for.
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let number = pr.body["number"].as_u64().unwrap();
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{number}/merge"),
            Some(json!({"sha": next})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // The same rule with the App as a bypass actor lets it push.
    repo.without_ruleset(id);
    repo.with_ruleset(
        Ruleset::new("through PRs, but the bot")
            .rule(Rule::pull_request())
            .bypass(BypassActor::App(gh.app_id())),
    );
    let next = repo.push_files("feature", &[("g.txt", "g\n")], "More", "alice");
    let main = repo.branch_sha("main").unwrap();
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "feature", "head": main}),
        )
        .await;
    assert!(r.status == 201 || r.status == 204, "{}", r.body);
    let tip = repo.branch_sha("feature").unwrap();
    let r = move_main(&c, &tip, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(repo.file("main", "g.txt").is_some(), "{next} landed");
    gh.assert_contract_kept();
}

#[tokio::test]
async fn required_checks_must_have_passed_on_the_new_head_or_on_the_pull_requests_head() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(Ruleset::new("checks").rule(Rule::required_checks(&["ci"])));
    let next = ahead(&repo);
    let refused = |r: &Resp, how: &str| {
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(
            message(r),
            violation(&format!("Required status check \"ci\" {how}."))
        );
    };
    refused(&move_main(&c, &next, false).await, "is expected");
    check(&c, &next, "ci", None).await;
    refused(&move_main(&c, &next, false).await, "is pending");
    check(&c, &next, "ci", Some("failure")).await;
    refused(&move_main(&c, &next, false).await, "is failing");
    // A pull request's merge is judged on its head.
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let merge = format!("/repos/acme/widgets/pulls/{}/merge", pr.body["number"]);
    let r = c.call("PUT", &merge, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Required status check \"ci\" is failing.")
    );
    check(&c, &next, "ci", Some("success")).await;
    let r = move_main(&c, &next, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn linear_history_refuses_merge_commits_and_the_merge_method_but_not_a_squash() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(Ruleset::new("linear").rule(Rule::RequiredLinearHistory));
    repo.push_files("feature", &[("f.txt", "f\n")], "Feature", "alice");
    repo.push_files("main", &[("m.txt", "m\n")], "Main", "bob");
    // A merge commit built elsewhere, then offered to main.
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "feature", "head": "main"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let merge = r.body["sha"].as_str().unwrap().to_owned();
    let r = move_main(&c, &merge, false).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("This branch must not contain merge commits.")
    );
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "feature"}),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);

    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let url = format!("/repos/acme/widgets/pulls/{}/merge", pr.body["number"]);
    let r = c
        .call("PUT", &url, Some(json!({"merge_method": "merge"})))
        .await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Merge commits are not allowed on this repository.")
    );
    let r = c
        .call("PUT", &url, Some(json!({"merge_method": "squash"})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let main = repo.branch_sha("main").unwrap();
    let landed = c.get(&format!("/repos/acme/widgets/commits/{main}")).await;
    assert_eq!(landed.body["parents"].as_array().unwrap().len(), 1);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn force_pushes_and_deletions_are_refused_where_the_rules_say_so() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(
        Ruleset::new("keep main")
            .rule(Rule::NonFastForward)
            .rule(Rule::Deletion),
    );
    let first = repo.branch_sha("main").unwrap();
    let next = ahead(&repo);
    // A fast-forward is no force-push, even when `force` is set.
    let r = move_main(&c, &next, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = move_main(&c, &first, true).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(message(&r), violation("Cannot force-push to this branch"));
    let r = c.call("DELETE", MAIN_REF, None).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(message(&r), violation("Cannot delete this branch"));
    assert_eq!(repo.branch_sha("main"), Some(next));
    // Other branches are not targeted.
    let r = c
        .call("DELETE", "/repos/acme/widgets/git/refs/heads/feature", None)
        .await;
    assert_eq!(r.status, 204);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_creation_rule_refuses_creating_a_matching_branch_and_nothing_else() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(
        Ruleset::new("no batch branches")
            .on(&["taskgate/ship-batch-*"])
            .rule(Rule::Creation),
    );
    let main = repo.branch_sha("main").unwrap();
    let create = |name: &str| json!({ "ref": format!("refs/heads/{name}"), "sha": main });
    let r = c
        .call(
            "POST",
            "/repos/acme/widgets/git/refs",
            Some(create("taskgate/ship-batch-1")),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Cannot create ref due to creations being restricted.")
    );
    assert_eq!(repo.branch_sha("taskgate/ship-batch-1"), None);
    let r = c
        .call(
            "POST",
            "/repos/acme/widgets/git/refs",
            Some(create("taskgate/ship-1")),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn reviews_and_a_merge_queue_refuse_a_pull_requests_merge() {
    let (gh, repo, c) = setup().await;
    let reviews = repo.with_ruleset(Ruleset::new("reviews").rule(Rule::approvals(1)));
    ahead(&repo);
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let url = format!("/repos/acme/widgets/pulls/{}/merge", pr.body["number"]);
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("At least 1 approving review is required by reviewers with write access.")
    );
    repo.without_ruleset(reviews);
    repo.with_ruleset(Ruleset::new("queue").rule(Rule::MergeQueue));
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("Changes must be made through the merge queue")
    );
    let pull = c
        .get(&format!("/repos/acme/widgets/pulls/{}", pr.body["number"]))
        .await;
    assert_eq!(pull.body["merged"], Value::Bool(false));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_collaborators_own_merge_is_held_to_the_bases_required_checks_and_a_draft_refused() {
    let (gh, repo, c) = setup().await;
    gh.add_user("claude[bot]", 41, "write");
    repo.with_ruleset(
        Ruleset::new("story gates")
            .on(&["refs/heads/taskgate/story-*"])
            .rule(Rule::required_checks(&["taskgate/test"])),
    );
    repo.push_files("taskgate/story-1", &[("s.txt", "s\n")], "Story", "alice");
    let head = repo.push_files("task", &[("t.txt", "t\n")], "Task", "alice");
    let pr = repo.create_pull("task", "taskgate/story-1", "Task", "alice");
    repo.set_draft(pr, true, "alice");

    let draft = repo.merge_pull_as(pr, "claude[bot]");
    assert_eq!(draft, Err("Pull Request is still a draft".to_owned()));

    repo.set_draft(pr, false, "claude[bot]");
    check(&c, &head, "taskgate/test", Some("failure")).await;
    let red = repo.merge_pull_as(pr, "claude[bot]").unwrap_err();
    assert_eq!(
        red,
        violation("Required status check \"taskgate/test\" is failing.")
    );
    assert!(!repo.pulls()[0].merged);

    check(&c, &head, "taskgate/test", Some("success")).await;
    repo.merge_pull_as(pr, "claude[bot]")
        .expect("green: merged");
    assert!(repo.pulls()[0].merged);
}

#[tokio::test]
async fn auto_merge_waits_for_the_required_checks_and_is_refused_when_nothing_is_pending() {
    let (gh, repo, c) = setup().await;
    gh.add_user("claude[bot]", 41, "write");
    repo.push_files("taskgate/story-1", &[("s.txt", "s\n")], "Story", "alice");
    let head = repo.push_files("task", &[("t.txt", "t\n")], "Task", "alice");
    let pr = repo.create_pull("task", "taskgate/story-1", "Task", "alice");
    repo.set_draft(pr, true, "alice");
    assert_eq!(
        repo.enable_auto_merge_as(pr, "claude[bot]"),
        Err("Pull request Pull request is in draft status".to_owned())
    );
    repo.set_draft(pr, false, "claude[bot]");
    // No rule: it could merge now, so GitHub refuses to wait.
    assert_eq!(
        repo.enable_auto_merge_as(pr, "claude[bot]"),
        Err("Pull request Pull request is in clean status".to_owned())
    );
    check(&c, &head, "taskgate/test", Some("failure")).await;
    assert_eq!(
        repo.enable_auto_merge_as(pr, "claude[bot]"),
        Err("Pull request Pull request is in unstable status".to_owned()),
        "a failing check nobody requires"
    );

    repo.with_ruleset(
        Ruleset::new("story gates")
            .on(&["refs/heads/taskgate/story-*"])
            .rule(Rule::required_checks(&["taskgate/test"])),
    );
    repo.enable_auto_merge_as(pr, "claude[bot]")
        .expect("a required check is failing: it waits");
    check(&c, &head, "taskgate/test", Some("failure")).await;
    assert!(!repo.pulls()[0].merged, "not while the check is red");
    check(&c, &head, "taskgate/test", Some("success")).await;
    let pull = repo.pulls()[0].clone();
    assert!(pull.merged, "merged once the required check passed");
    assert_eq!(pull.merged_by.as_deref(), Some("claude[bot]"));
}
