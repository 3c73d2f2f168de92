//! A repository of the in-memory GitHub and everything in it: commits and
//! branches, issues, comments, labels, pull requests, check runs and
//! suites, workflow runs and their artifacts.
//!
//! Owns: the plain data of one repository and the small helpers that read
//! or extend it (finding an issue, resolving a ref, adding a commit).
//! Must not: answer HTTP (`routes`), render GitHub's JSON shapes
//! (`render`), or hold what spans repositories (users, installations,
//! tokens, the delivery log: `state`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::GitHubClock;

#[derive(Clone, Debug, PartialEq)]
pub struct Reaction {
    pub id: u64,
    pub content: String,
    pub user: String,
    pub created_at: DateTime<Utc>,
}

/// An issue; pull requests have one too (same number), as on GitHub.
#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    /// Database id: what the sub-issue and dependency APIs want.
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// "open" or "closed".
    pub state: String,
    pub state_reason: Option<String>,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub author: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub is_pull_request: bool,
    /// Database ids of the sub-issues, in order.
    pub sub_issues: Vec<u64>,
    /// Database id of the parent issue.
    pub parent: Option<u64>,
    /// Database ids of the issues blocking this one.
    pub blocked_by: Vec<u64>,
    pub reactions: Vec<Reaction>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    pub id: u64,
    pub issue_number: u64,
    pub body: String,
    pub author: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub reactions: Vec<Reaction>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub id: u64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pull {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    /// Head branch name (same-repository pull requests only).
    pub head: String,
    pub base: String,
    /// "open" or "closed".
    pub state: String,
    pub draft: bool,
    pub merged: bool,
    /// False: refused as GitHub refuses a pull request it cannot merge
    /// ([`crate::RepoHandle::set_mergeable`]); a conflict between the
    /// branches makes it unmergeable too, whatever this says.
    pub mergeable: bool,
    pub merge_commit_sha: Option<String>,
    /// Who merged it (the merge button's presser, or the pusher whose
    /// push brought its head into the base).
    pub merged_by: Option<String>,
    pub author: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub merged_at: Option<DateTime<Utc>>,
}

/// A pull request review (`routes::reviews`): GitHub's states are
/// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED` and `DISMISSED`.
#[derive(Clone, Debug, PartialEq)]
pub struct Review {
    pub id: u64,
    pub pull: u64,
    pub user: String,
    pub body: String,
    pub state: String,
    /// The head the reviewer saw: the pull request's when submitted.
    pub commit_id: String,
    pub submitted_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    /// "queued", "in_progress", "completed", ...
    pub status: String,
    pub conclusion: Option<String>,
    pub details_url: Option<String>,
    pub external_id: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
    /// Accumulated over create and updates, as GitHub does.
    pub annotations: Vec<Value>,
    pub actions: Vec<Value>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// The App that created it: `None` for the App under test, else another
    /// App's id and slug (`RepoHandle::add_check_run_of_app`). Only the
    /// App that created a check run may change it.
    pub other_app: Option<(u64, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowDispatch {
    /// The workflow file name (or id as text) used in the URL.
    pub workflow: String,
    pub git_ref: String,
    pub inputs: Value,
    /// The run the dispatch created.
    pub run_id: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowRun {
    pub id: u64,
    pub workflow: String,
    pub head_branch: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub event: String,
    pub run_number: u64,
    pub created_at: DateTime<Utc>,
    /// Its last change of status (its completion, once completed).
    pub updated_at: DateTime<Utc>,
    /// The workflow's `run-name` as evaluated for this run (GitHub shows
    /// the workflow's name when there is none).
    pub display_title: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    pub id: u64,
    pub run_id: u64,
    pub name: String,
    pub bytes: Vec<u8>,
    /// What `size_in_bytes` says when it is not `bytes.len()`: storage and
    /// the listing can disagree, and a client must cap what it reads anyway.
    pub reported_size: Option<u64>,
    pub created_at: DateTime<Utc>,
}

/// The App's check suite on one head commit: created by the push that
/// requested it, or implicitly by the first check run on that commit. Its
/// status and conclusion follow from its check runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckSuite {
    pub id: u64,
    pub head_sha: String,
    /// The branch the head was pushed to, when known.
    pub head_branch: Option<String>,
    /// The branch's previous head, for a suite requested by a push.
    pub before: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A commit: its full tree is kept as a path → content map.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    pub sha: String,
    pub parents: Vec<String>,
    pub message: String,
    pub files: BTreeMap<String, String>,
    /// The id of its tree: git's own when the repository is backed, else
    /// the id git would give `files` (`trees::tree_id`).
    pub tree: String,
    pub date: DateTime<Utc>,
    /// Who wrote and committed it, for a commit made through the git data
    /// API; `None` for the fake's own (rendered as the repository's owner,
    /// at `date`).
    pub authorship: Option<Authorship>,
}

/// A commit's author or committer, as git records them.
#[derive(Clone, Debug, PartialEq)]
pub struct GitActor {
    pub name: String,
    pub email: String,
    pub date: DateTime<Utc>,
}

/// Who wrote a commit and who committed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Authorship {
    pub author: GitActor,
    pub committer: GitActor,
}

#[derive(Clone, Debug, Default)]
pub struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    pub default_branch: String,
    /// A private repository (`private`, `visibility`).
    pub private: bool,
    pub branches: BTreeMap<String, String>,
    pub commits: HashMap<String, Commit>,
    /// Tree id → a commit with that tree, so a tree can be found again
    /// (kept by [`Repo::insert_commit`]).
    pub trees: HashMap<String, String>,
    pub next_number: u64,
    pub issues: BTreeMap<u64, Issue>,
    /// Issue id → number, kept where issues are opened
    /// ([`Repo::insert_issue`]), so a request naming an issue by id (a
    /// sub-issue link) finds it without reading every issue.
    pub(crate) issue_numbers: HashMap<u64, u64>,
    pub comments: Vec<Comment>,
    pub labels: Vec<Label>,
    pub pulls: BTreeMap<u64, Pull>,
    /// Every pull request's reviews, in the order submitted.
    pub reviews: Vec<Review>,
    pub check_runs: Vec<CheckRun>,
    pub workflows: BTreeMap<String, u64>,
    /// Workflows (by file) a person disabled: `state` `disabled_manually`,
    /// and a dispatch answers 422.
    pub disabled_workflows: BTreeSet<String>,
    /// The `workflow_dispatch` inputs a workflow file declares, by file,
    /// where a test declared them: a dispatch with any other input is
    /// refused, as GitHub refuses it. Undeclared: any input is taken.
    pub workflow_inputs: BTreeMap<String, BTreeSet<String>>,
    /// A workflow's `run-name` template, by file: `${{ inputs.x }}` is
    /// filled from a dispatch's inputs.
    pub run_names: BTreeMap<String, String>,
    pub dispatches: Vec<WorkflowDispatch>,
    pub runs: Vec<WorkflowRun>,
    pub artifacts: Vec<Artifact>,
    pub check_suites: Vec<CheckSuite>,
    /// Injected replica lag: when an object (`ref:<branch>`,
    /// `issue:<number>`, `merge:<number>`) becomes visible to reads.
    pub visible_at: HashMap<String, Instant>,
    /// GitHub's clock, the state's own.
    pub clock: GitHubClock,
    /// The organisations' teams, the state's own (code owners).
    pub teams: crate::teams::Teams,
    /// The bare repository the commits are real in, when backed
    /// ([`crate::RepoHandle::back_with_git`]).
    pub git: Option<crate::git_backing::GitBacking>,
    /// Its rulesets and classic branch protection rules (`state::rules`).
    pub rulesets: Vec<super::Ruleset>,
    /// Its merge queue's entries, in order (`merge_queue`).
    pub merge_queue: Vec<crate::merge_queue::QueueEntry>,
    /// Pull requests waiting for auto-merge, with the user who turned it
    /// on (`auto_merge`).
    pub auto_merge: std::collections::BTreeMap<u64, String>,
    /// What the owner's plan allows here (`RepoHandle::without_drafts`).
    pub plan: PlanFeatures,
    /// Each branch's last pusher (`require_last_push_approval`).
    pub pushers: BTreeMap<String, String>,
}

/// What a repository's plan on GitHub allows.
#[derive(Clone, Debug)]
pub struct PlanFeatures {
    /// Draft pull requests: not in private repositories on GitHub Free.
    pub drafts: bool,
}

impl Default for PlanFeatures {
    fn default() -> Self {
        PlanFeatures { drafts: true }
    }
}

impl Repo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
    pub fn issue_by_id(&self, id: u64) -> Option<&Issue> {
        self.issue_numbers
            .get(&id)
            .and_then(|n| self.issues.get(n))
            .filter(|i| i.id == id)
            // An issue put in `issues` directly is still found.
            .or_else(|| self.issues.values().find(|i| i.id == id))
    }
    /// Opens `issue` (issue or pull request) under its number.
    pub fn insert_issue(&mut self, issue: Issue) {
        self.issue_numbers.insert(issue.id, issue.number);
        self.issues.insert(issue.number, issue);
    }
    pub fn label(&self, name: &str) -> Option<&Label> {
        self.labels
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
    }
    /// Whether reads still see the state before `object` was written.
    pub fn lagging(&self, object: &str) -> bool {
        self.visible_at
            .get(object)
            .is_some_and(|t| *t > self.clock.instant())
    }
    /// Whether `ancestor` is `of` or reachable from it through parents.
    pub fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        let mut stack = vec![of.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(sha) = stack.pop() {
            if sha == ancestor {
                return true;
            }
            if !seen.insert(sha.clone()) {
                continue;
            }
            if let Some(c) = self.commits.get(&sha) {
                stack.extend(c.parents.iter().cloned());
            }
        }
        false
    }
    /// Records commit `c` (replacing one with its sha) and its tree.
    pub fn insert_commit(&mut self, c: Commit) {
        self.trees.insert(c.tree.clone(), c.sha.clone());
        self.commits.insert(c.sha.clone(), c);
    }
    /// The App's check suite on `head_sha`, if any.
    pub fn suite(&self, head_sha: &str) -> Option<&CheckSuite> {
        self.check_suites.iter().find(|s| s.head_sha == head_sha)
    }
    pub fn comment_mut(&mut self, id: u64) -> Option<&mut Comment> {
        self.comments.iter_mut().find(|c| c.id == id)
    }
    /// Adds a commit on `branch` (created from the default branch if absent).
    pub fn commit_file(
        &mut self,
        branch: &str,
        path: &str,
        content: &str,
        message: &str,
    ) -> String {
        self.commit_change(branch, path, Some(content), message)
    }

    /// Adds a commit on `branch` that writes `path` (`None`: deletes it).
    pub fn commit_change(
        &mut self,
        branch: &str,
        path: &str,
        content: Option<&str>,
        message: &str,
    ) -> String {
        self.commit_changes(branch, &[(path, content)], message)
    }

    /// Adds one commit on `branch` (created from the default branch if
    /// absent) writing each `(path, content)` (`None`: deleting it): a
    /// real commit when the repository is backed by git.
    pub fn commit_changes(
        &mut self,
        branch: &str,
        changes: &[(&str, Option<&str>)],
        message: &str,
    ) -> String {
        let parent = self
            .branches
            .get(branch)
            .or_else(|| self.branches.get(&self.default_branch))
            .cloned();
        let mut files = parent
            .as_ref()
            .and_then(|p| self.commits.get(p))
            .map(|c| c.files.clone())
            .unwrap_or_default();
        for (path, content) in changes {
            let path = path.trim_start_matches('/').to_string();
            match content {
                Some(content) => files.insert(path, content.to_string()),
                None => files.remove(&path),
            };
        }
        let sha = self.add_commit(parent.into_iter().collect(), message, files);
        self.branches.insert(branch.to_string(), sha.clone());
        sha
    }
    /// Resolves a branch name, `heads/x`, `refs/heads/x` or a commit sha.
    pub fn resolve(&self, r: &str) -> Option<&Commit> {
        let name = r.trim_start_matches("refs/").trim_start_matches("heads/");
        match self.branches.get(name) {
            Some(sha) => self.commits.get(sha),
            None => self.commits.get(r).or_else(|| {
                (r.len() >= 7)
                    .then(|| self.commits.values().find(|c| c.sha.starts_with(r)))
                    .flatten()
            }),
        }
    }
}
