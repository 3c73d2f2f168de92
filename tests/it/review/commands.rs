//! A person's commands on a task, end to end: review (`approve`, `revise`,
//! `reject`), `pause`/`resume`, the read-only `status`/`explain`, and who
//! may run what.

use fakehub::payloads;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

fn plan() -> String {
    Plan::story("Reviewed work").task(Task::check()).yaml()
}

/// Pushes `check.sh` exiting with `code` and waits for the verdict.
async fn push_check(s: &Story, code: u8, message: &str) -> String {
    let script = format!("echo 'expected 10 rows, got 0' >&2; exit {code}\n");
    let sha = s.push(&[("check.sh", script.as_str())], message).await;
    s.completed(&sha, 1).await;
    sha
}

/// GitHub's `pull_request.opened` for the draft taskgate opened has been
/// handled.
async fn pr_opened(s: &Story) {
    s.app.settle().await;
    assert!(s.pull().draft, "taskgate's draft PR");
}

async fn ready_for_review(s: &Story) -> u64 {
    let repo = s.app.fake.repo(REPO);
    let pr = s.pull().number;
    repo.set_draft(pr, false, "agent");
    s.app.settle().await;
    pr
}

#[tokio::test]
async fn human_review_waits_for_approve_from_someone_with_write_permission() {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    s.app.fake.add_user("bob", 77, "read");
    s.app.fake.add_user("mia", 78, "maintain");
    push_check(&s, 1, "red").await;
    pr_opened(&s).await;
    push_check(&s, 0, "green").await;
    let pr = ready_for_review(&s).await;
    assert_eq!(s.state(), "state:review");
    assert!(!s.pull().merged, "human review waits");
    // One checker report on the PR, updated in place after each run.
    let reports: Vec<String> = s
        .app
        .bot_comments(pr)
        .into_iter()
        .filter(|c| c.contains("taskgate checker"))
        .collect();
    assert_eq!(reports.len(), 1, "{reports:#?}");
    assert!(reports[0].contains("checker: passed"), "{}", reports[0]);

    s.app.comment(pr, "bob", "/approve").await;
    s.app.settle().await;
    assert!(!s.pull().merged);
    insta::assert_snapshot!(s.app.replies(pr).join("\n"), @"@bob `/taskgate approve` needs write permission on the repository; @bob has read.");

    // `--override` needs maintain: octocat writes only.
    s.app
        .comment(pr, "octocat", "/taskgate approve --override it is fine")
        .await;
    s.app.settle().await;
    assert!(!s.pull().merged);
    assert!(s.app.replies(pr)[1].contains(
        "`/taskgate approve --override` needs maintain permission on the repository; @octocat has write."
    ));

    s.app.comment(pr, "mia", "/taskgate approve").await;
    s.app.settle().await;
    assert!(s.pull().merged, "approved by a maintainer: merged");
    assert_eq!(
        s.app.replies(pr).len(),
        2,
        "success is a reaction, not a reply"
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn the_plans_own_review_human_setting_makes_a_green_task_wait_for_approval() {
    // `review: human` in the plan's settings alone; the repository's file
    // says nothing of review (auto by default).
    let plan = Plan::story("Reviewed work")
        .settings("review: human")
        .task(Task::check())
        .yaml();
    let s = Story::of(&plan).start().await;
    push_check(&s, 0, "green").await;
    pr_opened(&s).await;
    ready_for_review(&s).await;
    assert_eq!(s.state(), "state:review");
    assert!(
        !s.pull().merged,
        "the story's review: human waits for approve"
    );
    s.app.fake.add_user("mia", 78, "maintain");
    s.app
        .comment(s.pull().number, "mia", "/taskgate approve")
        .await;
    s.app.settle().await;
    assert!(s.pull().merged, "approved: merged");
}

#[tokio::test]
async fn pause_stops_runs_resume_continues_and_revise_three_times_pauses() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 1, "red").await;
    pr_opened(&s).await;
    let issue = s.task_issue;

    s.app.comment(issue, "octocat", "/taskgate pause").await;
    s.app.settle().await;
    assert_eq!(s.state(), "state:paused");
    let green = s.push(&[("check.sh", "exit 0\n")], "green").await;
    s.app.settle().await;
    assert!(s.checks(&green).is_empty(), "paused: nothing runs");

    s.app.comment(issue, "octocat", "/resume").await;
    s.completed(&green, 1).await;
    assert_eq!(s.state(), "state:review");

    s.app.comment(issue, "octocat", "/taskgate status").await;
    s.app.settle().await;
    let status = s
        .app
        .bot_comments(issue)
        .into_iter()
        .find(|c| c.contains("**Task `check`**"))
        .expect("a status reply");
    assert!(status.contains("`review`"), "{status}");
    assert!(status.contains("last attempt: 2"), "{status}");

    for n in 1..=3 {
        s.app
            .comment(
                issue,
                "octocat",
                &format!("/revise round {n}: handle empty files"),
            )
            .await;
        s.app.settle().await;
    }
    assert_eq!(s.state(), "state:paused");
    let pr = s.pull().number;
    let revisions = s
        .app
        .bot_comments(pr)
        .into_iter()
        .filter(|c| c.contains("Revision requested"))
        .count();
    assert_eq!(revisions, 3, "the feedback goes to the task PR");

    s.app.comment(issue, "octocat", "/resume").await;
    s.app
        .comment(issue, "octocat", "/reject Not needed after all.")
        .await;
    s.app.settle().await;
    assert_eq!(s.state(), "state:rejected");
    assert!(
        !s.pull().merged && s.pull().state == "open",
        "the PR stays open"
    );
    assert!(s
        .app
        .bot_comments(issue)
        .iter()
        .any(|c| c.contains("Task rejected")));
}

#[tokio::test]
async fn code_blocks_own_comments_bad_arguments_edits_and_explain() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 1, "red").await;
    let issue = s.task_issue;
    let repo = s.app.fake.repo(REPO);

    s.app
        .comment(issue, "octocat", "```\n/taskgate pause\n```\n\n> /pause")
        .await;
    s.app.settle().await;
    assert_eq!(s.state(), "state:test-failed");
    assert!(s.app.replies(issue).is_empty());

    s.app.comment(issue, "octocat", "/taskgate pause now").await;
    s.app.settle().await;
    insta::assert_snapshot!(s.app.replies(issue).join("\n"), @"@octocat Could not run 'pause': takes no arguments, got 'now'. `/taskgate help` shows how each command is used.");

    s.app.comment(issue, "octocat", "/taskgate explain").await;
    s.app.settle().await;
    let explain = s
        .app
        .bot_comments(issue)
        .into_iter()
        .find(|c| c.contains("Why `check` fails"))
        .expect("an explain reply");
    assert!(
        explain.contains("`test` (test_failure): `sh check.sh` exited with status 1"),
        "{explain}"
    );

    // An edit that adds `pause` runs only `pause`, not the status again.
    let comment = repo.add_comment(issue, "/taskgate status", "octocat");
    let created = payloads::issue_comment_created(&repo, issue, &comment);
    s.app.settle().await;
    let before = s.app.bot_comments(issue).len();
    let mut edited = created.clone();
    edited["action"] = "edited".into();
    edited["comment"]["body"] = "/taskgate status\n/taskgate pause".into();
    edited["changes"] = serde_json::json!({ "body": { "from": "/taskgate status" } });
    assert_eq!(s.app.deliver("issue_comment", &edited).await.0, 202);
    s.app.settle().await;
    assert_eq!(s.state(), "state:paused");
    assert_eq!(s.app.bot_comments(issue).len(), before, "no second status");

    // The bot's own comment, delivered back, runs nothing.
    let own = repo
        .comments(issue)
        .into_iter()
        .find(|c| c.author.ends_with("[bot]"))
        .unwrap();
    let mut echoed = payloads::issue_comment_created(&repo, issue, &own);
    echoed["comment"]["body"] = "/taskgate resume".into();
    assert_eq!(s.app.deliver("issue_comment", &echoed).await.0, 202);
    s.app.settle().await;
    assert_eq!(s.state(), "state:paused");
}

async fn api(s: &Story, path: &str, token: Option<&str>, body: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().post(format!("{}{path}", s.app.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn the_api_accepts_and_rejects_tasks_with_the_commands_rules() {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    let accept = format!("/api/tasks/{}/accept", s.task_issue);
    let reject = format!("/api/tasks/{}/reject", s.task_issue);
    // No token, a wrong token, an unknown task.
    assert_eq!(api(&s, &accept, None, None).await.0, 401);
    assert_eq!(api(&s, &accept, Some("wrong"), None).await.0, 401);
    assert_eq!(
        api(&s, "/api/tasks/9999/accept", Some("api-token"), None)
            .await
            .0,
        404
    );
    // Not in review yet: nothing to accept.
    let (status, body) = api(&s, &accept, Some("api-token"), None).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("only a task in review"), "{body}");
    // A rejection needs a reason.
    assert_eq!(api(&s, &reject, Some("api-token"), None).await.0, 400);

    push_check(&s, 0, "green").await;
    pr_opened(&s).await;
    ready_for_review(&s).await;
    assert_eq!(s.state(), "state:review");
    let (status, body) = api(&s, &accept, Some("api-token"), None).await;
    assert_eq!(status, 202, "{body}");
    s.app.settle().await;
    assert!(s.pull().merged, "accepted through the API: merged");

    // GitHub reported the merge: the task is complete and cannot be rejected.
    let (status, body) = api(
        &s,
        &reject,
        Some("api-token"),
        Some(r#"{"reason":"too late"}"#),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("completed already"), "{body}");
}

#[tokio::test]
async fn the_api_rejects_a_task_with_its_reason() {
    let s = Story::of(&plan()).start().await;
    let reject = format!("/api/tasks/{}/reject", s.task_issue);
    let (status, body) = api(
        &s,
        &reject,
        Some("api-token"),
        Some(r#"{"reason":"the plan was wrong"}"#),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    s.app.settle().await;
    assert_eq!(s.state(), "state:rejected");
    assert!(s
        .app
        .bot_comments(s.task_issue)
        .iter()
        .any(|c| c.contains("the plan was wrong")));
}

#[tokio::test]
async fn one_comment_changes_a_task_once() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 1, "red").await;
    s.app
        .comment(s.task_issue, "octocat", "/taskgate pause\n/taskgate resume")
        .await;
    s.app.settle().await;
    assert_eq!(s.state(), "state:paused", "the first change ran");
    insta::assert_snapshot!(s.app.replies(s.task_issue).join("\n"), @"@octocat `/taskgate resume` was not run: one comment changes a task or story once. Post it in a new comment.");
}

#[tokio::test]
async fn the_checker_report_is_one_pr_comment_updated_in_place() {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    push_check(&s, 1, "red").await;
    pr_opened(&s).await;
    push_check(&s, 1, "still red").await;
    let pr = s.pull().number;
    let reports = |s: &Story| -> Vec<String> {
        s.app
            .bot_comments(pr)
            .into_iter()
            .filter(|c| c.contains("taskgate checker"))
            .collect()
    };
    assert_eq!(reports(&s).len(), 1);
    assert!(
        !reports(&s)[0].contains("checker: passed"),
        "{}",
        reports(&s)[0]
    );
    push_check(&s, 0, "green").await;
    let now = reports(&s);
    assert_eq!(now.len(), 1, "updated, not repeated: {now:#?}");
    assert!(now[0].contains("checker: passed"), "{}", now[0]);
    let patched = s
        .app
        .fake
        .writes()
        .iter()
        .filter(|w| w.method == "PATCH" && w.path.contains("/issues/comments/"))
        .count();
    assert!(patched >= 1, "the report was edited in place");
}

#[tokio::test]
async fn a_task_merge_github_refuses_is_reported_and_changes_nothing_else() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 0, "green").await;
    let repo = s.app.fake.repo(REPO);
    let pr = s.pull().number;
    // A conflict with the story branch: GitHub answers 405.
    repo.set_mergeable(pr, false);
    ready_for_review(&s).await;
    assert!(!s.pull().merged);
    assert_eq!(
        s.state(),
        "state:review",
        "the task stays proven, in review"
    );
    let notes = s.app.bot_comments(s.task_issue);
    assert!(
        notes
            .iter()
            .any(|c| c.contains("merging it into the story branch was refused")),
        "{notes:#?}"
    );
}

#[tokio::test]
async fn revise_forwards_the_feedback_to_the_roles_agent_workflow() {
    let plan = Plan::story("Reviewed work")
        .task(Task::check().role("coder"))
        .yaml();
    let config = "roles:\n  coder: { agent_workflow: agent-coder.yml }\n";
    let s = Story::of(&plan).config(config).start().await;
    let repo = s.app.fake.repo(REPO);
    repo.add_workflow("agent-coder.yml");
    push_check(&s, 0, "green").await;
    s.app
        .comment(
            s.task_issue,
            "octocat",
            "/taskgate revise \"use the v2 endpoint\"",
        )
        .await;
    s.app.settle().await;
    let dispatches: Vec<_> = repo
        .dispatches()
        .into_iter()
        .filter(|d| d.workflow == "agent-coder.yml")
        .collect();
    assert_eq!(dispatches.len(), 1, "{dispatches:#?}");
    assert_eq!(dispatches[0].inputs["feedback"], "use the v2 endpoint");
    assert_eq!(dispatches[0].inputs["task"], "check");
    assert_eq!(dispatches[0].inputs["role"], "coder");
}

#[tokio::test]
async fn a_pasted_marker_does_not_make_a_persons_comment_the_bots() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 1, "red").await;
    pr_opened(&s).await;
    let pr = s.pull().number;
    let repo = s.app.fake.repo(REPO);
    let forged = "mine <!-- taskgate:checker-report story=file:checks task=check -->";
    repo.add_comment(pr, forged, "mallory");
    push_check(&s, 1, "red again").await;
    let comments = repo.comments(pr);
    assert!(
        comments
            .iter()
            .any(|c| c.author == "mallory" && c.body == forged),
        "the person's comment is untouched"
    );
    assert_eq!(
        s.app
            .bot_comments(pr)
            .iter()
            .filter(|c| c.contains("taskgate checker"))
            .count(),
        1,
        "the bot wrote its own report"
    );
}

#[tokio::test]
async fn the_repository_config_sets_the_prefix_and_can_turn_the_short_form_off() {
    let config = "commands: { prefix: /bot, short_form: false }\n";
    let s = Story::of(&plan()).config(config).start().await;
    s.app.comment(s.task_issue, "octocat", "/help").await;
    s.app
        .comment(s.task_issue, "octocat", "/taskgate help")
        .await;
    s.app.settle().await;
    assert!(s.app.replies(s.task_issue).is_empty(), "neither form is on");
    s.app.comment(s.task_issue, "octocat", "/bot status").await;
    s.app.settle().await;
    let answered = s.app.replies(s.task_issue);
    assert_eq!(answered.len(), 1, "{answered:#?}");
}

#[tokio::test]
async fn an_override_approves_a_red_checker_and_is_counted() {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    s.app.fake.add_user("mia", 78, "maintain");
    push_check(&s, 1, "red").await;
    pr_opened(&s).await;
    let pr = ready_for_review(&s).await;
    s.app
        .comment(
            pr,
            "mia",
            "/taskgate approve --override \"the flake is the CI's\"",
        )
        .await;
    s.app.settle().await;
    assert!(s.pull().merged, "approved past a red checker");
    let metrics = reqwest::get(format!("{}/metrics", s.app.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("taskgate_review_overrides 1"), "{metrics}");
}

#[tokio::test]
async fn a_merge_whose_answer_was_lost_is_not_reported_as_refused() {
    let s = Story::of(&plan()).start().await;
    push_check(&s, 0, "green").await;
    // GitHub merges, then a proxy answers 502: the retry meets a merged PR
    // (405 "not mergeable") and must count it as done.
    s.app.fake.inject(
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
        fakehub::Fault::StatusAfterApply { status: 502 },
    );
    ready_for_review(&s).await;
    assert!(s.pull().merged);
    let merges = s
        .app
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
        .count();
    assert_eq!(merges, 2, "the first answer was lost, so it was retried");
    assert!(
        !s.app
            .bot_comments(s.task_issue)
            .iter()
            .any(|c| c.contains("refused")),
        "{:#?}",
        s.app.bot_comments(s.task_issue)
    );
}

#[tokio::test]
async fn commands_an_edit_adds_run_with_the_editors_permission_not_the_authors() {
    let s = Story::of(&plan()).start().await;
    s.app.fake.add_user("bob", 77, "read");
    s.app.fake.add_user("mia", 78, "write");
    push_check(&s, 1, "red").await;
    let repo = s.app.fake.repo(REPO);

    // A reader cannot borrow a writer's comment: octocat wrote it, bob
    // added `pause` to it.
    let by_writer = repo.add_comment(s.task_issue, "Looking at it.", "octocat");
    repo.edit_comment(by_writer.id, "Looking at it.\n/taskgate pause", "bob");
    s.app.settle().await;
    assert_eq!(s.state(), "state:test-failed", "bob may not pause");
    assert!(
        s.app
            .replies(s.task_issue)
            .iter()
            .any(|r| r.starts_with("@bob")),
        "the refusal is addressed to the editor: {:?}",
        s.app.replies(s.task_issue)
    );

    // And a writer editing a reader's comment acts with their own right.
    let by_reader = repo.add_comment(s.task_issue, "Can someone pause this?", "bob");
    repo.edit_comment(
        by_reader.id,
        "Can someone pause this?\n/taskgate pause",
        "mia",
    );
    s.app.settle().await;
    assert_eq!(s.state(), "state:paused");
}

#[tokio::test]
async fn whoever_pushed_the_tasks_commits_cannot_approve_it() {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    // The agent that pushes may also write to the repository.
    s.app.fake.add_user("agent", 90, "maintain");
    s.app.fake.add_user("mia", 78, "maintain");
    push_check(&s, 0, "green").await;
    let pr = ready_for_review(&s).await;
    assert_eq!(s.state(), "state:review");

    s.app.comment(pr, "agent", "/taskgate approve").await;
    s.app.settle().await;
    assert!(!s.pull().merged, "not by the pusher");
    insta::assert_snapshot!(s.app.replies(pr).join("\n"), @"@agent `/taskgate approve` did nothing: you pushed this task's commits, and a task is approved by someone else (`allow_self_approval: true` in .github/taskgate.yml allows it).");

    s.app.comment(pr, "mia", "/taskgate approve").await;
    s.app.settle().await;
    assert!(s.pull().merged, "approved by someone else: merged");
}
