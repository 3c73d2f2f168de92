//! Every published example payload of the events taskgate handles
//! (`fixtures/webhooks/`, from `@octokit/webhooks-examples`) is accepted,
//! recorded and processed without error.

use std::path::PathBuf;

use crate::support::{fixture, TestApp};

fn webhook_fixtures() -> Vec<(String, PathBuf)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/webhooks");
    let mut out = Vec::new();
    for event in taskgate::intake::event::HANDLED_EVENTS {
        let dir = root.join(event);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no examples for {event}");
        out.extend(files.into_iter().map(|f| (event.to_string(), f)));
    }
    out
}

#[test]
fn every_example_payload_parses() {
    let fixtures = webhook_fixtures();
    assert!(
        fixtures.len() >= 100,
        "expected the whole examples package, found {}",
        fixtures.len()
    );
    for (event, path) in fixtures {
        let body = std::fs::read(&path).unwrap();
        if let Err(e) = taskgate::intake::event::parse(&event, &body) {
            panic!("{}: {e}", path.display());
        }
    }
}

#[tokio::test]
async fn every_example_payload_is_accepted_and_processed() {
    let app = TestApp::start().await;
    let fixtures = webhook_fixtures();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/webhooks");
    // Some examples are the same body (the package repeats one review):
    // a body seen before is a duplicate under any delivery id (issue 45).
    let mut bodies = std::collections::HashSet::new();
    for (event, path) in &fixtures {
        // Dated now: an example from 2019 would be refused as a replay.
        let payload = fixture(path.strip_prefix(&root).unwrap().to_str().unwrap());
        let new = bodies.insert(serde_json::to_vec(&payload).unwrap());
        let (status, text) = app.deliver(event, &payload).await;
        let expected = if new { 202 } else { 200 };
        assert_eq!(status, expected, "{}: {text}", path.display());
    }
    app.settle().await;
    assert_eq!(
        app.store().delivery_count().await.unwrap(),
        bodies.len() as i64
    );
    // Every one decided: none waiting, none failed.
    assert_eq!(app.store().inbox_depth().await.unwrap(), (0, 0));
    assert_eq!(app.store().failed_deliveries().await.unwrap(), 0);
    app.assert_contract_kept();
}

/// Every action taskgate acts on is one GitHub sends: it has a published
/// example payload or is in GitHub's webhook description. A misspelt
/// variant would otherwise leave its deliveries unread, silently.
#[test]
fn every_action_taskgate_acts_on_is_one_github_sends() {
    use taskgate::intake::event::{WebhookKind, HANDLED_EVENTS};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let described: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("openapi/webhooks-subset.json")).unwrap())
            .unwrap();
    let described = described["webhooks"].as_object().unwrap();
    for event in HANDLED_EVENTS {
        for action in WebhookKind::acted_on(event) {
            let example = std::fs::read_dir(root.join("webhooks").join(event))
                .unwrap()
                .any(|f| {
                    let name = f.unwrap().file_name();
                    name.to_string_lossy().starts_with(&format!("{action}."))
                });
            let key = format!("{event}-{action}").replace('_', "-");
            assert!(
                example || described.contains_key(&key),
                "{event}.{action}: no example payload and not in GitHub's description"
            );
        }
    }
}

/// The processor skips re-reading payloads whose kind does not matter;
/// that is only sound if the core would have done nothing with them.
#[test]
fn events_the_processor_skips_are_ones_the_core_ignores() {
    use taskgate::intake::{event, translate};
    for (name, path) in webhook_fixtures() {
        let body = std::fs::read(&path).unwrap();
        let parsed = event::parse(&name, &body).unwrap();
        if !parsed.kind().matters() {
            let ev = translate::to_event(&parsed.webhook).unwrap();
            assert!(
                matches!(ev, taskgate_core::Event::Unused { .. }),
                "{}: skipped but the core would act on {ev:?}",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn installation_events_record_and_forget_the_repositories_covered() {
    let app = TestApp::start().await;
    let installation = taskgate_core::ids::InstallationId::new(957387);
    let created = crate::support::fixture("installation/created.1.json");
    assert_eq!(app.deliver("installation", &created).await.0, 202);
    app.settle().await;
    let repos = app.store().installation_repos(installation).await.unwrap();
    assert_eq!(
        repos,
        vec![taskgate_core::ids::RepoName::parse("codertocat/hello-world").unwrap()]
    );

    let mut deleted = created.clone();
    deleted["action"] = serde_json::json!("deleted");
    assert_eq!(app.deliver("installation", &deleted).await.0, 202);
    app.settle().await;
    assert!(app
        .store()
        .installation_repos(installation)
        .await
        .unwrap()
        .is_empty());
}
