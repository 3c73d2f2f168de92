//! `WEBHOOK_PROXY_URL`: deliveries relayed through a smee-style channel
//! reach the intake, signature check included, across a dropped stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use taskgate::intake::signature::sign;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{eventually, fixture, TestApp, SECRET};

/// A channel serving `streams[i]` to its i-th connection as an event
/// stream, then hanging up; the last one stays open, as smee's do.
async fn channel(streams: Vec<String>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/channel-1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let i = seen.fetch_add(1, Ordering::SeqCst);
            let Some(events) = streams.get(i.min(streams.len() - 1)).cloned() else {
                return;
            };
            let last = i + 1 >= streams.len();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            cache-control: no-cache\r\nconnection: close\r\n\r\n";
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(events.as_bytes()).await.unwrap();
                if last {
                    std::future::pending::<()>().await;
                }
            });
        }
    });
    (url, connections)
}

/// An event as smee relays a delivery: GitHub's headers beside the body.
fn relayed(delivery: &str, body: &str, secret: &str) -> String {
    let signature = sign(secret.as_bytes(), body.as_bytes());
    format!(
        "data: {{\"x-github-event\":\"ping\",\"x-github-delivery\":\"{delivery}\",\
         \"x-hub-signature-256\":\"{signature}\",\"body\":{body},\"query\":{{}},\
         \"timestamp\":1764000000000}}\n\n"
    )
}

#[tokio::test]
async fn relayed_deliveries_are_recorded_and_forged_ones_refused_across_reconnects() {
    let body = serde_json::to_string(&fixture("ping/default.1.json")).unwrap();
    let first = format!(
        ": connected\n\nevent: ready\ndata: {{}}\n\n{}{}event: ping\ndata: {{}}\n\n",
        relayed("d-smee-1", &body, SECRET),
        relayed("d-smee-forged", &body, "not the secret"),
    );
    // Another delivery: the same body again would be a replay (issue 45).
    let other = serde_json::to_string(&fixture("ping/default.2.json")).unwrap();
    let second = relayed("d-smee-2", &other, SECRET);
    let (url, connections) = channel(vec![first, second]).await;

    let app = TestApp::start_with(|config| config.webhook_proxy_url = Some(url)).await;
    let store = app.store();
    eventually("both signed deliveries are recorded", || {
        let store = store.clone();
        async move {
            store.delivery("d-smee-1").await.unwrap().is_some()
                && store.delivery("d-smee-2").await.unwrap().is_some()
        }
    })
    .await;
    // The second came over a new connection, after the first was dropped.
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    assert!(store.delivery("d-smee-forged").await.unwrap().is_none());
    assert_eq!(store.delivery_count().await.unwrap(), 2);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("taskgate_deliveries_total{event=\"unverified\",outcome=\"rejected\"} 1"),
        "{metrics}"
    );
}
