//! Copilot's own pull requests finish the todo (issue 50 item 4): a person
//! assigns Copilot to a branch todo choosing the task branch as the base;
//! Copilot opens its own pull request from `copilot/<slug>` linking the
//! todo; taskgate tests its head with the task's gates and, under
//! `review: auto`, merges the head it proved into the task branch, whose
//! own run closes the todo, and the task completes. A pull request into
//! another branch is told once which base to choose, and neither run nor
//! merged.

use fakehub::{AgentPush, COPILOT};

use crate::agents::end_to_end::{plan, red_run, todos, GREEN, RED};
use crate::agents::ready::person_marks_ready;
use crate::support::story::Story;
use crate::support::{eventually, metric, REPO};

/// A story whose coder role is Copilot, whose task's run is red with its
/// todo open; Copilot answers an assignment with `fix`'s content.
async fn red_todo_for_copilot(fix: &'static str) -> (Story, fakehub::Issue) {
    red_todo_with("roles:\n  coder: { agent: copilot }\n", fix).await
}

async fn red_todo_with(config: &'static str, fix: &'static str) -> (Story, fakehub::Issue) {
    let s = Story::of(&plan()).config(config).backed().start().await;
    s.app.fake.set_permission("alice", "write");
    s.app.fake.add_copilot(REPO, move |_| {
        Some(AgentPush::to("", &[("test_rows.py", fix)]))
    });
    red_run(&s).await;
    let todo = todos(&s).pop().expect("the todo");
    (s, todo)
}

/// Copilot's one pull request.
fn copilots_pull(s: &Story) -> fakehub::Pull {
    let pulls: Vec<fakehub::Pull> = (s.app.fake.repo(REPO).pulls().into_iter())
        .filter(|p| p.author == COPILOT)
        .collect();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    pulls[0].clone()
}

async fn completes(s: &Story) {
    eventually("the task completes", || async {
        s.state() == "state:completed"
    })
    .await;
    s.app.settle().await;
}

#[tokio::test]
async fn copilots_pull_request_into_the_task_branch_is_tested_merged_and_the_task_completes() {
    let (s, todo) = red_todo_for_copilot(GREEN).await;
    let repo = s.app.fake.repo(REPO);

    repo.assign_copilot(todo.number, "alice", Some(&s.branch));

    let pr = copilots_pull(&s);
    assert_eq!(pr.base, s.branch);
    let head = repo.branch_sha(&pr.head).unwrap();
    completes(&s).await;
    let checks = s.checks(&head);
    assert_eq!(
        checks.len(),
        1,
        "the task's gate on Copilot's head: {checks:#?}"
    );
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    let pr = copilots_pull(&s);
    assert!(pr.merged, "{pr:?}");
    let bot = format!("{}[bot]", s.app.fake.app_slug());
    assert_eq!(pr.merged_by.as_deref(), Some(bot.as_str()));
    assert_eq!(
        repo.file(&s.branch, "test_rows.py").as_deref(),
        Some(GREEN),
        "Copilot's fix is on the task branch"
    );
    assert_eq!(todos(&s)[0].state, "closed");
    assert!(s.pull().merged, "the task PR merged: the task moved on");
    let m = s.app.metrics().await;
    let without_person = r#"taskgate_fix_todos_closed{agent="copilot",kind="test_failure",outcome="fixed_without_human"}"#;
    assert_eq!(metric(&m, without_person), 1.0, "fixed without a person");
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn copilots_red_pull_request_is_not_merged_until_its_next_push_is_green() {
    let (s, todo) = red_todo_for_copilot(RED).await;
    let repo = s.app.fake.repo(REPO);

    repo.assign_copilot(todo.number, "alice", Some(&s.branch));

    let pr = copilots_pull(&s);
    let red = repo.branch_sha(&pr.head).unwrap();
    let checks = s.completed(&red, 1).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("failure"));
    assert!(!copilots_pull(&s).merged, "a red head is not merged");
    assert_eq!(todos(&s)[0].state, "open");
    assert_eq!(
        repo.file(&s.branch, "test_rows.py").as_deref(),
        Some(RED),
        "the task branch is untouched"
    );

    // Copilot works on after a review comment: a new commit on its branch.
    let green = repo.push_files(
        &pr.head,
        &[("test_rows.py", GREEN)],
        "Fix the count",
        COPILOT,
    );

    completes(&s).await;
    let checks = s.checks(&green);
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    assert!(copilots_pull(&s).merged);
    assert_eq!(todos(&s)[0].state, "closed");
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_persons_push_to_copilots_pull_request_makes_the_fix_a_persons() {
    let (s, todo) = red_todo_for_copilot(RED).await;
    let repo = s.app.fake.repo(REPO);
    repo.assign_copilot(todo.number, "alice", Some(&s.branch));
    let pr = copilots_pull(&s);
    let red = repo.branch_sha(&pr.head).unwrap();
    s.completed(&red, 1).await;

    // alice finishes Copilot's work on its branch herself.
    let green = repo.push_files(
        &pr.head,
        &[("test_rows.py", GREEN)],
        "Fix the count",
        "alice",
    );
    eventually("the todo closes", || async {
        todos(&s)[0].state == "closed"
    })
    .await;
    s.app.settle().await;
    assert_eq!(s.checks(&green)[0].conclusion.as_deref(), Some("success"));
    assert!(
        copilots_pull(&s).merged,
        "its proven head is merged all the same"
    );
    assert!(s.pull().draft, "a person acted: theirs to say done");
    assert_eq!(s.state(), "state:review");

    person_marks_ready(&s).await;
    let m = s.app.metrics().await;
    let fixed = |outcome: &str| {
        let agent = r#"agent="copilot",kind="test_failure""#;
        metric(
            &m,
            &format!("taskgate_fix_todos_closed{{{agent},outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(
        (fixed("fixed_without_human"), fixed("fixed_with_human")),
        (0.0, 1.0),
        "alice's push made it a person's fix"
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn copilots_pull_request_into_the_default_branch_is_told_the_base_and_runs_once_moved() {
    let (s, todo) = red_todo_for_copilot(GREEN).await;
    let repo = s.app.fake.repo(REPO);

    // alice leaves the dialog's base at the default branch.
    repo.assign_copilot(todo.number, "alice", None);

    let pr = copilots_pull(&s);
    assert_eq!(pr.base, repo.default_branch());
    eventually("taskgate says which base", || async {
        !s.app.bot_comments(pr.number).is_empty()
    })
    .await;
    s.app.settle().await;
    let said = s.app.bot_comments(pr.number);
    assert_eq!(said.len(), 1, "once: {said:#?}");
    assert!(
        said[0].contains(&format!("Change its base branch to `{}`", s.branch)),
        "{}",
        said[0]
    );
    let head = repo.branch_sha(&pr.head).unwrap();
    // The task's gate, as its red run named it (an ordinary pull request
    // into the default branch gets `taskgate/ship-gate`, as before).
    let gate = s.checks(&repo.branch_sha(&s.branch).unwrap())[0]
        .name
        .clone();
    let gates: Vec<String> = (s.checks(&head).into_iter())
        .map(|c| c.name)
        .filter(|n| *n == gate)
        .collect();
    assert!(gates.is_empty(), "the task's gates did not run: {gates:?}");
    assert!(!copilots_pull(&s).merged);
    assert_eq!(todos(&s)[0].state, "open");

    // alice follows the advice: the base change alone starts the run.
    // Copilot branched off the default branch, so its change conflicts
    // with the task's: GitHub refuses the merge, and that is said there.
    repo.set_base(pr.number, &s.branch, "alice");
    eventually("the refusal is said", || async {
        s.app.bot_comments(pr.number).len() == 2
    })
    .await;
    s.app.settle().await;
    let said = s.app.bot_comments(pr.number);
    assert_eq!(said.len(), 2, "{said:#?}");
    assert!(
        said[1].contains(&format!("merging it into `{}` was refused", s.branch)),
        "{}",
        said[1]
    );
    let gate_run = s.checks(&head).into_iter().find(|c| c.name == gate);
    let passed = gate_run.and_then(|c| c.conclusion);
    assert_eq!(passed.as_deref(), Some("success"), "the task's gate ran");
    assert!(!copilots_pull(&s).merged);
    assert_eq!(todos(&s)[0].state, "open");
}

#[tokio::test]
async fn under_human_review_copilots_green_pull_request_is_tested_and_left_to_a_person() {
    let config = "review: human\nroles:\n  coder: { agent: copilot }\n";
    let (s, todo) = red_todo_with(config, GREEN).await;
    let repo = s.app.fake.repo(REPO);

    repo.assign_copilot(todo.number, "alice", Some(&s.branch));

    let pr = copilots_pull(&s);
    let head = repo.branch_sha(&pr.head).unwrap();
    let checks = s.completed(&head, 1).await;
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    let said = s.app.bot_comments(pr.number);
    assert_eq!(said.len(), 1, "once: {said:#?}");
    assert!(said[0].contains("A person merges it"), "{}", said[0]);
    assert!(!copilots_pull(&s).merged, "a person merges it");
    assert_eq!(todos(&s)[0].state, "open");

    // alice merges it: the task branch's run closes the todo.
    repo.merge_pull(pr.number, "alice");
    eventually("the todo closes", || async {
        todos(&s)[0].state == "closed"
    })
    .await;
    s.app.settle().await;
    assert_eq!(
        s.state(),
        "state:review",
        "review: human: a person approves"
    );
}
