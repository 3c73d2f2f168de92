//! Git refs, branches and commits. Branches are a name → sha map; a commit
//! keeps its whole tree, so history is a chain of snapshots.
//!
//! Moving a ref echoes as a push does (`emit::branch_moved`): `create` for
//! a new branch, `push`, `pull_request` closed for a pull request the
//! fast-forward merged, `check_suite` requested for a head without a suite.
//! A just-created ref is 404 to reads for the injected read lag.

use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{git_commits, inst, rules, HResult, Reply, Req, Route};
use crate::emit;
use crate::render::{self, HTML};
use crate::state::{Change, Commit, Repo, State};

pub const ROUTES: &[Route] = &[
    inst("GET", "/repos/{owner}/{repo}/git/ref/{ref}", get_ref),
    inst("POST", "/repos/{owner}/{repo}/git/refs", create_ref),
    inst("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", update_ref),
    inst("DELETE", "/repos/{owner}/{repo}/git/refs/{ref}", delete_ref),
    inst("GET", "/repos/{owner}/{repo}/branches/{branch}", get_branch),
    inst("GET", "/repos/{owner}/{repo}/commits/{ref}", get_commit),
];

/// `heads/x` or `refs/heads/x` → branch name `x`; tags and others are unsupported.
fn branch_name(r: &str) -> Option<&str> {
    r.trim_start_matches("refs/").strip_prefix("heads/")
}

fn ref_json(base: &str, repo: &Repo, branch: &str, sha: &str) -> Value {
    let api = render::repo_api(base, repo);
    json!({
        "ref": format!("refs/heads/{branch}"), "node_id": format!("REF_{branch}"),
        "url": format!("{api}/git/refs/heads/{branch}"),
        "object": {"sha": sha, "type": "commit", "url": format!("{api}/git/commits/{sha}")},
    })
}

fn get_ref(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let branch = branch_name(req.param("ref")).ok_or_else(Reply::not_found)?;
    if repo.lagging(&format!("ref:{branch}")) {
        return Err(Reply::not_found());
    }
    let sha = repo.branches.get(branch).ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(ref_json(&req.base, repo, branch, sha)))
}

fn create_ref(st: &mut State, req: &Req) -> HResult {
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let full = req.str_field("ref").unwrap_or_default();
    let sha = req.str_field("sha").unwrap_or_default();
    let Some(branch) = full
        .strip_prefix("refs/")
        .and_then(|_| branch_name(full))
        .filter(|b| !b.is_empty())
    else {
        return Err(Reply::unprocessable(
            "Reference name must start with 'refs/' and have at least two slashes.",
        ));
    };
    if !repo.commits.contains_key(sha) {
        return Err(Reply::unprocessable("Object does not exist"));
    }
    if repo.branches.contains_key(branch) {
        return Err(Reply::unprocessable("Reference already exists"));
    }
    let (branch, sha) = (branch.to_owned(), sha.to_owned());
    let key = req.repo_key();
    if let Some(refusal) = rules::refused(st, &st.repos[&key], &branch, &Change::Create, 422) {
        return Err(refusal);
    }
    let repo = st.repos.get_mut(&key).expect("the repository was found");
    repo.branches.insert(branch.clone(), sha.clone());
    let reply = Reply::created(ref_json(&req.base, repo, &branch, &sha));
    emit::branch_moved(st, req.at(&key), &branch, None, &actor);
    Ok(reply)
}

fn update_ref(st: &mut State, req: &Req) -> HResult {
    let actor = req.actor(st);
    let (repo, _) = repo_mut(st, req)?;
    let branch = branch_name(req.param("ref"))
        .ok_or_else(Reply::not_found)?
        .to_string();
    let sha = req.str_field("sha").unwrap_or_default().to_string();
    let force = req
        .body
        .get("force")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let old = repo
        .branches
        .get(&branch)
        .cloned()
        .ok_or_else(|| Reply::unprocessable("Reference does not exist"))?;
    if !repo.commits.contains_key(&sha) {
        return Err(Reply::unprocessable("Object does not exist"));
    }
    let fast_forward = repo.is_ancestor(&old, &sha);
    if !force && !fast_forward {
        return Err(Reply::unprocessable("Update is not a fast forward"));
    }
    let change = Change::Update {
        old: &old,
        new: &sha,
        forced: !fast_forward,
    };
    let key = req.repo_key();
    if let Some(refusal) = rules::refused(st, &st.repos[&key], &branch, &change, 422) {
        return Err(refusal);
    }
    let workflows = (old.as_str(), sha.as_str());
    if let Some(refusal) =
        crate::workflows_permission::refused(st, req, &st.repos[&key], workflows, 422)
    {
        return Err(refusal);
    }
    let repo = st.repos.get_mut(&key).expect("the repository was found");
    repo.branches.insert(branch.clone(), sha.clone());
    let reply = Reply::ok(ref_json(&req.base, repo, &branch, &sha));
    emit::branch_moved(st, req.at(&key), &branch, Some(old), &actor);
    Ok(reply)
}

fn delete_ref(st: &mut State, req: &Req) -> HResult {
    let actor = req.actor(st);
    let branch = branch_name(req.param("ref"))
        .ok_or_else(|| Reply::unprocessable("Reference does not exist"))?;
    if let Some(refusal) = rules::refused(st, repo(st, req)?, branch, &Change::Delete, 422) {
        return Err(refusal);
    }
    let (repo, _) = repo_mut(st, req)?;
    let old = repo
        .branches
        .remove(branch)
        .ok_or_else(|| Reply::unprocessable("Reference does not exist"))?;
    let key = req.repo_key();
    emit::branch_moved(st, req.at(&key), branch, Some(old), &actor);
    Ok(Reply::no_content())
}

pub(crate) fn commit_json(st: &State, base: &str, repo: &Repo, c: &Commit) -> Value {
    let api = render::repo_api(base, repo);
    let (author, committer) = git_commits::actors_json(repo, c);
    let owner = render::user_by_login(st, base, &repo.owner);
    json!({
        "sha": c.sha, "node_id": format!("C_{}", &c.sha[..12]), "url": format!("{api}/commits/{}", c.sha),
        "html_url": format!("{HTML}/{}/commit/{}", repo.full_name(), c.sha), "comments_url": format!("{api}/commits/{}/comments", c.sha),
        "commit": {
            "url": format!("{api}/git/commits/{}", c.sha), "author": author, "committer": committer, "message": c.message,
            "tree": {"sha": c.tree, "url": format!("{api}/git/trees/{}", c.tree)}, "comment_count": 0,
            "verification": git_commits::unsigned(),
        },
        "author": owner, "committer": owner,
        "parents": c.parents.iter().map(|p| json!({"sha": p, "url": format!("{api}/commits/{p}"),
            "html_url": format!("{HTML}/{}/commit/{p}", repo.full_name())})).collect::<Vec<_>>(),
    })
}

fn get_branch(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let name = req.param("branch");
    if repo.lagging(&format!("ref:{name}")) {
        return Err(Reply::error(404, "Branch not found"));
    }
    let sha = repo
        .branches
        .get(name)
        .ok_or_else(|| Reply::error(404, "Branch not found"))?;
    let commit = commit_json(st, &req.base, repo, &repo.commits[sha]);
    let api = render::repo_api(&req.base, repo);
    // Classic protection shows its required checks here; a ruleset's are
    // read from the rules API, but it protects the branch all the same.
    let classic: Vec<&String> = repo
        .rules_for(name)
        .filter(|set| set.classic)
        .flat_map(|set| &set.rules)
        .filter_map(|rule| match rule {
            crate::state::Rule::RequiredStatusChecks(contexts) => Some(contexts),
            _ => None,
        })
        .flatten()
        .collect();
    let enabled = repo.rules_for(name).any(|set| set.classic);
    let level = if classic.is_empty() {
        "off"
    } else {
        "non_admins"
    };
    let checks: Vec<Value> = classic
        .iter()
        .map(|c| json!({"context": c, "app_id": null}))
        .collect();
    Ok(Reply::ok(json!({
        "name": name, "commit": commit, "protected": repo.is_protected(name),
        "_links": {"self": format!("{api}/branches/{name}"), "html": format!("{HTML}/{}/tree/{name}", repo.full_name())},
        "protection": {"enabled": enabled, "required_status_checks": {"enforcement_level": level, "contexts": classic, "checks": checks}},
        "protection_url": format!("{api}/branches/{name}/protection"),
    })))
}

fn get_commit(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let r = req.param("ref");
    let c = repo
        .resolve(r)
        .ok_or_else(|| Reply::unprocessable(&format!("No commit found for SHA: {r}")))?;
    let mut v = commit_json(st, &req.base, repo, c);
    v["stats"] = json!({"total": 0, "additions": 0, "deletions": 0});
    v["files"] = json!([]);
    Ok(Reply::ok(v))
}
