//! Pull requests (same-repository heads). Each pull request also has an issue
//! with the same number, so labels and comments go through the issues API as
//! on GitHub. Merging writes a merge commit onto the base branch, its tree
//! the 3-way merge of the branches (`merge`); branches that conflict make
//! the pull request unmergeable (`mergeable: false`, merging is 405), and
//! so do the base's rules (405 with their violations: a required check
//! not passed on the head, reviews, linear history, a merge queue).
//!
//! Writes echo (`emit`): `pull_request` opened, edited, closed, reopened;
//! a merge sends `pull_request` closed (merged), the base's `push` and
//! `check_suite` requested for the merge commit. For the injected read lag
//! a just-created pull request is 404 and a just-merged one reads open.

use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, paginate, rules, HResult, Reply, Req, Route};
use crate::emit;
use crate::merge::MergeError;
use crate::render;
use crate::state::{Change, Issue, Pull, Repo, State};

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

/// GitHub's refusal of a draft where the owner's plan has none (a private
/// repository on GitHub Free).
pub const DRAFTS_NOT_SUPPORTED: &str = "Draft pull requests are not supported in this repository.";

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
    let draft = req.body.get("draft").and_then(Value::as_bool) == Some(true);
    if draft && !repo.plan.drafts {
        return Err(Reply::invalid(json!({
            "resource": "PullRequest", "code": "custom",
            "message": DRAFTS_NOT_SUPPORTED,
        })));
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
    repo.insert_issue(Issue {
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
    });
    let pull = Pull {
        id: ids.next(),
        number,
        title,
        body,
        head,
        base,
        state: "open".into(),
        draft,
        merged: false,
        mergeable: true,
        merge_commit_sha: None,
        merged_by: None,
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

/// Merges open pull request `number` as `merger` (`method`: merge, squash
/// or rebase, the last two as one commit on the base): writes the commit
/// onto the base branch (its tree the 3-way merge of the branches, see
/// `merge`) and marks the pull request merged. Returns the commit and the
/// base's previous head.
pub(crate) fn merge(
    repo: &mut Repo,
    number: u64,
    (method, title): (&str, Option<String>),
    merger: &str,
) -> Result<(String, String), MergeError> {
    let p = repo
        .pulls
        .get(&number)
        .cloned()
        .ok_or_else(|| MergeError::Missing(format!("pull request #{number}")))?;
    let branch = |name: &str| {
        repo.branches
            .get(name)
            .cloned()
            .ok_or_else(|| MergeError::Missing(name.to_string()))
    };
    let (head_sha, base_sha) = (branch(&p.head)?, branch(&p.base)?);
    let parents = if method == "merge" {
        vec![base_sha.clone(), head_sha.clone()]
    } else {
        vec![base_sha.clone()]
    };
    let message = title.unwrap_or_else(|| {
        format!(
            "Merge pull request #{number} from {}/{}",
            repo.owner, p.head
        )
    });
    let sha = repo.commit_merge((&base_sha, &head_sha), parents, message)?;
    repo.branches.insert(p.base.clone(), sha.clone());
    mark_merged(repo, number, &sha, merger);
    Ok((sha, base_sha))
}

/// Pull request `number` (and its issue) is now merged by `merger`, as
/// `merge_commit_sha`.
pub(crate) fn mark_merged(repo: &mut Repo, number: u64, merge_commit_sha: &str, merger: &str) {
    let now = repo.clock.now();
    if let Some(pr) = repo.pulls.get_mut(&number) {
        pr.merged = true;
        pr.state = "closed".into();
        pr.merge_commit_sha = Some(merge_commit_sha.to_string());
        pr.merged_by = Some(merger.to_string());
        pr.merged_at = Some(now);
        pr.closed_at = Some(now);
        pr.updated_at = now;
    }
    if let Some(i) = repo.issues.get_mut(&number) {
        i.state = "closed".into();
        i.closed_at = Some(now);
        i.updated_at = now;
    }
}

/// Whether open pull request `p` can be merged now: not marked
/// unmergeable, both branches there, and no conflict between them.
pub(crate) fn mergeable_now(repo: &Repo, p: &Pull) -> bool {
    let (Some(head), Some(base)) = (repo.branches.get(&p.head), repo.branches.get(&p.base)) else {
        return false;
    };
    p.mergeable && repo.merge_conflicts(base, head).is_ok_and(|c| c.is_empty())
}

fn merge_pull(st: &mut State, req: &Req) -> HResult {
    let number = req.num("pull_number")?;
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let p = repo
        .pulls
        .get(&number)
        .cloned()
        .ok_or_else(Reply::not_found)?;
    let not_mergeable = || Reply::error(405, "Pull Request is not mergeable");
    if p.merged || p.state != "open" || !p.mergeable {
        return Err(not_mergeable());
    }
    if p.draft {
        // GitHub refuses to merge a draft until it is marked ready.
        return Err(Reply::error(405, "Pull Request is still a draft"));
    }
    let head_sha = repo
        .branches
        .get(&p.head)
        .cloned()
        .ok_or_else(not_mergeable)?;
    if let Some(expected) = req.str_field("sha") {
        if expected != head_sha {
            return Err(Reply::error(
                409,
                "Head branch was modified. Review and try the merge again.",
            ));
        }
    }
    let method = req.str_field("merge_method").unwrap_or("merge");
    let change = Change::MergePull {
        pull: number,
        head: &head_sha,
        method,
    };
    if let Some(refusal) = rules::refused(st, &st.repos[&req.repo_key()], &p.base, &change, 405) {
        return Err(refusal);
    }
    // What the merge brings to the base: the head's changes since the
    // merge base.
    let repo = &st.repos[&req.repo_key()];
    let base_sha = repo.branches.get(&p.base).cloned().unwrap_or_default();
    let since = repo.merge_base(&base_sha, &head_sha).unwrap_or(base_sha);
    if let Some(refusal) =
        crate::workflows_permission::refused(st, req, repo, (&since, &head_sha), 405)
    {
        return Err(refusal);
    }
    let (repo, _) = repo_mut(st, req)?;
    let title = req.str_field("commit_title").map(str::to_string);
    let (sha, base_before) = match merge(repo, number, (method, title), &actor) {
        Ok(merged) => merged,
        Err(MergeError::Backing(msg)) => return Err(Reply::error(500, &msg)),
        // A conflict is what GitHub calls not mergeable.
        Err(e @ (MergeError::Conflict(_) | MergeError::Missing(_))) => {
            tracing::warn!("fakehub: pull request #{number} is not mergeable: {e:?}");
            return Err(not_mergeable());
        }
    };
    let key = req.repo_key();
    emit::pull_merged(st, req.at(&key), number, &actor, &base_before);
    Ok(Reply::ok(
        json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
    ))
}
