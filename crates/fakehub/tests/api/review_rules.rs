//! A `pull_request` rule's reviews as GitHub judges a pull request's
//! merge by them (`state::approvals`): approvals counted by each
//! reviewer's latest verdict, classic protection's voice, code owners from
//! the base's `CODEOWNERS`, the last pusher's own approval, and approvals
//! a push makes stale.

use fakehub::{Rule, Ruleset};
use serde_json::json;

use crate::rules::{ahead, message, violation};
use crate::*;

/// A pull request from `feature` (one commit ahead, by `alice`) into
/// `main`, and its merge URL.
async fn feature_pull(repo: &fakehub::RepoHandle, c: &Client) -> (u64, String) {
    ahead(repo);
    let pr = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let number = pr.body["number"].as_u64().unwrap();
    (number, format!("/repos/acme/widgets/pulls/{number}/merge"))
}

#[tokio::test]
async fn required_approvals_count_each_reviewers_latest_verdict_and_a_dismissed_one_does_not() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(Ruleset::new("reviews").rule(Rule::approvals(2)));
    let (pr, url) = feature_pull(&repo, &c).await;
    let two = violation("At least 2 approving reviews is required by reviewers with write access.");
    let bob = repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    repo.submit_review(pr, "carol", "APPROVE", "").unwrap();
    // A comment after an approval keeps it; a change request replaces it.
    repo.submit_review(pr, "carol", "COMMENT", "nit").unwrap();
    repo.submit_review(pr, "carol", "REQUEST_CHANGES", "no")
        .unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!((r.status, message(&r)), (405, two.as_str()), "{}", r.body);
    repo.submit_review(pr, "carol", "APPROVE", "").unwrap();
    repo.dismiss_review(pr, bob, "maintainer", "stale").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!((r.status, message(&r)), (405, two.as_str()), "dismissed");
    repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn classic_protection_refuses_an_unapproved_merge_in_its_own_voice() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(Ruleset::classic("main").rule(Rule::approvals(1)));
    let (pr, url) = feature_pull(&repo, &c).await;
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        "At least 1 approving review is required by reviewers with write access."
    );
    repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_code_owner_rule_waits_for_an_owner_of_each_changed_path_from_the_bases_codeowners() {
    let (gh, repo, c) = setup().await;
    repo.with_file(
        "main",
        ".github/CODEOWNERS",
        "* @global\n/src/ @alice-owner @bob\n*.md @docs\n",
    );
    // A CODEOWNERS at the root is not read: `.github/` comes first.
    repo.with_file("main", "CODEOWNERS", "* @root-owner\n");
    repo.with_ruleset(Ruleset::new("owners").rule(Rule::approvals(1).code_owners()));
    repo.push_files(
        "feature",
        &[("src/lib.rs", "fn x() {}\n"), ("README.md", "read me\n")],
        "Feature",
        "alice",
    );
    let pr = repo.create_pull("feature", "main", "F", "alice");
    let url = format!("/repos/acme/widgets/pulls/{pr}/merge");
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("At least 1 approving review is required by reviewers with write access.\n\nWaiting on code owner review from docs, alice-owner, bob.")
    );
    // Someone else's approval meets the count, not the owners.
    repo.submit_review(pr, "carol", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(
        message(&r),
        violation("Waiting on code owner review from docs, alice-owner, bob.")
    );
    repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(
        message(&r),
        violation("Waiting on code owner review from docs.")
    );
    repo.submit_review(pr, "docs", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn the_last_pushers_own_approval_does_not_count_where_the_last_push_must_be_approved() {
    let (gh, repo, c) = setup().await;
    repo.with_ruleset(Ruleset::new("last push").rule(Rule::approvals(1).last_push()));
    let (pr, url) = feature_pull(&repo, &c).await;
    repo.push_files("feature", &[("g.txt", "g\n")], "More", "bob");
    repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(
        message(&r),
        violation("At least 1 approving review is required by reviewers with write access.")
    );
    repo.submit_review(pr, "carol", "APPROVE", "").unwrap();
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_push_dismisses_stale_approvals_only_where_the_rule_says_so() {
    let (gh, repo, c) = setup().await;
    let keep = repo.with_ruleset(Ruleset::new("keep").rule(Rule::approvals(1)));
    let (pr, url) = feature_pull(&repo, &c).await;
    let kept = repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    repo.push_files("feature", &[("g.txt", "g\n")], "More", "alice");
    assert_eq!(repo.reviews(pr)[0].state, "APPROVED", "no dismissal asked");
    repo.without_ruleset(keep);
    repo.with_ruleset(Ruleset::new("fresh").rule(Rule::approvals(1).dismiss_stale()));
    repo.push_files("feature", &[("h.txt", "h\n")], "More", "alice");
    let reviews = c
        .get(&format!("/repos/acme/widgets/pulls/{pr}/reviews"))
        .await;
    assert_eq!(reviews.body[0]["id"], kept);
    assert_eq!(reviews.body[0]["state"], "DISMISSED");
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 405, "{}", r.body);
    let head = repo.branch_sha("feature").unwrap();
    repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    assert_eq!(repo.reviews(pr)[1].commit_id, head);
    let r = c.call("PUT", &url, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    gh.assert_contract_kept();
}
