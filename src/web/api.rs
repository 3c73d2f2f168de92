//! The HTTP API (SPEC §7, §9): stories and their ship gate, and the audit
//! log.
//!
//! `GET /api/stories[/{id}]` lists stories with their state, story PR and
//! tasks; `POST /api/stories/{id}/ship` asks to ship one (body, optional:
//! `{"priority": "high"}`); `GET /api/queue?repo=` is a repository's ship
//! queue in order ([`queue`]); `GET /api/audit`
//! reads the audit log ([`audit`]). `{id}` is the
//! story issue number (add `?repo=owner/name` when several repositories
//! have that number). Every call needs `Authorization: Bearer
//! <TASKGATE_API_TOKEN>`; a `GET` may give the token as a Basic password
//! instead (a browser's), a `POST` may not and is answered 403 (see
//! [`super::auth`]: the cross-site request a browser's cached password
//! would otherwise allow). With no token configured the API answers 401 to
//! everyone.
//!
//! Must not: decide. A ship request is answered 202 only when the core's
//! [`ship_refusal`] finds no reason in the stored record (the rule the
//! label and the command follow), and is then recorded in the inbox as a
//! internal ship delivery, so the processor decides it like any other
//! event (one at a time, with the story's latest state).

mod audit;
mod error;
mod queue;

pub use error::ApiError;
pub use queue::{queue_entries, queue_state, QueueEntry};

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::trains::TrainsRead;
use crate::store::{NewDelivery, Store, StoryRow};
use taskgate_core::ids::{DeliveryId, IssueNumber, RepoName};
use taskgate_core::internal::InternalEvent;
use taskgate_core::ship::{ship_refusal, Priority, ShipEvent, ShipVia, ShipWhat};

#[derive(Clone)]
pub struct ApiState {
    pub store: Store,
    /// `TASKGATE_API_TOKEN`; `None` closes the API.
    pub token: Option<Arc<str>>,
    /// Wakes the processor when a ship request was recorded.
    pub recorded: Arc<Notify>,
    /// Where GitHub shows things (`https://github.com`): check run links.
    pub web_base: String,
}

pub fn routes(state: ApiState) -> Router {
    Router::new()
        .route("/api/stories", get(list_stories))
        .route("/api/stories/{id}", get(get_story))
        .route("/api/stories/{id}/ship", post(ship_story))
        .route("/api/tasks/{id}/accept", post(accept_task))
        .route("/api/tasks/{id}/reject", post(reject_task))
        .route("/api/audit", get(audit::audit_log))
        .route("/api/queue", get(queue::queue))
        // Every route, before any of its extractors run: a route added
        // later cannot forget the token, and a caller without it learns
        // nothing else (not even that a body is malformed).
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
}

async fn require_token(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    use super::auth::{Check, Use};
    let usage = match *request.method() {
        Method::GET | Method::HEAD => Use::Read,
        _ => Use::Change,
    };
    match authorized(&state, request.headers(), usage) {
        Check::Granted => next.run(request).await,
        Check::Missing => ApiError::Unauthorized.into_response(),
        Check::BasicForChange => ApiError::BasicForChange.into_response(),
    }
}

fn authorized(
    state: &ApiState,
    headers: &HeaderMap,
    usage: super::auth::Use,
) -> super::auth::Check {
    super::auth::check(
        state.token.as_deref(),
        headers.get("authorization").and_then(|v| v.to_str().ok()),
        usage,
    )
}

#[derive(serde::Deserialize)]
struct RepoQuery {
    repo: Option<String>,
}

async fn story_json(
    store: &Store,
    trains: &mut TrainsRead,
    row: &StoryRow,
) -> Result<Value, crate::store::StoreError> {
    let record = store
        .story_record(&row.repo, &row.story)
        .await?
        .unwrap_or_default();
    // Proving while its ship train car proves (stored: queued), as the
    // dashboard and `GET /api/queue` show it.
    let record = (trains.shown(store, (&row.repo, &row.story), &record)).await?;
    // The states alone: no task record is decoded for the list.
    let states = store.task_states(&row.repo, &row.story).await?;
    let plan = store.story(&row.repo, &row.story).await?;
    // Parsed once per text, for every reader (`store::plans`).
    let parsed = plan.as_ref().and_then(|p| store.plans().parse(&p.plan));
    let tasks: Vec<Value> = parsed
        .as_ref()
        .map(|p| {
            p.walk()
                .into_iter()
                .map(|r| {
                    let id = r.task.id.value.as_str();
                    let state = states.get(id).map(|s| s.name());
                    json!({
                        "id": id,
                        "title": r.task.title,
                        "parent": r.parent.map(|p| p.as_str().to_owned()),
                        "state": state,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "repo": row.repo.as_str(),
        "story": row.story,
        "issue": row.issue.get(),
        "title": parsed.as_ref().map(|p| p.story.clone()),
        "state": record.state.name(),
        "pr": record.pr.map(|n| n.get()),
        "missing": record.missing,
        "shipped_by": record.shipped_by.as_ref().map(|s| json!({
            "user_id": s.user.map(|u| u.get()),
            "login": s.login,
            "via": s.via.name(),
        })),
        "deploy_run": record.deploy_run,
        "validation_run": record.validation_run,
        "merged_past_gate": record.merged_past_gate,
        "tasks": tasks,
    }))
}

/// `?repo=owner/name`, when given.
fn repo_of(q: &RepoQuery) -> Result<Option<RepoName>, ApiError> {
    q.repo
        .as_deref()
        .map(RepoName::parse)
        .transpose()
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// Every story, or those of `?repo=owner/name`.
async fn list_stories(
    State(state): State<ApiState>,
    Query(q): Query<RepoQuery>,
) -> Result<Json<Value>, ApiError> {
    let only = repo_of(&q)?;
    let rows = state.store.stories().await?;
    let mut out = Vec::new();
    let mut trains = TrainsRead::default();
    for row in rows
        .iter()
        .filter(|r| only.as_ref().is_none_or(|o| &r.repo == o))
    {
        out.push(story_json(&state.store, &mut trains, row).await?);
    }
    Ok(Json(json!({ "stories": out })))
}

/// The story with issue `id` (in `?repo=`, when given).
async fn find(state: &ApiState, id: &str, q: &RepoQuery) -> Result<StoryRow, ApiError> {
    let Ok(number) = id.parse::<u64>() else {
        return Err(ApiError::NotFound(
            "no story has this id (use the story issue number)",
        ));
    };
    let repo = repo_of(q)?;
    let rows = state.store.stories().await?;
    let mut found: Vec<StoryRow> = rows
        .into_iter()
        .filter(|r| {
            r.issue == IssueNumber::new(number) && repo.as_ref().is_none_or(|n| *n == r.repo)
        })
        .collect();
    match found.len() {
        0 => Err(ApiError::NotFound("no story has this id")),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::BadRequest(
            "several repositories have a story with this issue number: add ?repo=owner/name".into(),
        )),
    }
}

async fn get_story(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<RepoQuery>,
) -> Result<Json<Value>, ApiError> {
    let row = find(&state, &id, &q).await?;
    let story = story_json(&state.store, &mut TrainsRead::default(), &row).await?;
    Ok(Json(story))
}

/// The optional body of a ship request: `{"priority": "high"}`. The
/// API's token is the operator's, so any priority may be given.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ShipBody {
    #[serde(default)]
    priority: Priority,
}

fn ship_body(body: &[u8]) -> Result<Priority, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Priority::Normal);
    }
    serde_json::from_slice::<ShipBody>(body)
        .map(|b| b.priority)
        .map_err(|e| {
            ApiError::BadRequest(format!(
                "the body is `{{\"priority\": \"normal\" | \"high\" | \"hotfix\"}}` or empty: {e}"
            ))
        })
}

async fn ship_story(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<RepoQuery>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let priority = ship_body(&body)?;
    let row = find(&state, &id, &q).await?;
    let record = state
        .store
        .story_record(&row.repo, &row.story)
        .await?
        .unwrap_or_default();
    let Some(plan) = state.store.story(&row.repo, &row.story).await? else {
        return Err(ApiError::NotFound("no story has this id"));
    };
    // The same rule as the label and `/taskgate ship`: the processor
    // decides again on the latest record; this only answers 409 early.
    let manual = state.store.repo_freeze(&row.repo).await?;
    let config = taskgate_core::config::load_config(plan.config.as_deref()).unwrap_or_default();
    let now = state.store.clock().now_s();
    let frozen =
        taskgate_core::freeze::freeze_in_force(manual.as_ref(), &config.freeze_windows, now);
    let refusal = ship_refusal(&record).or_else(|| {
        frozen.map(|f| taskgate_core::ship::ShipRefusal::Frozen {
            because: f.render(),
        })
    });
    if let Some(refusal) = refusal {
        return Err(ApiError::Conflict {
            error: "the story is not shippable".into(),
            state: record.state.name().into(),
            reasons: Some(refusal.reasons()),
        });
    }
    let event = ShipEvent {
        repo: row.repo.clone(),
        story: row.story.clone(),
        what: ShipWhat::Request {
            actor: None,
            login: "the HTTP API".into(),
            via: ShipVia::Api,
            priority,
        },
    };
    let delivery = NewDelivery::internal(
        DeliveryId::new(format!("taskgate-api-ship-{:032x}", fastrand::u128(..))),
        plan.installation,
        &InternalEvent::Ship(event),
    )
    .with_action("request");
    state.store.record_delivery(delivery).await?;
    state.recorded.notify_one();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "accepted": true, "story": row.story, "issue": row.issue.get() })),
    )
        .into_response())
}

async fn accept_task(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<RepoQuery>,
) -> Result<Response, ApiError> {
    review_task(state, id, q, None).await
}

#[derive(serde::Deserialize)]
struct RejectBody {
    reason: String,
}

async fn reject_task(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(q): Query<RepoQuery>,
    body: Option<Json<RejectBody>>,
) -> Result<Response, ApiError> {
    let reason = match body {
        Some(Json(b)) if !b.reason.trim().is_empty() => b.reason,
        _ => {
            return Err(ApiError::BadRequest(
                "a rejection needs a reason: {\"reason\": \"…\"}".into(),
            ))
        }
    };
    review_task(state, id, q, Some(reason)).await
}

/// Accept (`reject: None`) or reject a task by its issue number, with the
/// same rules as `/taskgate approve` and `/taskgate reject`: 202 when the
/// request is recorded (the processor then decides it), 409 when the task
/// is not in a state it applies to, 404 for an unknown task.
async fn review_task(
    state: ApiState,
    id: String,
    q: RepoQuery,
    reject: Option<String>,
) -> Result<Response, ApiError> {
    use taskgate_core::task::{api_review_refusal, ApiReview, ReviewCommand};
    let Ok(number) = id.parse::<u64>().map(IssueNumber::new) else {
        return Err(ApiError::NotFound(
            "no task has this id (use the task issue number)",
        ));
    };
    let repos: Vec<RepoName> = match repo_of(&q)? {
        Some(repo) => vec![repo],
        None => {
            let rows = state.store.stories().await?;
            let mut repos: Vec<RepoName> = rows.into_iter().map(|r| r.repo).collect();
            repos.sort();
            repos.dedup();
            repos
        }
    };
    let mut found = Vec::new();
    for repo in repos {
        if let Some(loc) = state.store.task_by_issue(&repo, number).await? {
            found.push((repo, loc));
        }
    }
    let (repo, loc) = match found.len() {
        0 => return Err(ApiError::NotFound("no task has this id")),
        1 => found.remove(0),
        _ => {
            return Err(ApiError::BadRequest(
                "several repositories have a task with this issue number: add ?repo=owner/name"
                    .into(),
            ))
        }
    };
    let record = state
        .store
        .task_record(&repo, &loc.story, &loc.task.clone().into())
        .await?
        .unwrap_or_default();
    // The command's rules, from the core: the processor decides again on
    // the latest record; this only answers 409 early.
    let command = match &reject {
        None => ReviewCommand::Approve {
            override_reason: None,
        },
        Some(reason) => ReviewCommand::Reject {
            reason: reason.clone(),
        },
    };
    if let Some(refusal) = api_review_refusal(record.state, &command) {
        return Err(ApiError::Conflict {
            error: refusal.to_string(),
            state: record.state.map_or("not started", |s| s.name()).into(),
            reasons: None,
        });
    }
    let Some(plan) = state.store.story(&repo, &loc.story).await? else {
        return Err(ApiError::NotFound("no task has this id"));
    };
    let installation = plan.installation;
    let event = ApiReview {
        repo: repo.clone(),
        issue: number,
        reject,
    };
    let delivery = NewDelivery::internal(
        DeliveryId::new(format!("taskgate-api-review-{:032x}", fastrand::u128(..))),
        installation,
        &InternalEvent::Review(event),
    );
    state.store.record_delivery(delivery).await?;
    state.recorded.notify_one();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "accepted": true, "task": loc.task, "issue": number.get() })),
    )
        .into_response())
}
