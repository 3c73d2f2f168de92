//! `taskgate doctor`: what one repository and its installation need for
//! taskgate to work, from facts the shell read (GitHub's answers, the
//! repository's config, this host's sandbox). The same report answers the
//! CLI (`taskgate doctor OWNER/REPO`) and a `/taskgate doctor` comment.
//!
//! Owns: which findings the facts make, how serious each is, the sentence
//! that says it and what to change (with a link to the GitHub setting or
//! doc). Must not: call GitHub, read files or the environment, or read the
//! clock: the facts come in whole, `now` among them.
//!
//! Ideas a reader needs:
//! - **A finding blocks only when taskgate cannot do its work**: a missing
//!   permission or event, no installation, a config it refuses, a merge
//!   queue on the default branch, the runner's workflow gone, a sandbox
//!   that cannot run task code, GitHub unable to reach taskgate
//!   (docs/decisions/doctor.md). What taskgate works around (no drafts, an
//!   assignee GitHub refuses, old failed deliveries) is a warning. The CLI
//!   exits non-zero when anything blocks.
//! - **A fact that could not be read is said, never guessed**: GitHub's
//!   answer is shown as "could not check", a warning.

mod checks;
mod landing;
mod manifest;
mod merge_guard;
mod render;

pub use checks::workflows_to_check;
pub use manifest::{has_dispatch_trigger, Access, ManifestError, Needs};
pub use merge_guard::STORY_BRANCH_PROBE;
pub use render::{render_markdown, render_terminal};

use std::collections::BTreeMap;

use crate::config::RepoConfig;
use crate::ids::RepoName;
use crate::ship::BranchRules;

/// A fact the shell read, or why it could not (GitHub's answer).
pub type Checked<T> = Result<T, String>;

/// Everything the report is made from.
#[derive(Debug, Clone)]
pub struct Facts {
    pub repo: RepoName,
    /// GitHub's web host, `https://github.com` (links are built on it).
    pub web: String,
    /// GitHub Enterprise Server (drafts everywhere).
    pub enterprise_server: bool,
    /// The App (`GET /app`).
    pub app: Checked<AppFacts>,
    /// The installation on the repository; `None`: not installed.
    pub installation: Checked<Option<InstallationFacts>>,
    /// What the rest could read; `None` when nothing could be read with an
    /// installation token (not installed, or no token).
    pub repository: Option<RepoFacts>,
    /// GitHub's delivery log, for this repository.
    pub deliveries: Checked<DeliveryFacts>,
    pub sandbox: SandboxFacts,
    /// The host's disk, when it is below the free-space floor
    /// (`TASKGATE_MIN_FREE_MIB`): no run starts there.
    pub low_disk: Option<crate::host_disk::LowDisk>,
    /// Where the sandbox was probed: `this host` or `taskgate's host`.
    pub host: &'static str,
}

/// `GET /app`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppFacts {
    pub slug: String,
    /// The owner's login, and whether it is an organisation.
    pub owner: String,
    pub owner_is_org: bool,
    /// What the App itself asks for (an installation accepts these).
    pub permissions: BTreeMap<String, String>,
    pub events: Vec<String>,
}

/// `GET /repos/{owner}/{repo}/installation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationFacts {
    pub id: u64,
    /// Where its owner manages it (GitHub's `html_url`).
    pub html_url: String,
    pub permissions: BTreeMap<String, String>,
    pub events: Vec<String>,
    pub suspended: bool,
}

/// What an installation token read in the repository.
#[derive(Debug, Clone)]
pub struct RepoFacts {
    pub about: Checked<AboutRepo>,
    /// `.github/taskgate.yml` on the default branch: `None` when absent.
    pub config_text: Checked<Option<String>>,
    /// Per role assignee: `(role, login, can be assigned)`.
    pub assignees: Vec<(String, String, Checked<bool>)>,
    /// Each workflow the config names, by file.
    pub workflows: BTreeMap<String, Checked<WorkflowFacts>>,
    /// The default branch's rules, as they apply to the App.
    pub landing: Checked<BranchRules>,
    /// The rules of story branches ([`STORY_BRANCH_PROBE`]): whether
    /// GitHub refuses a red task pull request's merge.
    pub story_branches: Checked<BranchRules>,
}

/// `GET /repos/{owner}/{repo}` and the owner's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AboutRepo {
    pub default_branch: String,
    /// The repository's page (`html_url`).
    pub html_url: String,
    pub private: bool,
    pub owner_is_org: bool,
    /// The organisation's GitHub plan (`free`, `team`, …) when GitHub
    /// shows it (an App needs `organization_plan: read`).
    pub plan: Option<String>,
}

/// A workflow file on the default branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowFacts {
    Missing,
    Present {
        /// Its `on:` names `workflow_dispatch`.
        dispatchable: bool,
        /// GitHub's `state`: `active`, `disabled_manually`, …
        state: String,
    },
}

/// The App's delivery log, narrowed to this repository and GitHub's three
/// days of redeliveries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFacts {
    /// Deliveries none of whose attempts succeeded, newest first.
    pub failed: Vec<FailedDelivery>,
    /// The newest attempt in the log (of any delivery) failed.
    pub newest_failed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedDelivery {
    pub guid: String,
    pub event: String,
    /// GitHub's `status`: `Invalid HTTP Response: 503`, `failed to connect to host`.
    pub status: String,
    /// GitHub's `delivered_at`, as it wrote it.
    pub delivered_at: String,
}

/// The runner's sandbox on the host that would run task code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxFacts {
    Works {
        processes_limited: bool,
    },
    /// The probe failed: what it said (how to fix it included).
    Fails(String),
    /// The operator's sandbox settings are wrong.
    Refused(String),
    /// `TASKGATE_UNSANDBOXED=1`.
    Unsandboxed,
}

/// How serious a finding is, least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Note,
    Warn,
    Block,
}

/// A link a person follows to change something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub label: String,
    pub url: String,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    /// What was checked: `Permissions`, `Assignee alice`, …
    pub topic: String,
    pub says: String,
    /// What to change, when something should change.
    pub fix: Option<String>,
    pub links: Vec<Link>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub repo: RepoName,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Something stops taskgate: the CLI exits non-zero.
    pub fn blocks(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Block)
    }

    fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}

/// The report for `facts`, against what `needs` (the App manifest) asks.
pub fn diagnose(facts: &Facts, needs: &Needs) -> Report {
    let mut findings = checks::installation(facts, needs);
    if let Some(repo) = &facts.repository {
        let config = checks::config(repo, &mut findings);
        checks::drafts(facts, repo, &mut findings);
        checks::assignees(facts, repo, &mut findings);
        if let Some(config) = &config {
            checks::workflows(facts, repo, config, &mut findings);
        }
        landing::landing(facts, repo, &mut findings);
        merge_guard::merge_guard(facts, repo, &mut findings);
        let runner = config.as_ref().map(|c| c.runner);
        checks::sandbox(facts, runner, &mut findings);
    } else {
        checks::sandbox(facts, None, &mut findings);
    }
    checks::disk(facts, &mut findings);
    checks::deliveries(facts, &mut findings);
    Report {
        repo: facts.repo.clone(),
        findings,
    }
}

/// The config [`diagnose`] read, for the shell to know which workflows and
/// assignees to ask GitHub about: `None` when the file is refused.
pub fn config_of(text: Option<&str>) -> Option<RepoConfig> {
    crate::config::load_config(text).ok()
}

#[cfg(test)]
mod tests;
