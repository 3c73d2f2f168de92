//! `GET /`: the dashboard (SPEC §9). Every story with its task tree,
//! states, runs, gates, open branch todos and progress, the failure loop's
//! totals, the seed 000 review triggers that have fired, the repositories
//! frozen now, each repository's tests quarantined as flaky, and its
//! latest audit entries.
//!
//! Owns: reading what the page needs from the store, and the page.
//! Must not: decide, write, or call GitHub. It shows what taskgate has
//! recorded, so it answers in milliseconds and works while GitHub is down.
//!
//! It is behind `TASKGATE_API_TOKEN` like the API (HTTP Basic with the token
//! as the password, so a browser can open it; see [`super::auth`]): plans,
//! failures and their logs belong to the repositories they come from.

mod audit_view;
mod quarantine_view;
mod queue_chart;
mod queue_view;
mod tests_view;
mod view;

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::clock::Clock;
use crate::store::{Store, StoreError};
pub use audit_view::{audit_sections, freeze_lines, AuditSection, FreezeLine, RepoFreeze};
pub use quarantine_view::{quarantine_sections, QuarantineRow, QuarantineSection};
pub use queue_chart::{queue_chart, QueueChart};
pub use queue_view::{queue_rows, train_off_lines, QueueRow, TrainOffLine};
use taskgate_core::ids::RepoName;
use taskgate_core::plan::Plan;
use taskgate_core::ship::figures::QueueFigures;
pub use tests_view::{story_tests, StoryTests, TestRow};
pub use view::{dashboard_view, filtered_view, story_view, DashboardView, StoryInput};

/// Attempts listed under each task (its run count says how many in all).
const RECENT_ATTEMPTS: u32 = 5;

#[derive(Clone)]
pub struct DashboardState {
    pub store: Store,
    pub token: Option<std::sync::Arc<str>>,
    /// Where links point: the web host of `GITHUB_API_URL`.
    pub web_base: String,
    pub clock: Clock,
}

pub fn routes(state: DashboardState) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
}

async fn require_token(
    State(state): State<DashboardState>,
    request: Request,
    next: Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if super::auth::authorized(state.token.as_deref(), header) {
        return next.run(request).await;
    }
    let why = if state.token.as_deref().is_none_or(str::is_empty) {
        "The dashboard is closed: set TASKGATE_API_TOKEN and sign in with it as the password."
    } else {
        "Sign in with TASKGATE_API_TOKEN as the password (any user name)."
    };
    (
        StatusCode::UNAUTHORIZED,
        [
            (
                header::WWW_AUTHENTICATE,
                "Basic realm=\"taskgate\", charset=\"UTF-8\"",
            ),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        ],
        format!("{why}\n"),
    )
        .into_response()
}

#[derive(Template)]
#[template(path = "dashboard.html")]
struct Page<'v> {
    generated_at: &'v str,
    stories: &'v [view::StoryView],
    totals: &'v view::Totals,
    triggers: &'v [view::Trigger],
    repos: &'v [view::RepoChoice],
    only: Option<&'v str>,
    freezes: &'v [FreezeLine],
    trains_off: &'v [TrainOffLine],
    queue: &'v [QueueRow],
    queue_chart: &'v QueueChart,
    audit: &'v [AuditSection],
    quarantined: &'v [QuarantineSection],
}

/// The dashboard as HTML.
pub fn render_dashboard(v: &DashboardView) -> String {
    Page {
        generated_at: &v.generated_at,
        stories: &v.stories,
        totals: &v.totals,
        triggers: &v.triggers,
        repos: &v.repos,
        only: v.only.as_deref(),
        freezes: &v.freezes,
        trains_off: &v.trains_off,
        queue: &v.queue,
        queue_chart: &v.queue_chart,
        audit: &v.audit,
        quarantined: &v.quarantined,
    }
    .render()
    .expect("the dashboard template writes only to a String")
}

#[derive(serde::Deserialize)]
struct DashboardQuery {
    /// Only this repository's stories (`owner/name`).
    repo: Option<String>,
}

fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message + "\n",
    )
        .into_response()
}

async fn dashboard(
    State(state): State<DashboardState>,
    Query(query): Query<DashboardQuery>,
) -> Response {
    let only = match query.repo.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(repo) => match RepoName::parse(repo) {
            Ok(repo) => Some(repo),
            Err(e) => return plain(StatusCode::BAD_REQUEST, format!("repo filter: {e}")),
        },
    };
    let now = state.clock.now_s();
    match load_view(&state.store, &state.web_base, now, only.as_ref()).await {
        Ok(v) => {
            let mut page = Html(render_dashboard(&v)).into_response();
            // Always current: what a person sees is what is stored now.
            page.headers_mut()
                .insert(header::CACHE_CONTROL, "no-store".parse().expect("valid"));
            page
        }
        Err(e) => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the store could not be read: {e}"),
        ),
    }
}

/// One story's records, owned, for [`StoryInput`] to borrow.
struct Loaded {
    row: crate::store::StoryRow,
    record: taskgate_core::ship::StoryRecord,
    plan: Option<(std::sync::Arc<Plan>, Option<String>)>,
    /// The listed tasks' records ([`view::listed_tasks`]).
    tasks: BTreeMap<String, taskgate_core::task::TaskRecord>,
    summary: crate::store::StoryTasks,
    issues: BTreeMap<String, crate::store::IssueLink>,
    attempts: Vec<crate::store::AttemptSummary>,
}

/// The dashboard of everything `store` holds (of repository `only`, if
/// given), as of `now`.
pub async fn load_view(
    store: &Store,
    web_base: &str,
    now: i64,
    only: Option<&RepoName>,
) -> Result<DashboardView, StoreError> {
    let mut loaded = Vec::new();
    let rows = store.stories().await?;
    // Every repository with a story is offered; only the shown stories are read.
    let repos: Vec<RepoName> = rows.iter().map(|r| r.repo.clone()).collect();
    let mut trains = super::trains::TrainsRead::default();
    for row in rows {
        if only.is_some_and(|r| &row.repo != r) {
            continue;
        }
        let record = store
            .story_record(&row.repo, &row.story)
            .await?
            .unwrap_or_default();
        // Proving while its ship train car proves (stored: queued).
        let record = (trains.shown(store, (&row.repo, &row.story), &record)).await?;
        let plan = store.story(&row.repo, &row.story).await?.and_then(|p| {
            let plan = store.plans().parse(&p.plan)?;
            Some((plan, p.config))
        });
        // Every task's state and the counts, without the records; in full
        // only the records of the tasks the page lists.
        let summary = store.story_tasks(&row.repo, &row.story).await?;
        let listed = plan.as_ref().map(|(p, _)| view::listed_tasks(p));
        let tasks =
            (store.task_records_of(&row.repo, &row.story, listed.unwrap_or_default())).await?;
        let issues = store.story_issue_links(&row.repo, &row.story).await?;
        let attempts = store
            .recent_attempts(&row.repo, &row.story, RECENT_ATTEMPTS)
            .await?;
        loaded.push(Loaded {
            attempts,
            row,
            record,
            plan,
            tasks,
            summary,
            issues,
        });
    }
    let inputs: Vec<StoryInput<'_>> = loaded
        .iter()
        .map(|l| StoryInput {
            repo: &l.row.repo,
            story: &l.row.story,
            issue: l.row.issue,
            record: &l.record,
            plan: l.plan.as_ref().map(|(p, c)| (&**p, c.as_deref())),
            tasks: &l.tasks,
            summary: &l.summary,
            issues: &l.issues,
            attempts: &l.attempts,
        })
        .collect();
    let mut view = filtered_view(&inputs, &repos, only, web_base, now);
    load_tests(store, &loaded, &mut view.stories).await?;
    view.freezes = load_freezes(store, &loaded, only, now).await?;
    view.queue = queue_rows(&inputs, &view.freezes, now);
    view.trains_off = train_off_lines(trains.read(), now * 1000);
    let figures = QueueFigures::of(inputs.iter().map(|s| s.record), now * 1000);
    view.queue_chart = queue_chart(&figures);
    view.audit = load_audit(store, only).await?;
    let quarantined: Vec<_> = store
        .quarantines_in_force(now)
        .await?
        .into_iter()
        .filter(|(repo, _)| only.is_none_or(|o| o == repo))
        .collect();
    view.quarantined = quarantine_sections(&quarantined);
    Ok(view)
}

/// Each shown story's slowest and most-failing tests, from the history.
async fn load_tests(
    store: &Store,
    loaded: &[Loaded],
    stories: &mut [view::StoryView],
) -> Result<(), StoreError> {
    for l in loaded {
        let Some(shown) = stories
            .iter_mut()
            .find(|s| s.repo == l.row.repo.as_str() && s.issue == l.row.issue.get())
        else {
            continue;
        };
        let rows = crate::store::STORY_TEST_ROWS;
        let slowest = store.slowest_tests(&l.row.repo, &l.row.story, rows).await?;
        let failing = store
            .most_failing_tests(&l.row.repo, &l.row.story, rows)
            .await?;
        shown.tests = story_tests(&slowest, &failing);
    }
    Ok(())
}

/// The repositories frozen at `now` (of `only`, if given): every manual
/// freeze, and the windows of the repositories whose stories were loaded
/// (their config as last synced).
async fn load_freezes(
    store: &Store,
    loaded: &[Loaded],
    only: Option<&RepoName>,
    now: i64,
) -> Result<Vec<FreezeLine>, StoreError> {
    let manual: BTreeMap<RepoName, taskgate_core::freeze::Freeze> =
        store.repo_freezes().await?.into_iter().collect();
    let mut windows: BTreeMap<&RepoName, Vec<taskgate_core::freeze::FreezeWindow>> =
        BTreeMap::new();
    for l in loaded {
        if !windows.contains_key(&l.row.repo) {
            let config = l.plan.as_ref().and_then(|(_, c)| c.as_deref());
            let config = taskgate_core::config::load_config(config).unwrap_or_default();
            windows.insert(&l.row.repo, config.freeze_windows);
        }
    }
    let mut names: Vec<&RepoName> = manual.keys().chain(windows.keys().copied()).collect();
    names.sort();
    names.dedup();
    let repos: Vec<RepoFreeze<'_>> = names
        .into_iter()
        .filter(|r| only.is_none_or(|o| o == *r))
        .map(|repo| RepoFreeze {
            repo,
            manual: manual.get(repo),
            windows: windows.get(repo).map_or(&[], Vec::as_slice),
        })
        .collect();
    Ok(freeze_lines(&repos, now))
}

/// The latest audit entries of each repository (of `only`, if given).
async fn load_audit(
    store: &Store,
    only: Option<&RepoName>,
) -> Result<Vec<AuditSection>, StoreError> {
    let mut per_repo = Vec::new();
    for repo in store.audit_repos().await? {
        if only.is_some_and(|o| *o != repo) {
            continue;
        }
        let query = crate::store::AuditQuery {
            repo: Some(repo.clone()),
            since_s: None,
            limit: audit_view::AUDIT_ROWS,
        };
        let entries = store.audit_entries(&query).await?;
        per_repo.push((repo, entries));
    }
    Ok(audit_sections(&per_repo))
}

#[cfg(test)]
mod tests;
