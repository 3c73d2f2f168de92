//! Sub-issues and issue dependencies ("blocked by"). Both take database ids
//! (`sub_issue_id`, `issue_id`), not numbers, as GitHub does. GitHub's
//! documented limits ("Adding sub-issues": up to 100 sub-issues per parent
//! and up to eight levels of nested sub-issues) answer 422; the docs do not
//! give the wording, so the messages here are the fake's own. Levels count
//! from the top issue (level 1): a link that would put an issue, or the
//! deepest issue of the sub-issue's own tree, below level 8 is refused. Links send no webhook to this App (it is not
//! subscribed to `sub_issues`). For the injected read lag, naming a
//! just-created issue as `sub_issue_id` answers 404, as GitHub answers an
//! id it cannot find.

use serde_json::Value;

use super::issues::{repo, repo_mut};
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::render;
use crate::state::State;

pub const MAX_SUB_ISSUES: usize = 100;
/// Levels of nested sub-issues, the top issue being level 1.
pub const MAX_SUB_ISSUE_LEVELS: usize = 8;

/// The level of issue `id`: 1 for an issue without a parent.
fn level(repo: &crate::state::Repo, id: u64) -> usize {
    let mut level = 1;
    let mut cursor = repo.issue_by_id(id).and_then(|i| i.parent);
    while let Some(parent) = cursor {
        level += 1;
        cursor = repo.issue_by_id(parent).and_then(|i| i.parent);
    }
    level
}

/// Levels in the tree under issue `id`, itself included (1 for a leaf).
fn height(repo: &crate::state::Repo, id: u64) -> usize {
    let children = repo.issue_by_id(id).map(|i| i.sub_issues.clone());
    1 + children
        .unwrap_or_default()
        .iter()
        .map(|c| height(repo, *c))
        .max()
        .unwrap_or(0)
}

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues",
        list_sub_issues,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues",
        add_sub_issue,
    ),
    inst(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/sub_issue",
        remove_sub_issue,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by",
        list_blocked_by,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by",
        add_blocked_by,
    ),
    inst(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by/{issue_id}",
        remove_blocked_by,
    ),
];

fn id_field(req: &Req, name: &str) -> Result<u64, Reply> {
    req.body.get(name).and_then(Value::as_u64).ok_or_else(|| {
        Reply::invalid(
            serde_json::json!({"resource": "Issue", "code": "missing_field", "field": name}),
        )
    })
}

fn list_by_ids(st: &State, req: &Req, pick: fn(&crate::state::Issue) -> &Vec<u64>) -> HResult {
    let number = req.num("issue_number")?;
    let repo = repo(st, req)?;
    let issue = repo.issues.get(&number).ok_or_else(Reply::not_found)?;
    let items = pick(issue)
        .iter()
        .filter_map(|id| repo.issue_by_id(*id))
        .map(|i| render::issue(st, &req.base, repo, i))
        .collect();
    Ok(paginate(req, items))
}

fn issue_by_id_reply(st: &State, req: &Req, id: u64, status: u16) -> HResult {
    let repo = repo(st, req)?;
    let issue = repo.issue_by_id(id).ok_or_else(Reply::not_found)?;
    Ok(Reply::json(
        status,
        render::issue(st, &req.base, repo, issue),
    ))
}

fn list_sub_issues(st: &mut State, req: &Req) -> HResult {
    list_by_ids(st, req, |i| &i.sub_issues)
}

fn add_sub_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let sub_id = id_field(req, "sub_issue_id")?;
    let replace = req
        .body
        .get("replace_parent")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (repo, _) = repo_mut(st, req)?;
    let parent = repo.issues.get(&number).ok_or_else(Reply::not_found)?;
    let parent_id = parent.id;
    let sub = repo
        .issue_by_id(sub_id)
        .filter(|i| !repo.lagging(&format!("issue:{}", i.number)))
        .ok_or_else(Reply::not_found)?;
    if sub_id == parent_id {
        return Err(Reply::unprocessable(
            "An issue cannot be a sub-issue of itself",
        ));
    }
    if parent.sub_issues.contains(&sub_id) {
        return Err(Reply::unprocessable(
            "Issue may not contain duplicate sub-issues",
        ));
    }
    if parent.sub_issues.len() >= MAX_SUB_ISSUES {
        return Err(Reply::unprocessable(
            "Parent issue has reached the maximum number of sub-issues (100)",
        ));
    }
    if let (Some(_), false) = (sub.parent, replace) {
        return Err(Reply::unprocessable("Sub issue may only have one parent"));
    }
    if level(repo, parent_id) + height(repo, sub_id) > MAX_SUB_ISSUE_LEVELS {
        return Err(Reply::unprocessable(
            "Sub-issues cannot be nested more than 8 levels deep",
        ));
    }
    // A parent may not become a descendant of its own sub-issue.
    let mut cursor = Some(parent_id);
    while let Some(id) = cursor {
        if id == sub_id {
            return Err(Reply::unprocessable(
                "An issue cannot be a sub-issue of one of its descendants",
            ));
        }
        cursor = repo.issue_by_id(id).and_then(|i| i.parent);
    }
    let old_parent = sub.parent;
    for i in repo.issues.values_mut() {
        if Some(i.id) == old_parent {
            i.sub_issues.retain(|s| *s != sub_id);
        }
        if i.id == sub_id {
            i.parent = Some(parent_id);
        }
        if i.id == parent_id {
            i.sub_issues.push(sub_id);
            i.updated_at = repo.clock.now();
        }
    }
    issue_by_id_reply(st, req, parent_id, 201)
}

fn remove_sub_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let sub_id = id_field(req, "sub_issue_id")?;
    let (repo, _) = repo_mut(st, req)?;
    let parent = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    if !parent.sub_issues.contains(&sub_id) {
        return Err(Reply::not_found());
    }
    parent.sub_issues.retain(|s| *s != sub_id);
    for i in repo.issues.values_mut().filter(|i| i.id == sub_id) {
        i.parent = None;
    }
    issue_by_id_reply(st, req, sub_id, 200)
}

fn list_blocked_by(st: &mut State, req: &Req) -> HResult {
    list_by_ids(st, req, |i| &i.blocked_by)
}

fn add_blocked_by(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let blocker = id_field(req, "issue_id")?;
    let (repo, _) = repo_mut(st, req)?;
    repo.issue_by_id(blocker).ok_or_else(Reply::not_found)?;
    let issue = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    if issue.id == blocker {
        return Err(Reply::unprocessable("An issue cannot be blocked by itself"));
    }
    if issue.blocked_by.contains(&blocker) {
        return Err(Reply::unprocessable(
            "Issue is already blocked by this issue",
        ));
    }
    issue.blocked_by.push(blocker);
    issue.updated_at = repo.clock.now();
    issue_by_id_reply(st, req, blocker, 201)
}

fn remove_blocked_by(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let blocker = req.num("issue_id")?;
    let (repo, _) = repo_mut(st, req)?;
    let issue = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    if !issue.blocked_by.contains(&blocker) {
        return Err(Reply::not_found());
    }
    issue.blocked_by.retain(|b| *b != blocker);
    issue_by_id_reply(st, req, blocker, 200)
}
