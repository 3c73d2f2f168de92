//! Ship events as they travel through the inbox: a ship request from the
//! HTTP API, and GitHub refusing a story's merge or dispatch (recorded by
//! the executor). Plain data, so every decision about a story is made by
//! the processor, one at a time.

use serde::{Deserialize, Serialize};

use super::{ShipVia, StoryWorkflow};
use crate::ids::{RepoName, UserId};

/// The payload of `InternalEvent::Ship`: something for a story's ship
/// gate, recorded through the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShipEvent {
    pub repo: RepoName,
    pub story: String,
    pub what: ShipWhat,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShipWhat {
    /// A person asked to ship (the API; labels and commands arrive as
    /// webhooks).
    Request {
        actor: Option<UserId>,
        login: String,
        via: ShipVia,
    },
    /// GitHub refused to merge the story PR.
    MergeRefused { why: String },
    /// GitHub refused to start the story's deploy or validation workflow.
    WorkflowRefused {
        workflow: StoryWorkflow,
        why: String,
    },
}
