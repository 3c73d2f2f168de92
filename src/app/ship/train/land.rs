//! The stories of a ship train's car as it lands or is refused: each
//! story located and its record moved by the core (`core::ship::in_train`),
//! and GitHub's answers to the car's fast-forward (told on its first
//! story) read back into the train.
//!
//! Owns: [`Ship::on_train_ship_event`] (a car built, conflicting, not
//! built, landed, or its landing refused or stopped by rules changed),
//! [`Ship::land_car`], [`Ship::count_car_proof`] and
//! [`Ship::refuse_in_train`]. Must not:
//! decide (the core does) or write to GitHub (effects do).

use super::*;
use taskgate_core::ship::{BatchStory, BranchRules, Car, CarId, CarLanding, Refusal};

/// What GitHub answered to a car's fast-forward, other than done.
enum LandingAnswer<'a> {
    /// The default branch moved: the car is rebuilt on it.
    BaseMoved,
    /// A rule refused it (GitHub's message).
    Refused(&'a str),
    /// It failed otherwise (a 404, 5xx past the retries).
    Failed(&'a str),
    /// The rules read at the landing no longer allow a batch's
    /// fast-forward: nothing landed.
    RulesChanged(&'a BranchRules),
}

impl Ship {
    /// An internal ship event of the train: a car built, conflicting or
    /// landed, or GitHub's answer to a car's fast-forward (told on its
    /// first story). `None` when it is the one-story queue's.
    pub(in crate::app::ship) async fn on_train_ship_event(
        &self,
        l: &mut Located,
        what: &ShipWhat,
    ) -> Result<Option<ShipOutcome>, ShipError> {
        let (round, answer) = match what {
            ShipWhat::CarBuilt { car, built } => {
                let event = TrainEvent::Built {
                    car: *car,
                    built: built.clone(),
                };
                return Ok(Some(self.on_train_events(l, vec![event]).await?));
            }
            ShipWhat::CarConflict { car, conflict, .. } => {
                let event = TrainEvent::Conflict {
                    car: *car,
                    story: conflict.clone(),
                };
                return Ok(Some(self.on_train_events(l, vec![event]).await?));
            }
            ShipWhat::CarStoryRefused {
                car,
                story,
                message,
            } => {
                let event = TrainEvent::StoryRefused {
                    car: *car,
                    story: story.clone(),
                    message: message.clone(),
                };
                return Ok(Some(self.on_train_events(l, vec![event]).await?));
            }
            ShipWhat::CarLanded { car } => return Ok(Some(self.on_car_landed(l, *car).await?)),
            ShipWhat::CarFailed { car, why, refused } => {
                let event = TrainEvent::CarFailed {
                    car: *car,
                    why: why.clone(),
                    refused: *refused,
                    at_ms: l.now_ms,
                };
                let mut out = self.on_train_events(l, vec![event]).await?;
                if *refused {
                    // The train stepped aside: the one-story queue looks at
                    // its stories once this is stored.
                    let repo = l.repo.clone();
                    (out.decision.effects).push(taskgate_core::Effect::AdvanceShipQueue { repo });
                }
                return Ok(Some(out));
            }
            ShipWhat::BaseMoved { round } => (*round, LandingAnswer::BaseMoved),
            ShipWhat::LandRefused { round, message, .. } => {
                (*round, LandingAnswer::Refused(message))
            }
            ShipWhat::LandFailed { round, why } => (*round, LandingAnswer::Failed(why)),
            ShipWhat::RulesChanged { round, rules } => (*round, LandingAnswer::RulesChanged(rules)),
            _ => return Ok(None),
        };
        self.on_car_landing_answer(l, round, answer).await
    }

    /// A story of the repository located, with the default branch known.
    async fn locate_in_train(
        &self,
        l: &Located,
        story: &StoryId,
    ) -> Result<Option<Located>, ShipError> {
        let mut found = self.locate(&l.repo, story, Some(&l.default_branch)).await?;
        if let Some(found) = found.as_mut() {
            self.read_default_branch(found).await?;
        }
        Ok(found)
    }

    /// The stories of a batch as the comments name them.
    pub(super) async fn batch(
        &self,
        l: &Located,
        stories: &[StoryId],
    ) -> Result<Vec<BatchStory>, ShipError> {
        let mut batch = Vec::new();
        for story in stories {
            if let Some(s) = self.locate(&l.repo, story, None).await? {
                batch.push(BatchStory {
                    story: story.clone(),
                    issue: s.issue,
                    pr: s.record.pr,
                });
            }
        }
        Ok(batch)
    }

    /// `TrainAction::Land`: each story of the car `shipping` at its
    /// commit, the fast-forward asked on the first.
    pub(super) async fn land_car(
        &self,
        l: &Located,
        car: CarId,
        (base, commit): (&CommitSha, &CommitSha),
        stories: &[StoryId],
    ) -> Result<Decision, ShipError> {
        let mut decision = Decision::default();
        for (i, story) in stories.iter().enumerate() {
            let Some(s) = self.locate_in_train(l, story).await? else {
                continue;
            };
            let landing = CarLanding {
                car,
                base,
                commit,
                first: i == 0,
            };
            decision.merge(s.finish(ship::on_car_landing(&s.record, landing, &s.ctx())));
        }
        Ok(decision)
    }

    /// `TrainAction::Prove`: the run counted on the car's first story,
    /// whose run it is.
    pub(super) async fn count_car_proof(
        &self,
        l: &Located,
        story: &StoryId,
    ) -> Result<Decision, ShipError> {
        let Some(s) = self.locate(&l.repo, story, Some(&l.default_branch)).await? else {
            return Ok(Decision::nothing(format!("story {story} is not known")));
        };
        Ok(s.finish(ship::on_car_proof_started(&s.record)))
    }

    /// `TrainAction::Refuse`: today's refusal, with the batch it was
    /// tried in.
    pub(super) async fn refuse_in_train(
        &self,
        l: &Located,
        story: &StoryId,
        why: &Refusal,
    ) -> Result<Decision, ShipError> {
        let Some(s) = self.locate_in_train(l, story).await? else {
            return Ok(Decision::nothing(format!("story {story} is not known")));
        };
        let batch = match why {
            Refusal::Failed { batch, .. } => self.batch(l, batch).await?,
            Refusal::Conflict { .. } | Refusal::Rules { .. } => vec![],
        };
        Ok(s.finish(ship::on_train_refused(&s.record, why, &batch, &s.ctx())))
    }

    /// The car landing now, if `story` is in it.
    async fn landing_car(&self, l: &Located) -> Result<Option<Car>, ShipError> {
        let train = self.store.ship_train(&l.repo).await?;
        Ok(train
            .cars
            .into_iter()
            .next()
            .filter(|c| c.landing && c.stories.iter().any(|e| e.story == l.story)))
    }

    /// The default branch was fast-forwarded to car `car`: each story PR
    /// is told its batch, and the train moves on (the car behind lands).
    async fn on_car_landed(&self, l: &Located, car: CarId) -> Result<ShipOutcome, ShipError> {
        let Some(landing) = self.landing_car(l).await?.filter(|c| c.id == car) else {
            return Ok(Decision::nothing(format!("ship batch {car} is not landing")).into());
        };
        let stories: Vec<StoryId> = landing.stories.iter().map(|e| e.story.clone()).collect();
        let batch = self.batch(l, &stories).await?;
        let mut told = Decision::default();
        for story in &stories {
            let Some(s) = self.locate_in_train(l, story).await? else {
                continue;
            };
            let d = ship::on_car_landed(&s.record, (car, landing.reused), &batch, &s.ctx());
            told.merge(s.finish(d));
        }
        let mut out = self
            .on_train_events(l, vec![TrainEvent::Landed { car }])
            .await?;
        told.merge(out.decision);
        out.decision = told;
        Ok(out)
    }

    /// GitHub's answer to the fast-forward of the car `l`'s story lands
    /// in, other than done; `None` when the story is in no car landing
    /// (the one-story queue's landing).
    async fn on_car_landing_answer(
        &self,
        l: &mut Located,
        round: u32,
        answer: LandingAnswer<'_>,
    ) -> Result<Option<ShipOutcome>, ShipError> {
        if !l.config.ship_train {
            return Ok(None);
        }
        let Some(car) = self.landing_car(l).await? else {
            return Ok(None);
        };
        if l.record.proof.as_ref().is_none_or(|p| p.round != round) {
            return Ok(None);
        }
        self.read_default_branch(l).await?;
        let mut told = Decision::default();
        for entry in &car.stories {
            let Some(s) = self.locate_in_train(l, &entry.story).await? else {
                continue;
            };
            let round = s.record.proof.as_ref().map_or(0, |p| p.round);
            let d = match answer {
                LandingAnswer::BaseMoved => ship::on_car_land_undone(&s.record),
                LandingAnswer::Refused(message) => {
                    let found = ship::violations(message);
                    ship::on_land_refused(&s.record, round, &found, (message, None), &s.ctx())
                }
                LandingAnswer::Failed(why) => ship::on_land_failed(&s.record, round, why, &s.ctx()),
                LandingAnswer::RulesChanged(rules) => {
                    ship::on_rules_changed(&s.record, round, rules, &s.ctx())
                }
            };
            told.merge(s.finish(d));
        }
        let event = match answer {
            LandingAnswer::BaseMoved => {
                let client = self.client(l).await?;
                let gh = RepoClient::new(&client, &l.repo);
                let Some(head) = gh.branch_head(&l.default_branch).await? else {
                    return Err(ShipError::Payload(format!(
                        "{} has no head",
                        l.default_branch
                    )));
                };
                TrainEvent::MainMoved { head }
            }
            LandingAnswer::Refused(_) | LandingAnswer::Failed(_) => {
                TrainEvent::LandRefused { car: car.id }
            }
            LandingAnswer::RulesChanged(_) => TrainEvent::RulesChanged { car: car.id },
        };
        // The stories' records first: a car landing again at once (its
        // tree proven before) moves them on from there.
        let mut out = self.on_train_events(l, vec![event]).await?;
        told.merge(out.decision);
        out.decision = told;
        Ok(Some(out))
    }
}
