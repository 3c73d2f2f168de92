//! The App webhook's delivery log and redelivery (JWT), as GitHub keeps
//! them: GitHub does not retry a failed delivery, an app finds it in
//! `GET /app/hook/deliveries` and asks for another attempt with
//! `POST /app/hook/deliveries/{delivery_id}/attempts`.
//!
//! The log is filled by `webhooks::deliver_logged` (every
//! [`crate::FakeGitHub::deliver`] and every redelivery). The list is newest
//! first and paged with an opaque `cursor` (here: the id to continue below)
//! announced in a `Link: <...>; rel="next"` header. A redelivery is answered
//! 202 at once; the handler leaves it in `State::outbox` and the pipeline
//! sends it afterwards, to the App's *current* webhook URL and secret, with
//! the original event, `X-GitHub-Delivery` and payload.

use serde_json::{json, Value};

use super::{jwt, link, HResult, Reply, Req, Route};
use crate::render;
use crate::state::{HookDelivery, PendingDelivery, State};

pub const ROUTES: &[Route] = &[
    jwt("GET", "/app/hook/deliveries", list),
    jwt(
        "POST",
        "/app/hook/deliveries/{delivery_id}/attempts",
        redeliver,
    ),
];

/// GitHub keeps deliveries redeliverable for three days.
const REDELIVERABLE_DAYS: i64 = 3;

fn invalid(field: &str, value: &str) -> Reply {
    Reply::invalid(json!({
        "resource": "HookDelivery",
        "code": "invalid",
        "field": field,
        "message": format!("{field} is invalid: {value:?}"),
    }))
}

/// An optional query parameter out of a fixed set of words.
fn choice(req: &Req, name: &str, words: [&'static str; 2]) -> Result<Option<&'static str>, Reply> {
    match req.query.get(name) {
        None => Ok(None),
        Some(v) => words
            .into_iter()
            .find(|w| w == v)
            .map(Some)
            .ok_or_else(|| invalid(name, v)),
    }
}

/// `per_page` (default 30, at most 100), `cursor` (entries with a lower id),
/// `redelivery` (true|false) and the contract's `status` (success|failure).
fn list(st: &mut State, req: &Req) -> HResult {
    let per_page = super::url::per_page(req);
    let below = match req.query.get("cursor").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(c.parse::<u64>().map_err(|_| invalid("cursor", c))?),
    };
    let redelivery = choice(req, "redelivery", ["true", "false"])?.map(|w| w == "true");
    let success = choice(req, "status", ["success", "failure"])?.map(|w| w == "success");
    let mut matching: Vec<&HookDelivery> = st
        .hook_deliveries
        .iter()
        .filter(|d| below.is_none_or(|c| d.id < c))
        .filter(|d| redelivery.is_none_or(|r| d.redelivery == r))
        .filter(|d| success.is_none_or(|s| (d.status == "OK") == s))
        .collect();
    matching.sort_by_key(|d| std::cmp::Reverse(d.id));
    let more = matching.len() > per_page;
    matching.truncate(per_page);
    let body: Vec<Value> = matching.iter().map(|d| render::hook_delivery(d)).collect();
    let mut reply = Reply::ok(Value::Array(body));
    if let (true, Some(last)) = (more, matching.last()) {
        let next = link(
            req,
            &[
                ("per_page", per_page.to_string()),
                ("cursor", last.id.to_string()),
            ],
            "next",
        );
        reply.headers.push(("link".into(), next));
    }
    Ok(reply)
}

fn redeliver(st: &mut State, req: &Req) -> HResult {
    let id = req.num("delivery_id")?;
    let original = st
        .hook_deliveries
        .iter()
        .find(|d| d.id == id)
        .ok_or_else(Reply::not_found)?;
    let Some((url, secret)) = st.app_webhook.clone() else {
        return Err(Reply::unprocessable("Webhook is not configured"));
    };
    if st.clock.now() - original.delivered_at > chrono::Duration::days(REDELIVERABLE_DAYS) {
        return Err(Reply::unprocessable(
            "Deliveries older than 3 days cannot be redelivered",
        ));
    }
    let attempt = PendingDelivery {
        url,
        secret,
        event: original.event.clone(),
        guid: original.guid.clone(),
        payload: original.payload.clone(),
    };
    st.outbox.push(attempt);
    st.redeliveries.push(id);
    Ok(Reply::json(202, json!({})))
}
