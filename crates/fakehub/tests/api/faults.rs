use std::time::Duration;

use fakehub::{Fault, SecondaryAnswer};
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
async fn the_hourly_secondary_limit_counts_on_githubs_clock() {
    let (gh, repo, c) = setup().await;
    // GitHub: no more than 80 a minute and 500 an hour; here 3 and 5.
    gh.set_secondary_limit(3);
    gh.set_secondary_hourly_limit(5);
    let n = repo.create_issue("t", "b", "alice");
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(c.post(&url, json!({"body": "x"})).await.status);
    }
    assert_eq!(statuses, [201, 201, 201, 403], "the minute's limit");
    // A minute later the minute has room, the hour two writes more.
    gh.advance(Duration::from_secs(61));
    statuses.clear();
    for _ in 0..3 {
        statuses.push(c.post(&url, json!({"body": "x"})).await.status);
    }
    assert_eq!(statuses, [201, 201, 403], "the hour's limit");
    let r = c.post(&url, json!({"body": "x"})).await;
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    // The first write leaves the hour 3600 s after it was made.
    assert!((3_530..=3_540).contains(&wait), "{wait}");
    gh.advance(Duration::from_secs(wait));
    assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 201);
}

#[tokio::test]
async fn a_secondary_limit_may_answer_without_retry_after_or_as_submitted_too_quickly() {
    let (gh, repo, c) = setup().await;
    gh.set_secondary_limit(1);
    let n = repo.create_issue("t", "b", "alice");
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    assert_eq!(c.post(&url, json!({"body": "x"})).await.status, 201);

    gh.set_secondary_answer(SecondaryAnswer::WithoutRetryAfter);
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(r.status, 403);
    assert!(r.headers.get("retry-after").is_none());
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("You have exceeded a secondary rate limit"));

    gh.set_secondary_answer(SecondaryAnswer::SubmittedTooQuickly);
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.body["errors"][0]["message"], "was submitted too quickly");
    let issues = c
        .post("/repos/acme/widgets/issues", json!({"title": "t"}))
        .await;
    assert_eq!(issues.status, 422);
    assert_eq!(repo.comments(n).len(), 1, "nothing made over the limit");
    assert_eq!(repo.issues().len(), 1);
    // Writes that create no content get the 403.
    let labels = c
        .post(
            &format!("/repos/acme/widgets/issues/{n}/labels"),
            json!({"labels": ["x"]}),
        )
        .await;
    assert_eq!(labels.status, 403);
}

#[tokio::test]
async fn secondary_faults_without_retry_after_and_submitted_too_quickly() {
    let (gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    let url = format!("/repos/acme/widgets/issues/{n}/comments");
    gh.inject(COMMENTS, Fault::SecondaryRateLimitWithoutRetryAfter);
    gh.inject(COMMENTS, Fault::SubmittedTooQuickly);
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(r.status, 403);
    assert!(r.headers.get("retry-after").is_none());
    let r = c.post(&url, json!({"body": "x"})).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.body["errors"][0]["message"], "was submitted too quickly");
    assert!(repo.comments(n).is_empty());
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

/// `HoldAfterApply`: the check run exists (listed, its webhook sent)
/// while its creator still waits for the answer, until the test releases.
#[tokio::test]
async fn a_held_answer_comes_once_released_and_the_write_is_applied_meanwhile() {
    let (gh, repo, c) = setup().await;
    let sha = repo.branch_sha("main").unwrap();
    let hold = fakehub::Hold::new();
    gh.inject(
        "POST /repos/{owner}/{repo}/check-runs",
        Fault::HoldAfterApply(hold.clone()),
    );
    let create = tokio::spawn(async move {
        c.post(
            "/repos/acme/widgets/check-runs",
            json!({"name": "unit", "head_sha": sha}),
        )
        .await
    });
    hold.reached().await;
    assert_eq!(repo.check_runs().len(), 1, "applied before the answer");
    assert!(!create.is_finished(), "the answer is held");
    hold.release();
    let r = create.await.unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.body["id"], json!(repo.check_runs()[0].id));
}
