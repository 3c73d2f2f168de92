//! The ship train's shell (issue 31): train events of a repository read
//! into `core::ship::on_train_event` with the repository's train settings,
//! and the train after them stored with the effects of their actions, in
//! one decision. Behind `ship_train` (off by default): the queue's next
//! look enqueues every queued story, GitHub's answers to a car's build and
//! landing and the car's proof verdict come back here.
//!
//! Owns: [`Ship::on_train_events`], [`Ship::advance_train`],
//! [`Ship::train_verdict`] and mapping `TrainAction`s to effects, story
//! decisions and proof runs (`land`: the landing and refusals of the
//! stories of a car). Must not: decide (the core does) or write to GitHub
//! (effects do).
//!
//! The one idea a reader needs: **the train is stored with what it asked
//! for.** Each action's effects, the story records it changes and the
//! proof runs it starts are in the same decision as the train after it,
//! so the stored train never waits for an answer that will not come.

mod flaky;
mod freeze;
mod land;
mod notes;

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use taskgate_core::ship::{
    build_car_effect, pinned_head, Entry, ProofVerdict, Train, TrainAction, TrainEvent,
};
use taskgate_core::task::RunSubject;

impl Ship {
    /// Train events of `l`'s repository, with `l`'s config (the car's
    /// first story's): the stored train after them, its effects, the
    /// story decisions of its landings and refusals, and the proof runs
    /// it asks for.
    pub(super) async fn on_train_events(
        &self,
        l: &Located,
        events: Vec<TrainEvent>,
    ) -> Result<ShipOutcome, ShipError> {
        let before = self.store.ship_train(&l.repo).await?;
        // A car's proof runs each of its stories' gates, from their plans
        // (in its tree) and `ship_gates` (not in it): trees proven with
        // other `ship_gates` are not reused. Whose gates proved a tree is
        // remembered with it (`ProvenTree`).
        let gates = format!("every-story;ship_gates={}", l.config.ship_gates.join(","));
        let story_gates = self.story_gate_digests(l, &before, &events).await?;
        let mut train = before.clone().with_gates(&gates, &story_gates);
        let mut actions = Vec::new();
        for event in events {
            let (next, more) =
                ship::on_train_event(&train, event, l.config.train_settings(), l.now_ms);
            train = next;
            actions.extend(more);
        }
        if let Some(out) = self.hold_for_freeze(l, (&before, &train), &actions).await? {
            return Ok(out);
        }
        let cars = train.cars.len();
        let mut out = ShipOutcome {
            decision: Decision {
                changes: vec![],
                effects: vec![],
                outcome: format!("ship train: {} actions, {cars} cars", actions.len()),
            },
            ..ShipOutcome::default()
        };
        for action in &actions {
            self.perform_train_action(l, (&before, &train), action, &mut out)
                .await?;
        }
        out.decision.changes.insert(
            0,
            Change::TrainUpdated {
                repo: l.repo.clone(),
                train: Box::new(train),
            },
        );
        Ok(out)
    }

    /// A digest of each story's own gate definitions (its stored plan,
    /// as a proof would run it now), for every story in `train` or
    /// entering it with `events`: a plan that changed them, in a file or
    /// a comment, has the trees its gates proved proven again.
    async fn story_gate_digests(
        &self,
        l: &Located,
        train: &Train,
        events: &[TrainEvent],
    ) -> Result<BTreeMap<StoryId, String>, ShipError> {
        let entering = events.iter().filter_map(|e| match e {
            TrainEvent::Enqueued(entry) => Some(&entry.story),
            _ => None,
        });
        let riding = (train.cars.iter()).flat_map(|c| c.stories.iter().map(|e| &e.story));
        let waiting = train.waiting.iter().map(|e| &e.story);
        let stories: BTreeSet<&StoryId> = entering.chain(riding).chain(waiting).collect();
        let mut digests = BTreeMap::new();
        for story in stories {
            if let Some(stored) = self.store.story(&l.repo, story).await? {
                // The store's parsed plans: a plan unchanged since its last
                // read is not parsed again.
                let plan = self.store.plans().parse(&stored.plan);
                let digest = crate::runner::gates_digest(plan.as_deref(), &stored.files);
                digests.insert(story.clone(), digest);
            }
        }
        Ok(digests)
    }

    /// One action of the train (`trains`: before and after the events).
    async fn perform_train_action(
        &self,
        l: &Located,
        (before, after): (&Train, &Train),
        action: &TrainAction,
        out: &mut ShipOutcome,
    ) -> Result<(), ShipError> {
        match action {
            TrainAction::Build { car, base, heads } => {
                (out.decision.effects).push(build_car_effect(&l.repo, *car, base, heads));
            }
            TrainAction::Prove {
                car,
                commit,
                gates_of,
            } => {
                let first = after.cars.iter().find(|c| c.id == *car);
                if let Some(story) = first.and_then(|c| c.stories.first()) {
                    out.proof_runs.push(ProofRun {
                        repo: l.repo.clone(),
                        story: story.story.clone(),
                        task: RunSubject::ShipProof,
                        commit: commit.clone(),
                        gates_of: gates_of.clone(),
                    });
                    let d = self.count_car_proof(l, &story.story).await?;
                    out.decision.merge(d);
                    let notes = self.tell_car_proving(l, after, (*car, commit)).await?;
                    out.decision.merge(notes);
                }
            }
            TrainAction::Land {
                car,
                commit,
                stories,
                ..
            } => {
                let base = after.cars.iter().find(|c| c.id == *car);
                let Some(base) = base.and_then(|c| c.base.clone()) else {
                    return Ok(());
                };
                let d = self.land_car(l, *car, (&base, commit), stories).await?;
                out.decision.merge(d);
            }
            TrainAction::Refuse { story, why } => {
                let d = self.refuse_in_train(l, story, why).await?;
                out.decision.merge(d);
                if matches!(why, taskgate_core::ship::Refusal::Failed { .. }) {
                    out.refused.push(story.clone());
                }
            }
            TrainAction::Flaky {
                car,
                commit,
                tests,
                retried,
            } => {
                // A retry's runs are its first story's proof's attempts.
                let first = (before.cars.iter().find(|c| c.id == *car))
                    .and_then(|c| c.stories.first())
                    .filter(|_| *retried)
                    .map(|e| e.story.clone());
                let d = self.train_flaky(l, (*car, first), commit, tests).await?;
                out.decision.merge(d);
            }
            TrainAction::Wait { until_ms } => {
                // The batching wait: the queue is looked at when it ends
                // (sooner if another ship fills a car).
                (out.decision.effects).push(taskgate_core::Effect::WakeShipQueue {
                    repo: l.repo.clone(),
                    at_ms: *until_ms,
                });
                out.decision.outcome += "; waits for more stories";
            }
            TrainAction::Cancel { car } => {
                // A run of a car dissolved: its verdict would be ignored
                // (`train_verdict` finds no car proving that commit), so
                // it stops, and the runner proves the cars formed instead.
                let gone = before.cars.iter().find(|c| c.id == *car);
                let run = gone.and_then(|c| Some((c.stories.first()?, c.built.as_ref()?)));
                if let Some((first, built)) = run {
                    out.stopped.push(ProofRun {
                        repo: l.repo.clone(),
                        story: first.story.clone(),
                        task: RunSubject::ShipProof,
                        commit: built.commit.clone(),
                        gates_of: vec![],
                    });
                }
                out.decision.outcome += &format!("; ship batch {car} dissolved");
            }
        }
        Ok(())
    }

    /// The queue's next look with the train on: the default branch's head
    /// as the train's base, and every queued story enqueued in the order
    /// the store lists them (a story already in the train keeps its place),
    /// with the files it changes against the base (attribution's evidence).
    pub(super) async fn advance_train(
        &self,
        l: &Located,
        (gh, base): (&RepoClient<'_>, CommitSha),
        stories: &[(StoryId, StoryRecord)],
    ) -> Result<ShipOutcome, ShipError> {
        let train = self.store.ship_train(&l.repo).await?;
        let known = |story: &StoryId| {
            let is = |e: &Entry| e.story == *story;
            train.waiting.iter().any(is) || train.cars.iter().any(|c| c.stories.iter().any(is))
        };
        let mut events = vec![TrainEvent::MainMoved { head: base.clone() }];
        // Stories that left the queue (unshipped, their head moved, merged
        // past the gate, refused): out of their batch, which is rebuilt.
        let left = stories.iter().filter(|(story, record)| {
            known(story) && !matches!(record.state, ShipState::Queued | ShipState::Shipping)
        });
        events.extend(left.map(|(story, _)| TrainEvent::Dequeued(story.clone())));
        for (story, record) in stories {
            let Some(head) = pinned_head(record) else {
                continue;
            };
            if record.state != ShipState::Queued || known(story) {
                continue;
            }
            // Too many to list (`None`): no evidence, halves instead.
            let files = gh.changed_files(base.as_str(), head.as_str()).await?;
            events.push(TrainEvent::Enqueued(Entry {
                story: story.clone(),
                head: head.clone(),
                priority: record
                    .shipped_by
                    .as_ref()
                    .map_or(Priority::Normal, |by| by.priority),
                queued_at_ms: record.queued_at_ms.unwrap_or(l.now_ms),
                files: files.unwrap_or_default().into_iter().collect(),
                conflicted: false,
            }));
        }
        self.on_train_events(l, events).await
    }

    /// A story of the repository's train (waiting or in a batch), whose
    /// config the train reads when no story is queued.
    pub(super) async fn a_story_in_train(
        &self,
        repo: &RepoName,
    ) -> Result<Option<StoryId>, ShipError> {
        let train = self.store.ship_train(repo).await?;
        let mut all = train
            .waiting
            .iter()
            .chain(train.cars.iter().flat_map(|c| &c.stories));
        Ok(all.next().map(|e| e.story.clone()))
    }

    /// A push to the default branch of a repository whose queued stories
    /// ride the train: the train's `MainMoved` (its own landing's push is
    /// known to it). `None` when no queued story rides the train.
    pub(super) async fn train_main_moved(
        &self,
        p: &taskgate_core::webhook::PushEvent,
        stories: &[(StoryId, StoryRecord)],
    ) -> Result<Option<Decision>, ShipError> {
        let queued = stories
            .iter()
            .find(|(_, r)| matches!(r.state, ShipState::Queued | ShipState::Shipping));
        let Some((story, _)) = queued else {
            return Ok(None);
        };
        let default = p.default_branch.as_deref();
        let Some(l) = self.locate(&p.repo, story, default).await? else {
            return Ok(None);
        };
        if !l.config.ship_train {
            return Ok(None);
        }
        // A repository whose rules keep the train off ships one story at
        // a time (`core::ship::route`): its train is empty.
        let train = self.store.ship_train(&l.repo).await?;
        if train.waiting.is_empty() && train.cars.is_empty() {
            return Ok(None);
        }
        let head = p.after.clone();
        let out = self
            .on_train_events(&l, vec![TrainEvent::MainMoved { head }])
            .await?;
        Ok(Some(out.decision))
    }

    /// A ship proof's verdict on the commit of a car being proven: the
    /// train's `Proved`; `None` when the commit is no car's (the one-story
    /// queue's proof, or a car dissolved since: nothing to do).
    pub(super) async fn train_verdict(
        &self,
        l: &Located,
        v: &ProofVerdict,
    ) -> Result<Option<ShipOutcome>, ShipError> {
        let train = self.store.ship_train(&l.repo).await?;
        let car = train
            .cars
            .iter()
            .find(|c| c.proving && c.built.as_ref().is_some_and(|b| b.commit == v.commit));
        let Some(car) = car else {
            return Ok(None);
        };
        let failing = v.tests.clone();
        let event = TrainEvent::Proved {
            car: car.id,
            commit: v.commit.clone(),
            failing,
        };
        Ok(Some(self.on_train_events(l, vec![event]).await?))
    }
}
