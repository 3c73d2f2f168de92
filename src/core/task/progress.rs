//! Runner progress as it travels through the inbox: the local run queue
//! and the Actions runner record it, the processor decides on it. Plain
//! data, so the executor can record a refused dispatch the same way.

use serde::{Deserialize, Serialize};

use super::RunProgress;
use crate::ids::RepoName;

/// taskgate's own event: progress of a run, recorded by the runner through
/// the inbox so that every decision about a task is made by the processor,
/// one at a time (never accepted from outside).
pub const RUN_EVENT: &str = "taskgate.run";

/// The payload of a [`RUN_EVENT`] delivery.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunEvent {
    pub repo: RepoName,
    pub story: String,
    pub task: String,
    pub progress: Progress,
}

/// [`RunProgress`] as stored in the inbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Progress {
    Waiting {
        attempt: u32,
        ahead: usize,
    },
    Started {
        attempt: u32,
    },
    Finished {
        attempt: u32,
        report: crate::core::report::RunReport,
        workspace: String,
    },
    Skipped {
        attempt: u32,
        why: String,
    },
}

impl From<Progress> for RunProgress {
    fn from(p: Progress) -> Self {
        match p {
            Progress::Waiting { attempt, ahead } => RunProgress::Waiting { attempt, ahead },
            Progress::Started { attempt } => RunProgress::Started { attempt },
            Progress::Finished {
                attempt,
                report,
                workspace,
            } => RunProgress::Finished {
                attempt,
                report,
                workspace,
            },
            Progress::Skipped { attempt, why } => RunProgress::Skipped { attempt, why },
        }
    }
}
