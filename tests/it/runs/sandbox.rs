//! The runner's sandbox through the whole app: the repository's config on
//! the default branch asks for the network, the operator
//! (`TASKGATE_RUNNER_NETWORK`) decides, and the check run says what became
//! of the request. (The attacks on the sandbox itself, with and without the
//! network, are tested against the runner in `src/runner/sandbox/tests.rs`
//! and `src/runner/sandbox/net/attacks.rs`.)

use taskgate_core::network::RunnerNetwork;

use crate::support::story::Story;
use crate::support::REPO;

/// A task whose test passes only with a way out of the sandbox's own
/// network namespace (slirp4netns's tap device).
const PLAN: &str = r#"
story: Networked work
tasks:
  - id: check
    title: Make the check pass
    acceptance:
      tests:
        - { cmd: "python3 -c 'import socket, sys; sys.exit(\"tap0\" not in [n for _, n in socket.if_nameindex()])'", gate: net, timeout_seconds: 20 }
"#;

async fn net_check(config: Option<&str>, operator: &str) -> fakehub::CheckRun {
    let operator: RunnerNetwork = operator.parse().unwrap();
    let s = Story::of(PLAN)
        .config_if(config)
        .runners(1)
        .adjust(|c| c.runner_network = operator)
        .start()
        .await;
    let sha = s.push(&[("notes.md", "work\n")], "work").await;
    let runs = s.completed(&sha, 1).await;
    runs.into_iter().next().unwrap()
}

fn said(run: &fakehub::CheckRun) -> String {
    format!(
        "{}\n{}",
        run.summary.as_deref().unwrap_or_default(),
        run.text.as_deref().unwrap_or_default()
    )
}

#[tokio::test]
async fn the_network_is_the_operators_to_give_and_the_check_run_says_what_became_of_the_request() {
    let asks = Some("runner_network: true\n");
    let unasked = net_check(None, REPO).await;
    assert_eq!(
        unasked.conclusion.as_deref(),
        Some("failure"),
        "{unasked:#?}"
    );
    assert!(!said(&unasked).contains("network"), "{}", said(&unasked));

    let refused = net_check(asks, "never").await;
    assert_eq!(
        refused.conclusion.as_deref(),
        Some("failure"),
        "{refused:#?}"
    );
    let text = said(&refused);
    let line = text
        .lines()
        .find(|l| l.contains("ran offline"))
        .unwrap_or(&text);
    insta::assert_snapshot!(line, @"- ran offline: .github/taskgate.yml asks for the network (`runner_network: true`), but this taskgate's operator does not allow it for this repository (TASKGATE_RUNNER_NETWORK)");

    let allowed = net_check(asks, &format!("other/repo,{REPO}")).await;
    assert_eq!(
        allowed.conclusion.as_deref(),
        Some("success"),
        "{allowed:#?}"
    );
    assert!(
        said(&allowed).contains("the sandbox allowed network access to public addresses only"),
        "{}",
        said(&allowed)
    );
}
