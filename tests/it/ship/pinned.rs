//! What lands is what was shipped (issue 28 item 1), end to end: a ship
//! pins the story head it was made on; a commit pushed straight onto a
//! queued story's branch (no task PR, no review) never reaches the default
//! branch on the strength of the earlier `ship`, and the story PR says so.

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::shipped::Shipped;

#[tokio::test]
async fn a_push_onto_a_queued_storys_branch_never_reaches_the_default_branch() {
    // The one-story queue (the train's twin: `ship::train::a_story_whose_
    // head_moved_while_it_waits_leaves_the_train_and_does_not_land`).
    // The first story's check is held in its proof (where `hold-proof`
    // is) for the second story to wait behind it while the push arrives.
    let hold = Hold::new();
    let check = format!("{}exit 0\n", hold.wait_where("hold-proof"));
    let a = Shipped::story()
        .config("ship_label: ship\nship_train: false\n")
        .check(&check)
        .shippable()
        .await;
    let (b_issue, b_branch) = a.second_story().await;
    let b_pr = a.pull_of(&b_branch).unwrap().number;
    let shipped_head = a.repo().branch_sha(&b_branch).unwrap();
    a.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;

    // A ships first and proves; B is shipped behind it and waits.
    a.add_ship_label().await;
    eventually("A proves", || async { a.state().await == "proving" }).await;
    a.repo().add_labels(b_pr, &["ship"], "octocat");
    eventually("B waits its turn", || async {
        a.state_of(b_issue).await == "queued"
    })
    .await;
    assert_eq!(a.state().await, "proving", "A still proves");

    // A writer pushes one more commit straight onto B's story branch.
    let sneaked =
        a.s.push_to(
            &b_branch,
            &[("sneaked.txt", "unreviewed\n")],
            "one more thing",
        )
        .await;
    hold.release();

    eventually("A landed", || async {
        a.story_pr().is_some_and(|p| p.merged)
    })
    .await;
    a.s.app.settle().await;
    eventually("B left the queue", || async {
        a.state_of(b_issue).await != "queued"
    })
    .await;
    a.s.app.settle().await;

    assert!(
        a.repo().file("main", "sneaked.txt").is_none(),
        "nothing of the push reached main"
    );
    assert!(!a.pull_of(&b_branch).unwrap().merged, "B did not land");
    assert_eq!(a.merges(), 1, "only A landed");
    let b_notes = a.s.app.bot_comments(b_pr).join("\n");
    assert!(
        b_notes.contains("the story changed after `ship`: ship again to land it"),
        "{b_notes}"
    );
    assert!(b_notes.contains(&shipped_head[..7]), "{b_notes}");
    assert!(b_notes.contains(&sneaked[..7]), "{b_notes}");
    assert_eq!(
        b_notes.matches("changed after `ship`").count(),
        1,
        "said once: {b_notes}"
    );
    let b_labels = a.repo().issue(b_pr).unwrap().labels;
    assert!(!b_labels.contains(&"ship".to_owned()), "{b_labels:?}");

    // The pushed commit came from no task PR: B is not shippable, and
    // shipping it again is refused, naming the commit.
    assert_eq!(a.state_of(b_issue).await, "building");
    a.repo().add_labels(b_pr, &["ship"], "octocat");
    let named =
        format!("commit `{sneaked}` on the story branch did not come from a proven task PR");
    eventually("the second ship is refused", || async {
        a.s.app
            .bot_comments(b_pr)
            .iter()
            .any(|c| c.contains("not shippable yet") && c.contains(&named))
    })
    .await;
    a.s.app.settle().await;
    assert!(a.repo().file("main", "sneaked.txt").is_none());
    assert_eq!(a.merges(), 1, "still only A landed");
    let b_labels = a.repo().issue(b_pr).unwrap().labels;
    assert!(!b_labels.contains(&"ship".to_owned()), "{b_labels:?}");
    a.s.app.assert_contract_kept();
}

/// The bot's comments on `issue` that mention `text`.
fn said(sh: &Shipped, issue: u64, text: &str) -> Vec<String> {
    sh.s.app
        .bot_comments(issue)
        .into_iter()
        .filter(|c| c.contains(text))
        .map(|c| c.lines().next().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_commit_pushed_onto_the_story_branch_waits_for_a_maintainer_to_accept_it_by_name() {
    let sh = Shipped::story()
        .config("ship_label: ship\n")
        .shippable()
        .await;
    let pr = sh.story_pr().unwrap().number;
    sh.s.app.fake.add_user("mallory", 99, "write");
    let hotfix = sh.repo().push_files(
        &sh.branch,
        &[("hotfix.txt", "straight onto the story\n")],
        "Hotfix",
        "mallory",
    );
    eventually("the story is not shippable, naming the commit", || async {
        let gate = sh.repo().check_runs().into_iter().find(|c| {
            c.name == "taskgate/ship-gate" && c.head_sha == hotfix && c.status == "completed"
        });
        sh.state().await == "building"
            && gate.is_some_and(|g| {
                g.summary
                    .unwrap_or_default()
                    .contains(&format!("commit `{hotfix}`"))
            })
    })
    .await;

    // A writer cannot accept it; a commit not waiting is refused, and so
    // is a short sha (one can be made to collide).
    let accept = format!("/taskgate accept-commits {hotfix}");
    sh.s.app.comment(sh.story_issue, "mallory", &accept).await;
    let absent = "1234567".repeat(5) + "89abc";
    sh.s.app
        .comment(pr, "octocat", &format!("/taskgate accept-commits {absent}"))
        .await;
    sh.s.app
        .comment(
            pr,
            "octocat",
            &format!("/taskgate accept-commits {}", &hotfix[..7]),
        )
        .await;
    sh.s.app.settle().await;
    assert_eq!(sh.state().await, "building");
    let refused = said(&sh, sh.story_issue, "accept-commits");
    insta::assert_snapshot!(refused.join("\n"), @"@mallory `/taskgate accept-commits` needs maintain permission on the repository; @mallory has write.");
    let refused = said(&sh, pr, "accept-commits")
        .join("\n")
        .replace(&hotfix, "<hotfix>")
        .replace(&hotfix[..7], "<short>");
    insta::assert_snapshot!(refused, @r"
    @octocat `/taskgate accept-commits` did nothing: `1234567123456712345671234567123456789abc` is not one of the commits waiting on the story branch (`<hotfix>`): name one of them.
    @octocat Could not run 'accept-commits': '<short>' is not a full sha (all 40 hex digits). `/taskgate help` shows how each command is used.
    ");

    // A maintainer accepts it by name: said once, recorded, shippable.
    // The branch was compared at this head already: not again.
    const COMPARE: &str = "GET /repos/{owner}/{repo}/compare/{basehead}";
    let compared = sh.s.app.statuses(COMPARE).len();
    sh.s.app.comment(pr, "octocat", &accept).await;
    eventually("shippable again", || async {
        sh.state().await == "shippable"
    })
    .await;
    // The reply is an effect of its own, posted after the state changed.
    sh.s.app.settle().await;
    assert_eq!(
        sh.s.app.statuses(COMPARE).len(),
        compared,
        "one compare a head"
    );
    let accepted = said(&sh, pr, "accepted 1 commit");
    assert_eq!(accepted.len(), 1, "{accepted:#?}");
    let (status, audit) = sh.api("GET", "/api/audit?limit=1", Some("api-token")).await;
    assert_eq!(status, 200, "{audit}");
    assert_eq!(audit["entries"][0]["action"], "accept_commits");
    assert_eq!(audit["entries"][0]["login"], "octocat");
    assert_eq!(audit["entries"][0]["reason"], hotfix.as_str());

    sh.add_ship_label().await;
    sh.landed().await;
    assert!(sh.repo().file("main", "hotfix.txt").is_some());
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_acceptance_covers_the_commit_it_names_not_one_force_pushed_in_its_place() {
    let sh = Shipped::story()
        .config("ship_label: ship\n")
        .shippable()
        .await;
    let pr = sh.story_pr().unwrap().number;
    let proven = sh.repo().branch_sha(&sh.branch).expect("the story branch");
    sh.s.app.fake.add_user("mallory", 99, "write");
    let harmless = sh.repo().push_files(
        &sh.branch,
        &[("notes.txt", "harmless\n")],
        "Notes",
        "mallory",
    );
    eventually("not shippable", || async { sh.state().await == "building" }).await;
    // The maintainer read `harmless` and names it in full; before GitHub's
    // webhook reaches taskgate, Mallory force-pushes another commit in its
    // place.
    let repo = sh.repo();
    let comment = sh.s.app.fake.without_echoes(|| {
        repo.add_comment(
            pr,
            &format!("/taskgate accept-commits {harmless}"),
            "octocat",
        )
    });
    let written = fakehub::payloads::issue_comment_created(&repo, pr, &comment);
    let forced = sh.repo().force_push_files(
        &sh.branch,
        &proven,
        &[("notes.txt", "not what was read\n")],
        "Notes",
        "mallory",
    );
    sh.s.app.settle().await;
    sh.s.app.deliver("issue_comment", &written).await;
    sh.s.app.settle().await;
    assert_eq!(sh.state().await, "building", "nothing was accepted");
    let refused = said(&sh, pr, "accept-commits")
        .join("\n")
        .replace(&harmless, "<read>")
        .replace(&forced, "<forced>");
    insta::assert_snapshot!(refused, @"@octocat `/taskgate accept-commits` did nothing: `<read>` is not one of the commits waiting on the story branch (`<forced>`): name one of them.");
}
