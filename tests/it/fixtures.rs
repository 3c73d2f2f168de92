//! Every published example payload of the events taskgate handles
//! (`fixtures/webhooks/`, from `@octokit/webhooks-examples`) is accepted,
//! recorded and processed without error.

use std::path::PathBuf;

use crate::support::TestApp;

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
    for (event, path) in &fixtures {
        let payload: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let (status, text) = app.deliver(event, &payload).await;
        assert_eq!(status, 202, "{}: {text}", path.display());
    }
    app.settle().await;
    assert_eq!(
        app.store().delivery_count().await.unwrap(),
        fixtures.len() as i64
    );
    let unprocessed: i64 = app
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM deliveries WHERE status != 'processed'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(unprocessed, 0);
    app.assert_contract_kept();
}

/// The processor skips re-reading payloads `may_matter` rules out; that is
/// only sound if the core would have done nothing with them.
#[test]
fn events_the_processor_skips_are_ones_the_core_ignores() {
    use taskgate::intake::{event, translate};
    for (name, path) in webhook_fixtures() {
        let body = std::fs::read(&path).unwrap();
        let parsed = event::parse(&name, &body).unwrap();
        if !translate::may_matter(&name, parsed.action.as_deref()) {
            let ev = translate::to_event(&name, &parsed).unwrap();
            assert!(
                matches!(ev, taskgate::core::Event::Unused { .. }),
                "{}: skipped but the core would act on {ev:?}",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn installation_events_record_and_forget_the_repositories_covered() {
    let app = TestApp::start().await;
    let installation = taskgate::ids::InstallationId(957387);
    let created = crate::support::fixture("installation/created.1.json");
    assert_eq!(app.deliver("installation", &created).await.0, 202);
    app.settle().await;
    let repos = app.store().installation_repos(installation).await.unwrap();
    assert_eq!(
        repos,
        vec![taskgate::ids::RepoName::parse("codertocat/hello-world").unwrap()]
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
