//! Typed webhook payloads: only the fields taskgate reads, so that a new
//! field on GitHub's side never breaks parsing, while a payload missing a
//! field taskgate needs is refused with the field's path.

use serde::Deserialize;

pub use taskgate_core::webhook::action::*;
/// A run is read from the API too: one type, the core's.
pub use taskgate_core::webhook::WorkflowRun;

use taskgate_core::ids::{CommentId, CommitSha, InstallationId, IssueId, IssueNumber, UserId};

#[derive(Debug, Clone, Deserialize)]
pub struct InstallationRef {
    pub id: InstallationId,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Account {
    pub login: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Installation {
    pub id: InstallationId,
    pub account: Option<Account>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    pub id: u64,
    pub full_name: String,
    #[serde(default)]
    pub default_branch: Option<String>,
    #[serde(default)]
    pub fork: bool,
    /// When the branch was pushed: a Unix time in `push` payloads, a date
    /// elsewhere (`intake::age`).
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub pushed_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A repository as listed in installation payloads (no default branch).
#[derive(Debug, Clone, Deserialize)]
pub struct RepositoryRef {
    pub id: u64,
    pub full_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: UserId,
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Label {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    pub id: IssueId,
    pub number: IssueNumber,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub state: Option<String>,
    #[serde(default)]
    pub labels: Vec<Label>,
    pub user: User,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AppRef {
    pub id: u64,
    #[serde(default)]
    pub slug: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Comment {
    pub id: CommentId,
    #[serde(default)]
    pub body: Option<String>,
    pub user: User,
    #[serde(default)]
    pub performed_via_github_app: Option<AppRef>,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BodyChange {
    pub from: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CommentChanges {
    #[serde(default)]
    pub body: Option<BodyChange>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GitRef {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: CommitSha,
    #[serde(default)]
    pub repo: Option<RepositoryRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    pub id: u64,
    pub number: IssueNumber,
    pub state: String,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub head: GitRef,
    pub base: GitRef,
    #[serde(default)]
    pub draft: Option<bool>,
    #[serde(default)]
    pub merged: Option<bool>,
    /// The merge commit (the base branch's new head) once merged.
    #[serde(default)]
    pub merge_commit_sha: Option<CommitSha>,
    /// Who merged it, once merged.
    #[serde(default)]
    pub merged_by: Option<User>,
    /// How many commits it has (a rebase merge makes as many on the base).
    #[serde(default)]
    pub commits: Option<u32>,
    pub user: User,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PushCommit {
    pub id: CommitSha,
    /// New to the repository with this push. GitHub marks a commit that
    /// was on another branch already `false` (a fast-forward onto the
    /// story branch's commits brings none of its own).
    #[serde(default = "distinct_by_default")]
    pub distinct: bool,
    #[serde(default)]
    pub added: Vec<String>,
    #[serde(default)]
    pub modified: Vec<String>,
    #[serde(default)]
    pub removed: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckSuiteRef {
    pub id: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: CommitSha,
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub app: Option<AppRef>,
    #[serde(default)]
    pub check_suite: Option<CheckSuiteRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RequestedAction {
    pub identifier: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckSuite {
    pub id: u64,
    pub head_sha: CommitSha,
    #[serde(default)]
    pub head_branch: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub app: Option<AppRef>,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PingPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub zen: String,
    #[serde(default)]
    pub hook_id: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct InstallationPayload {
    pub action: InstallationAction,
    pub installation: Installation,
    #[serde(default)]
    pub repositories: Option<Vec<RepositoryRef>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct InstallationRepositoriesPayload {
    pub action: InstallationRepositoriesAction,
    pub installation: Installation,
    #[serde(default)]
    pub repositories_added: Vec<RepositoryRef>,
    #[serde(default)]
    pub repositories_removed: Vec<RepositoryRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssuesPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: IssuesAction,
    pub issue: Issue,
    pub repository: Repository,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssueCommentPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: IssueCommentAction,
    pub issue: Issue,
    pub comment: Comment,
    pub repository: Repository,
    #[serde(default)]
    pub changes: Option<CommentChanges>,
    /// Who acted: the author for `created`, the editor for `edited`
    /// (GitHub lets anyone with write access edit others' comments).
    #[serde(default)]
    pub sender: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: PullRequestAction,
    pub number: IssueNumber,
    pub pull_request: PullRequest,
    pub repository: Repository,
    /// The label added or removed (`labeled`, `unlabeled`).
    #[serde(default)]
    pub label: Option<Label>,
    #[serde(default)]
    pub sender: Option<User>,
    /// The head a `synchronize` replaced (GitHub sends `before` and
    /// `after` with that action only).
    #[serde(default)]
    pub before: Option<CommitSha>,
    /// What an `edited` changed.
    #[serde(default)]
    pub changes: Option<PullChanges>,
}

/// `changes` of a `pull_request` edited: only whether the base moved is
/// read (its old ref and sha are not used).
#[derive(Debug, Clone, Deserialize)]
pub struct PullChanges {
    #[serde(default)]
    pub base: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PushPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub before: CommitSha,
    pub after: CommitSha,
    pub repository: Repository,
    #[serde(default)]
    pub commits: Vec<PushCommit>,
    #[serde(default)]
    pub forced: bool,
    #[serde(default)]
    pub deleted: bool,
    /// The ref is new (`before` is all zeros).
    #[serde(default)]
    pub created: bool,
    /// Who pushed.
    #[serde(default)]
    pub sender: Option<User>,
}

fn distinct_by_default() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckRunPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: CheckRunAction,
    pub check_run: CheckRun,
    pub repository: Repository,
    #[serde(default)]
    pub requested_action: Option<RequestedAction>,
    /// Who pressed "Re-run" or a button.
    #[serde(default)]
    pub sender: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckSuitePayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: CheckSuiteAction,
    pub check_suite: CheckSuite,
    pub repository: Repository,
    /// Who pressed "Re-run all checks" (for `rerequested`).
    #[serde(default)]
    pub sender: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRunPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: WorkflowRunAction,
    pub workflow_run: WorkflowRun,
    pub repository: Repository,
}

/// A merge group of GitHub's merge queue: the base (or the group ahead)
/// with a pull request merged in, on `gh-readonly-queue/...`.
#[derive(Debug, Clone, Deserialize)]
pub struct MergeGroup {
    pub head_sha: CommitSha,
    /// `refs/heads/gh-readonly-queue/{base}/pr-{number}-{sha}`.
    pub head_ref: String,
    pub base_sha: CommitSha,
    pub base_ref: String,
}

impl MergeGroup {
    /// The pull request the group merges, read off its ref.
    pub fn pull_number(&self) -> Option<IssueNumber> {
        let tail = self.head_ref.rsplit('/').next()?;
        let (number, _) = tail.strip_prefix("pr-")?.split_once('-')?;
        number.parse().ok().map(IssueNumber::new)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct MergeGroupPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: MergeGroupAction,
    /// Why a group was destroyed: `merged`, `invalidated`, `dequeued`.
    #[serde(default)]
    pub reason: Option<String>,
    pub merge_group: MergeGroup,
    pub repository: Repository,
}

/// `pull_request_review`: a review of a pull request, as the webhook
/// carries it.
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestReviewPayload {
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub action: PullRequestReviewAction,
    pub review: Review,
    pub pull_request: ReviewedPull,
    pub repository: Repository,
    #[serde(default)]
    pub sender: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Review {
    pub id: u64,
    pub user: User,
    #[serde(default)]
    pub body: Option<String>,
    /// The commit the reviewer saw.
    pub commit_id: CommitSha,
    /// `approved`, `changes_requested`, `commented` or `dismissed`.
    pub state: String,
    #[serde(default, deserialize_with = "super::age::lenient_stamp")]
    pub submitted_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The pull request a review is of: the fields taskgate reads.
#[derive(Debug, Clone, Deserialize)]
pub struct ReviewedPull {
    pub number: IssueNumber,
    /// `open` or `closed`.
    pub state: String,
    pub head: GitRef,
}
