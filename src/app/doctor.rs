//! `taskgate doctor` and `/taskgate doctor`: reads from GitHub, and from
//! this host, the facts `core::doctor` makes its report of.
//!
//! Owns: the calls: as the App (`GET /app`, the repository's installation,
//! the delivery log) and as the installation (the repository, its owner's
//! plan, `.github/taskgate.yml` and the workflows it names on the default
//! branch, each role's assignees, the default branch's rules through
//! `RepoClient::branch_rules`, as the ship queue reads them, and those of
//! story branches, for the merge guard), and the
//! sandbox probe. Must not: decide
//! anything of the report; a call that fails becomes "could not check" in
//! the facts, never a guess.

use std::collections::BTreeMap;

use crate::github::client::send;
use crate::github::{GitHubApp, GitHubError, RepoClient};
use crate::intake::event::HANDLED_EVENTS;
use crate::runner::Isolation;
use taskgate_core::config::CONFIG_PATH;
use taskgate_core::doctor::{
    self, AboutRepo, AppFacts, Checked, DeliveryFacts, Facts, FailedDelivery, InstallationFacts,
    Needs, RepoFacts, Report, SandboxFacts, WorkflowFacts,
};
use taskgate_core::ids::{InstallationId, RepoName};
use taskgate_core::redeliver::REDELIVERY_WINDOW_SECONDS;

/// What the processor keeps to answer `/taskgate doctor`.
pub struct DoctorSetup {
    pub github: std::sync::Arc<GitHubApp>,
    pub api_url: String,
    /// The runner's free-space floor on taskgate's host.
    pub floor: crate::runner::sandbox::disk::DiskFloor,
}

/// Where the doctor looks, and from where.
pub struct Doctor<'a> {
    pub github: &'a GitHubApp,
    /// GitHub's REST API base (`GITHUB_API_URL`).
    pub api_url: &'a str,
    /// Unix seconds, for the delivery log's three days.
    pub now_s: i64,
    /// The sandbox task code would run in on this host.
    pub isolation: &'a Isolation,
    /// How the report names this host.
    pub host: &'static str,
    /// The runner's free-space floor on this host.
    pub floor: &'a crate::runner::sandbox::disk::DiskFloor,
}

/// What the App manifest shipped with taskgate asks for.
pub fn needs() -> Needs {
    Needs::from_manifest(crate::setup::APP_MANIFEST).expect("the shipped manifest is readable")
}

/// `repo`'s installation as the App sees it (`GET /repos/{repo}/installation`):
/// its permissions, subscribed events and suspension; `None` where the App
/// is not installed. The doctor reads it, and the ship queue before a
/// story goes through the merge queue (does it receive `merge_group`?).
pub async fn installation(
    github: &GitHubApp,
    repo: &RepoName,
) -> Result<Option<InstallationFacts>, GitHubError> {
    let path = format!("/repos/{repo}/installation");
    let answer = send(&github.app_client()?, http::Method::GET, &path, None).await;
    let inst: serde_json::Value = match answer {
        Ok(r) => r.json()?,
        Err(GitHubError::Http { status: 404, .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(InstallationFacts {
        id: inst["id"].as_u64().unwrap_or_default(),
        html_url: inst["html_url"].as_str().unwrap_or_default().to_owned(),
        permissions: levels(&inst["permissions"]),
        events: strings(&inst["events"]),
        suspended: !inst["suspended_at"].is_null(),
    }))
}

fn said<T>(result: Result<T, GitHubError>) -> Checked<T> {
    result.map_err(|e| e.to_string())
}

impl Doctor<'_> {
    /// The report on `repo`.
    pub async fn report(&self, repo: &RepoName) -> Report {
        doctor::diagnose(&self.examine(repo).await, &needs())
    }

    /// Everything the report is made from.
    pub async fn examine(&self, repo: &RepoName) -> Facts {
        let app = said(self.app().await);
        let installation = said(self.installation(repo).await);
        let (repository, repo_id) = match &installation {
            Ok(Some(inst)) => match self
                .github
                .installation_client(InstallationId::new(inst.id))
                .await
            {
                Ok(client) => {
                    let (facts, id) = read_repo(&RepoClient::new(&client, repo)).await;
                    (Some(facts), id)
                }
                Err(e) => (Some(unread(&e.to_string())), None),
            },
            _ => (None, None),
        };
        let inst_id = installation
            .as_ref()
            .ok()
            .and_then(|i| i.as_ref())
            .map(|i| i.id);
        // GitHub's own pages, as its answers link them (the API's host is
        // not always the web's: a test server, a proxy).
        let web = match &app {
            Ok((_, Some(web))) => web.clone(),
            _ => crate::github::web_base(self.api_url),
        };
        Facts {
            repo: repo.clone(),
            web,
            enterprise_server: self.api_url.trim_end_matches('/').ends_with("/api/v3"),
            app: app.map(|(app, _)| app),
            installation,
            repository,
            deliveries: said(self.deliveries(repo_id, inst_id).await),
            sandbox: sandbox(self.isolation).await,
            low_disk: {
                let floor = self.floor.clone();
                tokio::task::spawn_blocking(move || floor.low())
                    .await
                    .ok()
                    .flatten()
            },
            host: self.host,
        }
    }

    /// The App, and GitHub's web host as its page names it.
    async fn app(&self) -> Result<(AppFacts, Option<String>), GitHubError> {
        let app: serde_json::Value =
            send(&self.github.app_client()?, http::Method::GET, "/app", None)
                .await?
                .json()?;
        let slug = app["slug"].as_str().unwrap_or_default().to_owned();
        let web = app["html_url"]
            .as_str()
            .and_then(|page| page.strip_suffix(&format!("/apps/{slug}")))
            .map(str::to_owned);
        let facts = AppFacts {
            slug,
            owner: app["owner"]["login"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            owner_is_org: app["owner"]["type"] == "Organization",
            permissions: levels(&app["permissions"]),
            events: strings(&app["events"]),
        };
        Ok((facts, web))
    }

    async fn installation(
        &self,
        repo: &RepoName,
    ) -> Result<Option<InstallationFacts>, GitHubError> {
        installation(self.github, repo).await
    }

    /// The repository's deliveries of the last three days: the repository's
    /// own, and its installation's that name no repository.
    async fn deliveries(
        &self,
        repo_id: Option<u64>,
        installation: Option<u64>,
    ) -> Result<DeliveryFacts, GitHubError> {
        let since = self.now_s - REDELIVERY_WINDOW_SECONDS;
        let log = super::loops::redeliver::read_log(&self.github.app_client()?, since).await?;
        let ours: Vec<_> = log
            .into_iter()
            .filter(|d| match d.repository_id {
                Some(id) => Some(id) == repo_id,
                None => d.installation_id.is_some() && d.installation_id == installation,
            })
            .filter(|d| {
                chrono::DateTime::parse_from_rfc3339(&d.delivered_at)
                    .is_ok_and(|at| at.timestamp() >= since)
            })
            .collect();
        let newest_failed = ours
            .iter()
            .max_by_key(|d| (d.delivered_at.clone(), d.id))
            .is_some_and(|d| d.status != "OK");
        let mut by_guid: BTreeMap<&str, Vec<&super::loops::redeliver::LogEntry>> = BTreeMap::new();
        for d in &ours {
            by_guid.entry(d.guid.as_str()).or_default().push(d);
        }
        let mut failed: Vec<FailedDelivery> = by_guid
            .into_values()
            .filter(|attempts| attempts.iter().all(|a| a.status != "OK"))
            .filter_map(|attempts| {
                attempts
                    .into_iter()
                    .max_by_key(|a| (a.delivered_at.clone(), a.id))
            })
            .filter(|d| HANDLED_EVENTS.contains(&d.event.as_str()))
            .map(|d| FailedDelivery {
                guid: d.guid.clone(),
                event: d.event.clone(),
                status: d.status.clone(),
                delivered_at: d.delivered_at.clone(),
            })
            .collect();
        failed.sort_by(|a, b| b.delivered_at.cmp(&a.delivered_at));
        Ok(DeliveryFacts {
            failed,
            newest_failed,
        })
    }
}

/// `{"issues": "write", …}` as a map; anything else is skipped.
fn levels(v: &serde_json::Value) -> BTreeMap<String, String> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect()
}

/// What could not be read at all: every repository fact says why.
fn unread(why: &str) -> RepoFacts {
    RepoFacts {
        about: Err(why.to_owned()),
        config_text: Err(why.to_owned()),
        assignees: Vec::new(),
        workflows: BTreeMap::new(),
        landing: Err(why.to_owned()),
        story_branches: Err(why.to_owned()),
    }
}

/// The repository's facts as its installation reads them, and its id.
async fn read_repo(client: &RepoClient<'_>) -> (RepoFacts, Option<u64>) {
    let repository = match client.repository().await {
        Ok(r) => r,
        Err(e) => return (unread(&e.to_string()), None),
    };
    let is_org = repository.owner.kind == "Organization";
    let plan = match is_org && repository.private {
        true => client
            .org_plan(&repository.owner.login)
            .await
            .ok()
            .flatten(),
        false => None,
    };
    let branch = repository.default_branch.clone();
    let config_text = said(client.file(CONFIG_PATH, &branch).await);
    let config = match &config_text {
        Ok(text) => doctor::config_of(text.as_deref()),
        Err(_) => None,
    };
    let mut assignees = Vec::new();
    let mut workflows = BTreeMap::new();
    if let Some(config) = &config {
        for (role, r) in &config.roles {
            for login in &r.assignees {
                let can = said(client.assignable(login).await);
                assignees.push((role.clone(), login.clone(), can));
            }
        }
        for (file, _, _) in doctor::workflows_to_check(config) {
            let facts = said(workflow(client, &file, &branch).await);
            workflows.insert(file, facts);
        }
    }
    let landing = said(client.branch_rules(&branch).await);
    let story_branches = said(client.branch_rules(doctor::STORY_BRANCH_PROBE).await);
    let about = AboutRepo {
        default_branch: branch,
        html_url: repository.html_url.clone(),
        private: repository.private,
        owner_is_org: is_org,
        plan,
    };
    let facts = RepoFacts {
        about: Ok(about),
        config_text,
        assignees,
        workflows,
        landing,
        story_branches,
    };
    (facts, Some(repository.id))
}

/// A workflow file on the default branch, and GitHub's state of it.
async fn workflow(
    client: &RepoClient<'_>,
    file: &str,
    branch: &str,
) -> Result<WorkflowFacts, GitHubError> {
    let Some(text) = client
        .file(&format!(".github/workflows/{file}"), branch)
        .await?
    else {
        return Ok(WorkflowFacts::Missing);
    };
    let state = client.workflow_state(file).await?;
    Ok(WorkflowFacts::Present {
        dispatchable: doctor::has_dispatch_trigger(&text),
        state: state.unwrap_or_else(|| "unknown".into()),
    })
}

/// Whether task code can run in the sandbox here.
async fn sandbox(isolation: &Isolation) -> SandboxFacts {
    match isolation {
        Isolation::Sandbox(sandbox) => match sandbox.probe().await {
            Ok(()) => SandboxFacts::Works {
                processes_limited: crate::runner::sandbox::processes_limited(),
            },
            Err(why) => SandboxFacts::Fails(why.to_string()),
        },
        Isolation::Unsandboxed | Isolation::Host => SandboxFacts::Unsandboxed,
        Isolation::Refused(why) => SandboxFacts::Refused(why.to_string()),
    }
}
