//! A landed tree that is not the proven tree (issue 33 item 3): where the
//! rules ask for the story PR's merge, taskgate merges it only while the
//! base is the proven base, but the base can still move in the window
//! between its look and GitHub's merge. Then the landed commit is proven
//! at once — the story's gates run on it — and a red one is rolled back
//! through the revert PR; a green one is said to be proven after landing.

use fakehub::{Fault, Rule, Ruleset};

use crate::support::eventually;
use crate::support::shipped::Shipped;

const CONFIG: &str = "ship_label: ship\n";

/// `main` takes changes through a pull request (taskgate no bypass actor),
/// and someone's push lands on it just before GitHub merges the story PR:
/// the merge commit's tree is not the tree taskgate proved.
async fn base_moves_under_the_merge(sh: &Shipped, file: &str) {
    sh.repo().with_ruleset(
        Ruleset::new("main")
            .rule(Rule::pull_request())
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    sh.s.app.fake.inject(
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
        Fault::PushFirst {
            branch: "main".into(),
            files: vec![(file.into(), "late\n".into())],
            pusher: "bob".into(),
        },
    );
}

impl Shipped {
    fn story_notes(&self) -> Vec<String> {
        self.s.app.bot_comments(self.story_issue)
    }

    /// The landed commit and the conclusion of the story's gate on it.
    fn landed_gate(&self) -> (String, Option<String>) {
        let landed = self.repo().branch_sha("main").unwrap();
        let run = self
            .s
            .checks(&landed)
            .into_iter()
            .find(|c| c.name == "taskgate/ship/check/test");
        (landed, run.and_then(|c| c.conclusion))
    }
}

fn first_paragraph(note: &str, landed: &str) -> String {
    note.split("\n\n")
        .next()
        .unwrap_or_default()
        .replace(&landed[..7], "<landed>")
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            // Shas other than the landed one (the proven base) vary too.
            if i % 2 == 1 && part.len() == 7 && part.chars().all(|c| c.is_ascii_hexdigit()) {
                "<sha>".to_owned()
            } else {
                part.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[tokio::test]
async fn a_landed_commit_that_differs_from_the_proof_is_proven_at_once_and_said_green() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    base_moves_under_the_merge(&sh, "LATE.md").await;
    sh.add_ship_label().await;
    sh.landed().await;
    sh.story_told("the landed commit proven", "Proven after landing")
        .await;
    let (landed, conclusion) = sh.landed_gate();
    assert_eq!(
        conclusion.as_deref(),
        Some("success"),
        "its gates ran on it"
    );
    assert!(
        sh.repo().file("main", "LATE.md").is_some(),
        "the late push is in it"
    );
    let notes = sh.story_notes();
    let untested: Vec<&String> = notes
        .iter()
        .filter(|n| n.contains("What landed was not what was proven"))
        .collect();
    assert_eq!(untested.len(), 1, "said once");
    insta::assert_snapshot!(first_paragraph(untested[0], &landed), @"**What landed was not what was proven.** The story PR merged as `<landed>` while `main` moved under the merge, so its tree is not the tree proven on `<sha>`. taskgate proves the landed commit now: the story's gates run on `<landed>`, and if they fail it is rolled back.");
    let proven = notes
        .iter()
        .find(|n| n.contains("Proven after landing"))
        .unwrap();
    insta::assert_snapshot!(first_paragraph(proven, &landed), @"**Proven after landing.** The story's gates passed on the landed commit `<landed>`.");
    assert!(
        sh.repo()
            .pulls()
            .iter()
            .all(|p| !p.head.starts_with("taskgate/revert-")),
        "nothing to roll back"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_landed_commit_that_fails_the_storys_gates_is_rolled_back_through_the_revert_pr() {
    // The story passes alone and fails with the late push in.
    let sh = Shipped::story()
        .config(CONFIG)
        .check("test ! -f LATE.md\n")
        .shippable()
        .await;
    base_moves_under_the_merge(&sh, "LATE.md").await;
    sh.add_ship_label().await;
    sh.landed().await;
    let revert = format!("taskgate/revert-{}", sh.story_issue);
    eventually("the revert PR is opened", || async {
        sh.repo().pulls().iter().any(|p| p.head == revert)
    })
    .await;
    sh.s.app.settle().await;
    let (landed, conclusion) = sh.landed_gate();
    assert_eq!(
        conclusion.as_deref(),
        Some("failure"),
        "proven red on the landed commit"
    );
    let rolling = sh
        .story_notes()
        .into_iter()
        .find(|n| n.contains("Rolling back"))
        .expect("said on the story");
    assert!(rolling.contains(&landed[..7]), "{rolling}");
    assert!(
        rolling.contains("ship/check/test"),
        "the failing gate named: {rolling}"
    );
    sh.s.app.assert_contract_kept();
}
