//! Rollback end to end (issue 20, item 5): a shipped story's landed commit
//! is reverted by a pull request taskgate opens, after a failed post-deploy
//! validation or on `/taskgate rollback`; the revert is proven (the
//! repository's `rollback_gates`) before it lands, unless a maintainer
//! says `--now <reason>`, which the audit log keeps.

use crate::support::eventually;
use crate::support::shipped::Shipped;

impl Shipped {
    fn revert_pr(&self) -> Option<fakehub::Pull> {
        let head = format!("taskgate/revert-{}", self.story_issue);
        self.repo().pulls().into_iter().find(|p| p.head == head)
    }

    async fn rolled_back(&self) {
        eventually("the revert landed", || async {
            self.revert_pr().is_some_and(|p| p.merged)
        })
        .await;
        self.s.app.settle().await;
    }
}

#[tokio::test]
async fn rollback_on_demand_reverts_exactly_the_landed_commit_after_its_gates() {
    let config = "rollback_gates: [\"sh smoke.sh\"]\n";
    let sh = Shipped::story().config(config).landed().await;
    sh.s.app.push_to_main(&[("smoke.sh", "exit 0\n")]).await;
    assert!(sh.repo().file("main", "check.sh").is_some());

    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    sh.rolled_back().await;

    let revert = sh.revert_pr().unwrap();
    let labels = sh.repo().issue(revert.number).unwrap().labels;
    assert!(
        labels.contains(&"taskgate:rollback".to_owned()),
        "{labels:?}"
    );
    let main = sh.repo().branch_sha("main").unwrap();
    // The story's file is gone; what landed after it stays.
    assert!(sh.repo().file("main", "check.sh").is_none(), "reverted");
    assert!(
        sh.repo().file("main", "smoke.sh").is_some(),
        "later work kept"
    );
    let gate =
        sh.s.checks(&main)
            .into_iter()
            .find(|c| c.name == "taskgate/rollback/1")
            .expect("the rollback gate ran on the revert that landed");
    assert_eq!(gate.conclusion.as_deref(), Some("success"));
    assert_eq!(sh.state().await, "rolled-back");
    assert!(sh.pr_labels().contains(&"rolled-back".to_owned()));

    let (_, log) = sh.api("GET", "/api/audit", Some("api-token")).await;
    let rollback = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "rollback")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(rollback["login"], "octocat");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn rollback_now_lands_without_the_gates_and_the_reason_is_recorded() {
    // A gate that would fail: `--now` does not run it.
    let config = "rollback_gates: [\"exit 1\"]\n";
    let sh = Shipped::story().config(config).landed().await;
    sh.s.app
        .comment(
            sh.story_issue,
            "octocat",
            "/taskgate rollback --now checkout is down",
        )
        .await;
    sh.rolled_back().await;
    let main = sh.repo().branch_sha("main").unwrap();
    assert!(
        sh.s.checks(&main)
            .iter()
            .all(|c| !c.name.starts_with("taskgate/rollback/")),
        "no gate ran"
    );
    let (_, log) = sh.api("GET", "/api/audit", Some("api-token")).await;
    let rollback = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "rollback")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(rollback["reason"], "checkout is down");
}

#[tokio::test]
async fn a_red_rollback_gate_lands_nothing_and_says_so() {
    let config = "rollback_gates: [\"exit 1\"]\n";
    let sh = Shipped::story().config(config).landed().await;
    let main = sh.repo().branch_sha("main").unwrap();
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    sh.story_told("the rollback is refused", "The rollback did not land")
        .await;
    assert_eq!(
        sh.repo().branch_sha("main").unwrap(),
        main,
        "nothing landed"
    );
    assert!(!sh.revert_pr().unwrap().merged);
}

#[tokio::test]
async fn a_failed_validation_rolls_the_story_back_and_needs_a_fix() {
    let config = "deploy_workflow: deploy.yml\nvalidation_workflow: smoke.yml\n";
    let sh = Shipped::story().config(config).shippable().await;
    sh.repo().add_workflow("deploy.yml");
    sh.repo().add_workflow("smoke.yml");
    sh.add_ship_label().await;
    sh.landed().await;
    sh.finish_run("deploy.yml", "success").await;
    sh.finish_run("smoke.yml", "failure").await;

    sh.rolled_back().await;
    assert!(sh.repo().file("main", "check.sh").is_none(), "reverted");
    assert!(sh.pr_labels().contains(&"needs-fix".to_owned()));
    let fix = sh
        .repo()
        .issues()
        .into_iter()
        .find(|i| i.title.contains("post-deploy validation failed"));
    assert!(fix.is_some(), "the fix issue is opened as before");
    let notes = sh.s.app.bot_comments(sh.story_issue).join("\n");
    assert!(
        notes.contains("because post-deploy validation run"),
        "{notes}"
    );
}

#[tokio::test]
async fn rollback_is_refused_before_the_story_landed_and_needs_maintain() {
    let sh = Shipped::story().config("ship_label: ship\n").start().await;
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate rollback")
        .await;
    sh.s.app.settle().await;
    let replies = sh.s.app.bot_comments(sh.story_issue).join("\n");
    assert!(replies.contains("did not land this story"), "{replies}");
    sh.s.app.fake.add_user("writer", 4_242, "write");
    sh.s.app
        .comment(sh.story_issue, "writer", "/taskgate rollback --now x")
        .await;
    sh.s.app.settle().await;
    let replies = sh.s.app.bot_comments(sh.story_issue).join("\n");
    assert!(replies.contains("needs maintain permission"), "{replies}");
    assert!(sh.revert_pr().is_none());
}
