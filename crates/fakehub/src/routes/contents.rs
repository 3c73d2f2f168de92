//! File contents at a ref (default branch when `ref` is absent): a file as
//! base64 (wrapped at 60 columns, as GitHub does), a directory as a listing.

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::issues::repo;
use super::{inst, HResult, Reply, Req, Route};
use crate::render::{self, HTML};
use crate::state::{Repo, State};

pub const ROUTES: &[Route] = &[inst(
    "GET",
    "/repos/{owner}/{repo}/contents/{path}",
    get_contents,
)];

fn blob_sha(content: &str) -> String {
    hex::encode(Sha256::digest(content.as_bytes()))[..40].to_string()
}

fn entry(
    base: &str,
    repo: &Repo,
    git_ref: &str,
    path: &str,
    kind: &str,
    content: Option<&str>,
) -> Value {
    let api = render::repo_api(base, repo);
    let name = path.rsplit('/').next().unwrap_or(path);
    let sha = blob_sha(content.unwrap_or(path));
    let url = format!("{api}/contents/{path}?ref={git_ref}");
    let html = format!("{HTML}/{}/blob/{git_ref}/{path}", repo.full_name());
    let git = format!("{api}/git/blobs/{sha}");
    json!({
        "type": kind, "size": content.map(str::len).unwrap_or(0), "name": name, "path": path, "sha": sha,
        "url": url, "git_url": git, "html_url": html,
        "download_url": content.map(|_| format!("https://raw.githubusercontent.com/{}/{git_ref}/{path}", repo.full_name())),
        "_links": {"self": url, "git": git, "html": html},
    })
}

fn get_contents(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let git_ref = req
        .query
        .get("ref")
        .cloned()
        .unwrap_or_else(|| repo.default_branch.clone());
    let commit = repo
        .resolve(&git_ref)
        .ok_or_else(|| Reply::error(404, &format!("No commit found for the ref {git_ref}")))?;
    let path = req.param("path").trim_matches('/');
    if let Some(content) = commit.files.get(path) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(content.as_bytes());
        let wrapped: Vec<String> = b64
            .as_bytes()
            .chunks(60)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        let mut v = entry(&req.base, repo, &git_ref, path, "file", Some(content));
        v["content"] = Value::String(wrapped.join("\n") + "\n");
        v["encoding"] = Value::String("base64".into());
        return Ok(Reply::ok(v));
    }
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut children: Vec<(String, bool)> = Vec::new();
    for file in commit.files.keys().filter(|f| f.starts_with(&prefix)) {
        let rest = &file[prefix.len()..];
        let (name, is_dir) = match rest.split_once('/') {
            Some((dir, _)) => (dir, true),
            None => (rest, false),
        };
        let full = format!("{prefix}{name}");
        if !children.iter().any(|(n, _)| *n == full) {
            children.push((full, is_dir));
        }
    }
    if children.is_empty() {
        return Err(Reply::not_found());
    }
    let items: Vec<Value> = children
        .iter()
        .map(|(p, dir)| {
            let content = (!dir).then(|| commit.files[p].as_str());
            entry(
                &req.base,
                repo,
                &git_ref,
                p,
                if *dir { "dir" } else { "file" },
                content,
            )
        })
        .collect();
    Ok(Reply::ok(Value::Array(items)))
}
