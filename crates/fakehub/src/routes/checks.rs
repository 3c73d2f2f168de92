//! Check runs: create, update, get, list for a ref (by name, status and
//! `app_id`). A check run belongs to the App that created it: another
//! App's PATCH is refused with GitHub's 403 "Invalid app_id …". GitHub's limits are
//! enforced (summary/text ≤ 65535 characters, ≤ 50 annotations per request,
//! ≤ 3 actions with label/identifier ≤ 20 and description ≤ 40 characters);
//! annotations accumulate across updates, as on GitHub.
//!
//! Writes echo (`emit`): `check_run` created, `check_run` completed when a
//! run completes, and `check_suite` completed once every run of the App on
//! that commit is. The first run on a commit creates the App's suite there.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, HResult, Reply, Req, Route};
use crate::emit;
use crate::render;
use crate::state::{CheckRun, State};

pub const ROUTES: &[Route] = &[
    inst("POST", "/repos/{owner}/{repo}/check-runs", create_check_run),
    inst(
        "GET",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        get_check_run,
    ),
    inst(
        "PATCH",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        update_check_run,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        list_for_ref,
    ),
];

fn too_long(field: &str, max: usize, got: usize) -> Reply {
    Reply::invalid(
        json!({"resource": "CheckRun", "code": "custom", "field": field,
        "message": format!("Only {max} characters are allowed; {got} were supplied.")}),
    )
}

/// GitHub's limits on one create/update body.
fn check_limits(body: &Value) -> Result<(), Reply> {
    let output = body.get("output");
    for field in ["summary", "text"] {
        if let Some(s) = output.and_then(|o| o.get(field)).and_then(Value::as_str) {
            let n = s.chars().count();
            if n > 65535 {
                return Err(too_long(field, 65535, n));
            }
        }
    }
    let annotations = output
        .and_then(|o| o.get("annotations"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if annotations > 50 {
        return Err(Reply::unprocessable(
            "Only 50 annotations may be sent per request",
        ));
    }
    if let Some(actions) = body.get("actions").and_then(Value::as_array) {
        if actions.len() > 3 {
            return Err(Reply::unprocessable(
                "Only 3 actions are allowed per check run",
            ));
        }
        for a in actions {
            for (field, max) in [("label", 20), ("identifier", 20), ("description", 40)] {
                let n = a
                    .get(field)
                    .and_then(Value::as_str)
                    .map_or(0, |s| s.chars().count());
                if n > max {
                    return Err(too_long(field, max, n));
                }
            }
        }
    }
    Ok(())
}

fn time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn apply(run: &mut CheckRun, body: &Value, now: DateTime<Utc>) {
    let s = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(n) = s("name") {
        run.name = n;
    }
    if let Some(v) = s("details_url") {
        run.details_url = Some(v);
    }
    if let Some(v) = s("external_id") {
        run.external_id = Some(v);
    }
    if let Some(t) = time(body.get("started_at")) {
        run.started_at = Some(t);
    }
    if let Some(status) = s("status") {
        run.status = status;
    }
    if let Some(c) = s("conclusion") {
        run.conclusion = Some(c);
        run.status = "completed".into();
    }
    if run.status == "completed" {
        run.completed_at = time(body.get("completed_at"))
            .or(run.completed_at)
            .or(Some(now));
    }
    if let Some(o) = body.get("output") {
        let os = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        run.title = os("title").or(run.title.take());
        run.summary = os("summary").or(run.summary.take());
        run.text = os("text").or(run.text.take());
        if let Some(a) = o.get("annotations").and_then(Value::as_array) {
            run.annotations.extend(a.iter().cloned());
        }
    }
    if let Some(a) = body.get("actions").and_then(Value::as_array) {
        run.actions = a.clone();
    }
}

fn run_reply(st: &State, req: &Req, id: u64, status: u16) -> HResult {
    let repo = repo(st, req)?;
    let run = repo
        .check_runs
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::json(
        status,
        render::check_run(st, &req.base, repo, run),
    ))
}

fn create_check_run(st: &mut State, req: &Req) -> HResult {
    check_limits(&req.body)?;
    let now = st.clock.now();
    let (repo, ids) = repo_mut(st, req)?;
    let head_sha = req.str_field("head_sha").unwrap_or_default().to_string();
    if !repo.commits.contains_key(&head_sha) {
        return Err(Reply::invalid(
            json!({"resource": "CheckRun", "code": "invalid", "field": "head_sha",
            "message": format!("No commit found for SHA: {head_sha}")}),
        ));
    }
    let mut run = CheckRun {
        id: ids.next(),
        name: String::new(),
        head_sha,
        status: "queued".into(),
        conclusion: None,
        details_url: None,
        external_id: None,
        title: None,
        summary: None,
        text: None,
        annotations: Vec::new(),
        actions: Vec::new(),
        started_at: Some(now),
        completed_at: None,
        other_app: None,
    };
    apply(&mut run, &req.body, now);
    let id = run.id;
    repo.check_runs.push(run);
    let key = req.repo_key();
    emit::check_run_created(st, req.at(&key), id);
    queue_moves(st, req.at(&key), id);
    run_reply(st, req, id, 201)
}

/// A check changed: a merge queue may move on, a pull request waiting
/// for auto-merge may merge.
fn queue_moves(st: &mut State, at: crate::emit::At, id: u64) {
    let sha = st.repos[at.key]
        .check_runs
        .iter()
        .find(|r| r.id == id)
        .map(|r| r.head_sha.clone());
    if let Some(sha) = sha {
        crate::merge_queue::on_check(st, at, &sha);
        crate::auto_merge::on_check(st, at, &sha);
    }
}

fn get_check_run(st: &mut State, req: &Req) -> HResult {
    run_reply(st, req, req.num("check_run_id")?, 200)
}

fn update_check_run(st: &mut State, req: &Req) -> HResult {
    check_limits(&req.body)?;
    let id = req.num("check_run_id")?;
    let now = st.clock.now();
    let (repo, _) = repo_mut(st, req)?;
    let run = repo
        .check_runs
        .iter_mut()
        .find(|c| c.id == id)
        .ok_or_else(Reply::not_found)?;
    if let Some((app_id, _)) = &run.other_app {
        return Err(Reply::error(
            403,
            &format!("Invalid app_id `{app_id}` - check run can only be modified by the GitHub App that created it."),
        ));
    }
    let was_completed = run.status == "completed";
    apply(run, &req.body, now);
    let key = req.repo_key();
    emit::check_run_updated(st, req.at(&key), id, was_completed);
    queue_moves(st, req.at(&key), id);
    run_reply(st, req, id, 200)
}

fn list_for_ref(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let r = req.param("ref");
    let sha = repo
        .resolve(r)
        .map(|c| c.sha.clone())
        .ok_or_else(|| Reply::unprocessable(&format!("No commit found for SHA: {r}")))?;
    let name = req.query.get("check_name");
    let status = req.query.get("status");
    let app_id = req.query.get("app_id").and_then(|a| a.parse::<u64>().ok());
    let of_app = |c: &CheckRun| c.other_app.as_ref().map_or(st.app_id, |(id, _)| *id);
    let latest_only = req.query.get("filter").map(String::as_str) != Some("all");
    let mut runs: Vec<&CheckRun> = repo
        .check_runs
        .iter()
        .rev()
        .filter(|c| c.head_sha == sha)
        .filter(|c| name.is_none_or(|n| c.name == *n))
        .filter(|c| status.is_none_or(|s| c.status == *s))
        .filter(|c| app_id.is_none_or(|a| of_app(c) == a))
        .collect();
    if latest_only {
        let mut seen = Vec::new();
        runs.retain(|c| {
            if seen.contains(&c.name) {
                false
            } else {
                seen.push(c.name.clone());
                true
            }
        });
    }
    let items: Vec<Value> = runs
        .iter()
        .map(|c| render::check_run(st, &req.base, repo, c))
        .collect();
    Ok(Reply::ok(
        json!({"total_count": items.len(), "check_runs": items}),
    ))
}
