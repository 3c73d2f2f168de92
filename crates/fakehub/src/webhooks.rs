//! Webhook delivery: POSTs a payload to the app the way GitHub's hookshot
//! does, signed with `X-Hub-Signature-256: sha256=<hex hmac of the raw body>`,
//! and records every attempt in the App webhook's delivery log, as GitHub
//! does (`GET /app/hook/deliveries`; redelivery is `routes::hook_deliveries`).

use std::sync::Arc;
use std::time::Instant;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::state::{HookDelivery, PendingDelivery};
use crate::Shared;

/// `sha256=<hex>` over the exact bytes sent.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The bytes a payload is sent as.
pub fn body(payload: &Value) -> Vec<u8> {
    serde_json::to_vec(payload).expect("payload serialises")
}

/// The headers a delivery of `body` carries.
pub fn headers(
    app_id: u64,
    secret: &str,
    event: &str,
    delivery_id: &str,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    vec![
        ("content-type", "application/json".into()),
        ("user-agent", "GitHub-Hookshot/fake".into()),
        ("x-github-event", event.into()),
        ("x-github-delivery", delivery_id.into()),
        ("x-github-hook-id", "1".into()),
        ("x-github-hook-installation-target-id", app_id.to_string()),
        (
            "x-github-hook-installation-target-type",
            "integration".into(),
        ),
        ("x-hub-signature-256", signature(secret, body)),
    ]
}

/// Sends one delivery; returns the status and body (status 0 and the error
/// text when the target cannot be reached).
pub async fn deliver(
    app_id: u64,
    target_url: &str,
    secret: &str,
    event: &str,
    delivery_id: &str,
    payload: &Value,
) -> (u16, String) {
    let body = body(payload);
    let mut request = reqwest::Client::new().post(target_url);
    for (name, value) in headers(app_id, secret, event, delivery_id, &body) {
        request = request.header(name, value);
    }
    let sent = request.body(body).send().await;
    match sent {
        Ok(resp) => {
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    }
}

/// Sends `attempt` and appends it to the delivery log (`redelivery`: sent
/// again on request); returns what [`deliver`] returns.
pub(crate) async fn deliver_logged(
    shared: &Shared,
    attempt: PendingDelivery,
    redelivery: bool,
) -> (u16, String) {
    let (app_id, id, delivered_at) = {
        let mut st = shared.lock();
        (st.app_id, st.hook_delivery_ids.next(), st.clock.now())
    };
    let started = Instant::now();
    let PendingDelivery {
        url,
        secret,
        event,
        guid,
        payload,
    } = attempt;
    let (status_code, text) = deliver(app_id, &url, &secret, &event, &guid, &payload).await;
    let status = match status_code {
        0 => "failed to connect to host".to_string(),
        200..=299 => "OK".to_string(),
        code => format!("Invalid HTTP Response: {code}"),
    };
    let entry = HookDelivery {
        id,
        guid,
        delivered_at,
        redelivery,
        duration: started.elapsed().as_secs_f64(),
        status,
        status_code,
        action: payload
            .get("action")
            .and_then(Value::as_str)
            .map(str::to_string),
        installation_id: payload.pointer("/installation/id").and_then(Value::as_u64),
        repository_id: payload.pointer("/repository/id").and_then(Value::as_u64),
        event,
        url,
        secret,
        payload,
        response: text.clone(),
    };
    shared.lock().hook_deliveries.push(entry);
    shared.logged.notify_waiters();
    (status_code, text)
}

/// Waits until every accepted redelivery is in the delivery log.
///
/// # Panics
/// After 30 seconds, with the counts.
pub(crate) async fn redeliveries_settled(shared: &Shared) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let counts = || {
        let st = shared.lock();
        let logged = st.hook_deliveries.iter().filter(|d| d.redelivery).count();
        (st.redeliveries.len(), logged)
    };
    loop {
        let notified = shared.logged.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (accepted, logged) = counts();
        if logged >= accepted {
            return;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            let (accepted, logged) = counts();
            panic!("fakehub: {accepted} redeliveries accepted, {logged} logged after 30 s");
        }
    }
}

/// Sends redeliveries accepted by a handler on their own tasks, as GitHub
/// queues them: the answer to the request does not wait for the receiver.
pub(crate) fn redeliver_later(shared: &Arc<Shared>, outbox: Vec<PendingDelivery>) {
    for attempt in outbox {
        let shared = shared.clone();
        tokio::spawn(async move {
            deliver_logged(&shared, attempt, true).await;
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn signature_matches_githubs_documented_example() {
        // From docs.github.com "Validating webhook deliveries".
        assert_eq!(
            super::signature("It's a Secret to Everybody", b"Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}
