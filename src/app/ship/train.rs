//! The ship train's shell (issue 31): train events of a repository read
//! into `core::ship::on_train_event` with the repository's train settings,
//! and the train after them stored with the effects of their actions, in
//! one decision. Behind `ship_train` (off by default): the queue's next
//! look enqueues every queued story, GitHub's answer to a car's build and
//! the car's proof verdict come back here.
//!
//! Owns: [`Ship::on_train_events`], [`Ship::advance_train`],
//! [`Ship::train_verdict`] and mapping `TrainAction`s to effects and
//! proof runs. Must not: decide (the core does) or write to GitHub
//! (effects do).
//!
//! The one idea a reader needs: **the train is stored only with what it
//! asked for.** A train whose actions the shell cannot perform yet (a
//! landing, a refusal, a flaky event, a cancel, two proofs at once) is
//! left as it was (the decision says which action), so the stored train
//! never waits for an answer that will not come.

use std::collections::BTreeSet;

use super::*;
use taskgate_core::ship::{
    build_car_effect, pinned_head, Entry, FailingTest, Priority, ProofVerdict, TrainAction,
    TrainEvent,
};
use taskgate_core::task::RunSubject;

impl Ship {
    /// Train events of `l`'s repository, with `l`'s config (the car's
    /// first story's): the stored train after them, its effects, and the
    /// proof run it asks for.
    pub(super) async fn on_train_events(
        &self,
        l: &Located,
        events: Vec<TrainEvent>,
    ) -> Result<ShipOutcome, ShipError> {
        let mut train = self.store.ship_train(&l.repo).await?;
        let mut actions = Vec::new();
        for event in events {
            let (next, more) = ship::on_train_event(&train, event, l.config.train_settings());
            train = next;
            actions.extend(more);
        }
        let mut effects = Vec::new();
        let mut proof_run = None;
        for action in &actions {
            match action {
                TrainAction::Build { car, base, heads } => {
                    effects.push(build_car_effect(&l.repo, *car, base, heads));
                }
                TrainAction::Prove { car, commit } if proof_run.is_none() => {
                    let first = train.cars.iter().find(|c| c.id == *car);
                    let Some(story) = first.and_then(|c| c.stories.first()) else {
                        continue;
                    };
                    proof_run = Some(ProofRun {
                        repo: l.repo.clone(),
                        story: story.story.clone(),
                        task: RunSubject::ShipProof,
                        commit: commit.clone(),
                    });
                }
                other => {
                    return Ok(Decision::nothing(format!(
                        "ship train: left as it was, the shell does not perform {other:?} yet"
                    ))
                    .into())
                }
            }
        }
        let cars = train.cars.len();
        let outcome = format!("ship train: {} actions, {cars} cars", actions.len());
        Ok(ShipOutcome {
            decision: Decision {
                changes: vec![Change::TrainUpdated {
                    repo: l.repo.clone(),
                    train: Box::new(train),
                }],
                effects,
                outcome,
            },
            proof_run,
        })
    }

    /// The queue's next look with the train on: the default branch's head
    /// as the train's base, and every queued story enqueued in the order
    /// the store lists them (a story already in the train keeps its place).
    pub(super) async fn advance_train(
        &self,
        l: &Located,
        base: CommitSha,
        stories: &[(StoryId, StoryRecord)],
    ) -> Result<ShipOutcome, ShipError> {
        let mut events = vec![TrainEvent::MainMoved { head: base }];
        for (story, record) in stories {
            if record.state != ShipState::Queued {
                continue;
            }
            if let Some(head) = pinned_head(record) {
                events.push(TrainEvent::Enqueued(Entry {
                    story: story.clone(),
                    head: head.clone(),
                    priority: record
                        .shipped_by
                        .as_ref()
                        .map_or(Priority::Normal, |by| by.priority),
                    queued_at_ms: l.now_ms,
                    files: BTreeSet::new(),
                    conflicted: false,
                }));
            }
        }
        self.on_train_events(l, events).await
    }

    /// A ship proof's verdict on the commit of a car being proven: the
    /// train's `Proved`; `None` when the commit is no car's (the one-story
    /// queue's proof).
    pub(super) async fn train_verdict(
        &self,
        l: &Located,
        v: &ProofVerdict,
    ) -> Result<Option<Decision>, ShipError> {
        let train = self.store.ship_train(&l.repo).await?;
        let car = train
            .cars
            .iter()
            .find(|c| c.proving && c.built.as_ref().is_some_and(|b| b.commit == v.commit));
        let Some(car) = car else {
            return Ok(None);
        };
        let failing = v
            .failures
            .iter()
            .map(|name| FailingTest {
                name: name.clone(),
                file: None,
            })
            .collect();
        let event = TrainEvent::Proved {
            car: car.id,
            commit: v.commit.clone(),
            failing,
        };
        Ok(Some(self.on_train_events(l, vec![event]).await?.decision))
    }
}
