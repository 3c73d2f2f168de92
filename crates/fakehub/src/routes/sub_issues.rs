//! Sub-issues and issue dependencies ("blocked by"). Both take database ids
//! (`sub_issue_id`, `issue_id`), not numbers, as GitHub does, and both may
//! name an issue of another repository the caller can see (an installation's
//! repository, or a public one). A sub-issue must belong to the same
//! repository owner as its parent (GitHub's description of `sub_issue_id`);
//! one of another owner answers 422. A blocked-by link may cross owners.
//! GitHub's documented limits ("Adding sub-issues": up to 100 sub-issues per
//! parent and up to eight levels of nested sub-issues) answer 422; the docs
//! do not give the wording, so the messages here are the fake's own. Levels
//! count from the top issue (level 1): a link that would put an issue, or
//! the deepest issue of the sub-issue's own tree, below level 8 is refused.
//! Links send no webhook to this App (it is not subscribed to
//! `sub_issues`). For the injected read lag, naming a just-created issue as
//! `sub_issue_id` answers 404, as GitHub answers an id it cannot find.

use serde_json::Value;

use super::issues::repo;
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::auth::Caller;
use crate::render;
use crate::state::{Issue, State};

pub const MAX_SUB_ISSUES: usize = 100;
/// Levels of nested sub-issues, the top issue being level 1.
pub const MAX_SUB_ISSUE_LEVELS: usize = 8;

/// GitHub's rule for `sub_issue_id`, in the words of its description.
pub const SAME_OWNER: &str =
    "The sub-issue must belong to the same repository owner as the parent issue";

fn home_of(st: &State, id: u64) -> Option<&str> {
    st.issue_home(id)
}

fn find(st: &State, id: u64) -> Option<&Issue> {
    st.issue_anywhere(id)
}

fn find_mut(st: &mut State, id: u64) -> Option<&mut Issue> {
    let key = home_of(st, id)?.to_owned();
    let repo = st.repos.get_mut(&key)?;
    let number = repo.issue_by_id(id)?.number;
    repo.issues.get_mut(&number)
}

/// The repository of issue `id` when the caller may see it there (its
/// installation holds the repository, or the repository is public); else
/// GitHub's 404 for an id it cannot find. `lag`: a just-created issue the
/// injected read lag still hides is not found either.
fn visible_home(st: &State, req: &Req, id: u64, lag: bool) -> Result<String, Reply> {
    let key = home_of(st, id).ok_or_else(Reply::not_found)?;
    let repo = &st.repos[key];
    let installed = match &req.caller {
        Some(Caller::Installation(inst)) => st
            .installations
            .get(inst)
            .is_some_and(|i| i.repos.contains(key)),
        _ => false,
    };
    let shown = repo
        .issue_by_id(id)
        .is_some_and(|i| !lag || !repo.lagging(&format!("issue:{}", i.number)));
    if (installed || !repo.private) && shown {
        Ok(key.to_owned())
    } else {
        Err(Reply::not_found())
    }
}

fn owner(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// The level of issue `id`: 1 for an issue without a parent.
fn level(st: &State, id: u64) -> usize {
    let mut level = 1;
    let mut cursor = find(st, id).and_then(|i| i.parent);
    while let Some(parent) = cursor {
        level += 1;
        cursor = find(st, parent).and_then(|i| i.parent);
    }
    level
}

/// Levels in the tree under issue `id`, itself included (1 for a leaf).
fn height(st: &State, id: u64) -> usize {
    let children = find(st, id).map(|i| i.sub_issues.clone());
    1 + children
        .unwrap_or_default()
        .iter()
        .map(|c| height(st, *c))
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

/// Issues by id, each rendered in its own repository.
fn render_ids(st: &State, req: &Req, ids: &[u64]) -> Vec<Value> {
    ids.iter()
        .filter_map(|id| {
            let key = home_of(st, *id)?;
            let repo = &st.repos[key];
            Some(render::issue(st, &req.base, repo, repo.issue_by_id(*id)?))
        })
        .collect()
}

fn list_by_ids(st: &State, req: &Req, pick: fn(&Issue) -> &Vec<u64>) -> HResult {
    let number = req.num("issue_number")?;
    let issue = repo(st, req)?
        .issues
        .get(&number)
        .ok_or_else(Reply::not_found)?;
    Ok(paginate(req, render_ids(st, req, pick(issue))))
}

fn issue_by_id_reply(st: &State, req: &Req, id: u64, status: u16) -> HResult {
    let item = render_ids(st, req, &[id])
        .pop()
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::json(status, item))
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
    let parent_repo = repo(st, req)?;
    let now = parent_repo.clock.now();
    let parent = parent_repo
        .issues
        .get(&number)
        .ok_or_else(Reply::not_found)?;
    let parent_id = parent.id;
    let sub_key = visible_home(st, req, sub_id, true)?;
    if owner(&sub_key) != owner(&req.repo_key()) {
        return Err(Reply::unprocessable(SAME_OWNER));
    }
    let sub = find(st, sub_id).ok_or_else(Reply::not_found)?;
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
    if level(st, parent_id) + height(st, sub_id) > MAX_SUB_ISSUE_LEVELS {
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
        cursor = find(st, id).and_then(|i| i.parent);
    }
    if let Some(old) = sub.parent.and_then(|old| find_mut(st, old)) {
        old.sub_issues.retain(|s| *s != sub_id);
    }
    if let Some(sub) = find_mut(st, sub_id) {
        sub.parent = Some(parent_id);
    }
    if let Some(parent) = find_mut(st, parent_id) {
        parent.sub_issues.push(sub_id);
        parent.updated_at = now;
    }
    issue_by_id_reply(st, req, parent_id, 201)
}

fn remove_sub_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let sub_id = id_field(req, "sub_issue_id")?;
    let key = req.repo_key();
    let parent = st
        .repos
        .get_mut(&key)
        .and_then(|r| r.issues.get_mut(&number))
        .ok_or_else(Reply::not_found)?;
    if !parent.sub_issues.contains(&sub_id) {
        return Err(Reply::not_found());
    }
    parent.sub_issues.retain(|s| *s != sub_id);
    if let Some(sub) = find_mut(st, sub_id) {
        sub.parent = None;
    }
    issue_by_id_reply(st, req, sub_id, 200)
}

fn list_blocked_by(st: &mut State, req: &Req) -> HResult {
    list_by_ids(st, req, |i| &i.blocked_by)
}

fn add_blocked_by(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let blocker = id_field(req, "issue_id")?;
    let key = req.repo_key();
    repo(st, req)?;
    visible_home(st, req, blocker, false)?;
    let repo = st.repos.get_mut(&key).ok_or_else(Reply::not_found)?;
    let now = repo.clock.now();
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
    issue.updated_at = now;
    issue_by_id_reply(st, req, blocker, 201)
}

fn remove_blocked_by(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let blocker = req.num("issue_id")?;
    let key = req.repo_key();
    let issue = st
        .repos
        .get_mut(&key)
        .and_then(|r| r.issues.get_mut(&number))
        .ok_or_else(Reply::not_found)?;
    if !issue.blocked_by.contains(&blocker) {
        return Err(Reply::not_found());
    }
    issue.blocked_by.retain(|b| *b != blocker);
    issue_by_id_reply(st, req, blocker, 200)
}
