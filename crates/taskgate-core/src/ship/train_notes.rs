//! What a story of the ship train says on its issue while its batch
//! proves (issue 31): the one-story queue's "Proving" note, once per car,
//! naming the batch, its stories, its base and the commit its gates run
//! on, so people see what is happening to their story.
//!
//! Owns: [`on_car_proving`]. Must not: change the story's record (its
//! state while proving is the train's state's concern, `in_train`) or
//! read GitHub.

use super::decide::{comment, ShipContext, ShipDecision};
use super::in_train::BatchStory;
use super::render_queue as render;
use super::{CarId, StoryRecord};
use crate::ids::CommitSha;

/// The proof of `car` started on `commit`, built on `base`: the story's
/// issue says so, once per car (a retry of the same car says nothing new).
pub fn on_car_proving(
    record: &StoryRecord,
    (car, base, commit): (CarId, &CommitSha, &CommitSha),
    batch: &[BatchStory],
    ctx: &ShipContext,
) -> ShipDecision {
    let names: Vec<String> = batch
        .iter()
        .map(|s| match s.pr {
            Some(pr) => format!("#{} (PR #{pr})", s.issue),
            None => format!("#{}", s.issue),
        })
        .collect();
    let note = render::proving_batch(car, (base, commit), &names);
    let marker = format!("proving-batch car={car}");
    ShipDecision {
        effects: vec![comment(ctx, ctx.story_issue, note, marker)],
        outcome: format!("proving in ship batch {car} at {}", commit.short()),
        ..ShipDecision::unchanged(record, "")
    }
}
