//! Runner progress as it travels through the inbox: the local run queue
//! and the Actions runner record it, the processor decides on it. Plain
//! data, so the executor can record a refused dispatch the same way.

use serde::{Deserialize, Serialize};

use super::RunProgress;
use crate::ids::{RepoName, StoryId};

/// The payload of `InternalEvent::Run`: progress of a run, recorded by the
/// runner through the inbox so that every decision about a task is made by
/// the processor, one at a time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunEvent {
    pub repo: RepoName,
    pub story: StoryId,
    pub task: super::RunSubject,
    pub progress: Progress,
}

/// [`RunProgress`] as stored in the inbox.
pub type Progress = RunProgress;
