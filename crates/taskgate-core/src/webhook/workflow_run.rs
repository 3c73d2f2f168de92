//! `workflow_run`: an Actions run started or finished: the Actions
//! runner's runs, and a story's deploy and validation runs.
//!
//! Owns: the run as taskgate reads it (from the webhook, or from GitHub's
//! API when a webhook was not heard), and whether it is a dispatched run
//! of the repository's default branch: only such a run may be matched to
//! taskgate's dispatch by its file or its title. Must not: look anything
//! up (which attempt or story it is for is the shell's to read).

use serde::Deserialize;

use super::action::WorkflowRunAction;
use crate::ids::{CommitSha, InstallationId, RepoName};

/// A workflow run webhook, in taskgate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRunEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub action: WorkflowRunAction,
    /// The repository's default branch, when the payload names it.
    pub default_branch: Option<String>,
    pub run: WorkflowRun,
}

/// A workflow run: the fields taskgate reads, in the webhook's and the
/// REST API's shape (they agree).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    pub head_sha: CommitSha,
    #[serde(default)]
    pub head_branch: Option<String>,
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// The run's `run-name`, as evaluated for this run.
    #[serde(default)]
    pub display_title: Option<String>,
    /// What started the run (`workflow_dispatch`, `push`, `pull_request`, …).
    #[serde(default)]
    pub event: Option<String>,
    /// The repository the run's code came from (a fork's, for fork PRs).
    #[serde(default)]
    pub head_repository: Option<RunRepository>,
    /// When the run last changed: its completion, once it is `completed`.
    #[serde(default)]
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The repository a run's code came from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunRepository {
    pub id: u64,
    pub full_name: String,
}

impl WorkflowRun {
    /// The workflow's file name (`deploy.yml` of `.github/workflows/deploy.yml`).
    pub fn file(&self) -> Option<&str> {
        self.path.as_deref().and_then(|p| p.rsplit('/').next())
    }

    /// Dispatched (`workflow_dispatch`) on the default branch, which must
    /// be known: the only runs taskgate dispatches.
    pub fn dispatched_on_default(&self, default_branch: Option<&str>) -> bool {
        self.event.as_deref() == Some("workflow_dispatch")
            && default_branch.is_some()
            && self.head_branch.as_deref() == default_branch
    }

    /// [`Self::dispatched_on_default`], with the code of `repo` itself: a
    /// title alone is easy to forge (a fork's `pull_request` workflow may
    /// take any `run-name`), so only such a run may be matched by it.
    pub fn dispatched_here(&self, repo: &RepoName, default_branch: Option<&str>) -> bool {
        self.dispatched_on_default(default_branch)
            && (self.head_repository.as_ref()).is_none_or(|r| r.full_name == repo.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(event: &str, branch: &str, from: Option<&str>) -> WorkflowRun {
        WorkflowRun {
            id: 1,
            name: None,
            head_sha: crate::ids::sha("abc"),
            head_branch: Some(branch.into()),
            status: None,
            conclusion: None,
            path: Some(".github/workflows/deploy.yml".into()),
            html_url: None,
            display_title: None,
            event: Some(event.into()),
            head_repository: from.map(|name| RunRepository {
                id: 2,
                full_name: name.into(),
            }),
            updated_at: None,
        }
    }

    #[test]
    fn a_runs_file_is_its_paths_last_part() {
        assert_eq!(run("push", "main", None).file(), Some("deploy.yml"));
    }

    #[test]
    fn only_a_dispatch_on_the_known_default_branch_is_dispatched_on_it() {
        assert!(run("workflow_dispatch", "main", None).dispatched_on_default(Some("main")));
        assert!(!run("push", "main", None).dispatched_on_default(Some("main")));
        assert!(!run("workflow_dispatch", "dev", None).dispatched_on_default(Some("main")));
        assert!(!run("workflow_dispatch", "main", None).dispatched_on_default(None));
    }

    #[test]
    fn a_dispatch_of_another_repositorys_code_is_not_dispatched_here() {
        let repo = RepoName::parse("o/r").unwrap();
        assert!(run("workflow_dispatch", "main", Some("o/r")).dispatched_here(&repo, Some("main")));
        assert!(run("workflow_dispatch", "main", None).dispatched_here(&repo, Some("main")));
        let fork = run("workflow_dispatch", "main", Some("fork/r"));
        assert!(!fork.dispatched_here(&repo, Some("main")));
    }
}
