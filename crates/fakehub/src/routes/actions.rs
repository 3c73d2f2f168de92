//! GitHub Actions: workflow dispatch (only for workflows registered with
//! `RepoHandle::add_workflow`; it creates a queued run, and answers 200 with
//! the run's id and URLs when asked with `return_run_details`, else 204),
//! workflow runs (cancelling one that is not completed yet: 202, else 409)
//! and their artifacts. Downloading an artifact answers 302 to
//! a signed blob URL on the fake's storage origin, as GitHub redirects to
//! storage; that origin refuses requests carrying GitHub credentials.
//!
//! Writes echo (`emit`): the run a dispatch creates sends `workflow_run`
//! requested, a cancel `workflow_run` completed. For the read lag, a
//! just-created run is missing from its workflow's run list.

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, AuthKind, HResult, Reply, Req, Route};
use crate::emit;
use crate::render::{self, HTML};
use crate::state::{Artifact, Repo, State, WorkflowDispatch, WorkflowRun};

/// Where artifact blobs live on the storage origin.
pub const BLOB_PREFIX: &str = "/_fakehub/blobs/";

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/actions/workflows/{workflow_id}",
        get_workflow,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
        list_workflow_runs,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
        dispatch,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/actions/runs/{run_id}",
        get_run,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
        cancel_run,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
        list_artifacts,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
        download_artifact,
    ),
    Route {
        method: "GET",
        template: "/_fakehub/blobs/{artifact_id}",
        auth: AuthKind::Public,
        handler: blob,
    },
];

/// The workflow a `{workflow_id}` names: GitHub takes its file name or its id.
fn workflow_file(workflows: &BTreeMap<String, u64>, wf: &str) -> Result<String, Reply> {
    workflows
        .iter()
        .find(|(file, id)| *file == wf || id.to_string() == wf)
        .map(|(file, _)| file.clone())
        .ok_or_else(Reply::not_found)
}

/// A workflow: one registered with `RepoHandle::add_workflow`, or a file
/// under `.github/workflows/` on the default branch (GitHub registers a
/// workflow when its file reaches the default branch). `state` is `active`
/// unless a person disabled it (`RepoHandle::disable_workflow`).
fn get_workflow(st: &mut State, req: &Req) -> HResult {
    let key = req.repo_key();
    let wf = req.param("workflow_id");
    let (repo, ids) = st.repo_ids(&key).ok_or_else(Reply::not_found)?;
    let file = match workflow_file(&repo.workflows, wf) {
        Ok(file) => file,
        Err(not_found) => {
            let path = format!(".github/workflows/{wf}");
            let on_default = repo.resolve(&repo.default_branch.clone());
            if !on_default.is_some_and(|c| c.files.contains_key(&path)) {
                return Err(not_found);
            }
            repo.workflows.insert(wf.to_owned(), ids.next());
            wf.to_owned()
        }
    };
    let id = repo.workflows[&file];
    let state = if repo.disabled_workflows.contains(&file) {
        "disabled_manually"
    } else {
        "active"
    };
    let api = render::repo_api(&req.base, repo);
    let full = repo.full_name();
    Ok(Reply::ok(json!({
        "id": id, "node_id": format!("W_fake{id}"), "name": file, "path": format!(".github/workflows/{file}"),
        "state": state, "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
        "url": format!("{api}/actions/workflows/{id}"),
        "html_url": format!("{HTML}/{full}/blob/{}/.github/workflows/{file}", repo.default_branch),
        "badge_url": format!("{HTML}/{full}/workflows/{file}/badge.svg"),
    })))
}

/// The most characters a `workflow_dispatch`'s inputs may hold in all.
pub const MAX_INPUTS_CHARS: usize = 65_535;

fn dispatch(st: &mut State, req: &Req) -> HResult {
    let (repo, _) = repo_mut(st, req)?;
    let wf = req.param("workflow_id");
    let file = workflow_file(&repo.workflows, wf)?;
    if repo.disabled_workflows.contains(&file) {
        return Err(Reply::unprocessable(
            "Cannot trigger a 'workflow_dispatch' on a disabled workflow",
        ));
    }
    let git_ref = req.str_field("ref").unwrap_or_default().to_string();
    if repo.resolve(&git_ref).is_none() {
        return Err(Reply::unprocessable(&format!(
            "No ref found for: {git_ref}"
        )));
    }
    let inputs = req.body.get("inputs").cloned().unwrap_or(json!({}));
    // GitHub documents a cap on a dispatch's inputs ("the maximum payload
    // for inputs is 65,535 characters"), not the message of its refusal:
    // the words here are fakehub's.
    let size = inputs.to_string().chars().count();
    if size > MAX_INPUTS_CHARS {
        return Err(Reply::unprocessable(&format!(
            "inputs are too large: {size} characters, over {MAX_INPUTS_CHARS}"
        )));
    }
    if let Some(declared) = repo.workflow_inputs.get(&file) {
        let unexpected: Vec<&String> = inputs
            .as_object()
            .map(|given| given.keys().filter(|k| !declared.contains(*k)).collect())
            .unwrap_or_default();
        if !unexpected.is_empty() {
            return Err(Reply::unprocessable(&format!(
                "Unexpected inputs provided: {}",
                serde_json::to_string(&unexpected).expect("strings serialise")
            )));
        }
    }
    let key = req.repo_key();
    let branch = git_ref
        .trim_start_matches("refs/")
        .trim_start_matches("heads/")
        .to_string();
    let run_id = new_run(st, &key, &file, &branch, None);
    let repo = st.repos.get_mut(&key).expect("repository exists");
    let title = repo
        .run_names
        .get(&file)
        .map(|template| run_name(template, &inputs));
    if let Some(run) = repo.runs.iter_mut().find(|r| r.id == run_id) {
        run.status = "queued".into();
        run.display_title = title;
    }
    repo.dispatches.push(WorkflowDispatch {
        workflow: wf.into(),
        git_ref,
        inputs: inputs.clone(),
        run_id,
    });
    emit::workflow_run(st, req.at(&key), "requested", run_id);
    let inputs = inputs.to_string();
    let (file, branch) = (file.as_str(), branch.as_str());
    let heard = crate::agents::Heard::Dispatch {
        file,
        branch,
        inputs,
    };
    crate::agents::heard(st, req.at(&key), None, &heard);
    if req.body.get("return_run_details") != Some(&json!(true)) || !st.dispatch_run_details {
        return Ok(Reply::no_content());
    }
    let repo = &st.repos[&key];
    Ok(Reply::ok(json!({
        "workflow_run_id": run_id,
        "run_url": format!("{}/actions/runs/{run_id}", render::repo_api(&req.base, repo)),
        "html_url": format!("{HTML}/{}/actions/runs/{run_id}", repo.full_name()),
    })))
}

pub(crate) fn run_json(st: &State, base: &str, repo: &Repo, r: &WorkflowRun) -> Value {
    let api = format!("{}/actions/runs/{}", render::repo_api(base, repo), r.id);
    let wf_id = repo.workflows.get(&r.workflow).copied().unwrap_or(0);
    let tree = repo
        .commits
        .get(&r.head_sha)
        .map_or(r.head_sha.as_str(), |c| c.tree.as_str());
    let repository = render::repository(st, base, repo);
    let who =
        json!({"name": repo.owner, "email": format!("{}@users.noreply.github.com", repo.owner)});
    json!({
        "id": r.id, "name": r.workflow, "node_id": format!("WFR_{}", r.id), "head_branch": r.head_branch,
        "head_sha": r.head_sha, "path": format!(".github/workflows/{}", r.workflow), "display_title": r.display_title.as_deref().unwrap_or(&r.workflow),
        "run_number": r.run_number, "run_attempt": 1, "event": r.event, "status": r.status, "conclusion": r.conclusion,
        "workflow_id": wf_id, "check_suite_id": r.id + 1, "check_suite_node_id": format!("CS_{}", r.id + 1),
        "previous_attempt_url": null, "url": api,
        "html_url": format!("{HTML}/{}/actions/runs/{}", repo.full_name(), r.id), "pull_requests": [],
        "created_at": render::ts(r.created_at), "updated_at": render::ts(r.updated_at), "run_started_at": render::ts(r.created_at),
        "actor": render::user_by_login(st, base, &st.bot_login()), "triggering_actor": render::user_by_login(st, base, &st.bot_login()),
        "jobs_url": format!("{api}/jobs"), "logs_url": format!("{api}/logs"),
        "check_suite_url": format!("{}/check-suites/{}", render::repo_api(base, repo), r.id + 1),
        "artifacts_url": format!("{api}/artifacts"), "cancel_url": format!("{api}/cancel"), "rerun_url": format!("{api}/rerun"),
        "workflow_url": format!("{}/actions/workflows/{wf_id}", render::repo_api(base, repo)),
        "head_commit": {"id": r.head_sha, "tree_id": tree, "message": "commit", "timestamp": render::ts(r.created_at),
                        "author": who, "committer": who},
        "repository": repository.clone(), "head_repository": repository,
    })
}

/// A `run-name` template with each `${{ inputs.<name> }}` replaced by that
/// input (an input not given reads as empty, as in GitHub's expressions).
fn run_name(template: &str, inputs: &Value) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        let expr = rest[start + 3..start + end].trim();
        if let Some(name) = expr.strip_prefix("inputs.") {
            out.push_str(inputs[name].as_str().unwrap_or_default());
        }
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// A workflow's runs, newest first; `event` and `branch` filter as GitHub's do.
fn list_workflow_runs(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let file = workflow_file(&repo.workflows, req.param("workflow_id"))?;
    let event = req.query.get("event");
    let branch = req.query.get("branch");
    let runs: Vec<Value> = repo
        .runs
        .iter()
        .rev()
        .filter(|r| r.workflow == file)
        .filter(|r| !repo.lagging(&format!("run:{}", r.id)))
        .filter(|r| event.is_none_or(|e| r.event == *e))
        .filter(|r| branch.is_none_or(|b| r.head_branch == *b))
        .map(|r| run_json(st, &req.base, repo, r))
        .collect();
    Ok(Reply::ok(
        json!({"total_count": runs.len(), "workflow_runs": runs}),
    ))
}

fn get_run(st: &mut State, req: &Req) -> HResult {
    let id = req.num("run_id")?;
    let repo = repo(st, req)?;
    let run = repo
        .runs
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(run_json(st, &req.base, repo, run)))
}

fn cancel_run(st: &mut State, req: &Req) -> HResult {
    let id = req.num("run_id")?;
    let (repo, _) = repo_mut(st, req)?;
    let run = repo
        .runs
        .iter_mut()
        .find(|r| r.id == id)
        .ok_or_else(Reply::not_found)?;
    if run.status == "completed" {
        return Err(Reply::error(
            409,
            "Cannot cancel a workflow run that is completed.",
        ));
    }
    run.status = "completed".into();
    run.conclusion = Some("cancelled".into());
    run.updated_at = repo.clock.now();
    let key = req.repo_key();
    emit::workflow_run(st, req.at(&key), "completed", id);
    Ok(Reply::json(202, json!({})))
}

fn artifact_json(base: &str, repo: &Repo, a: &Artifact) -> Value {
    let api = format!(
        "{}/actions/artifacts/{}",
        render::repo_api(base, repo),
        a.id
    );
    let run = repo.runs.iter().find(|r| r.id == a.run_id);
    json!({
        "id": a.id, "node_id": format!("MDg6QXJ0aWZhY3Q{}", a.id), "name": a.name, "size_in_bytes": a.reported_size.unwrap_or(a.bytes.len() as u64),
        "url": api, "archive_download_url": format!("{api}/zip"), "expired": false, "digest": null,
        "created_at": render::ts(a.created_at), "updated_at": render::ts(a.created_at),
        "expires_at": render::ts(a.created_at + Duration::days(90)),
        "workflow_run": {"id": a.run_id, "repository_id": repo.id, "head_repository_id": repo.id,
                         "head_branch": run.map(|r| r.head_branch.clone()), "head_sha": run.map(|r| r.head_sha.clone())},
    })
}

fn list_artifacts(st: &mut State, req: &Req) -> HResult {
    let id = req.num("run_id")?;
    let repo = repo(st, req)?;
    if !repo.runs.iter().any(|r| r.id == id) {
        return Err(Reply::not_found());
    }
    let name = req.query.get("name");
    let items: Vec<Value> = repo
        .artifacts
        .iter()
        .filter(|a| a.run_id == id && name.is_none_or(|n| a.name == *n))
        .map(|a| artifact_json(&req.base, repo, a))
        .collect();
    Ok(Reply::ok(
        json!({"total_count": items.len(), "artifacts": items}),
    ))
}

fn download_artifact(st: &mut State, req: &Req) -> HResult {
    let id = req.num("artifact_id")?;
    let repo = repo(st, req)?;
    if req.param("archive_format") != "zip" || !repo.artifacts.iter().any(|a| a.id == id) {
        return Err(Reply::not_found());
    }
    let mut r = Reply {
        status: 302,
        body: None,
        raw: None,
        headers: Vec::new(),
    };
    // Signed like a storage URL: valid on its own, for one minute.
    let expires = (Utc::now() + Duration::minutes(1)).timestamp();
    r.headers.push((
        "location".into(),
        format!(
            "{}{BLOB_PREFIX}{id}?se={expires}&sig={:016x}",
            req.storage,
            fastrand::u64(..)
        ),
    ));
    Ok(r)
}

fn blob(st: &mut State, req: &Req) -> HResult {
    let id = req.num("artifact_id")?;
    let a = st
        .repos
        .values()
        .flat_map(|r| r.artifacts.iter())
        .find(|a| a.id == id)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply {
        status: 200,
        body: None,
        raw: Some((a.bytes.clone(), "application/zip")),
        headers: Vec::new(),
    })
}

pub(crate) fn new_run(
    st: &mut State,
    key: &str,
    workflow: &str,
    branch: &str,
    conclusion: Option<&str>,
) -> u64 {
    let id = st.next_id();
    let repo = st.repos.get_mut(key).expect("repository exists");
    let head_sha = repo.branches.get(branch).cloned().unwrap_or_default();
    let run_number = repo.runs.iter().filter(|r| r.workflow == workflow).count() as u64 + 1;
    repo.runs.push(WorkflowRun {
        id,
        workflow: workflow.into(),
        head_branch: branch.into(),
        head_sha,
        status: if conclusion.is_some() {
            "completed"
        } else {
            "in_progress"
        }
        .into(),
        conclusion: conclusion.map(str::to_string),
        event: "workflow_dispatch".into(),
        run_number,
        created_at: st.clock.now(),
        updated_at: st.clock.now(),
        display_title: None,
    });
    id
}
