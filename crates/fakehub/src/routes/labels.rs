//! Repository labels and issue labels. Adding an unknown label to an issue
//! creates it (grey, as GitHub does); creating a duplicate repository label
//! is 422 `already_exists`.
//!
//! Adding or removing an issue's labels echoes `issues` labeled / unlabeled
//! per label (`pull_request` for a pull request), as GitHub does (`emit`).

use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::emit;
use crate::render;
use crate::state::{IdGen, Label, Repo, State};

pub const ROUTES: &[Route] = &[
    inst("GET", "/repos/{owner}/{repo}/labels", list_labels),
    inst("POST", "/repos/{owner}/{repo}/labels", create_label),
    inst("PATCH", "/repos/{owner}/{repo}/labels/{name}", update_label),
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        list_issue_labels,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        add_issue_labels,
    ),
    inst(
        "PUT",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        set_issue_labels,
    ),
    inst(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        remove_issue_label,
    ),
];

/// The label's canonical name, creating it if the repository lacks it.
pub(crate) fn ensure_label(repo: &mut Repo, ids: &mut IdGen, name: &str) -> String {
    if let Some(l) = repo.label(name) {
        return l.name.clone();
    }
    repo.labels.push(Label {
        id: ids.next(),
        name: name.into(),
        color: "ededed".into(),
        description: None,
    });
    name.into()
}

fn color(v: Option<&str>) -> Option<String> {
    v.map(|c| c.trim_start_matches('#').to_lowercase())
}

fn list_labels(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let items = repo
        .labels
        .iter()
        .map(|l| render::label(&req.base, repo, l))
        .collect();
    Ok(paginate(req, items))
}

fn create_label(st: &mut State, req: &Req) -> HResult {
    let (repo, ids) = repo_mut(st, req)?;
    let name = req.str_field("name").unwrap_or_default();
    if repo.label(name).is_some() {
        return Err(Reply::invalid(
            json!({"resource": "Label", "code": "already_exists", "field": "name"}),
        ));
    }
    let l = Label {
        id: ids.next(),
        name: name.into(),
        color: color(req.str_field("color")).unwrap_or_else(|| "ededed".into()),
        description: req.str_field("description").map(str::to_string),
    };
    repo.labels.push(l.clone());
    Ok(Reply::created(render::label(&req.base, repo, &l)))
}

fn update_label(st: &mut State, req: &Req) -> HResult {
    let (repo, _) = repo_mut(st, req)?;
    let old = repo
        .label(req.param("name"))
        .ok_or_else(Reply::not_found)?
        .name
        .clone();
    let new_name = req.str_field("new_name").unwrap_or(&old).to_string();
    if !new_name.eq_ignore_ascii_case(&old) && repo.label(&new_name).is_some() {
        return Err(Reply::invalid(
            json!({"resource": "Label", "code": "already_exists", "field": "name"}),
        ));
    }
    let l = repo
        .labels
        .iter_mut()
        .find(|l| l.name == old)
        .expect("label exists");
    l.name = new_name.clone();
    if let Some(c) = color(req.str_field("color")) {
        l.color = c;
    }
    if let Some(d) = req.body.get("description") {
        l.description = d.as_str().map(str::to_string);
    }
    let l = l.clone();
    for i in repo.issues.values_mut() {
        for name in i.labels.iter_mut().filter(|n| **n == old) {
            *name = new_name.clone();
        }
    }
    Ok(Reply::ok(render::label(&req.base, repo, &l)))
}

/// Label names from `{"labels": [...]}`, a bare array, or `[{name}]` items.
fn requested(body: &Value) -> Vec<String> {
    let list = body.get("labels").unwrap_or(body);
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .or_else(|| x.get("name")?.as_str().map(str::to_string))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn issue_labels_reply(st: &State, req: &Req, number: u64) -> HResult {
    let repo = repo(st, req)?;
    let issue = repo.issues.get(&number).ok_or_else(Reply::not_found)?;
    let items: Vec<Value> = issue
        .labels
        .iter()
        .filter_map(|n| repo.label(n))
        .map(|l| render::label(&req.base, repo, l))
        .collect();
    Ok(Reply::ok(Value::Array(items)))
}

fn list_issue_labels(st: &mut State, req: &Req) -> HResult {
    issue_labels_reply(st, req, req.num("issue_number")?)
}

fn change_labels(st: &mut State, req: &Req, replace: bool) -> HResult {
    let number = req.num("issue_number")?;
    let actor = req.actor(st);
    let (repo, ids) = repo_mut(st, req)?;
    let before = repo
        .issues
        .get(&number)
        .ok_or_else(Reply::not_found)?
        .labels
        .clone();
    let names: Vec<String> = requested(&req.body)
        .iter()
        .map(|n| ensure_label(repo, ids, n))
        .collect();
    let issue = repo.issues.get_mut(&number).expect("checked above");
    if replace {
        issue.labels.clear();
    }
    for n in names {
        if !issue.labels.iter().any(|l| l.eq_ignore_ascii_case(&n)) {
            issue.labels.push(n);
        }
    }
    issue.updated_at = repo.clock.now();
    let reply = issue_labels_reply(st, req, number);
    let key = req.repo_key();
    emit::labels_changed(st, req.at(&key), number, &actor, &before);
    reply
}

fn add_issue_labels(st: &mut State, req: &Req) -> HResult {
    change_labels(st, req, false)
}

fn set_issue_labels(st: &mut State, req: &Req) -> HResult {
    change_labels(st, req, true)
}

fn remove_issue_label(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let issue = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    let name = req.param("name");
    let before = issue.labels.clone();
    issue.labels.retain(|l| !l.eq_ignore_ascii_case(name));
    if issue.labels.len() == before.len() {
        return Err(Reply::error(404, "Label does not exist"));
    }
    let reply = issue_labels_reply(st, req, number);
    let key = req.repo_key();
    emit::labels_changed(st, req.at(&key), number, &actor, &before);
    reply
}
