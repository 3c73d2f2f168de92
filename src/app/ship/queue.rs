//! The ship queue's shell: internal ship events (a request from the API,
//! GitHub's answers to the proving merge and the landing, the queue's
//! next look) and the proof's verdict, each read into the pure
//! `core::ship` transitions with what they need from the store and
//! GitHub (the base and story heads, the freeze in force).
//!
//! Owns: picking up the next queued story ([`Ship::advance`]) and reading
//! the commits a proof starts from. Must not: decide (the core does), run
//! the proof (the runs' `@ship` pseudo task does, on the processor's
//! call) or write to GitHub (effects do).

use super::*;
use taskgate_core::ids::StoryId;
use taskgate_core::ship::{ProofStep, ProofVerdict};
use taskgate_core::task::RunSubject;
use taskgate_core::webhook::PushEvent;

/// A ship event's decision, and the proof runs it asks for (the ship
/// train proves several cars at once).
#[derive(Default)]
pub struct ShipOutcome {
    pub decision: Decision,
    pub proof_runs: Vec<ProofRun>,
    /// Stories the ship train refused on a failed proof, in this
    /// decision: the failure loop of that proof files their todo.
    pub refused: Vec<StoryId>,
    /// Proof runs to stop: those of ship train cars dissolved.
    pub stopped: Vec<ProofRun>,
}

/// A proof to run: the story's ship or rollback proof at a commit.
pub struct ProofRun {
    pub repo: RepoName,
    pub story: StoryId,
    pub task: RunSubject,
    pub commit: CommitSha,
    /// A ship train car's proof: the stories whose gates it runs (the
    /// run is recorded on `story`, the car's first). Empty: `story`'s own.
    pub gates_of: Vec<StoryId>,
}

impl From<Decision> for ShipOutcome {
    fn from(decision: Decision) -> Self {
        ShipOutcome {
            decision,
            ..ShipOutcome::default()
        }
    }
}

impl Located {
    pub(super) fn outcome(
        &self,
        d: ShipDecision,
        step: ProofStep,
        task: RunSubject,
    ) -> ShipOutcome {
        let proof_runs = match step {
            ProofStep::Run(commit) => vec![ProofRun {
                repo: self.repo.clone(),
                story: self.story.clone(),
                task,
                commit,
                gates_of: Vec::new(),
            }],
            ProofStep::None => vec![],
        };
        ShipOutcome {
            decision: self.finish(d),
            proof_runs,
            ..ShipOutcome::default()
        }
    }
}

impl Ship {
    /// An internal ship event: an API ship request, GitHub refusing a
    /// story's merge or dispatch, the proving commit made or refused, the
    /// landing refused because the base moved, a train car built or
    /// conflicting (on its first story), or the queue to look at.
    pub async fn on_ship_event(&self, e: ShipEvent) -> Result<ShipOutcome, ShipError> {
        if e.what == ShipWhat::Advance {
            return self.advance(&e.repo).await;
        }
        if let ShipWhat::RulesChanged { .. } = &e.what {
            // Read at the landing: what the next proof is made from too.
            self.rules.forget(&e.repo);
        }
        let Some(mut l) = self.locate(&e.repo, &e.story, None).await? else {
            return Ok(Decision::nothing(format!("story {} is not known", e.story)).into());
        };
        if let Some(out) = self.on_train_ship_event(&mut l, &e.what).await? {
            return Ok(out);
        }
        let d = match e.what {
            ShipWhat::Request {
                actor,
                login,
                via,
                priority,
            } => {
                let by = Shipper {
                    user: actor,
                    login,
                    via,
                    priority,
                };
                return Ok(self.request(l, by).await?.0.into());
            }
            ShipWhat::MergeRefused { why } => ship::on_merge_refused(&l.record, &why, &l.ctx()),
            ShipWhat::WorkflowRefused { workflow, why } => {
                self.read_default_branch(&mut l).await?;
                ship::on_workflow_refused(&l.record, workflow, &why, &l.ctx())
            }
            ShipWhat::ProofCommit { round, commit } => {
                // Its parents as GitHub has them now: checked before it
                // runs (`core::ship::proof_parents`).
                let client = self.client(&l).await?;
                let parents = RepoClient::new(&client, &l.repo)
                    .commit_parents(&commit)
                    .await?;
                let (d, step) =
                    ship::on_proof_commit(&l.record, round, &commit, &parents, &l.ctx());
                return Ok(l.outcome(d, step, RunSubject::ShipProof));
            }
            ShipWhat::RevertCommit { round, commit } => {
                self.read_default_branch(&mut l).await?;
                let gates = !l.config.rollback_gates.is_empty();
                let (d, step) = ship::on_revert_commit(&l.record, round, &commit, gates, &l.ctx());
                return Ok(l.outcome(d, step, RunSubject::RollbackProof));
            }
            ShipWhat::RevertRefused { round, why } => {
                self.read_default_branch(&mut l).await?;
                ship::on_revert_failed(&l.record, round, &why, &l.ctx())
            }
            ShipWhat::RevertBaseMoved { round } => {
                self.read_default_branch(&mut l).await?;
                ship::on_revert_base_moved(&l.record, round, &l.ctx())
            }
            ShipWhat::ProofConflict { round, why } => {
                ship::on_proof_failed(&l.record, None, round, vec![why], &l.ctx())
            }
            ShipWhat::BaseMoved { round } => ship::on_base_moved(&l.record, round, &l.ctx()),
            ShipWhat::RulesChanged { round, rules } => {
                self.read_default_branch(&mut l).await?;
                ship::on_rules_changed(&l.record, round, &rules, &l.ctx())
            }
            ShipWhat::LandRefused {
                round,
                status: _,
                message,
                approvals,
            } => {
                self.read_default_branch(&mut l).await?;
                let found = ship::violations(&message);
                let said = (message.as_str(), approvals.as_ref());
                ship::on_land_refused(&l.record, round, &found, said, &l.ctx())
            }
            ShipWhat::LandedUntested { round, commit } => {
                self.read_default_branch(&mut l).await?;
                let (d, step) = ship::on_landed_untested(&l.record, round, &commit, &l.ctx());
                return Ok(l.outcome(d, step, RunSubject::ShipProof));
            }
            ShipWhat::LandFailed { round, why } => {
                self.read_default_branch(&mut l).await?;
                ship::on_land_failed(&l.record, round, &why, &l.ctx())
            }
            ShipWhat::CarBuilt { .. }
            | ShipWhat::CarConflict { .. }
            | ShipWhat::CarStoryRefused { .. }
            | ShipWhat::CarLanded { .. }
            | ShipWhat::CarFailed { .. }
            | ShipWhat::Advance => unreachable!("handled above"),
        };
        Ok(l.finish(d).into())
    }

    pub(in crate::app::ship) async fn read_default_branch(
        &self,
        l: &mut Located,
    ) -> Result<(), ShipError> {
        if l.default_branch.is_empty() {
            let client = self.client(l).await?;
            l.default_branch = RepoClient::new(&client, &l.repo).default_branch().await?;
        }
        Ok(())
    }

    /// The repository's queue moves on: the first queued story starts
    /// proving on the default branch's head, unless a story is proving
    /// or landing, or the repository is frozen.
    pub async fn advance(&self, repo: &RepoName) -> Result<ShipOutcome, ShipError> {
        let stories = self.store.story_records(repo).await?;
        // The train moves on even with nobody waiting: a story that left
        // the queue must leave its batch.
        let next = ship::next_in_queue(&stories, false).map(|(story, _)| story.clone());
        let next = match next {
            Some(story) => Some(story),
            None => self.a_story_in_train(repo).await?,
        };
        let Some(story) = next.as_ref() else {
            return Ok(Decision::nothing("ship queue: nothing to start").into());
        };
        let Some(mut l) = self.locate(repo, story, None).await? else {
            return Ok(Decision::nothing("ship queue: the next story is not known").into());
        };
        if let Some(why) = &l.frozen {
            return Ok(Decision::nothing(format!("ship queue waits: frozen ({why})")).into());
        }
        let client = self.client(&l).await?;
        let gh = RepoClient::new(&client, repo);
        l.default_branch = gh.default_branch().await?;
        let missing = |what: &str| ShipError::Payload(format!("{what} has no head"));
        let base = gh
            .branch_head(&l.default_branch)
            .await?
            .ok_or_else(|| missing(&l.default_branch))?;
        let rules = self.branch_rules(&gh, repo, &l.default_branch).await?;
        // The train lands a batch as one fast-forward: only where the
        // rules allow one (`core::ship::route`), else one story at a time.
        let serial_because = l.config.ship_train.then(|| ship::train_unfit(&rules));
        // GitHub refused to build a batch lately: one story at a time.
        let off = match serial_because {
            Some(None) => self.store.ship_train(repo).await?.off_at(l.now_ms).cloned(),
            _ => None,
        };
        if let (Some(None), None) = (serial_because, &off) {
            return self.advance_train(&l, (&gh, base), &stories).await;
        }
        // The story branch's head now, compared with the pinned head (what
        // was shipped): only the pinned head is proven.
        let head = gh
            .branch_head(&l.branch)
            .await?
            .ok_or_else(|| missing(&l.branch))?;
        let d = match (serial_because.flatten(), off) {
            (Some(why), _) => {
                ship::start_proof_serially(&l.record, (&base, &head), &rules, &l.ctx(), why)
            }
            (None, Some(off)) => {
                ship::start_proof_train_off(&l.record, (&base, &head), &rules, &l.ctx(), &off)
            }
            (None, None) => ship::start_proof(&l.record, (&base, &head), &rules, &l.ctx()),
        };
        Ok(l.finish(d).into())
    }

    /// The proof's run ended: land the tested commit, or refuse the ship
    /// (or the rollback's revert); with the ship train, move the train
    /// on (which may start more proofs).
    pub async fn on_proof_verdict(&self, v: ProofVerdict) -> Result<ShipOutcome, ShipError> {
        let Some(mut l) = self.locate(&v.repo, &v.story, None).await? else {
            return Ok(Decision::nothing("proof of an unknown story").into());
        };
        self.read_default_branch(&mut l).await?;
        let train = v.task == RunSubject::ShipProof && l.config.ship_train;
        if train {
            if let Some(out) = self.train_verdict(&l, &v).await? {
                return Ok(out);
            }
            if l.record.state == ShipState::Queued {
                // A run of a car dissolved since (`TrainAction::Cancel`).
                return Ok(
                    Decision::nothing("a proof of a ship batch no longer in the train").into(),
                );
            }
        }
        Ok(Self::serial_verdict(l, v).into())
    }

    /// The one-story queue's proof (or a rollback's) ended.
    fn serial_verdict(l: Located, v: ProofVerdict) -> Decision {
        if v.task == RunSubject::RollbackProof {
            let d = if v.passed {
                ship::on_revert_passed(&l.record, &v.commit, &l.ctx())
            } else {
                let round = l.record.rollback.as_ref().map_or(0, |r| r.round);
                let why = format!(
                    "Its gates failed on `{}`: {}",
                    v.commit.short(),
                    v.failures.join("; ")
                );
                ship::on_revert_failed(&l.record, round, &why, &l.ctx())
            };
            return l.finish(d);
        }
        if l.record.landed_proving.as_ref() == Some(&v.commit) {
            let verdict = (v.passed, v.failures.as_slice());
            let d = ship::on_landed_proven(&l.record, &v.commit, verdict, &l.ctx());
            return l.finish(d);
        }
        let d = if v.passed {
            ship::on_proof_passed(&l.record, &v.commit, &l.ctx())
        } else {
            let round = l.record.proof.as_ref().map_or(0, |p| p.round);
            ship::on_proof_failed(&l.record, Some(&v.commit), round, v.failures, &l.ctx())
        };
        l.finish(d)
    }

    /// A push to the default branch while a story proves on an older
    /// base: its proof can no longer land, so it is proven again at once
    /// (rather than after its run, when the fast-forward would be refused).
    pub async fn on_default_branch_push(&self, p: &PushEvent) -> Result<Decision, ShipError> {
        let default = p.default_branch.as_deref();
        if !p.to_default_branch() || p.deleted {
            return Ok(Decision::nothing(""));
        }
        let repo = &p.repo;
        let stories = self.store.story_records(repo).await?;
        if let Some(d) = self.train_main_moved(p, &stories).await? {
            return Ok(d);
        }
        let moved = stories.iter().find(|(_, r)| {
            r.state == ShipState::Proving && r.proof.as_ref().is_some_and(|f| f.base != p.after)
        });
        let Some((story, record)) = moved else {
            return Ok(Decision::nothing(""));
        };
        let round = record.proof.as_ref().map_or(0, |f| f.round);
        let Some(l) = self.locate(repo, story, default).await? else {
            return Ok(Decision::nothing(""));
        };
        Ok(l.finish(ship::on_base_moved(&l.record, round, &l.ctx())))
    }

    /// A push to a story branch (`taskgate/story-<n>`): a story queued or
    /// proving on another head leaves the queue (`core::ship::pin`).
    pub async fn on_story_branch_push(&self, p: &PushEvent) -> Result<Decision, ShipError> {
        let Some(issue) = p.story_branch() else {
            return Ok(Decision::nothing(""));
        };
        if p.deleted {
            return Ok(Decision::nothing(""));
        }
        let Some(story) = self.store.story_by_issue(&p.repo, issue).await? else {
            return Ok(Decision::nothing(""));
        };
        let default = p.default_branch.as_deref();
        let Some(l) = self.locate(&p.repo, &story, default).await? else {
            return Ok(Decision::nothing(""));
        };
        Ok(l.finish(ship::on_story_head_moved(&l.record, &p.after, &l.ctx())))
    }

    /// A `pull_request` webhook of a rollback's revert PR (head
    /// `taskgate/revert-<story issue>`): labelled when it appears; merged,
    /// the story is rolled back.
    pub(super) async fn on_revert_pull_request(
        &self,
        p: &taskgate_core::webhook::PullRequestEvent,
        issue: IssueNumber,
    ) -> Result<Handled, ShipError> {
        use taskgate_core::webhook::action::PullRequestAction;
        let default = p.default_branch.as_deref();
        let Some(story) = self.store.story_by_issue(&p.repo, issue).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(l) = self.locate(&p.repo, &story, default).await? else {
            return Ok(Handled::NotMine);
        };
        let number = p.number;
        let d = match &p.action {
            PullRequestAction::Opened | PullRequestAction::Reopened => {
                ship::on_revert_pr_seen(&l.record, number, &l.ctx())
            }
            PullRequestAction::Closed if p.merged => {
                ship::on_revert_merged(&l.record, number, &l.ctx())
            }
            action => {
                return Ok(Handled::Decided(Decision::nothing(format!(
                    "revert PR {action}: nothing to do"
                ))))
            }
        };
        Ok(Handled::Decided(l.finish(d)))
    }

    /// `/taskgate rollback [--now <reason>]` on a story's issue or PR, by
    /// a maintainer (the dispatcher checked): the decision that starts the
    /// rollback, or why not. Not its own when the issue is not a story's.
    pub async fn on_rollback_command(
        &self,
        repo: &RepoName,
        issue_or_pr: IssueNumber,
        actor: (UserId, &str),
        now: Option<&str>,
    ) -> Result<Handled, ShipError> {
        let Some(story) = self.story_of(repo, issue_or_pr).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(mut l) = self.locate(repo, &story, None).await? else {
            return Ok(Handled::NotMine);
        };
        self.read_default_branch(&mut l).await?;
        let ask = ship::RollbackAsk {
            by: Some(Shipper {
                user: Some(actor.0),
                login: actor.1.to_owned(),
                via: ShipVia::Command,
                priority: Default::default(),
            }),
            because: format!("@{} asked for it", actor.1),
            now: now.map(str::to_owned),
        };
        let audit = ship::rollback_audit(&ask, &l.ctx());
        Ok(match ship::start_rollback(&l.record, ask, &l.ctx()) {
            Ok(d) => {
                let mut decision = l.finish(d);
                decision.changes.extend(audit.map(|e| e.change()));
                Handled::Decided(decision)
            }
            Err(why) => Handled::Refused(Refused {
                decision: Decision::nothing(format!("rollback refused: {why}")),
                refusal: Refusal::Rollback(why),
            }),
        })
    }

    /// Why nothing may land in `repo` now, if anything stops it.
    pub(super) async fn frozen(
        &self,
        repo: &RepoName,
        config: &RepoConfig,
        now_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        let manual = self.store.repo_freeze(repo).await?;
        let now_s = now_ms.div_euclid(1000);
        Ok(
            taskgate_core::freeze::freeze_in_force(manual.as_ref(), &config.freeze_windows, now_s)
                .map(|f| f.render()),
        )
    }
}
