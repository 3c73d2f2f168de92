//! HTTP surfaces besides the webhook: health, metrics, the API and the
//! dashboard.
//!
//! Owns: routes and their rendering. Must not: decide anything or call GitHub.

pub mod api;
pub mod auth;
pub mod dashboard;
mod serve;
mod trains;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::intake::{self, IntakeState};
use crate::metrics::{self, Metrics};
use crate::store::Store;
pub use serve::{serve, HEADER_READ_TIMEOUT};

#[derive(Clone)]
struct WebState {
    store: Store,
    /// The token `/metrics` needs, when it needs one.
    metrics_token: Option<Arc<str>>,
    /// `TASKGATE_API_TOKEN`: `/healthz` says why it is unhealthy only to
    /// a caller who shows it.
    token: Option<Arc<str>>,
    metrics: Arc<Metrics>,
    loops: Arc<crate::app::loops::supervisor::Loops>,
    floor: crate::runner::sandbox::disk::DiskFloor,
}

/// What the routes besides the webhook need from the configuration.
pub struct WebConfig {
    /// `TASKGATE_API_TOKEN`: without it the API and the dashboard answer 401.
    pub api_token: Option<String>,
    /// `/metrics` needs the token as well (`TASKGATE_METRICS_AUTH`).
    pub metrics_auth: bool,
    /// `GITHUB_API_URL`, for the dashboard's links.
    pub github_api_url: String,
    pub clock: crate::clock::Clock,
    /// Where GitHub posts webhooks (`WEBHOOK_PATH`, [`DEFAULT_WEBHOOK_PATH`]).
    pub webhook_path: String,
    /// The supervised loops' state, for `/healthz`.
    pub loops: Arc<crate::app::loops::supervisor::Loops>,
    /// The runner's free-space floor: `/healthz` says when runs are held.
    pub floor: crate::runner::sandbox::disk::DiskFloor,
}

/// taskgate's webhook path unless `WEBHOOK_PATH` names another (Probot's
/// is `/api/github/webhooks`, for an App moved over from Probot).
pub const DEFAULT_WEBHOOK_PATH: &str = "/webhook";

/// A `WEBHOOK_PATH` taskgate refuses; its Display names the path and the
/// rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookPathError {
    #[error("`{0}` must start with `/` (e.g. /webhook)")]
    NotAbsolute(String),
    #[error("`{0}` must be `/`-separated segments of letters, digits, `-`, `.`, `_` or `~`")]
    NotPlain(String),
    #[error("`{0}` is taken by another route of taskgate (/healthz, /metrics, /api/...)")]
    Taken(String),
}

/// Checks a `WEBHOOK_PATH`: an absolute path of plain segments that no
/// other route of this server uses.
pub fn parse_webhook_path(path: &str) -> Result<String, WebhookPathError> {
    let plain = |segment: &str| {
        !segment.is_empty()
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    };
    let Some(rest) = path.strip_prefix('/') else {
        return Err(WebhookPathError::NotAbsolute(path.to_owned()));
    };
    if !rest.split('/').all(plain) {
        return Err(WebhookPathError::NotPlain(path.to_owned()));
    }
    let first = rest.split('/').next().unwrap_or_default();
    if matches!(first, "healthz" | "metrics" | "api") && !path.starts_with("/api/github/") {
        return Err(WebhookPathError::Taken(path.to_owned()));
    }
    Ok(path.to_owned())
}

pub fn router(intake: Arc<IntakeState>, config: WebConfig) -> Router {
    let token: Option<Arc<str>> = config.api_token.map(Arc::from);
    let api = api::routes(api::ApiState {
        store: intake.store.clone(),
        token: token.clone(),
        recorded: intake.recorded.clone(),
        web_base: crate::github::web_base(&config.github_api_url),
    });
    let dashboard = dashboard::routes(dashboard::DashboardState {
        store: intake.store.clone(),
        token: token.clone(),
        web_base: crate::github::web_base(&config.github_api_url),
        clock: config.clock,
    });
    let web = WebState {
        store: intake.store.clone(),
        metrics_token: token.clone().filter(|_| config.metrics_auth),
        token: token.clone(),
        metrics: intake.metrics.clone(),
        loops: config.loops,
        floor: config.floor,
    };
    let webhook = Router::new()
        // The handler reads the body itself, within its limits.
        .route(&config.webhook_path, post(intake::webhook))
        .with_state(intake);
    let other = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .with_state(web);
    webhook.merge(other).merge(api).merge(dashboard)
}

/// 200 `ok` when the store answers and every supervised loop runs, else
/// 503 `unhealthy`. Why (a loop's panic message, the store's error, which
/// can name a host or a path) is said only to a caller with the API token;
/// a load balancer needs the status alone, and the log has the rest. Runs
/// held by the free-space floor leave the server healthy (webhooks are
/// still taken), and are said to the token's holder.
async fn healthz(State(web): State<WebState>, headers: HeaderMap) -> impl IntoResponse {
    let mut why: String = web
        .loops
        .down_now()
        .iter()
        .map(|(name, why)| format!("loop {name} is down: {why}\n"))
        .collect();
    if why.is_empty() {
        if let Err(e) = web.store.ping().await {
            why = format!("store unreachable: {e}\n");
        }
    }
    let given = headers.get("authorization").and_then(|v| v.to_str().ok());
    let authorized = auth::authorized(web.token.as_deref(), given);
    if why.is_empty() {
        let floor = web.floor.clone();
        let low = tokio::task::spawn_blocking(move || floor.low())
            .await
            .ok()
            .flatten();
        return match low {
            Some(low) if authorized => (
                StatusCode::OK,
                format!("ok\nruns are held: {}\n", low.says()),
            ),
            Some(_) | None => (StatusCode::OK, "ok\n".to_owned()),
        };
    }
    if authorized {
        return (StatusCode::SERVICE_UNAVAILABLE, why);
    }
    tracing::warn!(why = %why.trim_end(), "unhealthy");
    (StatusCode::SERVICE_UNAVAILABLE, "unhealthy\n".to_owned())
}

/// What the store knows, summed, and the counters. With
/// `TASKGATE_METRICS_AUTH` it needs the API token (bearer, or Basic as
/// Prometheus's `basic_auth` sends it: a scrape changes nothing).
async fn metrics_text(State(web): State<WebState>, headers: HeaderMap) -> Response {
    if let Some(token) = &web.metrics_token {
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        if !auth::authorized(Some(token), given) {
            return (
                StatusCode::UNAUTHORIZED,
                "/metrics needs `Authorization: Bearer <TASKGATE_API_TOKEN>` (TASKGATE_METRICS_AUTH)\n",
            )
                .into_response();
        }
    }
    let mut snapshot = metrics::Snapshot {
        outbox_depth: web.store.outbox_depth().await.unwrap_or(-1),
        ..metrics::Snapshot::default()
    };
    (snapshot.inbox_pending, snapshot.inbox_put_off) =
        web.store.inbox_depth().await.unwrap_or((-1, 0));
    // Kept as task records are written: a few rows, not every record.
    if let Ok(counts) = web.store.task_counts().await {
        snapshot.tasks_by_state = counts.by_state;
        snapshot.loop_stats = counts.loop_stats;
        snapshot.overrides = counts.overrides;
    }
    if let Ok(trains) = web.store.ship_train_stats().await {
        snapshot.trains = metrics::train_stats(&trains);
    }
    if let Ok(totals) = web
        .store
        .ship_queue_totals(web.store.clock().now_ms())
        .await
    {
        snapshot.ship_queue = totals;
    }
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        web.metrics.render(&snapshot),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_path_is_plain_absolute_and_free() {
        for good in [
            "/webhook",
            "/api/github/webhooks",
            "/hooks/github.v1",
            "/a-b_c~d",
        ] {
            assert_eq!(parse_webhook_path(good).as_deref(), Ok(good));
        }
        let refused = |path: &str| parse_webhook_path(path).unwrap_err().to_string();
        assert!(refused("webhook").contains("must start with `/`"));
        for bad in ["/", "/a//b", "/a/", "/{id}", "/a/*rest", "/a b", "/a?x=1"] {
            assert!(refused(bad).contains("segments of letters"), "{bad}");
        }
        for taken in ["/healthz", "/metrics", "/api/stories", "/api"] {
            assert!(refused(taken).contains("taken by another route"), "{taken}");
        }
    }

    #[test]
    fn a_refused_webhook_path_says_which_rule_it_breaks() {
        let said = [
            WebhookPathError::NotAbsolute("webhook".into()),
            WebhookPathError::NotPlain("/a//b".into()),
            WebhookPathError::Taken("/metrics".into()),
        ]
        .map(|e| e.to_string());
        insta::assert_snapshot!(said.join("\n"), @r"
        `webhook` must start with `/` (e.g. /webhook)
        `/a//b` must be `/`-separated segments of letters, digits, `-`, `.`, `_` or `~`
        `/metrics` is taken by another route of taskgate (/healthz, /metrics, /api/...)
        ");
    }
}
