//! HTTP surfaces besides the webhook: health, metrics, the API and the
//! dashboard.
//!
//! Owns: routes and their rendering. Must not: decide anything or call GitHub.

pub mod api;
pub mod auth;
pub mod dashboard;
pub mod metrics;
mod serve;

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;

use crate::intake::{self, IntakeState};
use crate::store::Store;
use metrics::Metrics;
pub use serve::{serve, HEADER_READ_TIMEOUT};

#[derive(Clone)]
struct WebState {
    store: Store,
    metrics: Arc<Metrics>,
}

/// What the routes besides the webhook need from the configuration.
pub struct WebConfig {
    /// `TASKGATE_API_TOKEN`: without it the API and the dashboard answer 401.
    pub api_token: Option<String>,
    /// `GITHUB_API_URL`, for the dashboard's links.
    pub github_api_url: String,
    pub clock: crate::app::runs::Clock,
    /// Where GitHub posts webhooks (`WEBHOOK_PATH`, [`DEFAULT_WEBHOOK_PATH`]).
    pub webhook_path: String,
}

/// taskgate's webhook path unless `WEBHOOK_PATH` names another (Probot's
/// is `/api/github/webhooks`, for an App moved over from Probot).
pub const DEFAULT_WEBHOOK_PATH: &str = "/webhook";

/// Checks a `WEBHOOK_PATH`: an absolute path of plain segments that no
/// other route of this server uses.
pub fn parse_webhook_path(path: &str) -> Result<String, String> {
    let plain = |segment: &str| {
        !segment.is_empty()
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    };
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!("`{path}` must start with `/` (e.g. /webhook)"));
    };
    if !rest.split('/').all(plain) {
        return Err(format!(
            "`{path}` must be `/`-separated segments of letters, digits, `-`, `.`, `_` or `~`"
        ));
    }
    let first = rest.split('/').next().unwrap_or_default();
    if matches!(first, "healthz" | "metrics" | "api") && !path.starts_with("/api/github/") {
        return Err(format!(
            "`{path}` is taken by another route of taskgate (/healthz, /metrics, /api/...)"
        ));
    }
    Ok(path.to_owned())
}

pub fn router(intake: Arc<IntakeState>, config: WebConfig) -> Router {
    let token: Option<Arc<str>> = config.api_token.map(Arc::from);
    let api = api::routes(api::ApiState {
        store: intake.store.clone(),
        token: token.clone(),
        recorded: intake.recorded.clone(),
    });
    let dashboard = dashboard::routes(dashboard::DashboardState {
        store: intake.store.clone(),
        token,
        web_base: crate::github::web_base(&config.github_api_url),
        clock: config.clock,
    });
    let web = WebState {
        store: intake.store.clone(),
        metrics: intake.metrics.clone(),
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

async fn healthz(State(web): State<WebState>) -> impl IntoResponse {
    match web.store.ping().await {
        Ok(()) => (StatusCode::OK, "ok\n".to_owned()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store unreachable: {e}\n"),
        ),
    }
}

async fn metrics_text(State(web): State<WebState>) -> impl IntoResponse {
    let mut snapshot = metrics::Snapshot {
        outbox_depth: web.store.outbox_depth().await.unwrap_or(-1),
        ..metrics::Snapshot::default()
    };
    (snapshot.inbox_pending, snapshot.inbox_put_off) =
        web.store.inbox_depth().await.unwrap_or((-1, 0));
    if let Ok(records) = web.store.all_task_records().await {
        for r in &records {
            if let Some(state) = r.state {
                *snapshot
                    .tasks_by_state
                    .entry(state.name().to_owned())
                    .or_default() += 1;
            }
            snapshot.loop_stats.add(&r.failure);
            snapshot.overrides += i64::from(r.override_count);
        }
    }
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        web.metrics.render(&snapshot),
    )
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
        let refused = |path: &str| parse_webhook_path(path).unwrap_err();
        assert!(refused("webhook").contains("must start with `/`"));
        for bad in ["/", "/a//b", "/a/", "/{id}", "/a/*rest", "/a b", "/a?x=1"] {
            assert!(refused(bad).contains("segments of letters"), "{bad}");
        }
        for taken in ["/healthz", "/metrics", "/api/stories", "/api"] {
            assert!(refused(taken).contains("taken by another route"), "{taken}");
        }
    }
}
