//! The ship train as the default would need it (issue 31): a repository
//! whose rules ask for another landing than a fast-forward ships one story
//! at a time and says why, and a car proven during a freeze waits, as the
//! one-story queue's proven story does. A batch branch GitHub refuses to
//! create turns the train off (the story ships alone, told why and the
//! fix); a batch build GitHub fails past the retries is built again.

use fakehub::{Rule, Ruleset};

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::shipped::Shipped;

const CONFIG: &str = "ship_label: ship\nship_train: true\n";

/// A check that passes at once on the task's commits and is held at
/// `hold` where the tree holds `NOTES.md` (pushed to the default branch
/// before the ship, so only the batch's proof has it): the proof runs
/// until the test, having looked at it proving (or frozen the
/// repository), releases it.
fn held_proof_check(hold: &Hold) -> String {
    format!("if [ -f NOTES.md ]; then {}; fi\nexit 0\n", hold.wait())
}

#[tokio::test]
async fn a_repository_whose_rules_require_the_story_pr_merged_ships_one_story_at_a_time_and_says_why(
) {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_proof_check(&hold))
        .shippable()
        .await;
    sh.repo().with_ruleset(
        Ruleset::new("main")
            .rule(Rule::pull_request())
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    // A tree the task never ran on, so the proof is a run of its own.
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    sh.add_ship_label().await;
    sh.story_told("the story says why", "Shipping one story at a time")
        .await;
    assert_eq!(sh.state().await, "proving", "the one-story queue proves it");
    let (status, q) = sh
        .api(
            "GET",
            "/api/queue?repo=octo-org/hello-world",
            Some("api-token"),
        )
        .await;
    assert_eq!(status, 200, "{q}");
    insta::assert_snapshot!(q["queue"][0]["ships_serially_because"], @r#""the default branch's rules require each story PR to be merged""#);
    hold.release();
    sh.landed().await;
    let story_pr = format!("/pulls/{}/merge", sh.story_pr().unwrap().number);
    let merged =
        sh.s.app
            .fake
            .requests()
            .into_iter()
            .any(|r| r.method == "PUT" && r.path.ends_with(&story_pr) && r.status == 200);
    assert!(merged, "the story PR was merged, as the rules ask");
    let train = train_of(&sh).await;
    assert_eq!(train.stats.proof_runs, 0, "no batch was proven");
    let notes: Vec<String> =
        sh.s.app
            .bot_comments(sh.story_issue)
            .into_iter()
            .filter(|c| c.contains("Shipping one story at a time"))
            .collect();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0], @r"
    Shipping one story at a time, not in batches (`ship_train`): the default branch's rules require each story PR to be merged, and a batch lands only as one fast-forward to the commit its proof passed on. This story is proven on the default branch's head and lands the way the rules ask. To ship in batches, let taskgate move the default branch itself (the app on the rule's bypass list); `ship_train: false` in `.github/taskgate.yml` ships one story at a time without this note.

    <!-- taskgate:ship-serial -->
    ");
    assert_eq!(sh.state().await, "deployed");
}

#[tokio::test]
async fn a_batch_proven_during_a_freeze_waits_and_lands_after_the_unfreeze() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_proof_check(&hold))
        .shippable()
        .await;
    // A tree the task never ran on, so the proof is a run of its own (a
    // held one: the check waits where `NOTES.md` is).
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    sh.add_ship_label().await;
    eventually("the batch's proof runs", || async {
        sh.repo()
            .branch_sha("taskgate/ship-batch-1")
            .is_some_and(|tip| !sh.s.checks(&tip).is_empty())
    })
    .await;
    let base = sh.main_head();
    sh.story_told(
        "the story is told its batch proves",
        "Proving in ship batch 1",
    )
    .await;
    let proving: Vec<String> =
        sh.s.app
            .bot_comments(sh.story_issue)
            .into_iter()
            .filter(|c| c.contains("Proving in ship batch"))
            .collect();
    assert_eq!(proving.len(), 1, "once per car: {proving:#?}");
    let tip = sh.repo().branch_sha("taskgate/ship-batch-1").unwrap();
    let pr = sh.story_pr().unwrap().number;
    let note = proving[0]
        .replace(&base[..7], "<base>")
        .replace(&tip[..7], "<commit>")
        .replace(
            &format!("#{} (PR #{pr})", sh.story_issue),
            "#<issue> (PR #<pr>)",
        );
    insta::assert_snapshot!(note, @r"
    Proving in ship batch 1: `taskgate/ship-batch-1` merges the story #<issue> (PR #<pr>) with the base at `<base>`; the gates run on `<commit>`, and only that commit lands.

    <!-- taskgate:proving-batch car=1 -->
    ");
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate freeze incident")
        .await;
    sh.s.app.settle().await;
    // Proven while frozen.
    hold.release();
    sh.story_told("the proven story waits", "but nothing lands while")
        .await;
    assert!(!sh.story_pr().unwrap().merged, "nothing lands while frozen");
    assert_eq!(sh.merges(), 0, "the default branch did not move");
    assert_eq!(sh.state().await, "queued");
    let note =
        sh.s.app
            .bot_comments(sh.story_issue)
            .into_iter()
            .find(|c| c.contains("but nothing lands while"))
            .unwrap();
    // The freeze's start is the wall clock's: masked.
    let commit = sh.repo().branch_sha("taskgate/ship-batch-1").unwrap();
    let since = note.find(" since ").unwrap();
    let reason = note.find(": incident").unwrap();
    let note = format!("{}{}", &note[..since], &note[reason..]).replace(&commit[..7], "<commit>");
    insta::assert_snapshot!(note, @r"
    Proven in ship batch 1 at `<commit>`, but nothing lands while the repository is frozen (frozen by @octocat: incident). The story waits in the queue, and its batch is formed and proven again on the base as it is when the freeze lifts.

    <!-- taskgate:proven-frozen commit=<commit> -->
    ");

    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate unfreeze")
        .await;
    sh.landed().await;
    assert_eq!(sh.merges(), 1);
    let landed = sh.main_head();
    let proven = sh.repo().commit(&landed).unwrap().tree;
    let tip = sh.repo().branch_sha("taskgate/ship-batch-1").unwrap();
    assert_green_ship_gate(&sh, &landed);
    assert_eq!(proven, sh.repo().commit(&tip).unwrap().tree);
}

#[tokio::test]
async fn a_batch_branch_github_will_not_create_turns_the_train_off_and_the_story_ships_alone_told_why(
) {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.repo().with_ruleset(
        Ruleset::new("batch branches")
            .on(&["taskgate/ship-batch-*"])
            .rule(Rule::Creation),
    );
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    sh.add_ship_label().await;
    sh.story_told(
        "the story is told why it ships alone",
        "GitHub refused to create the batch branch",
    )
    .await;
    sh.landed().await;
    assert_eq!(sh.state().await, "deployed");
    assert_eq!(sh.repo().branch_sha("taskgate/ship-batch-1"), None);
    let landed = sh.main_head();
    assert_green_ship_gate(&sh, &landed);
    let train = train_of(&sh).await;
    assert!(
        train.cars.is_empty() && train.waiting.is_empty(),
        "{train:?}"
    );
    let off = train.off.expect("the train stepped aside");
    assert_eq!(off.branch, "taskgate/ship-batch-1");
    // `GET /api/queue` says so, with until when.
    let (status, q) = (sh.api(
        "GET",
        "/api/queue?repo=octo-org/hello-world",
        Some("api-token"),
    ))
    .await;
    assert_eq!(status, 200, "{q}");
    assert_eq!(q["train_off"]["branch"], "taskgate/ship-batch-1", "{q}");
    assert!(q["train_off"]["until"].is_string(), "{q}");
    // The dashboard says so too.
    let page = (reqwest::Client::new().get(format!("{}/", sh.s.app.url)))
        .bearer_auth("api-token")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Ship batches off") && page.contains("taskgate/ship-batch-1"),
        "{page}"
    );
    let notes: Vec<String> =
        sh.s.app
            .bot_comments(sh.story_issue)
            .into_iter()
            .filter(|c| c.contains("GitHub refused to create the batch branch"))
            .collect();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0], @r"
    Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused to create the batch branch `taskgate/ship-batch-1` (GitHub answered 422: Repository rule violations found: Cannot create ref due to creations being restricted). To prove stories in batches, let taskgate create and update `taskgate/ship-batch-*`: add the taskgate app to the bypass list of the ruleset that restricts those branches. Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.

    <!-- taskgate:ship-serial -->
    ");
}

#[tokio::test]
async fn a_batch_github_fails_to_build_past_the_retries_is_built_again_and_lands() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    // Every attempt of the first batch's build (the executor gives up
    // after 5); the next batch's build goes through.
    sh.s.app.fake.inject(
        "POST /repos/{owner}/{repo}/merges",
        fakehub::Fault::Status {
            status: 503,
            times: 5,
        },
    );
    sh.add_ship_label().await;
    sh.landed().await;
    assert_eq!(sh.state().await, "deployed");
    let landed = sh.main_head();
    let tip = sh.repo().branch_sha("taskgate/ship-batch-2").unwrap();
    assert_eq!(landed, tip, "the batch built again landed");
    assert_green_ship_gate(&sh, &landed);
    let train = train_of(&sh).await;
    assert_eq!(train.off, None, "a failure is not a refusal");
    assert_eq!(train.stats.landed, 1, "{:?}", train.stats);
}

/// What landed at `landed` carries a green `taskgate/ship-gate`.
fn assert_green_ship_gate(sh: &Shipped, landed: &str) {
    let green = |c: &fakehub::CheckRun| {
        c.name == "taskgate/ship-gate" && c.conclusion.as_deref() == Some("success")
    };
    assert!(
        sh.s.checks(landed).iter().any(green),
        "what landed carries a green ship gate"
    );
}

/// The repository's ship train as stored.
async fn train_of(sh: &Shipped) -> taskgate_core::ship::Train {
    let repo = taskgate_core::ids::RepoName::parse(crate::support::REPO).unwrap();
    sh.s.app.store().ship_train(&repo).await.unwrap()
}
