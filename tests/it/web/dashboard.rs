//! The dashboard (`GET /`) against a real story: a red push opens a branch
//! todo, and the page shows the story, its task's state, gate and todo,
//! behind the API token.

use base64::Engine;

use crate::support::story::Story;
use crate::support::{TestApp, REPO};

const PLAN: &str = r#"
story: Dashboard <work>
settings: { max_debug_attempts: 2 }
tasks:
  - id: check
    title: Make the check pass
    acceptance:
      tests:
        - { cmd: "sh check.sh", timeout_seconds: 20, gate: unit }
  - id: later
    title: Later work
    depends_on: [check]
    acceptance:
      tests:
        - { cmd: "true" }
"#;

fn basic(password: &str) -> String {
    let pair = format!("someone:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

async fn get(url: &str, authorization: Option<&str>) -> (u16, Option<String>, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let challenge = res
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, challenge, res.text().await.unwrap())
}

#[tokio::test]
async fn the_dashboard_shows_a_failing_task_and_its_branch_todo() {
    let s = Story::of(PLAN).runners(1).start().await;
    let sha = s
        .push(
            &[("check.sh", "echo 'expected 10 rows, got 0' >&2; exit 1\n")],
            "red",
        )
        .await;
    s.completed(&sha, 1).await;
    let repo = s.app.fake.repo(REPO);
    let todo = repo
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .expect("a branch todo");

    let check_run = repo
        .check_runs()
        .into_iter()
        .find(|c| {
            c.head_sha == sha
                && c.external_id
                    .as_deref()
                    .is_some_and(|k| k.ends_with("gate=unit"))
        })
        .expect("the gate's check run");

    let url = format!("{}/", s.app.url);
    let (status, _, page) = get(&url, Some(&basic("api-token"))).await;
    assert_eq!(status, 200, "{page}");
    let fake = s.app.fake.url();
    for expected in [
        "Dashboard &#60;work&#62;".to_owned(),
        format!(
            "<a href=\"{fake}/{REPO}/issues/{}\">#{}</a> Make the check pass",
            s.task_issue, s.task_issue
        ),
        "<span class=\"state test-failed\">test-failed</span>".to_owned(),
        "<span class=\"state blocked\">blocked</span>".to_owned(),
        "<span class=\"gate fail\">unit ✗".to_owned(),
        format!(
            "<a href=\"{fake}/{REPO}/issues/{}\">#{}</a>",
            todo.number, todo.number
        ),
        "attempt 1/2, depth 1/2".to_owned(),
        "0/2 tasks complete".to_owned(),
        // The run, with its commit and how long it took.
        format!("<li>#1 <a href=\"{fake}/{REPO}/commit/{sha}\"><code>{}</code></a> <span class=\"state failed\">failed</span>", &sha[..7]),
        // And the gate's check run, where GitHub shows it.
        format!("<a class=\"gate\" href=\"{fake}/{REPO}/runs/{}\">unit</a></li>", check_run.id),
    ] {
        assert!(page.contains(&expected), "{expected}\n\n{page}");
    }
    // The same token as a bearer token works too.
    assert_eq!(get(&url, Some("Bearer api-token")).await.0, 200);

    // Filtered to its repository (names are case-insensitive), and to one
    // with no story; a name that is not owner/name is refused.
    let auth = Some(basic("api-token"));
    let (status, _, page) = get(
        &format!("{url}?repo={}", REPO.to_uppercase()),
        auth.as_deref(),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("1 story in {REPO}")), "{page}");
    let (status, _, page) = get(&format!("{url}?repo=octo/elsewhere"), auth.as_deref()).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("No stories in octo/elsewhere."), "{page}");
    assert!(!page.contains("Make the check pass"), "{page}");
    let (status, _, body) = get(&format!("{url}?repo=not-a-repo"), auth.as_deref()).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            "repo filter: `not-a-repo` is not of the form owner/name\n"
        )
    );
}

#[tokio::test]
async fn the_dashboard_asks_for_the_token_and_shows_nothing_without_it() {
    let app = TestApp::start().await;
    let url = format!("{}/", app.url);
    for authorization in [None, Some(basic("wrong")), Some("Bearer wrong".to_owned())] {
        let (status, challenge, body) = get(&url, authorization.as_deref()).await;
        assert_eq!(status, 401, "{authorization:?}");
        assert_eq!(
            challenge.as_deref(),
            Some("Basic realm=\"taskgate\", charset=\"UTF-8\"")
        );
        assert!(!body.contains("<html"), "{body}");
    }
    let (status, _, page) = get(&url, Some(&basic("api-token"))).await;
    assert_eq!(status, 200);
    assert!(page.contains("No stories yet"), "{page}");
}

#[tokio::test]
async fn without_a_configured_token_the_dashboard_is_closed() {
    let fake = fakehub::FakeGitHub::start().await;
    let app = TestApp::with_config(fake, |c| c.api_token = None).await;
    let (status, _, body) = get(&format!("{}/", app.url), Some(&basic(""))).await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        "The dashboard is closed: set TASKGATE_API_TOKEN and sign in with it as the password.\n"
    );
}
