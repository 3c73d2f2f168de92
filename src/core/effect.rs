//! Effects: the GitHub calls a decision implies, as data. They are stored in
//! the outbox and performed by `github::executor`; adding a behaviour means
//! adding an event arm and maybe an effect, nothing else.

use serde::{Deserialize, Serialize};

use crate::ids::{CommentId, IssueNumber, RepoName};

/// GitHub's reaction contents (the REST API's enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    #[serde(rename = "+1")]
    PlusOne,
    #[serde(rename = "-1")]
    MinusOne,
    Laugh,
    Confused,
    Heart,
    Hooray,
    Rocket,
    Eyes,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// A new comment. `marker` is written into the body as a hidden HTML
    /// comment and is how a retry after a crash finds a comment GitHub had
    /// already accepted, so it is never posted twice.
    PostComment {
        repo: RepoName,
        issue: IssueNumber,
        body: String,
        marker: String,
    },
    /// A reaction on an issue comment; GitHub itself makes this idempotent.
    ReactToComment {
        repo: RepoName,
        comment: CommentId,
        reaction: Reaction,
    },
}

impl Effect {
    pub fn repo(&self) -> &RepoName {
        match self {
            Effect::PostComment { repo, .. } | Effect::ReactToComment { repo, .. } => repo,
        }
    }

    /// A short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Effect::PostComment { .. } => "post_comment",
            Effect::ReactToComment { .. } => "react_to_comment",
        }
    }
}

/// The hidden line that marks a body as taskgate's, naming what it is for.
pub fn hidden_marker(marker: &str) -> String {
    format!("<!-- taskgate:{marker} -->")
}
