use serde_json::json;

use crate::*;

#[tokio::test]
async fn issue_comment_and_reaction_lifecycle() {
    let (gh, repo, c) = setup().await;
    let r = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "Story", "body": "b", "labels": ["taskgate:story"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let number = r.body["number"].as_u64().unwrap();
    assert_eq!(r.body["user"]["login"], "taskgate-test[bot]");
    assert_eq!(r.body["user"]["type"], "Bot");
    assert_eq!(r.body["labels"][0]["name"], "taskgate:story");
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{number}/comments"),
            json!({"body": "hello"}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["performed_via_github_app"]["id"], gh.app_id());
    assert_eq!(r.body["user"]["type"], "Bot");
    let comment_id = r.body["id"].as_u64().unwrap();
    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/issues/comments/{comment_id}"),
            Some(json!({"body": "edited"})),
        )
        .await;
    assert_eq!((r.status, r.body["body"].clone()), (200, json!("edited")));
    let react = format!("/repos/acme/widgets/issues/comments/{comment_id}/reactions");
    assert_eq!(
        c.post(&react, json!({"content": "rocket"})).await.status,
        201
    );
    assert_eq!(
        c.post(&react, json!({"content": "rocket"})).await.status,
        200
    );
    assert_eq!(
        c.post(&react, json!({"content": "party"})).await.status,
        422
    );
    let r = c
        .call(
            "PATCH",
            &format!("/repos/acme/widgets/issues/{number}"),
            Some(json!({"state": "closed", "state_reason": "completed"})),
        )
        .await;
    assert_eq!((r.status, r.body["state"].clone()), (200, json!("closed")));
    let issue = repo.issue(number).unwrap();
    assert_eq!(issue.state, "closed");
    assert_eq!(repo.comments(number)[0].body, "edited");
    assert_eq!(repo.comments(number)[0].reactions.len(), 1);
    // A human's comment, as the bot would then read it.
    let human = repo.add_comment(number, "/taskgate retry", "alice");
    let r = c
        .get(&format!("/repos/acme/widgets/issues/comments/{}", human.id))
        .await;
    assert_eq!(
        (
            r.body["user"]["login"].clone(),
            r.body["user"]["type"].clone()
        ),
        (json!("alice"), json!("User"))
    );
    assert_eq!(
        gh.contract_violations().len(),
        1,
        "the bad reaction content: {:?}",
        gh.contract_violations()
    );
}

#[tokio::test]
async fn invalid_body_is_422_and_a_contract_violation() {
    let (gh, repo, c) = setup().await;
    let r = c
        .post("/repos/acme/widgets/issues", json!({"body": "no title"}))
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(r.body["message"], "Validation Failed");
    assert_eq!(
        r.body["errors"][0],
        json!({"resource": "Issue", "code": "missing_field", "field": "title"})
    );
    assert!(repo.issues().is_empty());
    let n = repo.create_issue("t", "b", "alice");
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{n}/comments"),
            json!({"body": "x".repeat(65537)}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["errors"][0]["field"].clone()),
        (422, json!("body"))
    );
    let v = gh.contract_violations();
    assert_eq!(v.len(), 1);
    assert!(
        v[0].contains("body.title: required property is missing"),
        "{v:?}"
    );
    // A route outside the contract subset is 404 and a violation too.
    assert_eq!(
        c.get("/repos/acme/widgets/issues/1/timeline").await.status,
        404
    );
    assert!(gh.contract_violations()[1].starts_with(
        "route not in the contract subset: GET /repos/acme/widgets/issues/1/timeline"
    ));
}

#[tokio::test]
async fn comments_paginate_with_a_link_header() {
    let (_gh, repo, c) = setup().await;
    let n = repo.create_issue("t", "b", "alice");
    for i in 0..5 {
        repo.add_comment(n, &format!("c{i}"), "alice");
    }
    let r = c
        .get(&format!(
            "/repos/acme/widgets/issues/{n}/comments?per_page=2"
        ))
        .await;
    assert_eq!(r.body.as_array().unwrap().len(), 2);
    let link = r.headers["link"].to_str().unwrap().to_string();
    assert!(link.contains("page=2>; rel=\"next\""), "{link}");
    assert!(link.contains("page=3>; rel=\"last\""), "{link}");
    let r = c
        .get(&format!(
            "/repos/acme/widgets/issues/{n}/comments?per_page=2&page=3"
        ))
        .await;
    assert_eq!(r.body[0]["body"], "c4");
    let link = r.headers["link"].to_str().unwrap();
    assert!(
        link.contains("rel=\"prev\"") && !link.contains("rel=\"next\""),
        "{link}"
    );
}

#[tokio::test]
async fn labels_auto_create_and_reject_duplicates() {
    let (_gh, repo, c) = setup().await;
    let r = c
        .post(
            "/repos/acme/widgets/labels",
            json!({"name": "state:ready", "color": "#00ff00"}),
        )
        .await;
    assert_eq!((r.status, r.body["color"].clone()), (201, json!("00ff00")));
    let r = c
        .post("/repos/acme/widgets/labels", json!({"name": "state:ready"}))
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(r.body["errors"][0]["code"], "already_exists");
    let n = repo.create_issue("t", "b", "alice");
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{n}/labels"),
            json!({"labels": ["state:ready", "role:coder"]}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.as_array().unwrap().len(), 2);
    assert!(repo.labels().iter().any(|l| l.name == "role:coder"));
    let r = c
        .call(
            "DELETE",
            &format!("/repos/acme/widgets/issues/{n}/labels/state:ready"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(repo.issue(n).unwrap().labels, ["role:coder"]);
    let r = c
        .call(
            "DELETE",
            &format!("/repos/acme/widgets/issues/{n}/labels/nope"),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (404, json!("Label does not exist"))
    );
}

#[tokio::test]
async fn sub_issues_take_database_ids_and_dependencies_block() {
    let (_gh, repo, c) = setup().await;
    let parent = repo.create_issue("parent", "", "alice");
    let child = repo.create_issue("child", "", "alice");
    let child_id = repo.issue(child).unwrap().id;
    let url = format!("/repos/acme/widgets/issues/{parent}/sub_issues");
    // The number is not the id: GitHub answers 404 for an unknown id.
    assert_eq!(
        c.post(&url, json!({"sub_issue_id": child})).await.status,
        404
    );
    let r = c.post(&url, json!({"sub_issue_id": child_id})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["sub_issues_summary"]["total"], 1);
    assert_eq!(
        c.post(&url, json!({"sub_issue_id": child_id})).await.status,
        422
    );
    assert_eq!(c.get(&url).await.body[0]["number"], json!(child));
    let blocker_id = repo.issue(parent).unwrap().id;
    let r = c
        .post(
            &format!("/repos/acme/widgets/issues/{child}/dependencies/blocked_by"),
            json!({"issue_id": blocker_id}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(repo.issue(child).unwrap().blocked_by, [blocker_id]);
}

/// GitHub's documented limits ("Adding sub-issues"): up to 100 sub-issues
/// per parent, up to eight levels of nesting; each refused with 422.
#[tokio::test]
async fn sub_issues_stop_at_100_children_and_8_levels() {
    let (gh, repo, c) = setup().await;
    // A hundred links in a moment: past the secondary limit, which is not
    // what this test is about.
    gh.set_secondary_limit(1000);
    let link = |parent: u64, child: u64| {
        let c = &c;
        let id = repo.issue(child).unwrap().id;
        async move {
            let url = format!("/repos/acme/widgets/issues/{parent}/sub_issues");
            c.post(&url, json!({"sub_issue_id": id})).await
        }
    };
    // Levels 1 to 8 link; a ninth does not.
    let chain: Vec<u64> = (1..=9)
        .map(|n| repo.create_issue(&format!("level {n}"), "", "alice"))
        .collect();
    for pair in chain[..8].windows(2) {
        assert_eq!(link(pair[0], pair[1]).await.status, 201);
    }
    let r = link(chain[7], chain[8]).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["message"],
        "Sub-issues cannot be nested more than 8 levels deep"
    );
    // A tree two levels high cannot go under level 7 either.
    let top = repo.create_issue("top", "", "alice");
    let under = repo.create_issue("under", "", "alice");
    assert_eq!(link(top, under).await.status, 201);
    assert_eq!(link(chain[6], top).await.status, 422);
    assert_eq!(link(chain[5], top).await.status, 201);

    let parent = repo.create_issue("parent", "", "alice");
    for n in 0..100 {
        let child = repo.create_issue(&format!("child {n}"), "", "alice");
        assert_eq!(link(parent, child).await.status, 201);
    }
    let extra = repo.create_issue("child 101", "", "alice");
    let r = link(parent, extra).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["message"],
        "Parent issue has reached the maximum number of sub-issues (100)"
    );
}

/// GitHub says which App made an issue or comment: `performed_via_github_app`
/// is the App whose installation token wrote it (`user` its `<slug>[bot]`
/// account, type Bot), null for a person.
#[tokio::test]
async fn issues_and_comments_say_which_app_made_them() {
    let (gh, repo, c) = setup().await;
    let ours = c
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "Story", "body": "b"}),
        )
        .await;
    assert_eq!(ours.body["performed_via_github_app"]["id"], gh.app_id());
    assert_eq!(
        ours.body["performed_via_github_app"]["slug"],
        "taskgate-test"
    );
    let number = ours.body["number"].as_u64().unwrap();
    let other = repo.create_issue("Theirs", "b", "other-app[bot]");
    repo.add_comment(number, "by a person", "octocat");
    repo.add_comment(number, "by another app", "other-app[bot]");

    let theirs = c.get(&format!("/repos/acme/widgets/issues/{other}")).await;
    assert_eq!(theirs.body["user"]["type"], "Bot");
    let via = &theirs.body["performed_via_github_app"];
    assert_eq!(via["slug"], "other-app");
    assert_ne!(via["id"], gh.app_id());
    let comments = c
        .get(&format!("/repos/acme/widgets/issues/{number}/comments"))
        .await;
    let said: Vec<(String, String, Option<u64>)> = comments
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["user"]["login"].as_str().unwrap().to_owned(),
                c["user"]["type"].as_str().unwrap().to_owned(),
                c["performed_via_github_app"]["id"].as_u64(),
            )
        })
        .collect();
    assert_eq!(said[0], ("octocat".into(), "User".into(), None));
    assert_eq!(said[1].1, "Bot");
    assert!(said[1].2.is_some_and(|id| id != gh.app_id()), "{said:?}");
}
