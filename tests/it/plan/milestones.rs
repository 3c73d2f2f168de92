//! Integration milestones end to end: once the tasks a milestone names are
//! complete, its command runs on the story branch as
//! `taskgate/integration-<id>`; a failure opens a diagnostic todo on the
//! story, and a second failed round asks for a person.

use fakehub::payloads;
use serde_json::json;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

fn plan() -> String {
    Plan::story("Integrated work")
        .milestone("smoke", &["check"], "sh smoke.sh")
        .task(Task::check())
        .yaml()
}

#[tokio::test]
async fn a_milestone_runs_on_the_story_branch_once_its_tasks_are_complete() {
    let s = Story::of(&plan()).start().await;
    let repo = s.app.fake.repo(REPO);
    let story = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.contains(&"taskgate:story".to_owned()))
        .unwrap();
    let story_branch = format!("taskgate/story-{}", story.number);

    // The task passes and its PR merges into the story branch.
    let green = s.push(&[("check.sh", "exit 0\n")], "work").await;
    s.completed(&green, 1).await;
    let pr = s.pull();
    repo.set_draft(pr.number, false, "agent");
    s.app.settle().await;
    assert!(s.task_labels().contains(&"state:completed".to_owned()));
    // The fake's merge commit is not in the git remote the runner reads:
    // that run says "Not run"; the story branch's real push comes next.
    let merge = repo.branch_sha(&story_branch).unwrap();
    let runs = s.completed(&merge, 1).await;
    assert_eq!(runs[0].name, "taskgate/integration-smoke");
    assert_eq!(runs[0].title.as_deref(), Some("Not run"));

    // A red round: a diagnostic todo on the story.
    let red = s
        .push_to(
            &story_branch,
            &[("smoke.sh", "echo smoke broke; exit 1\n")],
            "red",
        )
        .await;
    let runs = s.completed(&red, 1).await;
    assert_eq!(runs[0].name, "taskgate/integration-smoke");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    let todos: Vec<_> = repo
        .issues()
        .into_iter()
        .filter(|i| i.title.starts_with("Debug Integration milestone smoke"))
        .collect();
    assert_eq!(todos.len(), 1, "{todos:#?}");
    assert_eq!(todos[0].parent, Some(story.id), "a sub-issue of the story");

    // A second red round: the story asks for a person, once.
    let red2 = s
        .push_to(
            &story_branch,
            &[("smoke.sh", "echo still broke; exit 1\n")],
            "red again",
        )
        .await;
    s.completed(&red2, 1).await;
    let reports: Vec<String> = s
        .app
        .bot_comments(story.number)
        .into_iter()
        .filter(|c| c.contains("needs a person"))
        .collect();
    assert_eq!(reports.len(), 1);
    let labels = repo.issue(story.number).unwrap().labels;
    assert!(labels.contains(&"needs-human".to_owned()), "{labels:?}");

    // Fixed on the story branch: green.
    let fixed = s
        .push_to(&story_branch, &[("smoke.sh", "exit 0\n")], "fixed")
        .await;
    let runs = s.completed(&fixed, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    // The fixes were pushed straight onto the story branch, not through a
    // task PR: a maintainer accepts them by naming the newest.
    s.app.settle().await;
    s.app.fake.add_user("mia", 78, "maintain");
    let accept = format!("/taskgate accept-commits {fixed}");
    s.app.comment(story.number, "mia", &accept).await;
    // Every task complete, the milestone green and every commit a task's
    // or accepted: the story is shippable.
    s.app.settle().await;
    let story_pr = repo
        .pulls()
        .into_iter()
        .find(|p| p.head == story_branch)
        .expect("the story PR is opened once the story is shippable");
    let labels = repo.issue(story_pr.number).unwrap().labels;
    assert!(labels.contains(&"shippable".to_owned()), "{labels:?}");

    // "Re-run" on the milestone's check run: a reader's click runs nothing,
    // a writer's runs the milestone again at that commit.
    let smoke = runs[0].id;
    s.app.fake.add_user("bob", 77, "read");
    let mut by_reader = payloads::check_run("rerequested", &repo, smoke);
    by_reader["sender"]["login"] = json!("bob");
    by_reader["sender"]["id"] = json!(77);
    assert_eq!(s.app.deliver("check_run", &by_reader).await.0, 202);
    s.app.settle().await;
    let smokes = |runs: &[fakehub::CheckRun]| {
        runs.iter()
            .filter(|r| r.name == "taskgate/integration-smoke")
            .count()
    };
    assert_eq!(smokes(&s.checks(&fixed)), 1);
    let mut rerun = payloads::check_run("rerequested", &repo, smoke);
    rerun["sender"]["login"] = json!("octocat");
    assert_eq!(s.app.deliver("check_run", &rerun).await.0, 202);
    // With the story's ship gate on the same commit: three check runs.
    let runs = s.completed(&fixed, 3).await;
    assert_eq!(smokes(&runs), 2);
    assert!(runs
        .iter()
        .all(|r| r.conclusion.as_deref() == Some("success")));
    s.app.assert_contract_kept();
}
