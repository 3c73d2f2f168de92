//! The dashboard (`GET /`) in headless Chromium, as a person sees it: the
//! sign-in refusal without the token, and with it a story, its task tree
//! with states, the runs, the open branch todo and the progress. Each test
//! keeps a screenshot in `target/browser-artifacts/` (see `browser.rs`).

use crate::browser::{Browser, Page};
use crate::support::story::Story;
use crate::support::{TestApp, REPO};

const PLAN: &str = r#"
story: Browser <view>
settings: { max_debug_attempts: 2 }
tasks:
  - id: check
    title: Make the check pass
    acceptance:
      tests:
        - { cmd: "sh check.sh", timeout_seconds: 20, gate: unit }
  - id: polish
    title: Polish the page
    tasks:
      - { id: copy, title: Write the copy, depends_on: [check], acceptance: { tests: [{ cmd: "true" }] } }
      - { id: notes, title: Release notes, requires_testing: false }
"#;

#[tokio::test]
async fn without_the_token_a_browser_sees_only_the_sign_in_refusal() {
    let app = TestApp::start().await;
    let url = format!("{}/", app.url);
    let browser = Browser::start().await;

    // A person who cancels the sign-in dialog.
    let page = browser.open(&url).await;
    page.screenshot("without_the_token_a_browser_sees_only_the_sign_in_refusal")
        .await;
    insta::assert_snapshot!(
        page.text().await,
        @"Sign in with TASKGATE_API_TOKEN as the password (any user name)."
    );
    // One who signs in with the wrong password, then gives up.
    let page = browser.open_signed_in(&url, "someone", "wrong").await;
    insta::assert_snapshot!(
        page.text().await,
        @"Sign in with TASKGATE_API_TOKEN as the password (any user name)."
    );
}

#[tokio::test]
async fn with_the_token_a_browser_sees_the_story_its_task_tree_runs_todo_and_progress() {
    let (s, sha) = a_story_with_a_red_push().await;
    let repo = s.app.fake.repo(REPO);
    let issue = |title: &str| {
        repo.issues()
            .into_iter()
            .find(|i| i.title.contains(title))
            .unwrap_or_else(|| panic!("no issue titled {title:?}"))
            .number
    };

    let browser = Browser::start().await;
    let page = browser
        .open_signed_in(&format!("{}/", s.app.url), "someone", "api-token")
        .await;
    let text = page.text().await;
    let closed = page.rows().await;
    // The run count opens the task's runs.
    page.click_on("1").await;
    let shot = page
        .screenshot("with_the_token_a_browser_sees_the_story_its_task_tree_runs_todo_and_progress")
        .await;
    let rows = Rows {
        rows: page.rows().await,
        seen: format!("{}\n\n{text}", shot.display()),
    };
    let story = page
        .section(&format!("{REPO}#{}", issue("Browser <view>")))
        .await;

    for expected in [
        format!("{REPO}#{} Browser <view> building", issue("Browser <view>")),
        "Tasks\nready: 1 test-failed: 1 blocked: 1".to_owned(),
        "Branch todos open\n1\n".to_owned(),
    ] {
        assert!(text.contains(&expected), "{expected}\n\n{}", rows.seen);
    }
    // The story's own section: its progress, not the page's totals.
    assert!(story.starts_with("0/3 tasks complete\n"), "{story}");
    assert!(!story.contains("Branch todos open"), "{story}");

    let header = ["Task", "State", "Runs", "Gates", "Branch todo"];
    assert!(rows.rows.iter().any(|r| r == &header), "{}", rows.seen);
    let check = rows.of("Make the check pass");
    assert_eq!(
        check[..2],
        [
            format!("#{} Make the check pass check", s.task_issue),
            "test-failed".to_owned()
        ],
        "{}",
        rows.seen
    );
    // The runs: a count, which opens to the newest runs with their commit,
    // outcome, time taken, runner and the gates' check runs.
    let closed = Rows {
        rows: closed,
        seen: rows.seen.clone(),
    };
    assert_eq!(closed.of("Make the check pass")[2], "1", "{}", rows.seen);
    let opened = format!("1\n#1 {} failed ", &sha[..7]);
    assert!(
        check[2].starts_with(&opened) && check[2].ends_with(" local unit"),
        "{check:?}\n\n{}",
        rows.seen
    );
    // The open branch todo: its failure kind and role (the classifier's
    // and the router's to choose), bounds and age; the gate shows the kind.
    let todo = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .expect("a branch todo");
    let (kind, rest) = check[4]
        .strip_prefix(&format!("#{} ", todo.number))
        .and_then(|todo| todo.split_once(" → "))
        .unwrap_or_else(|| panic!("{check:?}\n\n{}", rows.seen));
    assert!(
        rest.contains(", attempt 1/2, depth 1/2, open "),
        "{check:?}\n\n{}",
        rows.seen
    );
    assert_eq!(check[3], format!("unit ✗ {kind}"), "{}", rows.seen);

    assert_the_task_tree(&page, &rows, &issue).await;
}

/// The parent's progress and its subtasks' states, and its subtasks laid
/// out to the right of the top-level tasks, as a tree.
async fn assert_the_task_tree(page: &Page<'_>, rows: &Rows, issue: &dyn Fn(&str) -> u64) {
    for (title, id, state, runs) in [
        ("Polish the page", "polish · 0/2 done", "blocked", ""),
        ("Write the copy", "copy", "blocked", "0"),
        ("Release notes", "notes", "ready", "0"),
    ] {
        assert_eq!(
            rows.of(title),
            [
                &format!("#{} {title} {id}", issue(title)),
                state,
                runs,
                "",
                ""
            ],
            "{}",
            rows.seen
        );
    }
    // A tree: each task's issue link starts its row, the parent's
    // subtasks to the right of the top-level tasks.
    let link = |title: &str| format!("#{}", issue(title));
    let top = page.left_of(&link("Polish the page")).await;
    let first = page.left_of(&link("Make the check pass")).await;
    assert_eq!(first, top, "{}", rows.seen);
    for child in ["Write the copy", "Release notes"] {
        let x = page.left_of(&link(child)).await;
        assert!(
            x > top + 10.0,
            "{child} at {x} px, its parent at {top} px\n\n{}",
            rows.seen
        );
    }
}

/// A story of [`PLAN`] whose first task's branch got a failing push: a
/// failed run, a red gate and an open branch todo. Returns the pushed sha.
async fn a_story_with_a_red_push() -> (Story, String) {
    let s = Story::of(PLAN).runners(1).start().await;
    let sha = s
        .push(
            &[("check.sh", "echo 'expected 10 rows, got 0' >&2; exit 1\n")],
            "red",
        )
        .await;
    s.completed(&sha, 1).await;
    (s, sha)
}

/// The page's table rows, and what the page showed, for failure messages.
struct Rows {
    rows: Vec<Vec<String>>,
    seen: String,
}

impl Rows {
    /// The row whose first cell mentions `title`.
    fn of(&self, title: &str) -> &[String] {
        self.rows
            .iter()
            .find(|r| r.first().is_some_and(|c| c.contains(title)))
            .unwrap_or_else(|| panic!("no row for {title:?} in {:?}\n\n{}", self.rows, self.seen))
    }
}
