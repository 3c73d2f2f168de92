//! GitHub's limits on sub-issues (its docs, "Adding sub-issues": up to 100
//! sub-issues under one issue, up to eight levels of nesting), which the
//! fake refuses with 422 as GitHub does. A link past them is said once, on
//! the child issue, and nothing else stops: the issue is made, listed in
//! its parent's body, and no pass asks GitHub for the link again. Each test
//! fails without `src/github/perform/links.rs`.

use crate::support::plan::{Plan, Task};
use crate::support::{TestApp, REPO};

fn plan() -> String {
    Plan::story("Deep work")
        .task(Task::new("one", "First task").runs("true").no_timeout())
        .task(Task::new("two", "Second task").runs("true").no_timeout())
        .yaml()
}

/// How many times taskgate asked GitHub to link a sub-issue.
fn link_posts(app: &TestApp) -> usize {
    app.statuses("POST /repos/{owner}/{repo}/issues/{issue_number}/sub_issues")
        .len()
}

fn issue_titled(app: &TestApp, title: &str) -> fakehub::Issue {
    app.fake
        .repo(REPO)
        .issues()
        .into_iter()
        .find(|i| i.title == title)
        .unwrap_or_else(|| panic!("no issue titled {title:?}"))
}

#[tokio::test]
async fn a_story_at_the_eighth_level_says_once_on_each_task_that_it_cannot_hold_it() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    // A person's hierarchy, seven levels deep; the story goes under it.
    let mut parent = repo.create_issue("Level 1", "", "octocat");
    for level in 2..=8 {
        let issue = repo.create_issue(&format!("Level {level}"), "", "octocat");
        repo.link_sub_issue(parent, issue);
        parent = issue;
    }
    let story = parent;
    let comment = format!("/taskgate plan\n\n```yaml\n{}```\n", plan());
    app.comment(story, "octocat", &comment).await;
    app.settle().await;

    for title in ["First task", "Second task"] {
        let task = issue_titled(&app, title);
        assert_eq!(task.parent, None, "GitHub held no ninth level");
        let said = app.bot_comments(task.number);
        assert_eq!(said.len(), 1, "{said:#?}");
        assert!(
            said[0].contains(&format!("sub-issue of #{story}")),
            "{said:#?}"
        );
    }
    insta::assert_snapshot!(
        app.bot_comments(issue_titled(&app, "First task").number)[0]
            .replace(&format!("#{story}"), "#STORY"),
        @r"
    GitHub refused to make this issue a sub-issue of #STORY (422: “Sub-issues cannot be nested more than 8 levels deep”). GitHub allows at most 100 sub-issues under one issue and 8 levels of nesting.

    Nothing else is held up: #STORY still lists this issue in its body, and taskgate tracks, tests and ships it as before. To see it in GitHub's hierarchy, make room under #STORY (or split the plan into smaller parts), then link it there by hand.

    <!-- taskgate:sub-issue-refused -->
    "
    );
    app.assert_no_effect_failed().await;
    let asked = link_posts(&app);

    // The plan again: no link asked for again, nothing said again.
    app.comment(story, "octocat", &comment).await;
    app.settle().await;
    assert_eq!(link_posts(&app), asked, "the links are not asked again");
    for title in ["First task", "Second task"] {
        assert_eq!(app.bot_comments(issue_titled(&app, title).number).len(), 1);
    }
    // The work goes on: the tasks' branches were made.
    app.task_and_branch("First task", "one");
    app.assert_contract_kept();
}

#[tokio::test]
async fn a_task_past_a_hundred_sub_issues_is_said_once_and_the_plan_goes_on() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    // A person's epic with 99 sub-issues already (a plan alone is refused
    // past 100 tasks under one parent, before anything is made).
    let story = repo.create_issue("Epic", "", "octocat");
    for n in 1..=99 {
        let child = repo.create_issue(&format!("Old {n}"), "", "octocat");
        repo.link_sub_issue(story, child);
    }
    let comment = format!("/taskgate plan\n\n```yaml\n{}```\n", plan());
    app.comment(story, "octocat", &comment).await;
    app.settle().await;

    assert_eq!(repo.issue(story).unwrap().sub_issues.len(), 100);
    let left_out: Vec<_> = ["First task", "Second task"]
        .into_iter()
        .map(|t| issue_titled(&app, t))
        .filter(|i| i.parent.is_none())
        .collect();
    assert_eq!(left_out.len(), 1, "{left_out:#?}");
    let said = app.bot_comments(left_out[0].number);
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].contains("maximum number of sub-issues (100)"),
        "{said:#?}"
    );
    app.assert_no_effect_failed().await;
    app.task_and_branch("Second task", "two");
}
