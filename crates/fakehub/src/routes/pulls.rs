//! Pull requests (same-repository heads). Each pull request also has an issue
//! with the same number, so labels and comments go through the issues API as
//! on GitHub. Merging writes a merge commit onto the base branch.

use chrono::Utc;
use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::render;
use crate::state::{new_sha, Commit, Issue, Pull, State};

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
    let now = Utc::now();
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
    pull_reply(st, req, number, 201)
}

fn get_pull(st: &mut State, req: &Req) -> HResult {
    pull_reply(st, req, req.num("pull_number")?, 200)
}

fn update_pull(st: &mut State, req: &Req) -> HResult {
    let number = req.num("pull_number")?;
    let (repo, _) = repo_mut(st, req)?;
    let p = repo.pulls.get_mut(&number).ok_or_else(Reply::not_found)?;
    let now = Utc::now();
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
    pull_reply(st, req, number, 200)
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
    let base_sha = repo
        .branches
        .get(&p.base)
        .cloned()
        .ok_or_else(|| Reply::error(405, "Pull Request is not mergeable"))?;
    let mut files = repo.commits[&base_sha].files.clone();
    files.extend(repo.commits[&head_sha].files.clone());
    let method = req.str_field("merge_method").unwrap_or("merge");
    let parents = if method == "merge" {
        vec![base_sha, head_sha]
    } else {
        vec![base_sha]
    };
    let message = req
        .str_field("commit_title")
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!(
                "Merge pull request #{number} from {}/{}",
                repo.owner, p.head
            )
        });
    let sha = new_sha();
    let now = Utc::now();
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
    Ok(Reply::ok(
        json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
    ))
}
