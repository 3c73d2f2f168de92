//! Ship events as they travel through the inbox: a ship request from the
//! HTTP API, and GitHub refusing a story's merge or dispatch (recorded by
//! the executor). Plain data, so every decision about a story is made by
//! the processor, one at a time.

use serde::{Deserialize, Serialize};

use super::{ApprovalFacts, BranchRules, Built, CarId, Priority, ShipVia, StoryWorkflow};
use crate::ids::{CommitSha, RepoName, StoryId, UserId};

/// The payload of `InternalEvent::Ship`: something for a story's ship
/// gate, recorded through the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShipEvent {
    pub repo: RepoName,
    /// The story; `""` for the whole queue of `repo` (`ShipWhat::Advance`
    /// from the run queue's timer or the executor), so that key is read
    /// back as it was written while every other is checked.
    #[serde(deserialize_with = "story_or_whole_queue")]
    pub story: StoryId,
    pub what: ShipWhat,
}

fn story_or_whole_queue<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StoryId, D::Error> {
    let key = String::deserialize(d)?;
    if key.is_empty() {
        return Ok(StoryId::new(""));
    }
    StoryId::parse(&key).map_err(serde::de::Error::custom)
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
        /// Where it goes in the queue; absent in events recorded before
        /// priorities.
        #[serde(default)]
        priority: Priority,
    },
    /// GitHub refused to merge the story PR.
    MergeRefused { why: String },
    /// GitHub refused to start the story's deploy or validation workflow.
    WorkflowRefused {
        workflow: StoryWorkflow,
        why: String,
    },
    /// GitHub made the proving merge commit of round `round`.
    ProofCommit { round: u32, commit: CommitSha },
    /// The story does not merge with the base of round `round`.
    ProofConflict { round: u32, why: String },
    /// GitHub refused to fast-forward the default branch to the tested
    /// commit of round `round`: the base moved.
    BaseMoved { round: u32 },
    /// The revert commit of a rollback's round `round` was made.
    RevertCommit { round: u32, commit: CommitSha },
    /// The revert of round `round` could not be made (a conflict, or
    /// GitHub refused), or the base moved under it too often.
    RevertRefused { round: u32, why: String },
    /// GitHub refused to fast-forward to the revert: the base moved.
    RevertBaseMoved { round: u32 },
    /// The default branch's rules refused the landing of round `round`:
    /// GitHub's status and message.
    LandRefused {
        round: u32,
        status: u16,
        message: String,
        /// What the executor read of the story PR's reviews when GitHub
        /// refused it for them (`approvals`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approvals: Option<ApprovalFacts>,
    },
    /// The landing (or the proof's commit) of round `round` failed for
    /// another reason: a 404, or 5xx past the retries.
    LandFailed { round: u32, why: String },
    /// The rules of the default branch read at the landing of round
    /// `round` (`rules`) no longer allow the landing its proof was made
    /// for (`core::ship::landing_holds`): nothing landed.
    RulesChanged { round: u32, rules: BranchRules },
    /// The story PR of round `round` merged as `commit`, whose tree is not
    /// the proven one (the base moved between the look and the merge).
    LandedUntested { round: u32, commit: CommitSha },
    /// GitHub built the ship train's car `car` (`Effect::BuildShipCar`):
    /// its commit and tree. `story` is the car's first story.
    CarBuilt { car: CarId, built: Built },
    /// `conflict`'s head does not merge on the car's base and the heads
    /// before it: GitHub's words in `why`.
    CarConflict {
        car: CarId,
        conflict: StoryId,
        why: String,
    },
    /// The default branch was fast-forwarded to car `car`'s commit
    /// (`story` is the car's first story).
    CarLanded { car: CarId },
    /// GitHub did not build car `car`: it `refused` (a rule on the batch
    /// branches, a permission: the next car would meet it again) or
    /// failed past the executor's retries; `why` in its words.
    CarFailed {
        car: CarId,
        why: String,
        refused: bool,
    },
    /// GitHub refused to merge `story` into car `car` for what the story
    /// changes (a workflow file without the `workflows` permission):
    /// `message` in its words.
    CarStoryRefused {
        car: CarId,
        story: StoryId,
        message: String,
    },
    /// The repository's ship queue may move on (a ship ended, a freeze
    /// lifted); `story` is empty.
    Advance,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_queues_empty_key_reads_back_and_any_other_is_checked() {
        let event = ShipEvent {
            repo: RepoName::parse("o/r").unwrap(),
            story: StoryId::new(""),
            what: ShipWhat::Advance,
        };
        let text = serde_json::to_string(&event).unwrap();
        let back: ShipEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event);
        let bad = text.replace(r#""story":"""#, r#""story":"nope""#);
        assert!(serde_json::from_str::<ShipEvent>(&bad).is_err(), "{bad}");
        let good = text.replace(r#""story":"""#, r#""story":"issue:7""#);
        let read: ShipEvent = serde_json::from_str(&good).unwrap();
        assert_eq!(read.story.as_str(), "issue:7");
    }
}
