//! The loop's invariants over random sequences of what
//! happens to a task: pushes, red, green and flaky results, retries,
//! `approve-branch`, merges, and redelivered or stale runner reports,
//! through the same functions the shell calls (task transitions followed by
//! the failure loop).

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::classify::FailureKind;
use crate::config::{Limits, MergeMethod, RepoConfig, ReviewMode, RunnerKind};
use crate::effect::{Effect, IssueState};
use crate::failure::{self, is_task_blocked, LoopOutcome};
use crate::ids::{CommitSha, InstallationId, IssueNumber, RepoName};
use crate::plan::{parse_plan, TaskState};
use crate::report::{GateResult, RunReport, REPORT_VERSION};

/// The story key every context here names.
static STORY: std::sync::LazyLock<crate::ids::StoryId> =
    std::sync::LazyLock::new(|| crate::ids::StoryId::new("file:s"));
/// The task every context here names.
static TASK: std::sync::LazyLock<super::RunSubject> =
    std::sync::LazyLock::new(|| super::RunSubject::Task("t".into()));

#[derive(Debug, Clone)]
enum Op {
    Push,
    /// The same push delivered again.
    RedeliverPush,
    Start,
    Finish(Verdict),
    /// The last finish delivered again.
    RedeliverFinish,
    /// A report for an attempt that is no longer current.
    StaleFinish,
    Retry,
    ApproveBranch,
    Merge,
}

#[derive(Debug, Clone, Copy)]
enum Verdict {
    Green,
    Red(FailureKind),
    /// Failed, then passed on the immediate re-run: the gate passes.
    Flaky,
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop::sample::select(
        FailureKind::ALL
            .into_iter()
            .filter(|k| *k != FailureKind::FlakyTest)
            .collect::<Vec<_>>(),
    );
    prop_oneof![
        2 => Just(Op::Push),
        1 => Just(Op::RedeliverPush),
        2 => Just(Op::Start),
        5 => kind.prop_map(|k| Op::Finish(Verdict::Red(k))),
        2 => Just(Op::Finish(Verdict::Green)),
        1 => Just(Op::Finish(Verdict::Flaky)),
        1 => Just(Op::RedeliverFinish),
        1 => Just(Op::StaleFinish),
        1 => Just(Op::Retry),
        1 => Just(Op::ApproveBranch),
        1 => Just(Op::Merge),
    ]
}

fn report(attempt: &Attempt, verdict: Verdict) -> RunReport {
    let (passed, kind) = match verdict {
        Verdict::Green | Verdict::Flaky => (true, None),
        Verdict::Red(k) => (false, Some(k)),
    };
    RunReport {
        version: REPORT_VERSION,
        task: super::RunSubject::Task("t".into()),
        sha: Some(attempt.sha.as_str().to_owned()),
        gates: attempt
            .gates
            .iter()
            .map(|g| GateResult {
                gate: g.clone(),
                passed,
                kind,
                summary: kind.map(|k| format!("{k}: @someone broke #123")),
                commands: vec![],
                missing_artifacts: vec![],
                metric_failures: vec![],
                warnings: match verdict {
                    Verdict::Flaky => vec!["flaky".into()],
                    _ => vec![],
                },
                cancelled: false,
                tests: None,
            })
            .collect(),
        duration_ms: 1,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

struct World {
    repo: RepoName,
    gates: Vec<String>,
    task: crate::plan::Task,
    config: RepoConfig,
    limits: Limits,
    auto_fix: bool,
    record: TaskRecord,
    commits: u32,
    now: i64,
    last_finish: Option<RunProgress>,
    /// Todo markers opened and not closed.
    open_todos: BTreeSet<String>,
    escalations: u32,
    reports: u32,
    /// Failed runs counted since the last green one.
    reds_since_green: u32,
}

impl World {
    fn new(attempts: u32, depth: u32, auto_fix: bool) -> World {
        let (plan, problems) = parse_plan(
            "story: S\ntasks:\n  - { id: t, title: T, acceptance: { tests: [{ cmd: 'true' }] } }\n",
        );
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        World {
            repo: RepoName::parse("o/r").unwrap(),
            gates: vec!["test".into()],
            task: plan.tasks[0].clone(),
            config: RepoConfig::default(),
            limits: Limits {
                max_debug_attempts: attempts,
                max_branch_depth: depth,
                ..Limits::default()
            },
            auto_fix,
            record: TaskRecord::default(),
            commits: 0,
            now: 1_000,
            last_finish: None,
            open_todos: BTreeSet::new(),
            escalations: 0,
            reports: 0,
            reds_since_green: 0,
        }
    }

    fn ctx(&self) -> TaskContext<'_> {
        TaskContext {
            repo: &self.repo,
            installation: InstallationId::new(1),
            story: &STORY,
            task: &TASK,
            title: "T",
            task_marker: "story=file:s task=t",
            task_issue: IssueNumber::new(2),
            branch: "taskgate/task-2-t",
            story_branch: "taskgate/story-1",
            gates: &self.gates,
            waiting_for: &[],
            review: ReviewMode::Auto,
            merge_method: MergeMethod::Squash,
            runner: RunnerKind::Local,
            runner_workflow: "taskgate-run.yml",
            now: self.now,
        }
    }

    fn inputs(&self) -> LoopInputs<'_> {
        LoopInputs {
            task: &self.task,
            config: &self.config,
            limits: self.limits.clone(),
            auto_fix: self.auto_fix,
            open_todos_in_story: 0,
            links: crate::failure::RunLinks::default(),
        }
    }

    fn sha(&self) -> CommitSha {
        crate::ids::sha(&format!("{:040x}", self.commits))
    }

    fn apply(&mut self, op: &Op) {
        self.now += 10;
        let d = match op {
            Op::Push => {
                self.commits += 1;
                let trigger = Trigger::Head {
                    sha: self.sha(),
                    pr: None,
                    pusher: None,
                    source: HeadSource::Taskgate,
                };
                on_trigger(&self.record, &trigger, &self.ctx())
            }
            Op::RedeliverPush => {
                let trigger = Trigger::Head {
                    sha: self.sha(),
                    pr: None,
                    pusher: None,
                    source: HeadSource::Taskgate,
                };
                on_trigger(&self.record, &trigger, &self.ctx())
            }
            Op::Retry => on_trigger(
                &self.record,
                &Trigger::Retry {
                    sha: None,
                    gate: None,
                    by: crate::task::Doer::Person,
                },
                &self.ctx(),
            ),
            Op::Start => match &self.record.current {
                Some(a) => on_run_progress(
                    &self.record,
                    &RunProgress::Started { attempt: a.number },
                    &self.ctx(),
                ),
                None => return,
            },
            Op::Finish(verdict) => {
                let Some(a) = self.record.current.clone() else {
                    return;
                };
                let progress = RunProgress::Finished {
                    attempt: a.number,
                    report: report(&a, *verdict),
                    workspace: String::new(),
                };
                self.last_finish = Some(progress.clone());
                self.progress(&progress)
            }
            Op::RedeliverFinish | Op::StaleFinish => {
                let Some(mut progress) = self.last_finish.clone() else {
                    return;
                };
                if let (Op::StaleFinish, RunProgress::Finished { attempt, .. }) =
                    (op, &mut progress)
                {
                    *attempt = attempt.saturating_sub(1);
                }
                self.progress(&progress)
            }
            Op::ApproveBranch => {
                let ctx = self.ctx();
                let inputs = self.inputs();
                let lctx = loop_context(&ctx, &inputs, true);
                let ld = failure::on_approve_branch(&self.record.failure, self.now, &lctx);
                let mut record = self.record.clone();
                record.failure = ld.state;
                TaskDecision {
                    record,
                    effects: ld.effects,
                    run: None,
                    cancelled: None,
                    verdict: None,
                    outcome: String::new(),
                }
            }
            Op::Merge => {
                if self.record.state != Some(TaskState::Review) {
                    return;
                }
                let head = self
                    .record
                    .head
                    .clone()
                    .expect("a task in review has a head");
                let merged = super::PullClosed::Merged {
                    pr: crate::ids::IssueNumber::new(2),
                    head: &head,
                    by: None,
                };
                on_pull_closed(&self.record, merged, &self.ctx())
            }
        };
        self.observe(&d);
        self.record = d.record;
    }

    fn progress(&self, progress: &RunProgress) -> TaskDecision {
        let d = on_run_progress(&self.record, progress, &self.ctx());
        match progress {
            RunProgress::Finished { report, .. } if d.verdict.is_some() => {
                follow_verdict(d, report, &self.ctx(), &self.inputs())
            }
            _ => d,
        }
    }

    fn observe(&mut self, d: &TaskDecision) {
        for e in &d.effects {
            match e {
                Effect::CreateIssue { marker, .. } if marker.contains(" todo=") => {
                    assert!(
                        !self.open_todos.iter().any(|m| m == marker),
                        "a todo opened twice: {marker}"
                    );
                    self.open_todos.insert(marker.clone());
                }
                Effect::UpdateIssue {
                    marker,
                    state: Some(IssueState::ClosedCompleted | IssueState::ClosedNotPlanned),
                    ..
                } => {
                    self.open_todos.remove(marker);
                }
                Effect::CommentOnMarker { comment_marker, .. }
                    if comment_marker.starts_with("escalation ") =>
                {
                    self.reports += 1;
                }
                // A check run waited for is one the attempt just ended
                // opened, and its evidence lacks (these links are unknown).
                Effect::AwaitCheckRun { key, attempt, .. } => {
                    let current = d.record.current.as_ref().expect("an attempt ended");
                    assert_eq!(attempt.attempt, current.number);
                    assert!(
                        current
                            .gates
                            .iter()
                            .any(|g| *key == check_key(&STORY, &TASK, current.number, g)),
                        "{key}"
                    );
                    assert!(
                        !failure::missing_check_runs(&d.record.failure, current.number).is_empty()
                    );
                }
                _ => {}
            }
        }
        // A new escalation: none before, or one of an earlier episode.
        let id = |r: &TaskRecord| r.failure.escalation.as_ref().map(|e| (e.round, e.at));
        if id(&d.record).is_some() && id(&d.record) != id(&self.record) {
            self.escalations += 1;
        }
        match d.verdict {
            Some(true) => self.reds_since_green = 0,
            Some(false) if d.record.current != self.record.current => self.reds_since_green += 1,
            _ => {}
        }
    }

    fn check(&self) {
        let r = &self.record;
        // Never completed while its latest run is red.
        if r.state == Some(TaskState::Completed) {
            let latest = r.current.as_ref().expect("a completed task has run");
            assert!(
                matches!(
                    latest.status,
                    AttemptStatus::Passed | AttemptStatus::Cancelled
                ),
                "completed with a red latest run: {latest:?}"
            );
            assert!(r.verdicts.values().all(|v| v.passed));
        }
        // At most one open todo per task (so never two per depth).
        assert!(self.open_todos.len() <= 1, "{:?}", self.open_todos);
        assert_eq!(self.open_todos.len(), usize::from(r.failure.open.is_some()));
        // Every blocked task says why.
        if r.state == Some(TaskState::Blocked) {
            assert!(is_task_blocked(&r.failure).is_some());
        }
        // Every escalation has exactly one report.
        assert_eq!(self.reports, self.escalations);
        // Bounded: failures never open more todos than the depth allows,
        // and the loop has escalated once N × D runs failed in a row.
        let n = failure::max_attempts(&self.task, &self.limits);
        let d = self.limits.max_branch_depth.max(1);
        if self.auto_fix && self.reds_since_green > n * d {
            assert!(
                r.failure.escalation.is_some(),
                "{} red runs in a row without escalating (N={n}, D={d})",
                self.reds_since_green
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_loop_keeps_its_invariants(
        attempts in 1u32..=3,
        depth in 1u32..=3,
        auto_fix in any::<bool>(),
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let mut world = World::new(attempts, depth, auto_fix);
        for op in &ops {
            world.apply(op);
            world.check();
        }
    }

    #[test]
    fn a_task_that_always_fails_ends_after_exactly_the_bounded_number_of_runs(
        attempts in 1u32..=4,
        depth in 1u32..=3,
    ) {
        let mut world = World::new(attempts, depth, true);
        let mut runs = 0;
        let mut outcomes = Vec::new();
        while world.record.failure.escalation.is_none() {
            prop_assert!(runs < 100, "never escalated");
            world.apply(&Op::Push);
            world.apply(&Op::Start);
            let before = world.record.failure.clone();
            world.apply(&Op::Finish(Verdict::Red(FailureKind::TestFailure)));
            runs += 1;
            outcomes.push(before != world.record.failure);
        }
        prop_assert_eq!(runs, attempts * depth + 1);
        prop_assert_eq!(world.record.state, Some(TaskState::Blocked));
        prop_assert_eq!(world.reports, 1);
        // More failures change nothing.
        let escalated = world.record.failure.clone();
        world.apply(&Op::Push);
        world.apply(&Op::Finish(Verdict::Red(FailureKind::TestFailure)));
        prop_assert_eq!(world.record.failure.escalation, escalated.escalation);
        prop_assert_eq!(world.reports, 1);
        let _ = LoopOutcome::Nothing;
    }
}

/// A red run whose check runs have no ids yet (their creates unanswered)
/// waits for each; one whose links are known waits for none.
#[test]
fn a_red_run_waits_for_the_check_runs_its_evidence_does_not_link() {
    let mut world = World::new(2, 2, true);
    world.apply(&Op::Push);
    world.apply(&Op::Start);
    let attempt = world.record.current.clone().unwrap();
    let red = RunProgress::Finished {
        attempt: attempt.number,
        report: report(&attempt, Verdict::Red(FailureKind::TestFailure)),
        workspace: String::new(),
    };
    let awaited = |d: &TaskDecision| -> Vec<String> {
        d.effects
            .iter()
            .filter_map(|e| match e {
                Effect::AwaitCheckRun { key, .. } => Some(key.clone()),
                _ => None,
            })
            .collect()
    };
    let d = world.progress(&red);
    let want: Vec<String> = (attempt.gates.iter())
        .map(|g| check_key(&STORY, &TASK, attempt.number, g))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(awaited(&d), want);

    let mut inputs = world.inputs();
    inputs.links.check_runs = (attempt.gates.iter())
        .map(|g| {
            (
                g.clone(),
                format!("https://github.com/o/r/runs/{}", g.len()),
            )
        })
        .collect();
    let ended = on_run_progress(&world.record, &red, &world.ctx());
    let RunProgress::Finished { report, .. } = &red else {
        unreachable!()
    };
    let d = follow_verdict(ended, report, &world.ctx(), &inputs);
    assert!(d.outcome.contains("failure loop: Opened"), "{}", d.outcome);
    assert_eq!(awaited(&d), Vec::<String>::new());
}
