//! The ship gate's shell (SPEC §7): finds the story a story PR, a workflow
//! run, a reconcile pass or a ship request is about, reads what the pure
//! `core::ship` needs (the story branch head, the default branch) and
//! returns its decision for the processor to store.
//!
//! Owns: locating a story by its PR (head `taskgate/story-<issue>`), by its
//! issue number, or by a deploy/validation run; [`Ship::on_ship_command`]
//! for the `/taskgate ship` dispatcher.
//! Must not: decide (the core does) or write to GitHub (effects do).
//!
//! The one idea a reader needs: **only the story's own runs.** A
//! `workflow_run` is taken as a deploy or validation run only when the
//! executor recorded its id from the dispatch, or — on hosts that do not
//! answer with the id — when it is the configured workflow on the default
//! branch and a story is waiting for exactly that workflow. Everything else
//! is left to the Actions runner (`app::actions_runs`).

mod merge_group;
mod pin;
mod queue;
mod rules_cache;
mod store;
mod train;
mod workflows;

use std::sync::Arc;

use octocrab::Octocrab;

use crate::app::Handled;
use crate::github::{GitHubApp, GitHubError, RepoClient};
use crate::store::StoreError;
use crate::transient::Transient;
pub use queue::{ProofRun, ShipOutcome};
pub use rules_cache::RulesCache;
pub(crate) use store::ShipStore;
use taskgate_core::config::{load_config, RepoConfig};
use taskgate_core::failure::LoopStats;
use taskgate_core::ids::{CommitSha, IssueNumber, RepoName, StoryId, UserId};
use taskgate_core::internal::Reconcile;
use taskgate_core::plan::Plan;
use taskgate_core::refusal::{Refusal, Refused};
use taskgate_core::ship::{
    self, Evaluation, Priority, ShipContext, ShipDecision, ShipEvent, ShipRefusal, ShipState,
    ShipVia, ShipWhat, Shipper, StoryRecord, StoryWorkflow, TaskProof,
};
use taskgate_core::story::{story_branch, Marker};
use taskgate_core::webhook::action::{PullRequestAction, WorkflowRunAction};
use taskgate_core::webhook::{PullRequestEvent, ShipPull, WorkflowRun, WorkflowRunEvent};
use taskgate_core::{Change, Decision};

#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Payload(String),
}

impl Transient for ShipError {
    fn is_transient(&self) -> bool {
        match self {
            ShipError::GitHub(g) => g.is_transient(),
            ShipError::Store(s) => s.is_transient(),
            ShipError::Payload(_) => false,
        }
    }
}

pub struct Ship {
    pub github: Arc<GitHubApp>,
    pub(crate) store: ShipStore,
    /// The `ship` label needs the same permission as `/taskgate ship`.
    pub permissions: Arc<crate::github::Permissions>,
    /// The default branches' rules, read before each proof.
    pub rules: Arc<RulesCache>,
    /// The merge groups GitHub's queues asked checks for: what each
    /// group's tree holds ahead of its own pull request.
    pub groups: Arc<merge_group::GroupsSeen>,
}

pub use taskgate_core::story::{revert_issue_of_branch, story_issue_of_branch};

/// A story with everything its transitions need.
pub(super) struct Located {
    repo: RepoName,
    story: StoryId,
    installation: taskgate_core::ids::InstallationId,
    /// Parsed once per text (`store::plans`), shared.
    plan: std::sync::Arc<Plan>,
    config: RepoConfig,
    marker: String,
    issue: IssueNumber,
    record: StoryRecord,
    /// The record as stored: a decision's record is compared with it.
    stored: StoryRecord,
    labels: std::collections::BTreeSet<String>,
    branch: String,
    default_branch: String,
    /// Why the repository is frozen, when it is.
    frozen: Option<String>,
    /// Other stories of the repository queued, proving or landing.
    queue_length: usize,
    now_ms: i64,
}

impl Located {
    fn ctx(&self) -> ShipContext<'_> {
        ShipContext {
            repo: &self.repo,
            story: &self.story,
            story_marker: &self.marker,
            story_issue: self.issue,
            title: &self.plan.story,
            story_branch: &self.branch,
            default_branch: &self.default_branch,
            config: &self.config,
            labels: &self.labels,
            frozen: self.frozen.as_deref(),
            now_ms: self.now_ms,
            queue_length: self.queue_length,
        }
    }

    pub(super) fn finish(&self, d: ShipDecision) -> Decision {
        let mut changes = Vec::new();
        if d.record != self.stored {
            changes.push(Change::ShipUpdated {
                repo: self.repo.clone(),
                story: self.story.clone(),
                record: Box::new(d.record),
            });
        }
        Decision {
            changes,
            effects: d.effects,
            outcome: format!("story {}: {}", self.story, d.outcome),
        }
    }
}

impl Ship {
    pub(super) async fn locate(
        &self,
        repo: &RepoName,
        story: &StoryId,
        default_branch: Option<&str>,
    ) -> Result<Option<Located>, StoreError> {
        let Some(saved) = self.store.story(repo, story).await? else {
            return Ok(None);
        };
        let Some(plan) = self.store.plans().parse(&saved.plan) else {
            return Ok(None);
        };
        let marker = Marker::Story {
            story: story.to_owned(),
        }
        .key();
        let Some(issue) = self.store.issue_record(repo, &marker).await? else {
            return Ok(None);
        };
        let record = self
            .store
            .story_record(repo, story)
            .await?
            .unwrap_or_default();
        let others: Vec<(StoryId, StoryRecord)> = self
            .store
            .story_records(repo)
            .await?
            .into_iter()
            .filter(|(s, _)| s != story)
            .collect();
        let now_ms = self.store.clock().now_ms();
        let config = load_config(saved.config.as_deref()).unwrap_or_default();
        Ok(Some(Located {
            frozen: self.frozen(repo, &config, now_ms).await?,
            queue_length: ship::queue_length(&others, Priority::Normal),
            now_ms,
            repo: repo.clone(),
            story: story.to_owned(),
            installation: saved.installation,
            config,
            plan,
            branch: story_branch(issue.number.get()),
            issue: issue.number,
            marker,
            stored: record.clone(),
            record,
            labels: self.store.labels(repo).await?,
            default_branch: default_branch.unwrap_or_default().to_owned(),
        }))
    }

    pub(super) async fn client(&self, located: &Located) -> Result<Octocrab, ShipError> {
        Ok(self
            .github
            .installation_client(located.installation)
            .await?)
    }

    /// The tasks as the gate sees them: each leaf's state and proof; and
    /// what the failure loop did for all of them (milestones included).
    async fn proofs(&self, l: &Located) -> Result<(Vec<TaskProof>, LoopStats), StoreError> {
        let records = self.store.task_records(&l.repo, &l.story).await?;
        let mut loop_stats = LoopStats::default();
        for r in records.values() {
            loop_stats.add(&r.failure);
        }
        let walk = l.plan.walk();
        let mut tops: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for r in &walk {
            let id = r.task.id.value.as_str().to_owned();
            if r.depth == 1 {
                tops.push(id.clone());
            }
            let top = tops.last().cloned().unwrap_or_else(|| id.clone());
            let key = Marker::Task {
                story: l.story.clone(),
                task: r.task.id.value.clone(),
            }
            .key();
            let issue = self
                .store
                .issue_record(&l.repo, &key)
                .await?
                .map(|i| i.number);
            let record = records.get(&id);
            let state = record.and_then(|r| r.state);
            let proven = record
                .map(|r| {
                    r.verdicts
                        .iter()
                        .filter(|(_, v)| v.passed)
                        .map(|(g, v)| (g.clone(), v.sha.clone()))
                        .collect()
                })
                .unwrap_or_default();
            out.push(TaskProof {
                id,
                title: r.task.title.clone(),
                issue,
                top,
                is_parent: r.task.is_parent(),
                state,
                proven,
                approval: record.and_then(|r| r.approval.clone()),
            });
        }
        Ok((out, loop_stats))
    }

    /// Evaluates a story: first without reading GitHub; only when that
    /// would write something (or a story PR is known, whose head carries the
    /// gate) are the default branch and the story branch head read.
    async fn evaluate(
        &self,
        mut l: Located,
        head: Option<CommitSha>,
    ) -> Result<Decision, ShipError> {
        let (tasks, loop_stats) = self.proofs(&l).await?;
        let milestones = self.open_milestones(&l).await?;
        let mut ev = Evaluation {
            tasks: &tasks,
            loop_stats: Some(&loop_stats),
            milestones: &milestones,
            head,
        };
        let quick = ship::evaluate(&l.record, &ev, &l.ctx());
        if (quick.effects.is_empty() && l.record.pr.is_none())
            || !matches!(l.record.state, ShipState::Building | ShipState::Shippable)
        {
            return Ok(l.finish(quick));
        }
        let client = self.client(&l).await?;
        if l.default_branch.is_empty() {
            l.default_branch = RepoClient::new(&client, &l.repo).default_branch().await?;
        }
        if ev.head.is_none() && l.record.pr.is_some() {
            ev.head = RepoClient::new(&client, &l.repo)
                .branch_head(&l.branch)
                .await?;
        }
        if let Some(head) = ev.head.clone() {
            self.vet(&mut l, &client, &head).await?;
        }
        let d = ship::evaluate(&l.record, &ev, &l.ctx());
        Ok(l.finish(d))
    }

    /// After a reconcile pass of a story (its tasks may have moved on).
    pub async fn on_reconcile(&self, r: &Reconcile) -> Result<Decision, ShipError> {
        let Some(l) = self.locate(&r.repo, &r.story, None).await? else {
            return Ok(Decision::nothing(""));
        };
        self.evaluate(l, None).await
    }

    /// A `pull_request` webhook for a story PR; not its own when it is
    /// not one.
    pub async fn on_pull_request(&self, p: &PullRequestEvent) -> Result<Handled, ShipError> {
        let issue = match p.for_ship() {
            Some(ShipPull::Revert(issue)) => return self.on_revert_pull_request(p, issue).await,
            Some(ShipPull::Story(issue)) => issue,
            None => return Ok(Handled::NotMine),
        };
        let (repo, default) = (&p.repo, p.default_branch.as_deref());
        let Some(story) = self.store.story_by_issue(repo, issue).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(mut l) = self.locate(repo, &story, default).await? else {
            return Ok(Handled::NotMine);
        };
        let pr = &p.head;
        let number = p.number;
        let ours = l.record.pr.is_none_or(|known| known == number);
        match &p.action {
            PullRequestAction::Opened
            | PullRequestAction::Reopened
            | PullRequestAction::Synchronize
            | PullRequestAction::ReadyForReview => {
                // A head that moved after `ship` takes the story out of
                // the queue first (`core::ship::pin`).
                let moved = ship::on_story_head_moved(&l.record, &pr.sha, &l.ctx());
                l.record = moved.record;
                l.record = ship::on_story_pr_seen(&l.record, number, &pr.sha, p.draft);
                let mut d = self.evaluate(l, Some(pr.sha.clone())).await?;
                let mut effects = moved.effects;
                effects.append(&mut d.effects);
                d.effects = effects;
                Ok(Handled::Decided(d))
            }
            PullRequestAction::Labeled => self.on_ship_label(l, p).await.map(Handled::Decided),
            PullRequestAction::Closed if ours => {
                let d = if p.merged {
                    if l.record.pr.is_none() {
                        l.record = ship::on_story_pr_seen(&l.record, number, &pr.sha, p.draft);
                    }
                    ship::on_story_pr_merged(&l.record, p.merge_commit.as_ref(), &l.ctx())
                } else {
                    ship::on_story_pr_closed_unmerged(&l.record, &l.ctx())
                };
                Ok(Handled::Decided(l.finish(d)))
            }
            // Another PR closed from the story branch, or an action the
            // story PR does not act on.
            action @ (PullRequestAction::Closed
            | PullRequestAction::ConvertedToDraft
            | PullRequestAction::Edited
            | PullRequestAction::Other(_)) => Ok(Handled::Decided(Decision::nothing(format!(
                "story PR {action}: nothing to do"
            )))),
        }
    }

    /// A label added to story PR: the ship label ships, if its sender
    /// may ship (the core refuses otherwise, and the label goes).
    async fn on_ship_label(
        &self,
        mut l: Located,
        p: &PullRequestEvent,
    ) -> Result<Decision, ShipError> {
        let (pr, number) = (&p.head, p.number);
        let label = p.label.as_deref();
        if label.is_none_or(|name| !name.eq_ignore_ascii_case(&l.config.ship_label)) {
            return Ok(Decision::nothing("story PR labelled: not the ship label"));
        }
        if l.record.pr.is_none() {
            l.record = ship::on_story_pr_seen(&l.record, number, &pr.sha, p.draft);
        }
        // Adding the label is shipping: it needs the `ship` command's
        // permission (maintain by default). Refused: the label goes.
        let needs = l.config.required_permission("ship");
        let has = match (&p.sender, p.installation) {
            (Some(s), Some(inst)) => {
                match self.permissions.level(inst, &l.repo, s.id, &s.login).await {
                    Ok(level) => level,
                    Err(e) => {
                        tracing::warn!(error = %e, user = %s.id, "reading a permission failed");
                        None
                    }
                }
            }
            _ => None,
        };
        if has < Some(needs) {
            let sender = p.sender.as_ref().map(|s| (s.id, s.login.as_str()));
            let effects =
                ship::on_ship_label_without_permission(&l.ctx(), number, sender, needs, has);
            return Ok(Decision {
                changes: vec![],
                effects,
                outcome: "ship label refused: no permission".into(),
            });
        }
        let by = Shipper {
            user: p.sender.as_ref().map(|s| s.id),
            login: p
                .sender
                .as_ref()
                .map_or("someone".into(), |s| s.login.clone()),
            via: ShipVia::Label,
            priority: Priority::Normal,
        };
        Ok(self.request(l, by).await?.0)
    }

    /// A ship request: the record is brought up to date first (the gate may
    /// have changed since the last pass). The decision, and why the core
    /// refused the request, if it did.
    pub(super) async fn request(
        &self,
        l: Located,
        by: Shipper,
    ) -> Result<(Decision, Option<ShipRefusal>), ShipError> {
        let mut l = l;
        let client = self.client(&l).await?;
        if l.default_branch.is_empty() {
            l.default_branch = RepoClient::new(&client, &l.repo).default_branch().await?;
        }
        // Every commit on the story branch came from a proven task PR.
        if let Some(head) = l.record.head.clone() {
            self.vet(&mut l, &client, &head).await?;
        }
        if by.priority != Priority::Normal {
            // Fewer stories are ahead of it than of a normal one.
            let others: Vec<_> = self.store.story_records(&l.repo).await?;
            let others: Vec<_> = others.into_iter().filter(|(s, _)| *s != l.story).collect();
            l.queue_length = ship::queue_length(&others, by.priority);
        }
        let evaluated = self.evaluate_record(&l).await?;
        let d = ship::on_ship_request(&evaluated.record, &by, &l.ctx());
        let mut effects = evaluated.effects;
        effects.extend(d.effects);
        let refused = d.refused.clone();
        let audit = d.accepted.then(|| ship::ship_audit(&by, &l.ctx()));
        let merged = ShipDecision { effects, ..d };
        let mut decision = l.finish(merged);
        decision.changes.extend(audit.map(|entry| entry.change()));
        Ok((decision, refused))
    }

    /// The story's integration milestones whose latest run has not passed:
    /// they block shipping.
    async fn open_milestones(&self, l: &Located) -> Result<Vec<String>, StoreError> {
        let mut open = Vec::new();
        for m in &l.plan.integration {
            let id = m.id.value.as_str();
            let pseudo = taskgate_core::task::RunSubject::Milestone(m.id.value.clone());
            let record = self.store.task_record(&l.repo, &l.story, &pseudo).await?;
            let passed = record.is_some_and(|r| {
                r.current
                    .is_some_and(|a| a.status == taskgate_core::task::AttemptStatus::Passed)
            });
            if !passed {
                open.push(id.to_owned());
            }
        }
        Ok(open)
    }

    /// [`ship::evaluate`] with the head as recorded (no GitHub reads).
    async fn evaluate_record(&self, l: &Located) -> Result<ShipDecision, ShipError> {
        let (tasks, loop_stats) = self.proofs(l).await?;
        let milestones = self.open_milestones(l).await?;
        let ev = Evaluation {
            tasks: &tasks,
            loop_stats: Some(&loop_stats),
            milestones: &milestones,
            head: l.record.head.clone(),
        };
        Ok(ship::evaluate(&l.record, &ev, &l.ctx()))
    }

    /// `/taskgate ship` on a story issue or its PR: the decision that
    /// merges, or the core's typed refusal (the command dispatcher answers
    /// it). Not its own when the issue is not a story's.
    pub async fn on_ship_command(
        &self,
        repo: &RepoName,
        issue_or_pr: IssueNumber,
        by: Shipper,
    ) -> Result<Handled, ShipError> {
        let Some(story) = self.story_of(repo, issue_or_pr).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(l) = self.locate(repo, &story, None).await? else {
            return Ok(Handled::NotMine);
        };
        Ok(match self.request(l, by).await? {
            (d, None) => Handled::Decided(d),
            (d, Some(refusal)) => Handled::Refused(Refused {
                decision: Decision::nothing(d.outcome),
                refusal: Refusal::Ship(refusal),
            }),
        })
    }

    /// An approving review of pull request `number`: when it is a story
    /// PR whose ship waits for approvals (`core::ship::on_story_approved`),
    /// the ship is requested again as its shipper. Not its own when
    /// `number` is no story's PR.
    pub async fn on_story_approved(
        &self,
        repo: &RepoName,
        number: IssueNumber,
        reviewer: &str,
    ) -> Result<Handled, ShipError> {
        let Some(story) = self.story_of(repo, number).await? else {
            return Ok(Handled::NotMine);
        };
        let Some(l) = self.locate(repo, &story, None).await? else {
            return Ok(Handled::NotMine);
        };
        if l.record.pr != Some(number) {
            return Ok(Handled::NotMine);
        }
        let by = match ship::on_story_approved(&l.record) {
            Ok(by) => by,
            Err(why) => return Ok(Handled::Decided(Decision::nothing(why))),
        };
        let (mut d, _) = self.request(l, by).await?;
        d.outcome = format!("approved by {reviewer}: shipped again ({})", d.outcome);
        Ok(Handled::Decided(d))
    }

    /// The story whose issue or story PR is `number`.
    pub async fn story_of(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<StoryId>, StoreError> {
        if let Some(story) = self.store.story_by_issue(repo, number).await? {
            return Ok(Some(story));
        }
        Ok(self
            .store
            .story_records(repo)
            .await?
            .into_iter()
            .find(|(_, r)| r.pr == Some(number))
            .map(|(story, _)| story))
    }
}
