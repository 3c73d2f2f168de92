//! Domain events: what happened on GitHub, in taskgate's terms. The intake
//! translates webhook payloads into these; nothing here knows JSON.

use crate::ids::{CommentId, InstallationId, IssueNumber, RepoName, StoryId, UserId};

/// Who did something. Users are identified by id; the login is for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub id: UserId,
    pub login: String,
    /// GitHub's `type: "Bot"`.
    pub is_bot: bool,
    /// The GitHub App a comment was made through, if any.
    pub via_app: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// GitHub checking the hook; nothing to do.
    Ping,
    /// The app was installed, or repositories were added to or removed
    /// from an installation.
    InstallationChanged {
        installation: InstallationId,
        account: Option<String>,
        added: Vec<RepoName>,
        removed: Vec<RepoName>,
    },
    /// The app was uninstalled.
    InstallationDeleted { installation: InstallationId },
    /// A new comment on an issue or pull request.
    CommentCreated {
        repo: RepoName,
        issue: IssueNumber,
        is_pull_request: bool,
        comment: CommentId,
        author: Actor,
        body: String,
    },
    /// An event taskgate receives but has nothing to do for yet.
    Unused {
        event: String,
        action: Option<String>,
    },
}

/// A change to taskgate's own state that follows from an event; stored in
/// the same transaction as the effects.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    InstallationUpdated {
        installation: InstallationId,
        account: Option<String>,
        added: Vec<RepoName>,
        removed: Vec<RepoName>,
    },
    InstallationRemoved {
        installation: InstallationId,
    },
    /// A story's plan was read and found valid.
    StoryPlanned(crate::sync::StoryPlan),
    /// A story's plan file was removed from the default branch: its stored
    /// plan goes (its issues' records stay, for a restored file to find).
    StoryRetired {
        repo: RepoName,
        story: StoryId,
    },
    /// A task's runtime record changed.
    TaskUpdated {
        repo: RepoName,
        story: StoryId,
        task: crate::task::RunSubject,
        record: Box<crate::task::TaskRecord>,
    },
    /// A run to start, stored as a queued attempt of the runner the core
    /// handed it to (`RunJob::runner`): the local runner takes up its own,
    /// an Actions one is started by the `DispatchRun` in the same decision.
    RunQueued(crate::task::RunJob),
    /// An attempt moved on; `report` once it finished.
    AttemptUpdated {
        repo: RepoName,
        story: StoryId,
        task: crate::task::RunSubject,
        attempt: u32,
        status: crate::task::AttemptStatus,
        report: Option<crate::report::RunReport>,
    },
    /// A story's ship-gate record changed.
    ShipUpdated {
        repo: RepoName,
        story: StoryId,
        record: Box<crate::ship::StoryRecord>,
    },
    /// A repository's ship train changed (`core::ship::train`): stored
    /// with the effects its actions caused.
    TrainUpdated {
        repo: RepoName,
        train: Box<crate::ship::Train>,
    },
    /// An existing issue becomes a story's issue (`/taskgate plan`).
    IssueAdopted {
        repo: RepoName,
        marker: String,
        record: crate::sync::IssueRecord,
    },
    /// A human decision that took effect, for the audit log
    /// (`core::audit`).
    Audited(crate::audit::AuditEntry),
    /// A repository frozen (or its reason changed) with `Some`, unfrozen
    /// with `None` (`core::freeze`).
    FreezeChanged {
        repo: RepoName,
        freeze: Option<crate::freeze::Freeze>,
    },
    /// The repository's config (`.github/taskgate.yml` on the default
    /// branch) as of commit `sha`: `None` when the file is not there (the
    /// defaults). Only a config that loads is recorded (`core::config::push`);
    /// every later decision, for every story, reads this one.
    RepoConfigChanged {
        repo: RepoName,
        sha: crate::ids::CommitSha,
        config: Option<String>,
    },
    /// A flaky test quarantined (`core::flaky`).
    QuarantineStarted {
        repo: RepoName,
        quarantine: crate::flaky::Quarantine,
    },
    /// A quarantine (known by its test and start) lifted by a person.
    QuarantineLifted {
        repo: RepoName,
        test_id: crate::results::TestId,
        since_s: i64,
        by: String,
    },
    /// Flaky events seen outside any task's history (the ship train's: a
    /// tree failed in one car's proof and passed in another's), kept so
    /// they count toward `flaky.quarantine_after` later.
    FlakyEventsSeen {
        repo: RepoName,
        events: Vec<(crate::results::TestId, crate::flaky::FlakyEvent)>,
    },
}
