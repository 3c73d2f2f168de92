//! `POST /graphql` through the whole pipeline: the real octocrab client,
//! installation-token auth, injected faults, recording, the secondary limit
//! and the GraphQL contract.

use fakehub::{Fault, RepoHandle};
use serde_json::{json, Value};

use crate::*;

/// The exact document taskgate sends to mark a draft ready.
const MARK_READY: &str = "mutation MarkReady($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";

/// A draft pull request in `acme/widgets`; its number and node id (read
/// over REST, as taskgate does).
async fn draft_pull(repo: &RepoHandle, c: &Client) -> (u64, String) {
    repo.with_file("feature", "a.txt", "a");
    let n = repo.create_pull("feature", "main", "Feature", "alice");
    repo.set_draft(n, true, "octocat");
    let r = c.get(&format!("/repos/acme/widgets/pulls/{n}")).await;
    (n, r.body["node_id"].as_str().unwrap().to_string())
}

fn is_draft(repo: &RepoHandle, n: u64) -> bool {
    repo.pulls().iter().find(|p| p.number == n).unwrap().draft
}

fn mark_ready(id: &str) -> Value {
    json!({"query": MARK_READY, "variables": {"id": id}})
}

#[tokio::test]
async fn octocrab_marks_a_draft_ready() {
    let (gh, repo, c) = setup().await;
    let (n, id) = draft_pull(&repo, &c).await;
    let oc = octocrab_for(&gh, 7);
    let data: Value = oc.graphql(&mark_ready(&id)).await.unwrap();
    assert_eq!(
        data,
        json!({"markPullRequestReadyForReview": {"pullRequest": {"number": n, "isDraft": false}}})
    );
    assert!(!is_draft(&repo, n));
    gh.assert_contract_kept();
    let last = gh.requests().pop().unwrap();
    assert_eq!(
        (
            last.method.as_str(),
            last.route.as_deref(),
            last.status,
            last.installation
        ),
        ("POST", Some("/graphql"), 200, Some(7))
    );
    assert_eq!(last.body["variables"]["id"], json!(id));

    // An id nothing answers to: GitHub's NOT_FOUND, an error for octocrab.
    let err = oc
        .graphql::<Value>(&mark_ready("PR_unknown"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Could not resolve to a node with the global id of 'PR_unknown'"),
        "{err}"
    );
    let r = c.post("/graphql", mark_ready("PR_unknown")).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["data"],
        json!({"markPullRequestReadyForReview": null})
    );
    assert_eq!(r.body["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(
        r.body["errors"][0]["path"],
        json!(["markPullRequestReadyForReview"])
    );
}

#[tokio::test]
async fn graphql_needs_an_installation_token() {
    let (gh, repo, c) = setup().await;
    let (n, id) = draft_pull(&repo, &c).await;
    for (auth, message) in [
        ("", "This endpoint requires you to be authenticated."),
        ("token ghs_nope", "Bad credentials"),
        (&format!("Bearer {}", jwt(&gh)) as &str, "Bad credentials"),
    ] {
        let anon = Client {
            http: http(),
            base: gh.url(),
            auth: auth.into(),
        };
        let r = anon.post("/graphql", mark_ready(&id)).await;
        assert_eq!((r.status, r.body["message"].as_str()), (401, Some(message)));
    }
    assert!(is_draft(&repo, n));
    let recorded = gh.requests();
    assert!(recorded
        .iter()
        .filter(|r| r.route.as_deref() == Some("/graphql"))
        .all(|r| r.status == 401));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn faults_are_injected_on_post_graphql() {
    let (gh, repo, c) = setup().await;
    let (n, id) = draft_pull(&repo, &c).await;
    gh.inject(
        "POST /graphql",
        Fault::Status {
            status: 502,
            times: 1,
        },
    );
    assert_eq!(c.post("/graphql", mark_ready(&id)).await.status, 502);
    assert!(is_draft(&repo, n), "an answered fault applies nothing");
    gh.inject("POST /graphql", Fault::StatusAfterApply { status: 500 });
    assert_eq!(c.post("/graphql", mark_ready(&id)).await.status, 500);
    assert!(!is_draft(&repo, n), "applied, then the answer was lost");
}

#[tokio::test]
async fn mutations_count_against_the_secondary_limit_queries_do_not() {
    let (gh, repo, c) = setup().await;
    let (_, id) = draft_pull(&repo, &c).await;
    gh.set_secondary_limit(1);
    let query = json!({"query": "query { __typename }"});
    let r = c.post("/graphql", query.clone()).await;
    assert_eq!(r.body, json!({"data": {"__typename": "Query"}}));
    assert_eq!(c.post("/graphql", mark_ready(&id)).await.status, 200);
    let r = c.post("/graphql", mark_ready(&id)).await;
    assert_eq!(r.status, 403);
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(c.post("/graphql", query).await.status, 200);
}

#[tokio::test]
async fn contract_mismatches_are_recorded_and_answered_as_graphql_errors() {
    let (gh, repo, c) = setup().await;
    let (n, id) = draft_pull(&repo, &c).await;
    let cases = [
        (
            MARK_READY.replace("pullRequestId:", "pullRequestNumber:"),
            json!({"id": id}),
        ),
        (MARK_READY.to_string(), json!({})),
        (MARK_READY.replace("ID!", "Int!"), json!({"id": 1})),
        (
            MARK_READY.replace("isDraft", "draftness"),
            json!({"id": id}),
        ),
    ];
    for (query, variables) in &cases {
        let before = gh.contract_violations().len();
        let r = c
            .post("/graphql", json!({"query": query, "variables": variables}))
            .await;
        assert_eq!(r.status, 200, "{query}");
        assert!(r.body.get("data").is_none(), "{query}: {}", r.body);
        assert!(r.body["errors"][0]["message"].is_string(), "{query}");
        let new = gh.contract_violations()[before..].to_vec();
        assert!(!new.is_empty(), "{query}");
        assert!(
            new.iter().all(|v| v.starts_with("graphql contract: ")),
            "{new:?}"
        );
    }
    assert!(is_draft(&repo, n));
}
