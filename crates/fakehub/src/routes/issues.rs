//! Issues, issue comments and reactions. Issue numbers are shared with pull
//! requests; comments created with an installation token belong to the bot.
//!
//! Writes echo (`emit`): `issues` opened (then labeled / assigned), edited,
//! closed, reopened, labeled, unlabeled, assigned, unassigned, and
//! `issue_comment` created / edited. Reactions send nothing to this App (it
//! is not subscribed). For the read lag, a just-created issue is 404 and
//! missing from `GET .../issues`, and a just-created comment is missing from
//! its issue's comment list, as GitHub's lists lag its writes.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::emit;
use crate::render;
use crate::routes::labels::ensure_label;
use crate::state::{Comment, IdGen, Issue, Reaction, Repo, State};

pub const ROUTES: &[Route] = &[
    inst("GET", "/repos/{owner}/{repo}/issues", list_issues),
    inst("POST", "/repos/{owner}/{repo}/issues", create_issue),
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        get_issue,
    ),
    inst(
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        update_issue,
    ),
    inst(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/assignees",
        remove_assignees,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        list_comments,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        create_comment,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        get_comment,
    ),
    inst(
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        update_comment,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        react_comment,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/reactions",
        react_issue,
    ),
];

pub(crate) fn repo_mut<'a>(
    st: &'a mut State,
    req: &Req,
) -> Result<(&'a mut Repo, &'a mut IdGen), Reply> {
    st.repo_ids(&req.repo_key()).ok_or_else(Reply::not_found)
}

pub(crate) fn repo<'a>(st: &'a State, req: &Req) -> Result<&'a Repo, Reply> {
    st.repos.get(&req.repo_key()).ok_or_else(Reply::not_found)
}

/// Opens an issue (used by the API and by `RepoHandle::create_issue`).
pub(crate) fn open_issue(
    repo: &mut Repo,
    ids: &mut IdGen,
    title: &str,
    body: Option<String>,
    author: &str,
    labels: &[String],
) -> u64 {
    let number = repo.next_number;
    repo.next_number += 1;
    let labels = labels.iter().map(|l| ensure_label(repo, ids, l)).collect();
    let now = repo.clock.now();
    repo.insert_issue(Issue {
        id: ids.next(),
        number,
        title: title.into(),
        body,
        state: "open".into(),
        state_reason: None,
        labels,
        assignees: Vec::new(),
        author: author.into(),
        created_at: now,
        updated_at: now,
        closed_at: None,
        is_pull_request: false,
        sub_issues: Vec::new(),
        parent: None,
        blocked_by: Vec::new(),
        reactions: Vec::new(),
    });
    number
}

pub(crate) fn add_comment(
    repo: &mut Repo,
    ids: &mut IdGen,
    number: u64,
    body: &str,
    author: &str,
) -> Comment {
    let now = repo.clock.now();
    let c = Comment {
        id: ids.next(),
        issue_number: number,
        body: body.into(),
        author: author.into(),
        created_at: now,
        updated_at: now,
        reactions: Vec::new(),
    };
    repo.comments.push(c.clone());
    if let Some(i) = repo.issues.get_mut(&number) {
        i.updated_at = now;
    }
    c
}

/// GitHub refuses issue and comment bodies over 65536 characters.
fn check_body_length(req: &Req, resource: &str) -> Result<(), Reply> {
    let n = req.str_field("body").map_or(0, |b| b.chars().count());
    if n > 65536 {
        return Err(Reply::invalid(
            serde_json::json!({"resource": resource, "code": "custom", "field": "body",
            "message": "body is too long (maximum is 65536 characters)"}),
        ));
    }
    Ok(())
}

fn title_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
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

pub(crate) fn issue_reply(st: &State, req: &Req, number: u64, status: u16) -> HResult {
    let repo = repo(st, req)?;
    let issue = repo.issues.get(&number).ok_or_else(Reply::not_found)?;
    Ok(Reply::json(
        status,
        render::issue(st, &req.base, repo, issue),
    ))
}

fn list_issues(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let state = req.query.get("state").map(String::as_str).unwrap_or("open");
    let labels: Vec<&str> = req
        .query
        .get("labels")
        .map(|l| l.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let items = repo
        .issues
        .values()
        .rev()
        .filter(|i| !repo.lagging(&format!("issue:{}", i.number)))
        .filter(|i| state == "all" || i.state == state)
        .filter(|i| {
            labels
                .iter()
                .all(|l| i.labels.iter().any(|il| il.eq_ignore_ascii_case(l)))
        })
        .map(|i| render::issue(st, &req.base, repo, i))
        .collect();
    Ok(paginate(req, items))
}

fn create_issue(st: &mut State, req: &Req) -> HResult {
    check_body_length(req, "Issue")?;
    let Some(title) = req.body.get("title").and_then(title_of) else {
        return Err(Reply::invalid(
            serde_json::json!({"resource": "Issue", "code": "missing_field", "field": "title"}),
        ));
    };
    let author = req.actor(st);
    let mut assignees = strings(req.body.get("assignees"));
    crate::agents::drop_copilot(&mut assignees);
    // GitHub refuses the whole issue for a login that cannot be assigned.
    if let Some(login) = assignees
        .iter()
        .find(|l| !st.assignable_in(&req.repo_key(), l))
    {
        return Err(Reply::invalid(serde_json::json!({
            "value": login, "resource": "Issue", "field": "assignees", "code": "invalid",
        })));
    }
    let (repo, ids) = repo_mut(st, req)?;
    let number = open_issue(
        repo,
        ids,
        &title,
        req.str_field("body").map(str::to_string),
        &author,
        &strings(req.body.get("labels")),
    );
    if let Some(i) = repo.issues.get_mut(&number) {
        i.assignees = assignees;
    }
    let reply = issue_reply(st, req, number, 201);
    let key = req.repo_key();
    emit::issue_opened(st, req.at(&key), number, &author);
    reply
}

fn get_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    if repo(st, req)?.lagging(&format!("issue:{number}")) {
        return Err(Reply::not_found());
    }
    issue_reply(st, req, number, 200)
}

/// `DELETE .../issues/{n}/assignees` (issues/remove-assignees): takes the
/// listed logins off, ignores the ones it does not carry, answers 200 with
/// the issue, and sends `issues` unassigned for each one removed.
fn remove_assignees(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let actor = req.actor(st);
    let now = st.clock.now();
    let gone = strings(req.body.get("assignees"));
    let (repo, _) = repo_mut(st, req)?;
    let issue = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    let before = issue.clone();
    issue
        .assignees
        .retain(|a| !gone.iter().any(|g| g.eq_ignore_ascii_case(a)));
    if issue.assignees != before.assignees {
        issue.updated_at = now;
    }
    let reply = issue_reply(st, req, number, 200);
    let key = req.repo_key();
    emit::issue_changed(st, req.at(&key), number, &actor, &before);
    reply
}

fn update_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    check_body_length(req, "Issue")?;
    let actor = req.actor(st);
    let now = st.clock.now();
    let (repo, ids) = repo_mut(st, req)?;
    let labels = req.body.get("labels").map(|l| strings(Some(l)));
    let labels = labels.map(|ls| {
        ls.iter()
            .map(|l| ensure_label(repo, ids, l))
            .collect::<Vec<_>>()
    });
    let issue = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    let before = issue.clone();
    let b = &req.body;
    if let Some(t) = b.get("title").and_then(title_of) {
        issue.title = t;
    }
    if let Some(body) = b.get("body") {
        issue.body = body.as_str().map(str::to_string);
    }
    if let Some(ls) = labels {
        issue.labels = ls;
    }
    if b.get("assignees").is_some() {
        issue.assignees = strings(b.get("assignees"));
        crate::agents::drop_copilot(&mut issue.assignees);
    }
    if let Some(state) = b.get("state").and_then(Value::as_str) {
        if state != issue.state {
            issue.closed_at = (state == "closed").then_some(now);
            issue.state_reason = Some(
                if state == "closed" {
                    "completed"
                } else {
                    "reopened"
                }
                .into(),
            );
        }
        issue.state = state.into();
    }
    if let Some(reason) = b.get("state_reason") {
        if !reason.is_null() {
            issue.state_reason = reason.as_str().map(str::to_string);
        }
    }
    issue.updated_at = now;
    let reply = issue_reply(st, req, number, 200);
    let key = req.repo_key();
    emit::issue_changed(st, req.at(&key), number, &actor, &before);
    reply
}

fn list_comments(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let repo = repo(st, req)?;
    if !repo.issues.contains_key(&number) {
        return Err(Reply::not_found());
    }
    let items = repo
        .comments
        .iter()
        .filter(|c| c.issue_number == number)
        .filter(|c| !repo.lagging(&format!("comment:{}", c.id)))
        .map(|c| render::comment(st, &req.base, repo, c))
        .collect();
    Ok(paginate(req, items))
}

fn comment_reply(st: &State, req: &Req, id: u64, status: u16) -> HResult {
    let repo = repo(st, req)?;
    let c = repo
        .comments
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::json(status, render::comment(st, &req.base, repo, c)))
}

fn create_comment(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    check_body_length(req, "IssueComment")?;
    let author = req.actor(st);
    let (repo, ids) = repo_mut(st, req)?;
    if !repo.issues.contains_key(&number) {
        return Err(Reply::not_found());
    }
    let body = req.str_field("body").unwrap_or_default();
    let c = add_comment(repo, ids, number, body, &author);
    let reply = comment_reply(st, req, c.id, 201);
    let key = req.repo_key();
    emit::comment(
        st,
        req.at(&key),
        "created",
        &c,
        &author,
        serde_json::json!({}),
    );
    reply
}

fn get_comment(st: &mut State, req: &Req) -> HResult {
    comment_reply(st, req, req.num("comment_id")?, 200)
}

fn update_comment(st: &mut State, req: &Req) -> HResult {
    let id = req.num("comment_id")?;
    check_body_length(req, "IssueComment")?;
    let actor = req.actor(st);
    let now = st.clock.now();
    let (repo, _) = repo_mut(st, req)?;
    let c = repo.comment_mut(id).ok_or_else(Reply::not_found)?;
    let from = std::mem::replace(
        &mut c.body,
        req.str_field("body").unwrap_or_default().to_string(),
    );
    c.updated_at = now;
    let c = c.clone();
    let reply = comment_reply(st, req, id, 200);
    let key = req.repo_key();
    let changes = serde_json::json!({"changes": {"body": {"from": from}}});
    emit::comment(st, req.at(&key), "edited", &c, &actor, changes);
    reply
}

/// Adds a reaction unless this user already left it: 201 new, 200 existing.
fn react(
    reactions: &mut Vec<Reaction>,
    ids: &mut IdGen,
    content: &str,
    user: &str,
    now: DateTime<Utc>,
) -> (Reaction, u16) {
    if let Some(r) = reactions
        .iter()
        .find(|r| r.content == content && r.user == user)
    {
        return (r.clone(), 200);
    }
    let r = Reaction {
        id: ids.next(),
        content: content.into(),
        user: user.into(),
        created_at: now,
    };
    reactions.push(r.clone());
    (r, 201)
}

fn react_comment(st: &mut State, req: &Req) -> HResult {
    let id = req.num("comment_id")?;
    let user = req.actor(st);
    let now = st.clock.now();
    let (repo, ids) = repo_mut(st, req)?;
    let c = repo
        .comments
        .iter_mut()
        .find(|c| c.id == id)
        .ok_or_else(Reply::not_found)?;
    let (r, status) = react(
        &mut c.reactions,
        ids,
        req.str_field("content").unwrap_or_default(),
        &user,
        now,
    );
    Ok(Reply::json(status, render::reaction(st, &req.base, &r)))
}

fn react_issue(st: &mut State, req: &Req) -> HResult {
    let number = req.num("issue_number")?;
    let user = req.actor(st);
    let now = st.clock.now();
    let (repo, ids) = repo_mut(st, req)?;
    let i = repo.issues.get_mut(&number).ok_or_else(Reply::not_found)?;
    let (r, status) = react(
        &mut i.reactions,
        ids,
        req.str_field("content").unwrap_or_default(),
        &user,
        now,
    );
    Ok(Reply::json(status, render::reaction(st, &req.base, &r)))
}
