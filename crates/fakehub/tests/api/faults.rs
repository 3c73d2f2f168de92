use std::time::Duration;

use fakehub::Fault;
use serde_json::json;

use crate::*;

const COMMENTS: &str = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";

#[tokio::test]
async fn a_status_fault_answers_n_times_then_the_route_recovers() {
    let (gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    gh.inject(
        COMMENTS,
        Fault::Status {
            status: 500,
            times: 3,
        },
    );
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(c.post(&url, json!({"body": "x"})).await.status);
        }
        v
    };
    assert_eq!(statuses, [500, 500, 500, 201]);
    assert_eq!(repo.comments(n).len(), 1);
    assert_eq!(gh.writes().len(), 2, "token + one comment");
}

#[tokio::test]
async fn rate_limit_faults_carry_githubs_headers() {
    let (gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    gh.inject(
        COMMENTS,
        Fault::SecondaryRateLimit {
            retry_after_secs: 7,
        },
    );
    gh.inject(COMMENTS, Fault::PrimaryRateLimit { reset_in_secs: 30 });
    gh.inject(COMMENTS, Fault::Unauthorized);
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(
        (r.status, r.headers["retry-after"].to_str().unwrap()),
        (403, "7")
    );
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("You have exceeded a secondary rate limit"));
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(
        (
            r.status,
            r.headers["x-ratelimit-remaining"].to_str().unwrap()
        ),
        (403, "0")
    );
    let reset: i64 = r.headers["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > chrono::Utc::now().timestamp() + 20);
    assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 401);
    assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 201);
}

#[tokio::test]
async fn secondary_limit_counts_writes_per_installation() {
    let (gh, repo, c) = setup().await;
    gh.set_secondary_limit(3);
    let n = repo.create_issue("t", "b", "alice");
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    for _ in 0..3 {
        assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 201);
    }
    assert_eq!(c.get(&url).await.status, 200, "reads do not count");
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(
        (r.status, r.headers["retry-after"].to_str().unwrap()),
        (403, "60")
    );
    gh.set_secondary_limit(0);
    assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 201);
}

#[tokio::test]
async fn latency_after_apply_changes_github_before_answering() {
    let (gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    gh.inject(COMMENTS, Fault::LatencyAfterApply(Duration::from_secs(30)));
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    let slow = tokio::time::timeout(
        Duration::from_millis(500),
        c.post(&url, json!({"body": "accepted"})),
    );
    assert!(slow.await.is_err(), "the client gave up before the answer");
    assert_eq!(repo.comments(n)[0].body, "accepted");
    assert_eq!(gh.writes().last().unwrap().status, 201);
}

#[tokio::test]
async fn drop_connection_closes_without_answering_or_applying() {
    let (gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    gh.inject(COMMENTS, Fault::DropConnection);
    let url = format!("{}/repos/acme/widgets/issues/{n}/comments", c.base);
    let sent = c
        .http
        .post(&url)
        .header("authorization", &c.auth)
        .json(&json!({"body": "x"}))
        .send()
        .await;
    assert!(sent.is_err());
    assert!(repo.comments(n).is_empty());
    assert_eq!(gh.requests().last().unwrap().status, 0);
    assert_eq!(
        c.post(&url.replace(&c.base, ""), json!({"body": "x"}))
            .await
            .status,
        201
    );
}

/// `PushFirst`: someone else's push lands on the base between a client's
/// look and its merge, so GitHub merges the pull request into the moved
/// base (its `sha` guard only pins the head).
#[tokio::test]
async fn a_push_injected_before_a_merge_moves_the_base_under_it() {
    let (gh, repo, c) = setup().await;
    let head = repo.push_files("feature", &[("a.txt", "a\n")], "Feature", "alice");
    let n = repo.create_pull("feature", "main", "Feature", "alice");
    let looked = repo.branch_sha("main").unwrap();
    gh.inject(
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
        fakehub::Fault::PushFirst {
            branch: "main".into(),
            files: vec![("other.txt".into(), "other\n".into())],
            pusher: "bob".into(),
        },
    );
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(serde_json::json!({"sha": head})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let merged = repo.commit(r.body["sha"].as_str().unwrap()).unwrap();
    assert_ne!(merged.parents[0], looked, "the base had moved");
    assert_eq!(merged.parents[1], head);
    assert!(repo.file("main", "other.txt").is_some() && repo.file("main", "a.txt").is_some());
    gh.assert_contract_kept();
}
