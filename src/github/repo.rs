//! A typed GitHub client for one repository: one method per call taskgate
//! makes (issues, comments, labels, refs, pulls, check runs, workflow
//! dispatches and runs, issue dependencies, sub-issues, a branch's rules).
//!
//! Owns: every REST path and request body the effect executor sends, and
//! which of GitHub's refusals mean "done already" (a label or branch that
//! exists, a link or label already gone, a run already finished). Every
//! issue, pull request and comment body goes out through `fit_github_body`
//! here: one over GitHub's 65,536-character limit is cut with a note,
//! keeping its marker last, instead of being refused and lost.
//! Must not: read or write the store, or decide whether a call is made
//! (`perform` does both, one effect at a time).

mod about;
mod actions;
mod branches;
mod checks;
mod compare;
mod issues;
mod merged_tree;
mod own;
mod pulls;
mod refs;
mod reviews;
mod rules;
mod train;

/// A fake GitHub with the App installed (id 7) on `acme/widgets`, and
/// that installation's client: for the tests of `RepoClient`'s calls.
#[cfg(test)]
async fn fake_installation() -> (fakehub::FakeGitHub, fakehub::RepoHandle, octocrab::Octocrab) {
    let gh = fakehub::FakeGitHub::start().await;
    let repo = gh.install(7, "acme/widgets");
    let creds = crate::github::AppCredentials::from_pem(
        gh.app_id(),
        fakehub::FakeGitHub::private_key_pem(),
    )
    .unwrap();
    let client = crate::github::GitHubApp::new(&gh.url(), creds)
        .installation_client(taskgate_core::ids::InstallationId::new(7))
        .await
        .unwrap();
    (gh, repo, client)
}

use http::Method;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::{send, ApiResponse, GitHubError};
use taskgate_core::ids::{CommitSha, RepoName};

pub(crate) use issues::{IssueMade, IssuePatch};
pub(crate) use own::Marked;
pub use own::{ListedComment, ListedIssue, ListedLabel, OwnApp};
pub(crate) use refs::{fresh_branch, FastForward, MergeOutcome, Merged, BUILD_ATTEMPTS};
pub use train::CarBuild;

/// GitHub's REST API for one repository, through an installation's client.
#[derive(Clone, Copy)]
pub struct RepoClient<'a> {
    client: &'a Octocrab,
    repo: &'a RepoName,
}

impl<'a> RepoClient<'a> {
    pub fn new(client: &'a Octocrab, repo: &'a RepoName) -> Self {
        RepoClient { client, repo }
    }

    /// `/repos/{owner}/{name}/{tail}`.
    fn path(&self, tail: &str) -> String {
        format!("/repos/{}/{tail}", self.repo)
    }

    async fn get(&self, path: &str) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Option<&Value>) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::POST, path, body).await
    }

    async fn patch(&self, path: &str, body: &Value) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::PATCH, path, Some(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::PUT, path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::DELETE, path, None).await
    }

    async fn delete_with(&self, path: &str, body: &Value) -> Result<ApiResponse, GitHubError> {
        send(self.client, Method::DELETE, path, Some(body)).await
    }

    /// The repository's default branch.
    pub async fn default_branch(&self) -> Result<String, GitHubError> {
        #[derive(serde::Deserialize)]
        struct About {
            default_branch: String,
        }
        let path = format!("/repos/{}", self.repo);
        let about: About = self.get(&path).await?.answer(&format!("GET {path}"))?;
        Ok(about.default_branch)
    }

    /// A branch's head, or `None` when the branch does not exist.
    pub async fn branch_head(&self, branch: &str) -> Result<Option<CommitSha>, GitHubError> {
        let path = self.path(&format!("git/ref/heads/{branch}"));
        match self.get(&path).await {
            Ok(r) => Ok(Some(r.answer::<GitRef>(&format!("GET {path}"))?.object.sha)),
            Err(GitHubError::Http { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// `GET /git/ref/{ref}`: the object a ref points at.
#[derive(serde::Deserialize)]
struct GitRef {
    object: GitObject,
}

#[derive(serde::Deserialize)]
struct GitObject {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    sha: CommitSha,
}

/// `{"id":…,"html_url":…}` of a created object, kept as the effect's result.
#[derive(serde::Deserialize, serde::Serialize)]
pub(crate) struct Created {
    pub id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
}

impl Created {
    /// GitHub's answer to `call`, which made or changed the object.
    fn read(response: &ApiResponse, call: &str) -> Result<Created, GitHubError> {
        response.answer(call)
    }

    /// The effect's result to keep.
    pub(crate) fn to_result(&self) -> String {
        serde_json::to_string(self).expect("serialises")
    }
}

/// `result`, with GitHub answering `done` counting as done (a thing
/// already gone, a run already finished).
fn done_on(result: Result<ApiResponse, GitHubError>, done: u16) -> Result<(), GitHubError> {
    match result {
        Ok(_) => Ok(()),
        Err(GitHubError::Http { status, .. }) if status == done => Ok(()),
        Err(e) => Err(e),
    }
}

/// `result`, with a 422 whose message contains `exists` counting as done
/// (the object is what we wanted, whoever made it).
fn done_if_exists(
    result: Result<ApiResponse, GitHubError>,
    exists: &str,
) -> Result<(), GitHubError> {
    match result {
        Ok(_) => Ok(()),
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.contains(exists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Pages through a list endpoint for an item of the App's own whose body
/// holds `marker`; `since_ms` narrows a comment list to recent ones.
async fn find_by_marker<T: Marked + DeserializeOwned>(
    client: &Octocrab,
    own: &OwnApp,
    list_path: &str,
    marker: &str,
    since_ms: Option<i64>,
) -> Result<Option<T>, GitHubError> {
    let sep = if list_path.contains('?') { '&' } else { '?' };
    let mut url = format!("{list_path}{sep}per_page=100");
    if let Some(ms) = since_ms {
        // A minute's margin for clock skew between taskgate and GitHub.
        let since = chrono::DateTime::from_timestamp_millis(ms - 60_000).unwrap_or_default();
        url.push_str(&format!("&since={}", since.format("%Y-%m-%dT%H:%M:%SZ")));
    }
    for _ in 0..50 {
        let response = send(client, Method::GET, &url, None).await?;
        let page: Vec<T> = response.answer(&format!("GET {list_path}"))?;
        // Only the App's own items: anyone may paste a marker into a
        // comment, another App's bot may write one, and taskgate must not
        // adopt (or edit) theirs.
        if let Some(item) = page
            .into_iter()
            .find(|i| own.made(i.made_by()) && i.body().is_some_and(|b| b.contains(marker)))
        {
            return Ok(Some(item));
        }
        match response.next_page() {
            Some(next) => url = next,
            None => break,
        }
    }
    Ok(None)
}
