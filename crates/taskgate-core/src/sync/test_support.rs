//! Test helpers shared by the sync tests: the markers of a story `file:s`
//! and issue records as taskgate stores them.

use std::collections::BTreeSet;

use super::IssueRecord;
use crate::ids::{IssueId, IssueNumber};
use crate::plan::TaskId;
use crate::story::Marker;
use crate::{Effect, IssueState};

pub fn story_key() -> String {
    Marker::Story {
        story: "file:s".into(),
    }
    .key()
}

pub fn task_key(id: &str) -> String {
    Marker::Task {
        story: "file:s".into(),
        task: TaskId::new(id),
    }
    .key()
}

pub fn todo_key(id: &str) -> String {
    Marker::BranchTodo {
        story: "file:s".into(),
        task: TaskId::new(id),
        depth: 1,
        round: 1,
    }
    .key()
}

/// Issue `number` carrying marker `key`, as taskgate last wrote it.
pub fn record(number: u64, key: &str, open: bool) -> IssueRecord {
    IssueRecord {
        number: IssueNumber::new(number),
        id: IssueId::new(1000 + number),
        title: String::new(),
        body: Marker::from_key(key).unwrap().render(),
        labels: BTreeSet::new(),
        open,
        parent: None,
        blocked_by: BTreeSet::new(),
    }
}

/// The markers of the issues `effects` close as not planned, in order.
pub fn closed_not_planned(effects: &[Effect]) -> Vec<&str> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::UpdateIssue {
                marker,
                state: Some(IssueState::ClosedNotPlanned),
                ..
            } => Some(marker.as_str()),
            _ => None,
        })
        .collect()
}
