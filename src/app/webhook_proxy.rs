//! `WEBHOOK_PROXY_URL`: webhooks relayed through a smee.io channel, the way
//! Probot apps are developed on a machine GitHub cannot reach. The App's
//! webhook URL is the channel; this task listens to the channel's event
//! stream and posts each delivery, headers and body as smee relays them, to
//! this server's own `POST /webhook`.
//!
//! Owns: the event-stream connection (reconnecting after a drop) and the
//! replay of each event. Must not: verify, record or decide anything — a
//! replayed delivery goes through the intake like any other, signature
//! check included, so a channel anyone can post to admits nothing unsigned.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use tracing::{debug, info, warn};

/// Waits between reconnections: from the first to the last, doubling.
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// smee sends a keep-alive every 30 s; a stream silent for three of them
/// is a dead connection (a laptop that slept, a dropped network) that
/// would otherwise be waited on forever.
const IDLE_LIMIT: Duration = Duration::from_secs(90);

/// A `WEBHOOK_PROXY_URL` that is not a channel's URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an http(s) URL of a channel (e.g. https://smee.io/<channel>)")]
pub struct ProxyUrlError(pub String);

/// Why a connection to the channel ended; the proxy reconnects after any
/// of them (each is worth another try: the channel is only a relay).
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("could not build an HTTP client: {0}")]
    Client(#[source] octocrab::Error),
    /// The channel could not be reached, or its stream broke.
    #[error("{0}")]
    Connection(#[source] octocrab::Error),
    #[error("the channel answered {0}")]
    Status(http::StatusCode),
    #[error("nothing came from the channel for {seconds} s, not even a keep-alive")]
    Silent { seconds: u64 },
    #[error(transparent)]
    TooLarge(#[from] EventTooLarge),
}

/// Checks a `WEBHOOK_PROXY_URL` before anything starts.
pub fn parse_proxy_url(url: &str) -> Result<String, ProxyUrlError> {
    let channel = url.parse::<http::Uri>().ok().filter(|uri| {
        matches!(uri.scheme_str(), Some("https" | "http"))
            && uri.host().is_some_and(|host| !host.is_empty())
    });
    match channel {
        Some(_) => Ok(url.to_owned()),
        None => Err(ProxyUrlError(url.to_owned())),
    }
}

/// One event of a `text/event-stream`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StreamEvent {
    /// `message` unless the event names another.
    pub name: String,
    pub data: String,
}

/// The most one event may hold: GitHub's largest webhook body, and room
/// for the headers smee relays beside it. A channel sending more is not
/// relaying GitHub (anyone may post to a channel): the connection is
/// dropped rather than its bytes held.
pub const EVENT_LIMIT: usize = crate::intake::MAX_BODY_BYTES + 64 * 1024;
const _: () = assert!(EVENT_LIMIT > crate::intake::MAX_BODY_BYTES);

/// An event grew past its limit before it ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event on the channel grew past {limit} bytes, more than any webhook GitHub sends")]
pub struct EventTooLarge {
    pub limit: usize,
}

/// Splits an event stream into events as its bytes arrive, in whatever
/// pieces (the WHATWG event-stream format: `field: value` lines, `data`
/// lines joined by newlines, a blank line ending an event, `:` comments).
#[derive(Debug)]
pub struct EventStream {
    pending: Vec<u8>,
    name: Option<String>,
    data: Option<String>,
    /// The most an unfinished event (its data and the line being read) may
    /// hold.
    limit: usize,
}

impl Default for EventStream {
    fn default() -> Self {
        EventStream::with_limit(EVENT_LIMIT)
    }
}

impl EventStream {
    pub fn with_limit(limit: usize) -> Self {
        EventStream {
            pending: Vec::new(),
            name: None,
            data: None,
            limit,
        }
    }

    /// The events `chunk` completes, or [`EventTooLarge`] once the event
    /// being read holds more than the limit (nothing more should be read).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<StreamEvent>, EventTooLarge> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    events.push(StreamEvent {
                        name: self.name.take().unwrap_or_else(|| "message".into()),
                        data,
                    });
                }
                self.name = None;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.name = Some(value.to_owned()),
                "data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                _ => {} // `id`, `retry` and unknown fields: not needed here
            }
            if self.data.as_ref().is_some_and(|d| d.len() > self.limit) {
                return Err(EventTooLarge { limit: self.limit });
            }
        }
        // What is left is a line not ended yet, of the event being read.
        let held = self.pending.len() + self.data.as_ref().map_or(0, String::len);
        if held > self.limit {
            return Err(EventTooLarge { limit: self.limit });
        }
        Ok(events)
    }
}

/// A delivery as smee relays it: GitHub's headers (lower-cased) and the
/// body, kept as the exact JSON text smee sent so the signature still
/// covers it.
#[derive(Debug, Deserialize)]
pub struct Relayed {
    #[serde(rename = "x-github-event")]
    pub event: String,
    #[serde(rename = "x-github-delivery")]
    pub delivery: String,
    #[serde(rename = "x-hub-signature-256")]
    pub signature: Option<String>,
    pub body: Box<RawValue>,
}

/// The delivery an event carries, if it is one: smee also sends `ready`
/// and keep-alive `ping` events, and data that is not a relayed webhook.
pub fn relayed(event: &StreamEvent) -> Option<Relayed> {
    if event.name != "message" {
        return None;
    }
    serde_json::from_str(&event.data).ok()
}

/// Listens to `channel` until the task is dropped, replaying each delivery
/// to `target` (this server's `/webhook`).
pub async fn run(channel: String, target: String) {
    let relay = reqwest::Client::new();
    let mut wait = RECONNECT_FIRST;
    loop {
        match listen(&channel, &target, &relay, &mut wait, IDLE_LIMIT).await {
            Ok(()) => warn!(%channel, "the webhook proxy channel closed; reconnecting"),
            Err(e) => warn!(%channel, error = %e, "the webhook proxy channel failed; reconnecting"),
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RECONNECT_MAX);
    }
}

/// One connection to the channel, until it ends or stays silent for
/// `idle`. A connection the channel accepted starts the waits between
/// reconnections over.
async fn listen(
    channel: &str,
    target: &str,
    relay: &reqwest::Client,
    wait: &mut Duration,
    idle: Duration,
) -> Result<(), ChannelError> {
    let client = octocrab::Octocrab::builder()
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(ChannelError::Client)?;
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("text/event-stream"),
    );
    let response = client
        ._get_with_headers(channel, Some(headers))
        .await
        .map_err(ChannelError::Connection)?;
    if !response.status().is_success() {
        return Err(ChannelError::Status(response.status()));
    }
    *wait = RECONNECT_FIRST;
    info!(%channel, "forwarding webhooks from the proxy channel");
    let mut body = response.into_body();
    let mut stream = EventStream::default();
    loop {
        let Ok(next) = tokio::time::timeout(idle, body.frame()).await else {
            return Err(ChannelError::Silent {
                seconds: idle.as_secs(),
            });
        };
        let Some(frame) = next else {
            return Ok(());
        };
        let frame = frame.map_err(ChannelError::Connection)?;
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        for event in stream.push(&chunk)? {
            match relayed(&event) {
                Some(delivery) => forward(relay, target, delivery).await,
                // smee's own `ready` and `ping` are named events; a message
                // is a relayed request, and one that is not a webhook is
                // worth a line to whoever wonders where it went.
                None if event.name == "message" => warn!(
                    %channel,
                    "a message on the channel is not a relayed webhook (no GitHub headers or body); skipped"
                ),
                None => {}
            }
        }
    }
}

/// Posts one relayed delivery to the intake. Its answer is only logged:
/// nothing can send it again (smee keeps nothing, and GitHub's log shows it
/// delivered to smee), which is why the proxy is for development only.
async fn forward(relay: &reqwest::Client, target: &str, delivery: Relayed) {
    let mut request = relay
        .post(target)
        .header("content-type", "application/json")
        .header("x-github-event", &delivery.event)
        .header("x-github-delivery", &delivery.delivery);
    if let Some(signature) = &delivery.signature {
        request = request.header("x-hub-signature-256", signature);
    }
    let body = Bytes::from(delivery.body.get().to_owned());
    match request.body(body).send().await {
        Ok(answer) if answer.status().is_success() => {
            debug!(delivery = %delivery.delivery, status = %answer.status(), "relayed");
        }
        Ok(answer) => warn!(
            delivery = %delivery.delivery,
            status = %answer.status(),
            "a relayed delivery was refused"
        ),
        Err(e) => warn!(delivery = %delivery.delivery, error = %e, "could not relay a delivery"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_wherever_the_bytes_break() {
        let text = ": keep-alive\r\nevent: ready\r\ndata: {}\r\n\r\ndata: {\"a\":\r\ndata: 1}\n\nevent: ping\ndata: x\n\n";
        let whole = EventStream::default().push(text.as_bytes()).unwrap();
        assert_eq!(
            whole,
            vec![
                StreamEvent {
                    name: "ready".into(),
                    data: "{}".into()
                },
                StreamEvent {
                    name: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
                StreamEvent {
                    name: "ping".into(),
                    data: "x".into()
                },
            ]
        );
        // The same bytes one at a time give the same events.
        let mut stream = EventStream::default();
        let piecewise: Vec<_> = text
            .as_bytes()
            .iter()
            .flat_map(|b| stream.push(std::slice::from_ref(b)).unwrap())
            .collect();
        assert_eq!(piecewise, whole);
        // An event without data is no event; an unfinished one waits.
        assert!(EventStream::default()
            .push(b"event: x\n\ndata: y\n")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn an_event_past_the_limit_ends_the_connection_whatever_its_shape() {
        // Within the limit: one event of 64 bytes of data.
        let fits = format!("data: {}\n\n", "a".repeat(64));
        let events = EventStream::with_limit(100).push(fits.as_bytes()).unwrap();
        assert_eq!(events[0].data.len(), 64);
        // A line that never ends, arriving in pieces.
        let mut stream = EventStream::with_limit(100);
        let piece = [b'a'; 60];
        assert!(stream.push(b"data: ").is_ok());
        assert!(stream.push(&piece).is_ok());
        assert_eq!(
            stream.push(&piece),
            Err(EventTooLarge { limit: 100 }),
            "held past the limit"
        );
        // Many short data lines of one event that never ends, a line at a
        // time; events that end keep nothing.
        let mut stream = EventStream::with_limit(100);
        for _ in 0..5 {
            assert!(stream.push(b"data: aaaaaaaaaa\n\n").is_ok());
        }
        let mut refused = None;
        for _ in 0..12 {
            if let Err(e) = stream.push(b"data: aaaaaaaaaa\n") {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(refused, Some(EventTooLarge { limit: 100 }));
    }

    #[test]
    fn only_message_events_carrying_a_delivery_are_relayed() {
        let body = r#"{"zen":"Speak like a human.","hook_id":1}"#;
        let data = format!(
            r#"{{"x-github-event":"ping","x-github-delivery":"d-1","x-hub-signature-256":"sha256=ab","body":{body},"query":{{}},"timestamp":1}}"#
        );
        let message = StreamEvent {
            name: "message".into(),
            data: data.clone(),
        };
        let delivery = relayed(&message).expect("a delivery");
        assert_eq!(
            (delivery.event.as_str(), delivery.delivery.as_str()),
            ("ping", "d-1")
        );
        assert_eq!(delivery.signature.as_deref(), Some("sha256=ab"));
        // The body is the text smee sent, byte for byte: what was signed.
        assert_eq!(delivery.body.get(), body);
        for other in [
            StreamEvent {
                name: "ready".into(),
                data: data.clone(),
            },
            StreamEvent {
                name: "message".into(),
                data: "{}".into(),
            },
            StreamEvent {
                name: "message".into(),
                data: "not json".into(),
            },
        ] {
            assert!(relayed(&other).is_none(), "{other:?}");
        }
    }

    #[tokio::test]
    async fn a_channel_silent_past_the_idle_limit_is_left() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let channel = format!("http://{}/silent", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let _ = socket.read(&mut [0u8; 4096]).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
            socket.write_all(head.as_bytes()).await.unwrap();
            // Then nothing, with the connection left open.
            std::future::pending::<()>().await;
        });
        let mut wait = RECONNECT_MAX;
        let relay = reqwest::Client::new();
        let idle = Duration::from_millis(300);
        let target = "http://127.0.0.1:9/webhook";
        let listening = listen(&channel, target, &relay, &mut wait, idle);
        // Without the idle limit it would wait forever; the test does not.
        let left = tokio::time::timeout(Duration::from_secs(10), listening)
            .await
            .expect("listen gives up on a silent channel");
        let why = left.expect_err("a silent channel is given up");
        assert!(why.to_string().contains("not even a keep-alive"), "{why}");
        // It had accepted the connection: the next wait starts over.
        assert_eq!(wait, RECONNECT_FIRST);
    }

    #[test]
    fn only_http_urls_with_a_host_are_channels() {
        assert!(parse_proxy_url("https://smee.io/abc123").is_ok());
        assert!(parse_proxy_url("http://127.0.0.1:3001/channel").is_ok());
        for bad in ["smee.io/abc", "ftp://smee.io/abc", "https://", "not a url"] {
            assert!(parse_proxy_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_refused_url_and_a_lost_channel_say_why() {
        insta::assert_snapshot!(ProxyUrlError("smee.io/abc".into()), @"`smee.io/abc` is not an http(s) URL of a channel (e.g. https://smee.io/<channel>)");
        insta::assert_snapshot!(ChannelError::Status(http::StatusCode::NOT_FOUND), @"the channel answered 404 Not Found");
        insta::assert_snapshot!(ChannelError::Silent { seconds: 90 }, @"nothing came from the channel for 90 s, not even a keep-alive");
    }
}
