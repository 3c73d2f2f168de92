//! Serving the router over HTTP/1.1 on hyper, with a deadline for each
//! request's headers.
//!
//! `axum::serve` gives hyper no timer, so hyper's header read timeout never
//! applies there: a client sending its headers a byte at a time would hold
//! a connection for as long as it liked. Here every connection gets one.
//! Bodies have their own limits in the webhook's handler
//! (`crate::intake`'s budget).

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::error;

/// How long a request's headers may take to arrive (also how long a
/// kept-alive connection may sit idle): hyper's default, which it only
/// applies when given a timer.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` until `shutdown` resolves, then stops accepting, lets
/// each open connection finish the request it is on, and returns once all
/// have closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    // Each connection holds a receiver; a send asks them all to close, and
    // `closed` resolves once every one has dropped its receiver.
    let (stop, stopping) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                // A client that gave up before it was accepted.
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors, say: wait for some to close
                    // instead of spinning on the error (hyper's old choice).
                    error!(error = %e, "accepting a connection failed; pausing for 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = http.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                // A header timeout or a client gone is the connection's end,
                // not the server's concern.
                _ = connection.as_mut() => {}
                _ = stopping.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(stopping);
    let _ = stop.send(());
    stop.closed().await;
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    )
}
