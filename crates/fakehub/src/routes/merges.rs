//! Merging a branch on the server (`POST /repos/{owner}/{repo}/merges`) and
//! comparing two commits (`GET /repos/{owner}/{repo}/compare/{basehead}`).
//!
//! Owns: GitHub's answers for both — 201 with the merge commit, 204 when
//! the base already contains the head, 404 `Base does not exist` / `Head
//! does not exist`, 409 `Merge conflict`, 409 with the violations when
//! the base's rules refuse the merge commit; a comparison's `status`, counts,
//! commits and files. Must not: merge trees itself (`merge` does), or pick
//! the webhooks (`emit::branch_moved` does: `push` of the base, the pull
//! requests the merge brought in marked merged, `check_suite` requested).
//!
//! GitHub's merge API never fast-forwards: when the base is an ancestor of
//! the head it still writes a merge commit (parents: base, head; tree:
//! the head's). GitHub documents no fast-forward for this endpoint, its
//! answer is always "the resulting merge commit", and every merge GitHub
//! makes server-side is a commit of its own (fast-forwarding is only done
//! by updating the ref: `PATCH /git/refs` with `force: false`).

use serde_json::{json, Value};

use super::git::commit_json;
use super::issues::{repo, repo_mut};
use super::{inst, rules, HResult, Reply, Req, Route};
use crate::emit;
use crate::merge::MergeError;
use crate::render::{self, HTML};
use crate::state::{Change, Repo, State};

pub const ROUTES: &[Route] = &[
    inst("POST", "/repos/{owner}/{repo}/merges", merge_branch),
    inst("GET", "/repos/{owner}/{repo}/compare/{basehead}", compare),
];

/// Commits listed by a comparison asked without paging parameters; the
/// newest are kept, as GitHub keeps them.
/// The changed files a comparison lists at most ("the response includes a
/// maximum of 300 changed files", GitHub's REST docs for compare).
const COMPARE_FILES: usize = 300;
const COMPARE_COMMITS: usize = 250;

fn merge_branch(st: &mut State, req: &Req) -> HResult {
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let base = req.str_field("base").unwrap_or_default().to_string();
    let head = req.str_field("head").unwrap_or_default();
    let base_sha = repo
        .branches
        .get(&base)
        .cloned()
        .ok_or_else(|| Reply::error(404, "Base does not exist"))?;
    let head_sha = repo
        .resolve(head)
        .map(|c| c.sha.clone())
        .ok_or_else(|| Reply::error(404, "Head does not exist"))?;
    if repo.is_ancestor(&head_sha, &base_sha) {
        return Ok(Reply::no_content());
    }
    let message = req
        .str_field("commit_message")
        .map_or_else(|| format!("Merge {head} into {base}"), str::to_string);
    let parents = vec![base_sha.clone(), head_sha.clone()];
    let sha = match repo.commit_merge((&base_sha, &head_sha), parents, message) {
        Ok(sha) => sha,
        Err(MergeError::Conflict(_)) => return Err(Reply::error(409, "Merge conflict")),
        Err(MergeError::Backing(msg) | MergeError::Missing(msg)) => {
            return Err(Reply::error(500, &msg))
        }
    };
    // The merge commit is made; whether the base may move to it is the
    // rules' call, as for a push (GitHub answers 409 when they refuse).
    let key = req.repo_key();
    let change = Change::Update {
        old: &base_sha,
        new: &sha,
        forced: false,
    };
    if let Some(refusal) = rules::refused(st, &st.repos[&key], &base, &change, 409) {
        return Err(refusal);
    }
    let workflows = (base_sha.as_str(), sha.as_str());
    if let Some(refusal) =
        crate::workflows_permission::refused(st, req, &st.repos[&key], workflows, 409)
    {
        return Err(refusal);
    }
    let repo = st.repos.get_mut(&key).expect("the repository was found");
    repo.branches.insert(base.clone(), sha.clone());
    let repo = &st.repos[&key];
    let reply = Reply::created(commit_json(st, &req.base, repo, &repo.commits[&sha]));
    emit::branch_moved(st, req.at(&key), &base, Some(base_sha), &actor);
    Ok(reply)
}

fn compare(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let basehead = req.param("basehead");
    let (b, h) = basehead
        .split_once("...")
        .or_else(|| basehead.split_once(".."))
        .ok_or_else(Reply::not_found)?;
    let base = repo.resolve(b).ok_or_else(Reply::not_found)?;
    let head = repo.resolve(h).ok_or_else(Reply::not_found)?;
    let merge_base = repo
        .merge_base(&base.sha, &head.sha)
        .ok_or_else(|| Reply::error(404, &format!("No common ancestor between {b} and {h}.")))?;
    let ahead = repo.commits_between(&base.sha, &head.sha);
    let behind_by = repo.commits_between(&head.sha, &base.sha).len();
    let status = match (ahead.len(), behind_by) {
        (0, 0) => "identical",
        (_, 0) => "ahead",
        (0, _) => "behind",
        _ => "diverged",
    };
    let listed = listed_commits(req, &ahead);
    let api = render::repo_api(&req.base, repo);
    let html = format!("{HTML}/{}", repo.full_name());
    let owner = &repo.owner;
    Ok(Reply::ok(json!({
        "url": format!("{api}/compare/{basehead}"),
        "html_url": format!("{html}/compare/{basehead}"),
        "permalink_url": format!("{html}/compare/{owner}:{}...{owner}:{}", base.sha, head.sha),
        "diff_url": format!("{html}/compare/{basehead}.diff"),
        "patch_url": format!("{html}/compare/{basehead}.patch"),
        "base_commit": commit_json(st, &req.base, repo, base),
        "merge_base_commit": commit_json(st, &req.base, repo, &repo.commits[&merge_base]),
        "status": status,
        "ahead_by": ahead.len(),
        "behind_by": behind_by,
        "total_commits": ahead.len(),
        "commits": listed.iter().map(|s| commit_json(st, &req.base, repo, &repo.commits[*s])).collect::<Vec<_>>(),
        // GitHub lists at most 300 changed files, whatever the page.
        "files": diff_entries(repo, &req.base, (&merge_base, &head.sha))
            .into_iter()
            .take(COMPARE_FILES)
            .collect::<Vec<_>>(),
    })))
}

/// The commits a comparison lists: the newest [`COMPARE_COMMITS`] without
/// paging parameters, else the page asked for (oldest first either way).
fn listed_commits<'a>(req: &Req, ahead: &'a [String]) -> Vec<&'a String> {
    let query = |name: &str| req.query.get(name).and_then(|v| v.parse::<usize>().ok());
    match (query("page"), query("per_page")) {
        (None, None) => ahead
            .iter()
            .skip(ahead.len().saturating_sub(COMPARE_COMMITS))
            .collect(),
        (page, per_page) => {
            let per_page = per_page.unwrap_or(30).clamp(1, 100);
            let page = page.unwrap_or(1).max(1);
            ahead
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .collect()
        }
    }
}

/// The files that differ between `from` and `to`, as GitHub's diff
/// entries (line counts are whole-file counts; no patch).
fn diff_entries(repo: &Repo, base: &str, (from, to): (&str, &str)) -> Vec<Value> {
    let (old, new) = (&repo.commits[from].files, &repo.commits[to].files);
    let api = render::repo_api(base, repo);
    let html = format!("{HTML}/{}", repo.full_name());
    let paths: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let (o, n) = (old.get(path), new.get(path));
            let status = match (o, n) {
                (None, Some(_)) => "added",
                (Some(_), None) => "removed",
                (Some(a), Some(b)) if a != b => "modified",
                _ => return None,
            };
            let lines = |c: Option<&String>| c.map_or(0, |c| c.lines().count());
            let (additions, deletions) = (lines(n), lines(o));
            let sha = blob_sha(n.or(o).map_or("", String::as_str));
            Some(json!({
                "sha": sha, "filename": path, "status": status, "additions": additions,
                "deletions": deletions, "changes": additions + deletions,
                "blob_url": format!("{html}/blob/{to}/{path}"),
                "raw_url": format!("{html}/raw/{to}/{path}"),
                "contents_url": format!("{api}/contents/{path}?ref={to}"),
            }))
        })
        .collect()
}

/// A stable 40-hex-digit id for a file's content.
fn blob_sha(content: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("blob {}\0{content}", content.len()));
    hex::encode(digest)[..40].to_string()
}
