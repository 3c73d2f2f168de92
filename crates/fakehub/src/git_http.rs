//! Git's smart HTTP protocol on the fake's web host, as GitHub serves
//! `https://github.com/OWNER/REPO.git`: what a runner that knows only
//! `GITHUB_API_URL` fetches commits from (taskgate's default git source is
//! the API URL's web host, with the installation token as the password of
//! user `x-access-token`).
//!
//! Owns: `GET /{owner}/{repo}.git/info/refs?service=git-upload-pack` and
//! `POST /{owner}/{repo}.git/git-upload-pack`, for repositories backed by a
//! real bare repository ([`crate::RepoHandle::back_with_git`]); fetching
//! only (a push is refused). Must not: change the fake's state, or move the
//! bare repository's branches (tests push to them).
//!
//! Two ideas a reader needs:
//! - GitHub's branches are the fake's, not the bare repository's. Before
//!   each advertisement the fake's branches are written under a git
//!   namespace (`refs/namespaces/fakehub/refs/heads/*`), and `git
//!   upload-pack` runs with `GIT_NAMESPACE=fakehub`, so it advertises
//!   exactly what GitHub would. Any commit may be asked for by sha
//!   (`uploadpack.allowAnySHA1InWant`), as GitHub allows a fetch of any
//!   commit of the repository.
//! - Credentials as GitHub checks them: Basic auth whose password is a live
//!   installation token of an installation holding the repository; anything
//!   else is 401 with `WWW-Authenticate`, which makes a git client ask its
//!   credentials callback, as GitHub does for a private repository.

use std::process::Stdio;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State as AxState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use tokio::io::AsyncWriteExt;

use crate::git_backing::GitBacking;
use crate::Shared;

/// The routes, for the web host's router.
pub(crate) fn router() -> axum::Router<Arc<Shared>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/{owner}/{repo}/info/refs", get(info_refs))
        .route("/{owner}/{repo}/git-upload-pack", post(upload_pack))
}

const NAMESPACE: &str = "fakehub";

/// The repository `owner/repo.git` names, if the request may read it.
fn authorised(
    shared: &Shared,
    owner: &str,
    repo: &str,
    headers: &HeaderMap,
) -> Result<GitBacking, Refused> {
    let Some(name) = repo.strip_suffix(".git") else {
        return Err(Refused::NotFound);
    };
    let key = format!("{owner}/{name}").to_lowercase();
    let token = basic_password(headers);
    let mut st = shared.lock();
    let Some(backing) = st.repos.get(&key).and_then(|r| r.git.clone()) else {
        return Err(Refused::NotFound);
    };
    let installation = token
        .as_deref()
        .and_then(|t| crate::auth::installation_for_token(&st, Some(t)).ok());
    let holds = installation
        .and_then(|id| st.installations.get(&id))
        .is_some_and(|i| i.repos.contains(&key));
    if !holds {
        return Err(Refused::Unauthorised);
    }
    // The fake's branches, as GitHub would advertise them.
    let branches: Vec<(String, String)> = st
        .repos
        .get_mut(&key)
        .map(|r| {
            r.branches
                .iter()
                .map(|(b, s)| (b.clone(), s.clone()))
                .collect()
        })
        .unwrap_or_default();
    backing
        .publish_namespace(NAMESPACE, &branches)
        .map_err(Refused::Broken)?;
    Ok(backing)
}

/// Why a git request is not served, answered as GitHub answers it.
enum Refused {
    NotFound,
    Unauthorised,
    /// The fake itself failed (the bare repository could not be written).
    Broken(String),
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::NotFound => (StatusCode::NOT_FOUND, "Repository not found.\n").into_response(),
            Refused::Unauthorised => unauthorised(),
            Refused::Broken(why) => (StatusCode::INTERNAL_SERVER_ERROR, why).into_response(),
        }
    }
}

/// The password of `Authorization: Basic …` (git sends the token there).
fn basic_password(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    text.split_once(':').map(|(_, p)| p.to_owned())
}

fn unauthorised() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Basic realm=\"GitHub\"")],
        "Invalid username or token. Password authentication is not supported for Git operations.\n",
    )
        .into_response()
}

async fn info_refs(
    AxState(shared): AxState<Arc<Shared>>,
    Path((owner, repo)): Path<(String, String)>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    headers: HeaderMap,
) -> Response {
    if query.as_deref() != Some("service=git-upload-pack") {
        return (StatusCode::FORBIDDEN, "only git-upload-pack is served\n").into_response();
    }
    let backing = match authorised(&shared, &owner, &repo, &headers) {
        Ok(b) => b,
        Err(refused) => return refused.into_response(),
    };
    let refs = match upload_pack_run(&backing, &["--advertise-refs"], Bytes::new()).await {
        Ok(out) => out,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    };
    let mut body = pkt_line("# service=git-upload-pack\n");
    body.extend_from_slice(b"0000");
    body.extend_from_slice(&refs);
    (
        [
            (
                header::CONTENT_TYPE,
                "application/x-git-upload-pack-advertisement",
            ),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(body),
    )
        .into_response()
}

async fn upload_pack(
    AxState(shared): AxState<Arc<Shared>>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let backing = match authorised(&shared, &owner, &repo, &headers) {
        Ok(b) => b,
        Err(refused) => return refused.into_response(),
    };
    match upload_pack_run(&backing, &[], body).await {
        Ok(out) => (
            [(header::CONTENT_TYPE, "application/x-git-upload-pack-result")],
            Body::from(out),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// `git upload-pack --stateless-rpc [extra] <bare>` in the fake's
/// namespace, `input` on its stdin; its stdout.
async fn upload_pack_run(
    backing: &GitBacking,
    extra: &[&str],
    input: Bytes,
) -> Result<Vec<u8>, String> {
    let mut child = tokio::process::Command::new("git")
        .args(["-c", "uploadpack.allowAnySHA1InWant=true", "upload-pack"])
        .arg("--stateless-rpc")
        .args(extra)
        .arg(backing.path())
        .env("GIT_NAMESPACE", NAMESPACE)
        .env("GIT_PROTOCOL", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("fakehub: starting git upload-pack: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let writing = async move {
        let done = stdin.write_all(&input).await;
        drop(stdin);
        done
    };
    let (written, output) = tokio::join!(writing, child.wait_with_output());
    let output = output.map_err(|e| format!("fakehub: git upload-pack: {e}"))?;
    written.map_err(|e| format!("fakehub: writing to git upload-pack: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "fakehub: git upload-pack failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(output.stdout)
}

/// One pkt-line: four hex digits of length (itself included), then data.
fn pkt_line(data: &str) -> Vec<u8> {
    let mut line = format!("{:04x}", data.len() + 4).into_bytes();
    line.extend_from_slice(data.as_bytes());
    line
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pkt_line_counts_its_own_length() {
        assert_eq!(
            super::pkt_line("# service=git-upload-pack\n"),
            b"001e# service=git-upload-pack\n"
        );
    }
}
