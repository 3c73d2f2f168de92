//! Reading plans from GitHub for the reconciler: the IO half of plan sync.
//!
//! A push to the default branch that touches `.taskgate/stories/*.yml` or
//! `.github/taskgate.yml` is answered by reading, at the pushed commit,
//! each changed plan, the repo config and the few files test-command
//! discovery looks at; the pure `core::sync` then decides, and
//! `core::config::push` makes the config the repository's current one
//! (every story's decisions follow it). What a push changed comes from its
//! commits, or from GitHub when the webhook may have capped them
//! (`sync::pushed`). Reads only: every write is an
//! effect or a change.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use http::Method;
use octocrab::Octocrab;

use crate::github::{client::send, GitHubApp, GitHubError};
use crate::intake::payload::IssueCommentPayload;
use crate::store::{RepoConfigRecord, StoreError};
use crate::transient::Transient;
use taskgate_core::config::{
    decide_config_read, decide_first_config_read, load_config, Problems, RepoConfig, CONFIG_PATH,
};
use taskgate_core::ids::{CommitSha, InstallationId, RepoName, StoryId};
use taskgate_core::internal::Reconcile;
use taskgate_core::plan::TaskId;
use taskgate_core::story::{story_key_for_file, story_key_for_issue};
use taskgate_core::sync::{
    decide_comment_plan, decide_plan, decide_reconcile, decide_removed_plan, record_branch_start,
    CommentPlan, IssueRecord, Known, StoryPlan,
};
use taskgate_core::webhook::PushEvent;
use taskgate_core::Decision;

mod first_read;
mod pull;
mod pushed;
mod reach;
mod store;

pub use first_read::{added_repositories, FailedReads, RETRY_READ_FIRST_MS, RETRY_READ_MAX_MS};
pub(crate) use store::SyncStore;

/// Where story plans live on the default branch.
pub const STORIES_DIR: &str = ".taskgate/stories/";

/// The files test-command discovery reads (`core::plan::discover`).
const DISCOVERY_FILES: &[&str] = &[
    "Makefile",
    "makefile",
    "GNUmakefile",
    "Cargo.toml",
    "pyproject.toml",
    "pytest.ini",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "package.json",
    "go.mod",
];

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Payload(String),
}

impl Transient for SyncError {
    fn is_transient(&self) -> bool {
        match self {
            SyncError::GitHub(g) => g.is_transient(),
            SyncError::Store(s) => s.is_transient(),
            SyncError::Payload(_) => false,
        }
    }
}

/// What a caller learnt of a repository's recorded config
/// (`store::repo_config`) before it asks for the config to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSeen {
    /// This record, read or recorded just now.
    Recorded(RepoConfigRecord),
    /// None is recorded: the fallback applies.
    NoneRecorded,
    /// Not known: it is read.
    Unread,
}

pub struct Syncer {
    pub github: Arc<GitHubApp>,
    pub(crate) store: SyncStore,
    /// The write budget, for the note on a plan that needs more than an
    /// hour of it.
    pub pacing: taskgate_core::pace::Pacing,
    /// Repositories whose lazy config read failed, and when to try again
    /// (`first_read::FailedReads`).
    pub failed_reads: first_read::FailedReads,
}

fn is_plan_file(path: &str) -> bool {
    path.strip_prefix(STORIES_DIR).is_some_and(|name| {
        !name.contains('/') && (name.ends_with(".yml") || name.ends_with(".yaml"))
    })
}

impl Syncer {
    pub async fn on_push(
        &self,
        installation: InstallationId,
        push: &PushEvent,
    ) -> Result<Decision, SyncError> {
        if push.default_branch.is_none() {
            return Ok(Decision::nothing("push without a default branch"));
        }
        if !push.to_default_branch() || push.deleted {
            return Ok(Decision::nothing("push to another branch"));
        }
        let repo = push.repo.clone();
        // Each plan file's last word in the push: there, or removed.
        let mut present = self.pushed(installation, &repo, push).await?;
        let unrecorded = self.store.repo_config(&repo).await?.is_none();
        let config_changed = present.contains_key(CONFIG_PATH);
        present.retain(|path, _| is_plan_file(path));
        let changed: BTreeSet<&str> = present
            .iter()
            .filter(|(_, there)| **there)
            .map(|(path, _)| path.as_str())
            .collect();
        if present.is_empty() && !config_changed {
            // A repository with no config recorded has it read now.
            if unrecorded {
                return Ok(self.first_read_at(installation, &repo, &push.after).await);
            }
            return Ok(Decision::nothing("no plan files or config changed"));
        }
        let client = self.github.installation_client(installation).await?;
        self.read_back_if_unknown(&client, &repo, installation)
            .await?;
        let sha = &push.after;
        let (config, files) = self.repo_files(&client, &repo, sha).await?;
        // The config first: every decision after this push follows it, for
        // every story. Its problems are said here unless a plan read in this
        // push says them (a plan is refused with its config's problems).
        let mut decision = if !changed.is_empty() {
            decide_config_read(&repo, sha, config.clone(), Problems::ReportedWithThePlans)
        } else if unrecorded {
            let last_good = self.store.latest_story_config(&repo).await?.flatten();
            decide_first_config_read(&repo, sha, config.clone(), last_good)
        } else {
            decide_config_read(&repo, sha, config.clone(), Problems::Report)
        };
        let mut outcomes = vec![std::mem::take(&mut decision.outcome)];
        for path in changed {
            let Some(text) = read_file(&client, &repo, path, sha).await? else {
                continue;
            };
            let story = story_key_for_file(path);
            let plan = StoryPlan {
                repo: repo.clone(),
                story: story.clone(),
                installation,
                source: path.to_owned(),
                plan: text,
                config: config.clone(),
                files: files.clone(),
                sha: sha.clone(),
            };
            let known = self.known(&repo, &story).await?;
            let reach = reach::reach_of(&client, &repo, &[&plan.plan]).await?;
            let mut d = decide_plan(plan, &known.as_known(), &reach);
            self.announce_pace(&mut d, &known);
            outcomes.push(d.outcome);
            decision.changes.extend(d.changes);
            decision.effects.extend(d.effects);
        }
        for (path, _) in present.iter().filter(|(_, there)| !**there) {
            let story = story_key_for_file(path);
            // Only a story planned from this very file is retired.
            let planned = self.store.story(&repo, &story).await?;
            if planned.is_none_or(|p| p.source != *path) {
                continue;
            }
            let known = self.known(&repo, &story).await?;
            let d = decide_removed_plan(&repo, &story, path, sha, &known.as_known());
            outcomes.push(d.outcome);
            decision.changes.extend(d.changes);
            decision.effects.extend(d.effects);
        }
        decision.outcome = outcomes.join("; ");
        Ok(decision)
    }

    /// `/taskgate plan` with a fenced yaml block: the commented issue
    /// becomes the story, planned against the default branch's head.
    pub async fn on_plan_comment(
        &self,
        installation: InstallationId,
        p: &IssueCommentPayload,
    ) -> Result<Decision, SyncError> {
        let repo = RepoName::parse(&p.repository.full_name)
            .map_err(|e| SyncError::Payload(e.to_string()))?;
        let body = p.comment.body.as_deref().unwrap_or_default();
        let Some(yaml) = taskgate_core::commands::yaml_block(body) else {
            return Ok(taskgate_core::sync::decide_plan_comment_without_yaml(
                &repo,
                p.issue.number,
                p.comment.id,
                &p.comment.user.login,
            ));
        };
        let client = self.github.installation_client(installation).await?;
        let branch = p.repository.default_branch.as_deref().unwrap_or("main");
        let sha = branch_head(&client, &repo, branch).await?;
        self.read_back_if_unknown(&client, &repo, installation)
            .await?;
        let (config, files) = self.repo_files(&client, &repo, &sha).await?;
        let story = story_key_for_issue(p.issue.number.get());
        let plan = StoryPlan {
            repo: repo.clone(),
            story: story.clone(),
            installation,
            source: format!("issue #{}", p.issue.number),
            plan: yaml,
            config,
            files,
            sha,
        };
        let issue = IssueRecord {
            number: p.issue.number,
            id: p.issue.id,
            title: p.issue.title.clone(),
            body: p.issue.body.clone().unwrap_or_default(),
            labels: p.issue.labels.iter().map(|l| l.name.clone()).collect(),
            open: p.issue.state.as_deref() != Some("closed"),
            parent: None,
            blocked_by: BTreeSet::new(),
        };
        let known = self.known(&repo, &story).await?;
        let comment = CommentPlan {
            comment: p.comment.id,
            issue,
        };
        let read = decide_config_read(
            &repo,
            &plan.sha,
            plan.config.clone(),
            Problems::ReportedWithThePlans,
        );
        let reach = reach::reach_of(&client, &repo, &[&plan.plan]).await?;
        let mut d = decide_comment_plan(plan, &comment, &known.as_known(), &reach);
        self.announce_pace(&mut d, &known);
        d.changes.extend(read.changes);
        Ok(d)
    }

    /// The config everything in `repo` follows (`store::repo_config`);
    /// with none recorded yet (a database from before the record), the
    /// copy saved with the repository's most recently planned story, else
    /// the defaults (a repository no push has synced). Reads no GitHub, so
    /// a comment is answered whatever GitHub's state.
    pub async fn repo_config(&self, repo: &RepoName) -> Result<RepoConfig, SyncError> {
        self.repo_config_seen(repo, ConfigSeen::Unread).await
    }

    /// [`Syncer::repo_config`], with what the caller learnt of the record
    /// already (`read_config_if_unrecorded`): not read a second time.
    pub async fn repo_config_seen(
        &self,
        repo: &RepoName,
        seen: ConfigSeen,
    ) -> Result<RepoConfig, SyncError> {
        let record = match seen {
            ConfigSeen::Recorded(record) => Some(record),
            ConfigSeen::NoneRecorded => None,
            ConfigSeen::Unread => self.store.repo_config(repo).await?,
        };
        let text = match record {
            Some(record) => record.config,
            None => self.store.latest_story_config(repo).await?.flatten(),
        };
        Ok(load_config(text.as_deref()).unwrap_or_default())
    }

    /// With nothing recorded for `repo` (a first sync, or a lost database),
    /// reads back whatever taskgate made there before, so that no issue is
    /// ever created twice.
    async fn read_back_if_unknown(
        &self,
        client: &Octocrab,
        repo: &RepoName,
        installation: InstallationId,
    ) -> Result<(), SyncError> {
        if self.store.issue_records(repo, "").await?.is_empty() {
            let own = self.github.own_app();
            super::resync::rebuild(client, &own, &self.store.resync(), repo, installation).await?;
        }
        Ok(())
    }

    /// The repo config and the files discovery reads, at `sha`.
    async fn repo_files(
        &self,
        client: &Octocrab,
        repo: &RepoName,
        sha: &CommitSha,
    ) -> Result<(Option<String>, BTreeMap<String, String>), SyncError> {
        let config = read_file(client, repo, CONFIG_PATH, sha).await?;
        let mut files = BTreeMap::new();
        for path in DISCOVERY_FILES {
            if let Some(text) = read_file(client, repo, path, sha).await? {
                files.insert((*path).to_owned(), text);
            }
        }
        Ok((config, files))
    }

    pub async fn on_reconcile(&self, r: &Reconcile) -> Result<Decision, SyncError> {
        let Some(plan) = self.store.story(&r.repo, &r.story).await? else {
            return Ok(Decision::nothing(format!("story {} is not known", r.story)));
        };
        let mut known = self.known(&r.repo, &r.story).await?;
        // A task branch just started: recorded on its task, and the pass
        // renders the issue with it.
        let started = match &r.started {
            Some(started) => {
                let record = (self.store)
                    .task_record(&r.repo, &r.story, &started.task.clone().into())
                    .await?;
                let change = record_branch_start(&r.repo, &r.story, started, record);
                if change.is_some() {
                    known
                        .starts
                        .insert(started.task.clone(), started.start.clone());
                }
                change
            }
            None => None,
        };
        // Checked once per text, config and files, not once a pass.
        let checked = self.store.plans().check(&plan);
        let mut decision = decide_reconcile(&plan, checked.as_deref(), &known.as_known(), r.round);
        decision.changes.extend(started);
        Ok(decision)
    }

    /// The note on a plan's story when it needs more writes than an hour
    /// of the budget allows (decided by the core).
    fn announce_pace(&self, decision: &mut Decision, known: &OwnedKnown) {
        let now_s = self.store.clock().now_s();
        taskgate_core::sync::announce_pace(decision, &known.as_known(), &self.pacing, now_s);
    }

    async fn known(&self, repo: &RepoName, story: &StoryId) -> Result<OwnedKnown, SyncError> {
        let issues = self.store.story_issues(repo, story).await?;
        let records = self.store.task_records(repo, story).await?;
        let states = records
            .iter()
            .filter_map(|(task, record)| Some((TaskId::new(task), record.state?)))
            .collect();
        let starts = records
            .into_iter()
            .filter_map(|(task, record)| Some((TaskId::new(&task), record.branch?)))
            .collect();
        Ok(OwnedKnown {
            states,
            starts,
            issues,
            branches: self.store.branches(repo).await?,
            labels: self.store.labels(repo).await?,
        })
    }
}

struct OwnedKnown {
    states: BTreeMap<TaskId, taskgate_core::plan::TaskState>,
    starts: BTreeMap<TaskId, taskgate_core::story::BranchStart>,
    issues: BTreeMap<String, IssueRecord>,
    branches: BTreeSet<String>,
    labels: BTreeSet<String>,
}

impl OwnedKnown {
    fn as_known(&self) -> Known<'_> {
        Known {
            issues: &self.issues,
            branches: &self.branches,
            labels: &self.labels,
            states: &self.states,
            starts: &self.starts,
        }
    }
}

/// The commit `branch` of `repo` is at.
async fn branch_head(
    client: &Octocrab,
    repo: &RepoName,
    branch: &str,
) -> Result<CommitSha, SyncError> {
    let head: serde_json::Value = send(
        client,
        Method::GET,
        &format!("/repos/{repo}/git/ref/heads/{branch}"),
        None,
    )
    .await?
    .json()?;
    let sha = head["object"]["sha"]
        .as_str()
        .ok_or_else(|| SyncError::Payload(format!("branch {branch} has no sha")))?;
    CommitSha::parse(sha).map_err(|e| SyncError::Payload(format!("branch {branch}: {e}")))
}

/// A file's text at `sha`, or `None` when it does not exist there.
async fn read_file(
    client: &Octocrab,
    repo: &RepoName,
    path: &str,
    sha: &CommitSha,
) -> Result<Option<String>, GitHubError> {
    crate::github::RepoClient::new(client, repo)
        .file(path, sha.as_str())
        .await
}

#[cfg(test)]
mod tests {
    use super::is_plan_file;

    #[test]
    fn only_yaml_files_directly_under_the_stories_folder_are_plans() {
        assert!(is_plan_file(".taskgate/stories/momentum.yml"));
        assert!(is_plan_file(".taskgate/stories/a.yaml"));
        assert!(!is_plan_file(".taskgate/stories/nested/a.yml"));
        assert!(!is_plan_file(".taskgate/stories/readme.md"));
        assert!(!is_plan_file("src/.taskgate/stories/a.yml"));
    }
}
