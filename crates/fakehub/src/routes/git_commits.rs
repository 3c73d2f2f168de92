//! The git data API's commit objects: `GET /repos/{owner}/{repo}/git/commits/{commit_sha}`
//! and `POST /repos/{owner}/{repo}/git/commits` — how a revert is built
//! (the tree of the merge's first parent, committed on top of the merge).
//!
//! Owns: GitHub's git commit object (`sha`, `node_id`, `url`, `html_url`,
//! `author`, `committer`, `message`, `tree {sha, url}`, `parents [{sha,
//! url, html_url}]`, `verification`) and GitHub's answers: 200; 404 for a
//! commit the repository does not have; 201 for a created commit; 422, in
//! GitHub's order, `The tree parameter must be exactly 40 characters and
//! contain only [0-9a-f].`, `Tree SHA does not exist` (`Tree SHA is not a
//! tree object` for a commit's sha), `Each SHA in the
//! 'parents' parameter must be exactly 40 characters and contain only
//! [0-9a-f].`, `Parent SHA does not exist or is not a commit object`.
//! Must not: move a branch or send a webhook (GitHub's create writes the
//! object only; a branch is pointed at it with `/git/refs`), or write the
//! commit itself (`Repo::commit_tree` does: a real one when backed).
//!
//! Who, as GitHub fills it in: the author defaults to the caller (the
//! App's bot) dated now; the committer to the author, or to GitHub's web
//! committer when neither is given. The fake signs nothing:
//! `verification` is always `unsigned`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::issues::repo_mut;
use super::{inst, HResult, Reply, Req, Route};
use crate::render::{self, HTML};
use crate::state::{Authorship, Commit, GitActor, Repo, State};

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        get_git_commit,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/git/commits",
        create_git_commit,
    ),
];

/// A full lowercase hex object id, the only form these routes take.
fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A commit's signature object: `{name, email, date}`.
fn actor_json(a: &GitActor) -> Value {
    json!({"name": a.name, "email": a.email, "date": render::ts(a.date)})
}

/// The commit's author and committer as git records them; the fake's own
/// commits are the repository owner's, at the commit's date.
pub(crate) fn actors_json(repo: &Repo, c: &Commit) -> (Value, Value) {
    match &c.authorship {
        Some(p) => (actor_json(&p.author), actor_json(&p.committer)),
        None => {
            let who = actor_json(&GitActor {
                name: repo.owner.clone(),
                email: format!("{}@users.noreply.github.com", repo.owner),
                date: c.date,
            });
            (who.clone(), who)
        }
    }
}

/// `verification` of a commit the fake made: it signs nothing.
pub(crate) fn unsigned() -> Value {
    json!({"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null})
}

/// GitHub's git commit object.
pub(crate) fn git_commit_json(base: &str, repo: &Repo, c: &Commit) -> Value {
    let api = render::repo_api(base, repo);
    let html = format!("{HTML}/{}", repo.full_name());
    let (author, committer) = actors_json(repo, c);
    let parents: Vec<Value> = c
        .parents
        .iter()
        .map(|p| json!({"sha": p, "url": format!("{api}/git/commits/{p}"), "html_url": format!("{html}/commit/{p}")}))
        .collect();
    json!({
        "sha": c.sha, "node_id": format!("C_{}", &c.sha[..12]),
        "url": format!("{api}/git/commits/{}", c.sha), "html_url": format!("{html}/commit/{}", c.sha),
        "author": author, "committer": committer, "message": c.message,
        "tree": {"sha": c.tree, "url": format!("{api}/git/trees/{}", c.tree)},
        "parents": parents, "verification": unsigned(),
    })
}

fn get_git_commit(st: &mut State, req: &Req) -> HResult {
    let (repo, _) = repo_mut(st, req)?;
    let sha = req.param("commit_sha");
    // A backed repository has every commit of its bare repository.
    let known = is_sha(sha) && (repo.commits.contains_key(sha) || repo.import_real(sha));
    if !known {
        return Err(Reply::not_found());
    }
    Ok(Reply::ok(git_commit_json(
        &req.base,
        repo,
        &repo.commits[sha],
    )))
}

fn create_git_commit(st: &mut State, req: &Req) -> HResult {
    let login = req.actor(st);
    let caller = st.user(&login);
    let now = st.clock.now();
    let (repo, _) = repo_mut(st, req)?;
    let tree = req.str_field("tree").unwrap_or_default();
    if !is_sha(tree) {
        return Err(Reply::unprocessable(
            "The tree parameter must be exactly 40 characters and contain only [0-9a-f].",
        ));
    }
    if repo.tree_files(tree).is_none() {
        // The classic mistake: a commit's sha where its tree's belongs.
        let commit =
            repo.commits.contains_key(tree) || repo.git.as_ref().is_some_and(|g| g.has(tree));
        return Err(Reply::unprocessable(if commit {
            "Tree SHA is not a tree object"
        } else {
            "Tree SHA does not exist"
        }));
    }
    let parents = parents(req, repo)?;
    let people = authorship(req, &caller, now)?;
    let message = req.str_field("message").unwrap_or_default();
    let sha = repo
        .commit_tree(tree, parents, message, people)
        .map_err(|e| Reply::error(500, &format!("fakehub: writing the commit: {e:?}")))?;
    Ok(Reply::created(git_commit_json(
        &req.base,
        repo,
        &repo.commits[&sha],
    )))
}

/// The `parents` asked for, each a commit the repository has (a backed
/// repository's bare repository included).
fn parents(req: &Req, repo: &mut Repo) -> Result<Vec<String>, Reply> {
    let asked: Vec<&str> = req
        .body
        .get("parents")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !asked.iter().all(|p| is_sha(p)) {
        return Err(Reply::unprocessable(
            "Each SHA in the 'parents' parameter must be exactly 40 characters and contain only [0-9a-f].",
        ));
    }
    let known = |repo: &mut Repo, p: &str| repo.commits.contains_key(p) || repo.import_real(p);
    if !asked.iter().all(|p| known(repo, p)) {
        return Err(Reply::unprocessable(
            "Parent SHA does not exist or is not a commit object",
        ));
    }
    Ok(asked.into_iter().map(str::to_string).collect())
}

/// Author and committer from the body, with GitHub's defaults: the
/// author is `caller` at `now`; the committer is the author, or GitHub's
/// web committer when the body names neither.
fn authorship(
    req: &Req,
    caller: &crate::state::User,
    now: DateTime<Utc>,
) -> Result<Authorship, Reply> {
    let given = |key: &str| req.body.get(key).filter(|v| v.is_object());
    let author = match given("author") {
        Some(v) => actor(v, "author", None, now)?,
        None => GitActor {
            name: caller.login.clone(),
            email: format!("{}+{}@users.noreply.github.com", caller.id, caller.login),
            date: now,
        },
    };
    let committer = match given("committer") {
        Some(v) => actor(v, "committer", Some(&author), now)?,
        None if given("author").is_none() => GitActor {
            name: "GitHub".into(),
            email: "noreply@github.com".into(),
            date: now,
        },
        None => author.clone(),
    };
    Ok(Authorship { author, committer })
}

/// One `{name, email, date?}` object; a missing name or email is taken
/// from `fallback` (the committer's from the author).
fn actor(
    v: &Value,
    key: &str,
    fallback: Option<&GitActor>,
    now: DateTime<Utc>,
) -> Result<GitActor, Reply> {
    let field = |name: &str, of: fn(&GitActor) -> &String| {
        v.get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| fallback.map(|f| of(f).clone()))
            .ok_or_else(|| Reply::unprocessable(&format!("{key}.{name} is missing")))
    };
    let date = match v.get("date").and_then(Value::as_str) {
        Some(d) => DateTime::parse_from_rfc3339(d)
            .map(|d| d.with_timezone(&Utc))
            .map_err(|_| {
                Reply::unprocessable(&format!(
                    "{key}.date is not an ISO 8601 time (YYYY-MM-DDTHH:MM:SSZ): {d}"
                ))
            })?,
        None => now,
    };
    Ok(GitActor {
        name: field("name", |a| &a.name)?,
        email: field("email", |a| &a.email)?,
        date,
    })
}
