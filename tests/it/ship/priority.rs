//! Priorities in the ship queue (issue 31 item 6): `/taskgate ship
//! --priority high` from a maintainer puts a story ahead of the normal
//! stories waiting; a sender with less than `maintain` is refused and the
//! story is not queued. The fake GitHub's commits are real: what lands is
//! each story's proven merge commit, in the queue's order.

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::origin::git;
use crate::support::shipped::Shipped;

/// Plain ships need only `write` here, so the test shows that a priority
/// needs `maintain` whatever `ship` itself needs.
const CONFIG: &str = "ship_label: ship\ncommands:\n  permissions:\n    ship: write\n";

/// The first story's check: held at `hold` once `hold-proof` is on the
/// default branch (pushed just before it ships, so its task's own run is
/// quick), until the test has queued three more ships behind its proof
/// and released it.
fn held_check(hold: &Hold) -> String {
    format!("if [ -f hold-proof ]; then {}; fi\nexit 0\n", hold.wait())
}

/// Another one-task story in the repository, its task done and its story
/// PR open: its story issue and story PR.
async fn another_story(sh: &Shipped, name: &str) -> (u64, u64) {
    let (issue, branch) = sh
        .story_done(name, &format!("Story {name}"), &format!("Work {name}"))
        .await;
    eventually("the story is shippable", || async {
        sh.state_of(issue).await == "shippable"
    })
    .await;
    (issue, sh.pull_of(&branch).unwrap().number)
}

/// The dashboard's page, as the API token's holder sees it.
async fn dashboard(sh: &Shipped) -> String {
    let res = reqwest::Client::new()
        .get(format!("{}/", sh.s.app.url))
        .bearer_auth("api-token")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.unwrap()
}

/// The story issues of the ship commits on main, oldest first.
fn landed_order(sh: &Shipped) -> Vec<u64> {
    let log = git(
        &sh.s.origin.bare(),
        &["log", "--first-parent", "--format=%s", &sh.main_head()],
    );
    log.lines()
        .rev()
        .filter_map(|s| s.strip_prefix("Ship story #"))
        .map(|s| s.split(':').next().unwrap().parse().unwrap())
        .collect()
}

/// taskgate's last comment on the story issue, without its marker.
fn last_reply(sh: &Shipped) -> String {
    let all = sh.s.app.bot_comments(sh.story_issue);
    let last = all.last().expect("a reply");
    last.lines()
        .filter(|l| !l.starts_with("<!--"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`CONFIG`] through the one-story queue, whose order this test watches
/// (the train's is `ship::train::a_high_priority_story_overtakes_…`).
const SERIAL: &str =
    "ship_label: ship\nship_train: false\ncommands:\n  permissions:\n    ship: write\n";

#[tokio::test]
async fn a_later_high_priority_ship_overtakes_the_normal_stories_waiting() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(SERIAL)
        .check(&held_check(&hold))
        .shippable()
        .await;
    let (b, _) = another_story(&sh, "bravo").await;
    let (c, _) = another_story(&sh, "charlie").await;
    let (d, _) = another_story(&sh, "delta").await;

    // The first story proves, held, while three more are shipped.
    sh.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate ship")
        .await;
    eventually("the first story proves", || async {
        sh.state().await == "proving"
    })
    .await;
    for issue in [b, c] {
        sh.s.app.comment(issue, "octocat", "/taskgate ship").await;
        sh.s.app.settle().await;
    }
    sh.s.app
        .comment(d, "octocat", "/taskgate ship --priority high")
        .await;
    sh.s.app.settle().await;
    for issue in [b, c, d] {
        assert_eq!(sh.state_of(issue).await, "queued", "#{issue}");
    }
    assert_eq!(sh.state().await, "proving", "all three queued behind it");
    // The API shows the queue in the order it lands.
    let (status, q) = sh
        .api(
            "GET",
            "/api/queue?repo=octo-org/hello-world",
            Some("api-token"),
        )
        .await;
    assert_eq!(status, 200, "{q}");
    let rows = q["queue"].as_array().unwrap();
    let column = |key: &str| -> Vec<String> { rows.iter().map(|r| r[key].to_string()).collect() };
    let issues = [sh.story_issue, d, b, c].map(|n| n.to_string());
    assert_eq!(column("issue"), issues, "{q}");
    assert_eq!(column("position"), ["1", "2", "3", "4"]);
    assert_eq!(
        column("state"),
        [r#""proving""#, r#""queued""#, r#""queued""#, r#""queued""#]
    );
    assert_eq!(
        column("priority"),
        [r#""normal""#, r#""high""#, r#""normal""#, r#""normal""#]
    );
    assert_eq!(rows[1]["title"], "Story delta");
    assert!(rows[0]["proof"]["base"].is_string(), "{q}");
    assert!(rows
        .iter()
        .all(|r| r["waiting_seconds"].is_u64() && r["queued_at"].is_string()));
    // So does the dashboard, with the priority.
    let page = dashboard(&sh).await;
    let delta = format!("<td>#{d} Story delta</td>");
    let row = page
        .lines()
        .find(|l| l.contains(&delta))
        .expect("delta's row");
    assert!(row.contains("</td><td>high</td>"), "{row}");
    let told = sh.s.app.bot_comments(d).join("\n");
    assert!(
        told.contains("Priority high: it goes ahead of the normal stories waiting. One story ships before it."),
        "{told}"
    );

    hold.release();
    for issue in [sh.story_issue, d, b, c] {
        eventually("the story landed", || async {
            let st = sh.state_of(issue).await;
            if st != "queued" && st != "proving" && st != "shipping" && st != "deployed" {
                panic!("#{issue} {st}: {}", sh.s.app.bot_comments(issue).join("\n"));
            }
            st == "deployed"
        })
        .await;
    }
    sh.s.app.settle().await;
    assert_eq!(
        landed_order(&sh),
        [sh.story_issue, d, b, c],
        "the proof under way finished; the high story went next"
    );
    // Each landed commit is the tree its proof passed on.
    let head = sh.main_head();
    let proofs: Vec<_> =
        sh.s.checks(&head)
            .into_iter()
            .filter(|c| c.name.starts_with("taskgate/ship/"))
            .collect();
    assert!(
        !proofs.is_empty()
            && proofs
                .iter()
                .all(|c| c.conclusion.as_deref() == Some("success"))
    );

    // The dashboard's last day counts the four landings.
    let page = dashboard(&sh).await;
    assert!(
        page.contains("4 landed in the last 24 h, 4 in all"),
        "{page}"
    );
    assert!(page.contains("<svg class=\"queue-chart\""), "{page}");
    assert!(page.contains("No story is waiting to land."), "{page}");

    // The audit log has the priority with the ship request.
    let (_, log) = sh
        .api(
            "GET",
            "/api/audit?repo=octo-org/hello-world",
            Some("api-token"),
        )
        .await;
    let reasons: Vec<(String, serde_json::Value)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "ship")
        .map(|e| {
            (
                e["object"].as_str().unwrap().to_owned(),
                e["reason"].clone(),
            )
        })
        .collect();
    let of = |issue: u64| {
        reasons
            .iter()
            .find(|(o, _)| o.starts_with(&format!("story #{issue} ")))
            .map(|(_, r)| r.clone())
    };
    assert_eq!(of(d), Some("priority high".into()), "{log}");
    assert_eq!(of(b), Some(serde_json::Value::Null), "{log}");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_priority_from_a_sender_without_maintain_is_refused_and_nothing_is_queued() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.s.app.fake.add_user("wanda", 583_232, "write");
    sh.s.app
        .comment(sh.story_issue, "wanda", "/taskgate ship --priority hotfix")
        .await;
    sh.s.app.settle().await;
    assert_eq!(sh.state().await, "shippable", "not queued");
    insta::assert_snapshot!(last_reply(&sh), @"@wanda `/taskgate ship --priority` needs maintain permission on the repository; @wanda has write.");
    // A bad priority is explained and changes nothing either.
    sh.s.app
        .comment(
            sh.story_issue,
            "octocat",
            "/taskgate ship --priority urgent",
        )
        .await;
    sh.s.app.settle().await;
    assert_eq!(sh.state().await, "shippable");
    insta::assert_snapshot!(last_reply(&sh), @"@octocat Could not run 'ship': 'urgent' is not a priority ('high', 'hotfix' or 'normal'). `/taskgate help` shows how each command is used.");
    assert_eq!(sh.merges(), 0);
}

#[tokio::test]
async fn the_queue_api_needs_a_repository_it_knows() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    let (status, empty) = sh
        .api(
            "GET",
            "/api/queue?repo=octo-org/hello-world",
            Some("api-token"),
        )
        .await;
    assert_eq!(
        (status, empty["queue"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    let answers = [
        sh.api("GET", "/api/queue", Some("api-token")).await,
        sh.api("GET", "/api/queue?repo=not-a-repo", Some("api-token"))
            .await,
        sh.api(
            "GET",
            "/api/queue?repo=octo-org/elsewhere",
            Some("api-token"),
        )
        .await,
        sh.api("GET", "/api/queue?repo=octo-org/hello-world", None)
            .await,
    ];
    let said: Vec<String> = answers
        .iter()
        .map(|(status, body)| format!("{status} {body}"))
        .collect();
    insta::assert_snapshot!(said.join("\n"), @r#"
    400 {"error":"`?repo=owner/name` is required: the queue is a repository's"}
    400 {"error":"`not-a-repo` is not of the form owner/name"}
    404 {"error":"taskgate has no story in this repository"}
    401 {"error":"a valid `Authorization: Bearer <TASKGATE_API_TOKEN>` header is required"}
    "#);
}

/// The ship queue's series on `/metrics`, by name (`taskgate_ship_…`).
async fn queue_series(sh: &Shipped) -> Vec<String> {
    let text = sh.s.app.metrics().await;
    text.lines()
        .filter(|l| {
            [
                "taskgate_ship_landed",
                "taskgate_ship_proof_runs_total",
                "taskgate_ship_queue_wait_seconds_count",
                "taskgate_ship_queue_wait_seconds_bucket{le=\"+Inf\"}",
            ]
            .iter()
            .any(|name| l.starts_with(name))
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_queue_figures_on_metrics_move_as_stories_land() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    insta::assert_snapshot!(queue_series(&sh).await.join("\n"), @r#"
    taskgate_ship_queue_wait_seconds_count 0
    taskgate_ship_queue_wait_seconds_bucket{le="+Inf"} 0
    taskgate_ship_landed_total 0
    taskgate_ship_landed_last_hour 0
    taskgate_ship_proof_runs_total 0
    "#);
    sh.add_ship_label().await;
    sh.landed().await;
    let (_, second_pr) = another_story(&sh, "bravo").await;
    sh.repo().add_labels(second_pr, &["ship"], "octocat");
    eventually("the second story landed", || async {
        sh.repo()
            .pulls()
            .iter()
            .any(|p| p.number == second_pr && p.merged)
    })
    .await;
    sh.s.app.settle().await;
    insta::assert_snapshot!(queue_series(&sh).await.join("\n"), @r#"
    taskgate_ship_queue_wait_seconds_count 2
    taskgate_ship_queue_wait_seconds_bucket{le="+Inf"} 2
    taskgate_ship_landed_total 2
    taskgate_ship_landed_last_hour 2
    taskgate_ship_proof_runs_total 2
    "#);
}
