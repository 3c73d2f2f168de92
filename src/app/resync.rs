//! `taskgate resync`: rebuilds taskgate's record of what it owns in a
//! repository from GitHub itself, when the database is lost.
//!
//! Everything taskgate creates carries a hidden marker, so the issues, their
//! sub-issue and blocked-by links, the branches and the labels can all be
//! read back. Only issues the App made count ([`OwnApp::made`]): a marker is
//! text anyone can paste, so a person's or another App's issue labelled
//! story or task is never taken for one of taskgate's. An issue of a story
//! planned in another repository (its marker names the home, `home=`,
//! issue 49) is kept under that marker, apart from this repository's own
//! stories. Plans are not: the next push of each plan re-saves it, and
//! since the records now match GitHub, that push changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use http::Method;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::sync::SyncError;
use crate::github::{client::send, GitHubApp, GitHubError, ListedIssue, ListedLabel, OwnApp};
use crate::store::{store_view, Store, StoreError};
use taskgate_core::ids::{InstallationId, IssueId, IssueNumber, RepoName};
use taskgate_core::story::{labels, story_branch, task_branch, Marker, Placed};
use taskgate_core::sync::IssueRecord;

/// What a resync found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resynced {
    pub installation: InstallationId,
    pub issues: usize,
    pub branches: usize,
    pub labels: usize,
}

/// Every item of a paginated list, each read as a `T`: one missing a
/// field taskgate reads is an error naming the call.
async fn list_all<T: DeserializeOwned>(
    client: &Octocrab,
    path: &str,
) -> Result<Vec<T>, GitHubError> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut url = format!("{path}{sep}per_page=100");
    let mut out = Vec::new();
    loop {
        let response = send(client, Method::GET, &url, None).await?;
        out.extend(response.answer::<Vec<T>>(&format!("GET {path}"))?);
        match response.next_page() {
            Some(next) => url = next,
            None => return Ok(out),
        }
    }
}

/// An item of a list where only its database id is read (sub-issues,
/// blocking issues).
#[derive(Deserialize)]
struct Listed {
    id: u64,
}

fn ids_of(items: &[Listed]) -> Vec<u64> {
    items.iter().map(|i| i.id).collect()
}

pub async fn resync(
    github: &GitHubApp,
    store: &Store,
    repo: &RepoName,
) -> Result<Resynced, SyncError> {
    let installation: Value = send(
        &github.app_client()?,
        Method::GET,
        &format!("/repos/{repo}/installation"),
        None,
    )
    .await?
    .json()?;
    let installation = InstallationId::new(
        installation["id"]
            .as_u64()
            .ok_or_else(|| SyncError::Payload("installation without an id".into()))?,
    );
    // Names the App's bot (`<slug>[bot]`) for `own_app`.
    github.app_info().await?;
    let client = github.installation_client(installation).await?;
    rebuild(
        &client,
        &github.own_app(),
        &ResyncStore::of(store.clone()),
        repo,
        installation,
    )
    .await
}

store_view! {
    /// The store as `app::resync` sees it: the record it replaces.
    pub(crate) struct ResyncStore {
        async fn replace_owned(repo: &RepoName, issues: BTreeMap<String, IssueRecord>, branches: BTreeSet<String>, labels: BTreeSet<String>) -> Result<(), StoreError>;
    }
}

/// Reads back what taskgate (the App `own`) owns in `repo` and records it,
/// replacing what the store had.
pub(crate) async fn rebuild(
    client: &Octocrab,
    own: &OwnApp,
    store: &ResyncStore,
    repo: &RepoName,
    installation: InstallationId,
) -> Result<Resynced, SyncError> {
    let client = client.clone();
    let found = read_issues(&client, own, repo).await?;
    let (parents, mut blockers) = read_links(&client, repo, &found).await?;
    let branches = read_branches(&client, repo, &found).await?;
    let repo_labels: BTreeSet<String> =
        list_all::<ListedLabel>(&client, &format!("/repos/{repo}/labels"))
            .await?
            .into_iter()
            .map(|l| l.name)
            .collect();

    let issues: BTreeMap<String, IssueRecord> = found
        .into_iter()
        .map(|(key, (_, mut record))| {
            record.parent = parents.get(&key).cloned();
            record.blocked_by = blockers.remove(&key).unwrap_or_default();
            (key, record)
        })
        .collect();
    let resynced = Resynced {
        installation,
        issues: issues.len(),
        branches: branches.len(),
        labels: repo_labels.len(),
    };
    store
        .replace_owned(repo, issues, branches, repo_labels)
        .await?;
    Ok(resynced)
}

/// Issues taskgate owns (made by the App, labelled story or task, with a
/// marker), by marker key; their links are read next.
async fn read_issues(
    client: &Octocrab,
    own: &OwnApp,
    repo: &RepoName,
) -> Result<BTreeMap<String, (Placed, IssueRecord)>, SyncError> {
    let mut found = BTreeMap::new();
    for label in [labels::STORY, labels::TASK] {
        for issue in list_all::<ListedIssue>(
            client,
            &format!("/repos/{repo}/issues?state=all&labels={label}"),
        )
        .await?
        {
            if !own.made(&issue.made_by) {
                continue;
            }
            let body = issue.body.as_deref().unwrap_or_default();
            let Some(placed) = Placed::find_in(body) else {
                continue;
            };
            found.insert(placed.key(), (placed, issue_record(&issue, body)));
        }
    }
    Ok(found)
}

/// An issue as GitHub lists it, without its links.
fn issue_record(issue: &ListedIssue, body: &str) -> IssueRecord {
    IssueRecord {
        number: IssueNumber::new(issue.number),
        id: IssueId::new(issue.id),
        title: issue.title.clone(),
        body: body.to_owned(),
        labels: issue.labels.iter().map(|l| l.name.clone()).collect(),
        open: issue.state == "open",
        parent: None,
        blocked_by: BTreeSet::new(),
    }
}

/// Each issue's parent and each task's blockers, by marker key.
type Links = (BTreeMap<String, String>, BTreeMap<String, BTreeSet<String>>);

/// Links: sub-issues of every issue, blocked-by of every task, among the
/// issues found.
async fn read_links(
    client: &Octocrab,
    repo: &RepoName,
    found: &BTreeMap<String, (Placed, IssueRecord)>,
) -> Result<Links, SyncError> {
    let key_by_id: BTreeMap<u64, String> = found
        .iter()
        .map(|(k, (_, r))| (r.id.get(), k.clone()))
        .collect();
    let mut parents = BTreeMap::new();
    let mut blockers = BTreeMap::new();
    for (key, (marker, record)) in found {
        let children = list_all(
            client,
            &format!("/repos/{repo}/issues/{}/sub_issues", record.number),
        )
        .await?;
        for child in ids_of(&children) {
            if let Some(child_key) = key_by_id.get(&child) {
                parents.insert(child_key.clone(), key.clone());
            }
        }
        if matches!(marker.marker, Marker::Task { .. }) {
            let path = format!(
                "/repos/{repo}/issues/{}/dependencies/blocked_by",
                record.number
            );
            let by: BTreeSet<String> = ids_of(&list_all(client, &path).await?)
                .into_iter()
                .filter_map(|id| key_by_id.get(&id).cloned())
                .collect();
            blockers.insert(key.clone(), by);
        }
    }
    Ok((parents, blockers))
}

/// Branches taskgate would have made for these issues, those that exist.
async fn read_branches(
    client: &Octocrab,
    repo: &RepoName,
    found: &BTreeMap<String, (Placed, IssueRecord)>,
) -> Result<BTreeSet<String>, SyncError> {
    let mut branches = BTreeSet::new();
    for (placed, record) in found.values() {
        let name = match &placed.marker {
            // Another home's story has no issue here, so none of its
            // marker; its part branch is named after the home's number.
            Marker::Story { .. } if placed.home.is_some() => continue,
            Marker::Story { .. } => story_branch(record.number.get()),
            Marker::Task { task, .. } => task_branch(record.number.get(), task.as_str()),
            // A branch todo's fix lands on its task's branch: none of its own.
            Marker::BranchTodo { .. } => continue,
        };
        match send(
            client,
            Method::GET,
            &format!("/repos/{repo}/git/ref/heads/{name}"),
            None,
        )
        .await
        {
            Ok(_) => {
                branches.insert(name);
            }
            Err(GitHubError::Http { status: 404, .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(branches)
}
