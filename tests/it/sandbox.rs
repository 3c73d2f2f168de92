//! The runner's sandbox through the whole app: the repository's config on
//! the default branch decides whether task code reaches the network, and
//! the check run says so. (The attacks on the sandbox itself are tested
//! against the runner in `src/runner/sandbox_tests.rs`.)

use crate::runs::story_with_plan;

/// A task whose test connects to a TCP listener on the host's loopback.
fn plan(port: u16) -> String {
    format!(
        r#"
story: Networked work
tasks:
  - id: check
    title: Make the check pass
    acceptance:
      tests:
        - {{ cmd: "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5)'", gate: net, timeout_seconds: 20 }}
"#
    )
}

async fn net_check(config: Option<&str>) -> fakehub::CheckRun {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let s = story_with_plan(&plan(port), config, 1).await;
    let sha = s.push(&[("notes.md", "work\n")], "work").await;
    let runs = s.completed(&sha, 1).await;
    drop(listener);
    runs.into_iter().next().unwrap()
}

#[tokio::test]
async fn task_code_has_no_network_unless_the_repository_allows_it_and_the_check_run_says_so() {
    let closed = net_check(None).await;
    assert_eq!(closed.conclusion.as_deref(), Some("failure"), "{closed:#?}");

    let open = net_check(Some("runner_network: true\n")).await;
    assert_eq!(open.conclusion.as_deref(), Some("success"), "{open:#?}");
    let said = format!(
        "{}\n{}",
        open.summary.as_deref().unwrap_or_default(),
        open.text.as_deref().unwrap_or_default()
    );
    assert!(
        said.contains("the sandbox allowed network access"),
        "{said}"
    );
}
