//! GitHub's `workflows` permission: a story that changes a file under
//! `.github/workflows/` cannot be proven or landed by an App without
//! `workflows: write` (the fake refuses as GitHub does). The refusal is said
//! once on the story PR, with the permission to grant, and nothing lands;
//! granted, the same story lands.

use crate::support::eventually;
use crate::support::shipped::Shipped;

const CONFIG: &str = "ship_label: ship\n";
const CI: &str = "on: push\njobs: {}\n";

/// A shippable story whose branch a maintainer changed a workflow on
/// (straight onto the story branch, so accepted by name).
async fn story_changing_a_workflow() -> Shipped {
    let sh = Shipped::story().config(CONFIG).start().await;
    let ci = sh.repo().push_files(
        &sh.branch,
        &[(".github/workflows/ci.yml", CI)],
        "CI for the story",
        "octocat",
    );
    sh.s.app.settle().await;
    sh.complete_the_task().await;
    assert!(sh.story_pr().is_some(), "taskgate opened the story PR");
    let accept = format!("/taskgate accept-commits {ci}");
    sh.s.app.comment(sh.story_issue, "octocat", &accept).await;
    eventually("shippable", || async { sh.state().await == "shippable" }).await;
    sh
}

fn pr_notes(sh: &Shipped) -> Vec<String> {
    sh.s.app.bot_comments(sh.story_pr().unwrap().number)
}

#[tokio::test]
async fn a_story_changing_a_workflow_without_the_permission_is_refused_once_on_its_pr() {
    let sh = story_changing_a_workflow().await;
    let main = sh.repo().branch_sha("main").unwrap();
    sh.add_ship_label().await;
    eventually("the refusal is said on the story PR", || async {
        pr_notes(&sh).iter().any(|n| n.contains("`workflows`"))
    })
    .await;
    sh.s.app.settle().await;
    assert_eq!(
        sh.repo().branch_sha("main").unwrap(),
        main,
        "nothing landed"
    );
    let said: Vec<_> = pr_notes(&sh)
        .into_iter()
        .filter(|n| n.contains("`workflows`"))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains(".github/workflows/ci.yml"), "{said:#?}");
    assert!(
        !sh.pr_labels().contains(&"ship".to_owned()),
        "ship taken off"
    );
    // Its batch was refused for what the story changes, not for the batch
    // branch: the train did not step aside for the stories after it.
    let stepped_aside =
        (sh.s.app.bot_comments(sh.story_issue).into_iter()).any(|c| c.contains("not in batches"));
    assert!(!stepped_aside, "the train stayed on");
    let repo = taskgate_core::ids::RepoName::parse(crate::support::REPO).unwrap();
    let train = sh.s.app.store().ship_train(&repo).await.unwrap();
    assert_eq!(train.off, None, "{train:?}");

    // Granted, the same story lands.
    sh.s.app.fake.grant(
        crate::support::INSTALLATION,
        serde_json::json!({"actions": "write", "checks": "write", "contents": "write",
            "issues": "write", "metadata": "read", "pull_requests": "write",
            "workflows": "write"}),
    );
    sh.add_ship_label().await;
    sh.landed().await;
    assert_eq!(
        sh.repo()
            .file("main", ".github/workflows/ci.yml")
            .as_deref(),
        Some(CI)
    );
}

#[tokio::test]
async fn a_task_changing_a_workflow_without_the_permission_is_not_merged_and_says_why() {
    let sh = Shipped::story().config(CONFIG).start().await;
    let s = &sh.s;
    let green = s
        .push(
            &[("check.sh", "exit 0\n"), (".github/workflows/ci.yml", CI)],
            "works",
        )
        .await;
    s.completed(&green, 1).await;
    let pr = s.pull();
    sh.repo().set_draft(pr.number, false, "agent");
    s.app.settle().await;
    assert!(!s.pull().merged, "GitHub refused the merge");
    let said: Vec<_> = s
        .app
        .bot_comments(pr.number)
        .into_iter()
        .filter(|n| n.contains("workflows"))
        .collect();
    assert_eq!(said.len(), 1, "said once, on the task PR: {said:#?}");
    let text = said[0].split("\n\n<!--").next().unwrap();
    insta::assert_snapshot!(text.replace(&format!("#{}", pr.number), "#PR"), @r"
    This pull request (#PR) passed its acceptance tests, but GitHub refused to merge it into the story branch: it changes `.github/workflows/ci.yml`, and taskgate's installation lacks the `workflows` permission, which GitHub requires of an App that changes a workflow file.

    To let it merge, grant the taskgate App the `Workflows: Read and write` repository permission and accept it on the installation ([GitHub's docs](https://docs.github.com/en/apps/maintaining-github-apps/modifying-a-github-app-registration#changing-the-permissions-of-a-github-app)), then push to the task's branch again: its new head is tested and merged. Or leave the workflow change out of the task.
    ");
    assert!(
        !s.app
            .bot_comments(s.task_issue)
            .iter()
            .any(|n| n.contains("workflows")),
        "not said twice"
    );
}
