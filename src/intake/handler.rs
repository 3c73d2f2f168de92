//! `POST /webhook`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::Notify;
use tracing::{info, warn, Instrument};

use super::age;
use super::budget::{BodyBudget, ReadError};
use super::event::WebhookKind;
use super::{event, signature, translate};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{BodyDigest, Disposition, NewDelivery, Recorded, Store};
use taskgate_core::ids::DeliveryId;

/// GitHub's delivery ids are UUIDs (36 characters); this leaves room for
/// other senders' and refuses what no sender needs.
const MAX_DELIVERY_ID: usize = 128;

pub struct IntakeState {
    pub secret: Vec<u8>,
    /// The secret being rotated out (`WEBHOOK_SECRET_PREVIOUS`), if any.
    pub previous_secret: Option<Vec<u8>>,
    pub store: Store,
    pub metrics: Arc<Metrics>,
    /// Wakes the processor when a new delivery is recorded.
    pub recorded: Arc<Notify>,
    /// Bounds the memory that request bodies being read and handled hold.
    pub bodies: BodyBudget,
    /// "Now", for the age of an event (`intake::age`).
    pub clock: Clock,
    /// How long delivery ids are kept (`TASKGATE_RETENTION_DAYS`): an
    /// event older than this is refused as a possible replay.
    pub retention: Duration,
    /// Where a pending delivery's parse is left for the processor.
    pub kept: Arc<super::kept::KeptWebhooks>,
}

fn reply(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        [("content-type", "text/plain; charset=utf-8")],
        message.into() + "\n",
    )
        .into_response()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A header for the log span. The request is not verified yet, so a value
/// longer than any delivery id or event name is left out of the logs.
fn for_span<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    header(headers, name)
        .filter(|value| value.len() <= MAX_DELIVERY_ID)
        .unwrap_or_default()
}

pub async fn webhook(
    State(state): State<Arc<IntakeState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Instrumented, not entered: a guard held across the commit's await
    // would put other tasks' logs on this thread into this delivery's span.
    let span = tracing::info_span!(
        "delivery",
        id = for_span(&headers, "x-github-delivery"),
        event = for_span(&headers, "x-github-event"),
    );
    async {
        // Room taken as the body arrives and held until the answer: the
        // body, its compressed copy and its parse live that long.
        let (body, _held) = match state.bodies.read(&headers, body).await {
            Ok(read) => read,
            Err(ReadError::Busy) => return busy(&state),
            Err(e) => return refuse(&state, e),
        };
        let started = Instant::now();
        let response = answer(&state, &headers, body).await;
        state.metrics.acked(started.elapsed().as_secs_f64());
        response
    }
    .instrument(span)
    .await
}

/// A body that could not be read whole, within GitHub's cap and time.
fn refuse(state: &IntakeState, e: ReadError) -> Response {
    state.metrics.delivery("unverified", "rejected");
    warn!(error = %e, "webhook body refused");
    reply(e.status(), e.to_string())
}

/// 503 with a `Retry-After`: GitHub itself does not retry, but a failed
/// delivery is asked for again by taskgate's redelivery pass.
fn busy(state: &IntakeState) -> Response {
    let budget_mib = state.bodies.mib();
    state.metrics.delivery("unverified", "busy");
    warn!(
        budget_mib,
        "webhook bodies fill the memory budget; answered 503"
    );
    let mut response = reply(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "taskgate is holding {budget_mib} MiB of webhook bodies already \
             (TASKGATE_WEBHOOK_MEMORY_MIB); send this delivery again shortly"
        ),
    );
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    response
}

async fn answer(state: &IntakeState, headers: &HeaderMap, body: Bytes) -> Response {
    let signature = header(headers, "x-hub-signature-256");
    let previous = state.previous_secret.as_deref();
    match signature::verify_rotating(&state.secret, previous, &body, signature) {
        Ok(signature::Signer::Current) => {}
        Ok(signature::Signer::Previous) => {
            // Counted, so an operator sees when GitHub stopped using it.
            state.metrics.signed_with_previous_secret();
        }
        Err(e) => {
            state.metrics.delivery("unverified", "rejected");
            warn!(error = %e, "webhook refused");
            return reply(StatusCode::UNAUTHORIZED, e.to_string());
        }
    }
    let (Some(event_name), Some(delivery)) = (
        header(headers, "x-github-event"),
        header(headers, "x-github-delivery"),
    ) else {
        state.metrics.delivery("unknown", "rejected");
        return reply(
            StatusCode::BAD_REQUEST,
            "missing X-GitHub-Event or X-GitHub-Delivery header",
        );
    };
    if delivery.is_empty() || delivery.len() > MAX_DELIVERY_ID {
        state.metrics.delivery("unknown", "rejected");
        return reply(
            StatusCode::BAD_REQUEST,
            format!("X-GitHub-Delivery must be 1 to {MAX_DELIVERY_ID} characters"),
        );
    }
    let parsed = match check_payload(event_name, &body) {
        Ok(Some(parsed)) => {
            let happened = age::event_time(&parsed.webhook);
            // Read as the store's stamps read it (milliseconds): intake
            // records, the processor decides.
            let now_s = state.clock.now_ms().div_euclid(1000);
            if let Err(e) = age::too_old(happened, now_s, state.retention) {
                return refuse_old(state, event_name, &e);
            }
            Some(parsed)
        }
        Ok(None) => None,
        Err(e) => return refuse_payload(state, event_name, e),
    };
    let kind = parsed.as_ref().map(event::Parsed::kind);
    let installation = parsed.as_ref().and_then(event::Parsed::installation);
    let metric_event = kind.as_ref().map_or("other", WebhookKind::event_name);
    let disposition = disposition(kind.as_ref());
    let recorded = state
        .store
        .record_delivery(NewDelivery {
            body_digest: Some(BodyDigest::of(&body)),
            delivery_id: DeliveryId::new(delivery.to_owned()),
            event: event_name.to_owned(),
            action: kind.as_ref().and_then(|k| k.action()).map(str::to_owned),
            installation,
            payload: body,
            disposition: disposition.clone(),
        })
        .await;
    // The processor decides it from this parse while it is kept.
    if let (Ok(Recorded::New { seq }), Disposition::Pending, Some(parsed)) =
        (&recorded, &disposition, parsed)
    {
        state.kept.keep(*seq, parsed.webhook);
    }
    answer_recorded(state, event_name, metric_event, recorded, disposition)
}

/// Checks the payload before anything is stored, so a sender learns at
/// once that it is unusable: a subscribed event's shape (giving its kind
/// and installation), and that any other event is at least JSON.
fn check_payload(
    event_name: &str,
    body: &[u8],
) -> Result<Option<event::Parsed>, event::PayloadError> {
    if !event::is_handled(event_name) {
        return event::check_json(body).map(|()| None);
    }
    event::parse(event_name, body).map(Some)
}

/// An event older than the delivery log remembers: refused before anything
/// is stored, and counted (`taskgate_deliveries_total{outcome="too_old"}`).
fn refuse_old(state: &IntakeState, event_name: &str, e: &age::TooOld) -> Response {
    state.metrics.delivery(event_name, "too_old");
    warn!(error = %e, "webhook refused as a possible replay");
    reply(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
}

fn refuse_payload(state: &IntakeState, event_name: &str, e: event::PayloadError) -> Response {
    let metric_event = if event::is_handled(event_name) {
        event_name
    } else {
        "other"
    };
    state.metrics.delivery(metric_event, "rejected");
    warn!(error = %e, "payload refused");
    reply(StatusCode::BAD_REQUEST, e.to_string())
}

/// The answer once the store has (or has not) taken the delivery.
fn answer_recorded(
    state: &IntakeState,
    event_name: &str,
    metric_event: &str,
    recorded: Result<Recorded, crate::store::StoreError>,
    disposition: Disposition,
) -> Response {
    match (recorded, disposition) {
        (Ok(Recorded::New { .. }), Disposition::Pending) => {
            state.metrics.delivery(metric_event, "accepted");
            state.recorded.notify_one();
            info!("recorded");
            reply(StatusCode::ACCEPTED, "accepted")
        }
        (Ok(Recorded::New { .. }), Disposition::Settled { outcome }) => {
            state.metrics.delivery(metric_event, "no_action");
            state.metrics.processed(0.0);
            info!(outcome = %outcome, effects = 0, "recorded and processed");
            reply(StatusCode::ACCEPTED, format!("accepted; {outcome}"))
        }
        (Ok(Recorded::New { .. }), Disposition::Ignored) => {
            state.metrics.delivery(metric_event, "ignored");
            reply(
                StatusCode::ACCEPTED,
                format!("event `{event_name}` is not used by taskgate; recorded as ignored"),
            )
        }
        (Ok(Recorded::Duplicate), _) => {
            state.metrics.delivery(metric_event, "duplicate");
            info!("duplicate delivery");
            reply(StatusCode::OK, "duplicate delivery; already recorded")
        }
        (Err(e), _) => {
            state.metrics.delivery(metric_event, "error");
            warn!(error = %e, "could not record delivery");
            reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "could not record the delivery; please redeliver",
            )
        }
    }
}

/// Whether the processor has anything to decide. Most of a busy
/// repository's deliveries are events taskgate subscribes to for some
/// actions only (`issues.opened`, `check_run.completed`, …); the core's
/// answer for those needs neither payload nor state, so it is taken here
/// and stored with the delivery, in the same commit, instead of the
/// processor reading the delivery back and writing it a second time.
fn disposition(kind: Option<&WebhookKind>) -> Disposition {
    let Some(kind) = kind else {
        return Disposition::Ignored;
    };
    match translate::settled_outcome(kind) {
        Some(outcome) => Disposition::Settled { outcome },
        None => Disposition::Pending,
    }
}
