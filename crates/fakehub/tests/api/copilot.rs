//! fakehub plays Copilot's coding agent as GitHub documents it
//! (`FakeGitHub::add_copilot`): assigned an issue, it branches
//! `copilot/<slug>` off the base the assigner picked (the default branch
//! when none), opens its own draft pull request linking the issue, pushes
//! its work there as its bot and marks the pull request ready.

use fakehub::{AgentCall, AgentPush, FakeGitHub, COPILOT};
use serde_json::Value;

use crate::echoes::{echoing, settled};

fn copilot_fixing(gh: &FakeGitHub) {
    gh.add_copilot("acme/widgets", |_call: &AgentCall| {
        Some(AgentPush::to("", &[("fix.txt", "fixed")]))
    });
}

/// The `(event, action)` of each delivery Copilot's bot sent, in order.
fn copilots(got: &[(String, Value)]) -> Vec<(String, String)> {
    got.iter()
        .filter(|(_, p)| p["sender"]["login"] == COPILOT)
        .map(|(e, p)| {
            let action = p["action"].as_str().unwrap_or_default().to_owned();
            (e.clone(), action)
        })
        .filter(|(e, _)| e != "check_suite")
        .collect()
}

#[tokio::test]
async fn copilot_opens_its_own_pull_request_into_the_base_the_assigner_picked() {
    let (gh, repo, _c, inbox) = echoing().await;
    gh.add_user("alice", 11, "write");
    repo.with_file("taskgate/task-3-rows", "rows.py", "broken");
    copilot_fixing(&gh);
    let n = repo.create_issue("Fix the rows", "evidence", "alice");

    repo.assign_copilot(n, "alice", Some("taskgate/task-3-rows"));

    let calls = gh.agent_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].base.as_deref(), Some("taskgate/task-3-rows"));
    let pulls = repo.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let pull = &pulls[0];
    assert_eq!(pull.head, "copilot/fix-the-rows");
    assert_eq!(pull.base, "taskgate/task-3-rows");
    assert_eq!(pull.author, COPILOT);
    assert!(!pull.draft, "ready once its work is pushed");
    assert_eq!(pull.title, "Fix the rows");
    assert!(
        pull.body
            .as_deref()
            .unwrap()
            .starts_with(&format!("Fixes #{n}.")),
        "{pull:?}"
    );
    assert_eq!(
        repo.file("copilot/fix-the-rows", "rows.py").as_deref(),
        Some("broken")
    );
    assert_eq!(
        repo.file("copilot/fix-the-rows", "fix.txt").as_deref(),
        Some("fixed")
    );
    assert_eq!(
        repo.file("taskgate/task-3-rows", "fix.txt"),
        None,
        "the base is untouched"
    );
    let head = repo.branch_sha("copilot/fix-the-rows").unwrap();
    let author = repo.commit(&head).unwrap().authorship.unwrap().author;
    assert_eq!(author.name, COPILOT);

    let got = settled(&gh, &inbox).await;
    let seen = copilots(&got);
    let want = [
        ("create", ""),
        ("push", ""),
        ("pull_request", "opened"),
        ("push", ""),
        ("pull_request", "synchronize"),
        ("pull_request", "edited"),
        ("pull_request", "ready_for_review"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(e, a)| ((*e).to_owned(), (*a).to_owned()))
        .collect();
    assert_eq!(seen, want);
    let opened = got
        .iter()
        .find(|(e, p)| e == "pull_request" && p["action"] == "opened")
        .unwrap();
    assert_eq!(
        opened.1["pull_request"]["draft"], true,
        "a draft while it works"
    );
    assert_eq!(opened.1["pull_request"]["title"], "[WIP] Fix the rows");
}

#[tokio::test]
async fn copilot_assigned_without_a_base_works_from_the_default_branch() {
    let (gh, repo, _c, _inbox) = echoing().await;
    gh.add_user("alice", 11, "write");
    copilot_fixing(&gh);
    let n = repo.create_issue("Fix", "evidence", "alice");

    repo.assign(n, COPILOT, "alice");

    assert_eq!(gh.agent_calls()[0].base, None);
    let pulls = repo.pulls();
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0].base, repo.default_branch());
    assert_eq!(pulls[0].head, "copilot/fix");
}
