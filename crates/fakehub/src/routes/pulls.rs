//! Pull requests (same-repository heads). Each pull request also has an issue
//! with the same number, so labels and comments go through the issues API as
//! on GitHub. Merging writes a merge commit onto the base branch.
//!
//! Writes echo (`emit`): `pull_request` opened, edited, closed, reopened;
//! a merge sends `pull_request` closed (merged), the base's `push` and
//! `check_suite` requested for the merge commit. For the injected read lag
//! a just-created pull request is 404 and a just-merged one reads open.

use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::emit;
use crate::render;
use crate::state::{new_sha, Commit, Issue, Pull, Repo, State};

pub const ROUTES: &[Route] = &[
    inst("GET", "/repos/{owner}/{repo}/pulls", list_pulls),
    inst("POST", "/repos/{owner}/{repo}/pulls", create_pull),
    inst("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", get_pull),
    inst(
        "PATCH",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        update_pull,
    ),
    inst(
        "PUT",
        "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
        merge_pull,
    ),
];

/// `owner:branch` or `branch` → `branch`.
fn head_branch(head: &str) -> &str {
    head.split_once(':').map(|(_, b)| b).unwrap_or(head)
}

fn pull_reply(st: &State, req: &Req, number: u64, status: u16) -> HResult {
    let repo = repo(st, req)?;
    let p = repo.pulls.get(&number).ok_or_else(Reply::not_found)?;
    Ok(Reply::json(status, render::pull(st, &req.base, repo, p)))
}

/// A pull request as a lagging replica reads it: absent just after its
/// creation, open and unmerged just after its merge.
fn replica_view(repo: &Repo, p: &Pull) -> Option<Pull> {
    if repo.lagging(&format!("issue:{}", p.number)) {
        return None;
    }
    let mut p = p.clone();
    if repo.lagging(&format!("merge:{}", p.number)) {
        p.merged = false;
        p.state = "open".into();
        p.merged_at = None;
        p.closed_at = None;
        p.merge_commit_sha = None;
    }
    Some(p)
}

fn list_pulls(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let state = req.query.get("state").map(String::as_str).unwrap_or("open");
    let head = req.query.get("head").map(|h| head_branch(h));
    let base = req.query.get("base");
    let items = repo
        .pulls
        .values()
        .rev()
        .filter(|p| state == "all" || p.state == state)
        .filter(|p| head.is_none_or(|h| p.head == h))
        .filter(|p| base.is_none_or(|b| p.base == *b))
        .map(|p| render::pull(st, &req.base, repo, p))
        .collect();
    Ok(paginate(req, items))
}

fn create_pull(st: &mut State, req: &Req) -> HResult {
    let author = req.actor(st);
    let (repo, ids) = repo_mut(st, req)?;
    let head = head_branch(req.str_field("head").unwrap_or_default()).to_string();
    let base = req.str_field("base").unwrap_or_default().to_string();
    let invalid = |field: &str| {
        Reply::invalid(json!({"resource": "PullRequest", "field": field, "code": "invalid"}))
    };
    let head_sha = repo
        .branches
        .get(&head)
        .cloned()
        .ok_or_else(|| invalid("head"))?;
    let base_sha = repo
        .branches
        .get(&base)
        .cloned()
        .ok_or_else(|| invalid("base"))?;
    if repo
        .pulls
        .values()
        .any(|p| p.state == "open" && p.head == head && p.base == base)
    {
        let msg = format!("A pull request already exists for {}:{head}.", repo.owner);
        return Err(Reply::invalid(
            json!({"resource": "PullRequest", "code": "custom", "message": msg}),
        ));
    }
    if head_sha == base_sha {
        let msg = format!("No commits between {base} and {head}");
        return Err(Reply::invalid(
            json!({"resource": "PullRequest", "code": "custom", "message": msg}),
        ));
    }
    let number = repo.next_number;
    repo.next_number += 1;
    let now = repo.clock.now();
    let title = req.str_field("title").unwrap_or_default().to_string();
    let body = req.str_field("body").map(str::to_string);
    repo.issues.insert(
        number,
        Issue {
            id: ids.next(),
            number,
            title: title.clone(),
            body: body.clone(),
            state: "open".into(),
            state_reason: None,
            labels: Vec::new(),
            assignees: Vec::new(),
            author: author.clone(),
            created_at: now,
            updated_at: now,
            closed_at: None,
            is_pull_request: true,
            sub_issues: Vec::new(),
            parent: None,
            blocked_by: Vec::new(),
            reactions: Vec::new(),
        },
    );
    let pull = Pull {
        id: ids.next(),
        number,
        title,
        body,
        head,
        base,
        state: "open".into(),
        draft: req
            .body
            .get("draft")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        merged: false,
        mergeable: true,
        merge_commit_sha: None,
        author,
        created_at: now,
        updated_at: now,
        closed_at: None,
        merged_at: None,
    };
    repo.pulls.insert(number, pull);
    let reply = pull_reply(st, req, number, 201);
    let key = req.repo_key();
    let actor = req.actor(st);
    emit::pull_opened(st, req.at(&key), number, &actor);
    reply
}

fn get_pull(st: &mut State, req: &Req) -> HResult {
    let number = req.num("pull_number")?;
    let repo = repo(st, req)?;
    let p = repo.pulls.get(&number).ok_or_else(Reply::not_found)?;
    let p = replica_view(repo, p).ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(render::pull(st, &req.base, repo, &p)))
}

fn update_pull(st: &mut State, req: &Req) -> HResult {
    let number = req.num("pull_number")?;
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let p = repo.pulls.get_mut(&number).ok_or_else(Reply::not_found)?;
    let before = p.clone();
    let now = repo.clock.now();
    if let Some(t) = req.str_field("title") {
        p.title = t.into();
    }
    if let Some(b) = req.body.get("body") {
        p.body = b.as_str().map(str::to_string);
    }
    if let Some(b) = req.str_field("base") {
        p.base = b.into();
    }
    if let Some(s) = req.str_field("state") {
        if !p.merged {
            p.state = s.into();
            p.closed_at = (s == "closed").then_some(now);
        }
    }
    p.updated_at = now;
    let p = p.clone();
    if let Some(i) = repo.issues.get_mut(&number) {
        i.title = p.title.clone();
        i.body = p.body.clone();
        i.state = p.state.clone();
        i.closed_at = p.closed_at;
        i.updated_at = now;
    }
    let reply = pull_reply(st, req, number, 200);
    let key = req.repo_key();
    emit::pull_changed(st, req.at(&key), number, &actor, &before);
    reply
}

/// Merges open pull request `number` (`method`: merge, squash or rebase,
/// the last two as one commit on the base): writes the commit onto the
/// base branch and marks the pull request merged. Returns the commit and
/// the base's previous head; `None` when a branch is missing.
pub(crate) fn merge(
    repo: &mut Repo,
    number: u64,
    method: &str,
    title: Option<String>,
) -> Option<(String, String)> {
    let p = repo.pulls.get(&number)?.clone();
    let head_sha = repo.branches.get(&p.head)?.clone();
    let base_sha = repo.branches.get(&p.base)?.clone();
    let mut files = repo.commits[&base_sha].files.clone();
    files.extend(repo.commits[&head_sha].files.clone());
    let parents = if method == "merge" {
        vec![base_sha.clone(), head_sha]
    } else {
        vec![base_sha.clone()]
    };
    let message = title.unwrap_or_else(|| {
        format!(
            "Merge pull request #{number} from {}/{}",
            repo.owner, p.head
        )
    });
    let sha = new_sha();
    let now = repo.clock.now();
    repo.commits.insert(
        sha.clone(),
        Commit {
            sha: sha.clone(),
            parents,
            message,
            files,
            date: now,
        },
    );
    repo.branches.insert(p.base.clone(), sha.clone());
    let pr = repo.pulls.get_mut(&number).expect("exists");
    pr.merged = true;
    pr.state = "closed".into();
    pr.merge_commit_sha = Some(sha.clone());
    pr.merged_at = Some(now);
    pr.closed_at = Some(now);
    pr.updated_at = now;
    if let Some(i) = repo.issues.get_mut(&number) {
        i.state = "closed".into();
        i.closed_at = Some(now);
        i.updated_at = now;
    }
    Some((sha, base_sha))
}

fn merge_pull(st: &mut State, req: &Req) -> HResult {
    let number = req.num("pull_number")?;
    let (repo, _) = repo_mut(st, req)?;
    let p = repo
        .pulls
        .get(&number)
        .cloned()
        .ok_or_else(Reply::not_found)?;
    if p.merged || p.state != "open" || !p.mergeable {
        return Err(Reply::error(405, "Pull Request is not mergeable"));
    }
    if p.draft {
        // GitHub refuses to merge a draft until it is marked ready.
        return Err(Reply::error(405, "Pull Request is still a draft"));
    }
    let head_sha = repo
        .branches
        .get(&p.head)
        .cloned()
        .ok_or_else(|| Reply::error(405, "Pull Request is not mergeable"))?;
    if let Some(expected) = req.str_field("sha") {
        if expected != head_sha {
            return Err(Reply::error(
                409,
                "Head branch was modified. Review and try the merge again.",
            ));
        }
    }
    let method = req.str_field("merge_method").unwrap_or("merge");
    let title = req.str_field("commit_title").map(str::to_string);
    let (sha, base_before) = merge(repo, number, method, title)
        .ok_or_else(|| Reply::error(405, "Pull Request is not mergeable"))?;
    let key = req.repo_key();
    let actor = req.actor(st);
    emit::pull_merged(st, req.at(&key), number, &actor, &base_before);
    Ok(Reply::ok(
        json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
    ))
}
