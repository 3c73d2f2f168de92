//! Who says "done": taskgate's own draft marked ready when an agent's fix
//! is green, a person's draft and `ready: never` left alone, and the fix
//! counted when the task completes.

use super::*;
use crate::classify::FailureKind;
use crate::config::{AgentRoute, Role};
use crate::failure::RunLinks;
use crate::ids::{CommitSha, IssueNumber, UserId};
use crate::plan::{parse_plan, Plan, TaskId, TaskState};
use crate::report::{GateResult, RunReport, REPORT_VERSION};
use crate::task::test_fixture::{sha, Fixture};
use crate::task::{
    follow_verdict, on_pull_closed, on_ready_for_review, on_run_progress, on_trigger, HeadSource,
    LoopInputs, PullClosed, Pusher, RunProgress, Trigger,
};

const PR: PullRef = PullRef {
    number: IssueNumber::new(20),
    draft: true,
};

struct World {
    f: Fixture,
    plan: Plan,
    config: RepoConfig,
    record: TaskRecord,
}

impl World {
    fn new(ready: AgentReady) -> World {
        let (plan, problems) = parse_plan(
            "story: S\ntasks:\n  - id: data\n    title: Data loading\n    acceptance: { tests: [{ cmd: pytest -q, gate: unit }] }\n",
        );
        let mut config = RepoConfig::default();
        let role = Role {
            agent: Some(AgentRoute::Mention("@claude".into())),
            ready,
            ..Role::default()
        };
        config.roles.insert("coder".into(), role);
        World {
            f: Fixture::new(&["unit"], ReviewMode::Auto),
            plan: plan.unwrap_or_else(|| panic!("{problems:?}")),
            config,
            record: TaskRecord::default(),
        }
    }

    fn inputs(&self) -> LoopInputs<'_> {
        LoopInputs {
            task: self.plan.task(&TaskId::new("data")).unwrap(),
            config: &self.config,
            limits: self.config.limits.clone(),
            auto_fix: true,
            open_todos_in_story: 0,
            links: RunLinks::default(),
        }
    }

    /// `by` pushes commit `c`; its run finishes green or red; returns the
    /// effects of the run's verdict.
    fn push_and_run(&mut self, c: char, by: Doer, green: bool) -> Vec<Effect> {
        let pusher = Some(Pusher {
            id: UserId::new(7),
            by,
        });
        let trigger = Trigger::Head {
            sha: sha(c),
            pr: self.record.pr,
            pusher,
            source: HeadSource::Taskgate,
        };
        self.record = on_trigger(&self.record, &trigger, &self.f.ctx()).record;
        let attempt = self.record.current.as_ref().unwrap().number;
        let report = report(c, green);
        let progress = RunProgress::Finished {
            attempt,
            report: report.clone(),
            workspace: String::new(),
        };
        let d = on_run_progress(&self.record, &progress, &self.f.ctx());
        let d = follow_verdict(d, &report, &self.f.ctx(), &self.inputs());
        self.record = d.record;
        d.effects
    }

    /// A `pull_request` event of the task PR.
    fn pull(&mut self, action: PullRequestAction, draft: bool, by: Doer) {
        let pull = PullRef { draft, ..PR };
        self.record = note_pull(&self.record, &action, pull, by);
        self.record.pr = Some(pull);
    }

    fn merged(&mut self) {
        let head = self.record.head.clone().unwrap();
        let closed = PullClosed::Merged {
            pr: PR.number,
            head: &head,
            by: None,
        };
        self.record = on_pull_closed(&self.record, closed, &self.f.ctx()).record;
    }

    /// Taskgate's draft opened, a red run by the agent opened a todo.
    fn red_with_taskgates_draft(ready: AgentReady) -> World {
        let mut w = World::new(ready);
        w.push_and_run('a', Doer::Agent, false);
        assert!(w.record.pr_requested, "taskgate asked for its draft");
        w.pull(PullRequestAction::Opened, true, Doer::Taskgate);
        assert_eq!(w.record.draft_of, Some(DraftOf::Taskgate));
        assert!(w.record.failure.open.is_some(), "a todo opened");
        w
    }
}

fn report(c: char, green: bool) -> RunReport {
    RunReport {
        version: REPORT_VERSION,
        task: crate::task::RunSubject::Task("data".into()),
        sha: Some(sha(c).into_string()),
        gates: vec![GateResult {
            gate: "unit".into(),
            passed: green,
            kind: (!green).then_some(FailureKind::TestFailure),
            summary: (!green).then(|| "test_fetch failed".into()),
            commands: vec![],
            missing_artifacts: vec![],
            metric_failures: vec![],
            warnings: vec![],
            cancelled: false,
            tests: None,
        }],
        duration_ms: 10,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

fn merges(effects: &[Effect]) -> Vec<(bool, &CommitSha)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::MergePullRequest {
                ready_first, sha, ..
            } => Some((*ready_first, sha)),
            _ => None,
        })
        .collect()
}

fn fix(w: &World) -> crate::failure::FixTotals {
    w.record.failure.totals.fixes["test_failure/mention:@claude"].clone()
}

#[test]
fn an_agents_green_fix_marks_taskgates_own_draft_ready_and_merges_it_with_no_person() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    let effects = w.push_and_run('b', Doer::Agent, true);
    assert_eq!(merges(&effects), [(true, &sha('b'))], "ready, then merged");
    assert_eq!(w.record.pr.map(|p| p.draft), Some(false));
    assert_eq!(w.record.marked_ready, Some(sha('b')));
    assert_eq!(fix(&w).greened, 1);
    assert_eq!(fix(&w).fixed(), 0, "counted when the task completes");

    // GitHub's `ready_for_review` for taskgate's marking asks for nothing.
    w.pull(PullRequestAction::ReadyForReview, false, Doer::Taskgate);
    let echo = on_ready_for_review(&w.record, PR, &sha('b'), Doer::Taskgate, &w.f.ctx());
    assert!(echo.effects.is_empty(), "{:?}", echo.effects);

    w.merged();
    assert_eq!(w.record.state, Some(TaskState::Completed));
    assert_eq!(fix(&w).fixed_without_human, 1);
    assert_eq!(fix(&w).waited_for_person, 0);
    assert_eq!(w.record.failure.fixed_without_human, 1);
    assert!(w.record.failure.greened.is_empty());
}

#[test]
fn a_draft_a_person_converted_stays_a_draft_and_the_fix_waits_for_them() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    w.pull(PullRequestAction::ReadyForReview, false, Doer::Agent);
    w.pull(PullRequestAction::ConvertedToDraft, true, Doer::Person);
    assert_eq!(w.record.draft_of, Some(DraftOf::Others));
    let effects = w.push_and_run('b', Doer::Agent, true);
    assert!(merges(&effects).is_empty(), "their signal: {effects:?}");
    assert_eq!(w.record.state, Some(TaskState::Review));

    w.f.now += 600;
    w.pull(PullRequestAction::ReadyForReview, false, Doer::Person);
    let pull = PullRef { draft: false, ..PR };
    let ready = on_ready_for_review(&w.record, pull, &sha('b'), Doer::Person, &w.f.ctx());
    assert_eq!(merges(&ready.effects), [(false, &sha('b'))]);
    w.record = ready.record;
    w.merged();
    let fix = fix(&w);
    assert_eq!((fix.fixed_without_human, fix.fixed_with_human), (0, 1));
    assert_eq!(
        (fix.waited_for_person, fix.seconds_waiting_for_person),
        (1, 600)
    );
    assert_eq!(w.record.failure.fixed_with_human, 1);
}

#[test]
fn ready_never_leaves_taskgates_draft_to_a_person() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Never);
    let effects = w.push_and_run('b', Doer::Agent, true);
    assert!(merges(&effects).is_empty(), "{effects:?}");
    assert_eq!(w.record.pr.map(|p| p.draft), Some(true));
}

#[test]
fn a_persons_push_during_the_todo_leaves_the_draft_and_counts_as_a_person() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    w.push_and_run('b', Doer::Person, false);
    let effects = w.push_and_run('c', Doer::Agent, true);
    assert!(merges(&effects).is_empty(), "a person acted: {effects:?}");
    w.pull(PullRequestAction::ReadyForReview, false, Doer::Person);
    w.merged();
    let fix = fix(&w);
    assert_eq!((fix.fixed_without_human, fix.fixed_with_human), (0, 1));
    assert_eq!(fix.waited_for_person, 0, "the person acted before green");
}

#[test]
fn human_review_and_a_person_opened_draft_are_not_marked_ready() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    w.f.review = ReviewMode::Human;
    assert!(merges(&w.push_and_run('b', Doer::Agent, true)).is_empty());

    let mut w = World::new(AgentReady::Auto);
    w.pull(PullRequestAction::Opened, true, Doer::Person);
    assert_eq!(w.record.draft_of, Some(DraftOf::Others));
    w.push_and_run('a', Doer::Agent, false);
    assert!(merges(&w.push_and_run('b', Doer::Agent, true)).is_empty());
}

#[test]
fn who_did_it_is_read_from_the_sender() {
    let actor = |login: &str, is_bot| crate::Actor {
        id: UserId::new(1),
        login: login.into(),
        is_bot,
        via_app: None,
    };
    let bot = Some("taskgate[bot]");
    assert_eq!(
        Doer::of(Some(&actor("taskgate[bot]", true)), bot),
        Doer::Taskgate
    );
    assert_eq!(
        Doer::of(Some(&actor("claude[bot]", true)), bot),
        Doer::Agent
    );
    assert_eq!(Doer::of(Some(&actor("alice", false)), bot), Doer::Person);
    assert_eq!(Doer::of(None, bot), Doer::Person);
    assert_eq!(
        Doer::of(Some(&actor("taskgate[bot]", true)), None),
        Doer::Agent
    );
}

#[test]
fn a_persons_push_to_the_agents_fix_pull_request_counts_as_a_person() {
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    // alice pushes to Copilot's branch; its pull request is merged into
    // the task branch by taskgate, whose push then turns the task green.
    let alice = Pusher {
        id: UserId::new(9),
        by: Doer::Person,
    };
    w.record = crate::task::on_fix_pushed(&w.record, &alice).record;
    assert!(
        w.record.pushed_by.contains(&UserId::new(9)),
        "alice may not approve it"
    );
    let effects = w.push_and_run('b', Doer::Agent, true);
    assert!(merges(&effects).is_empty(), "a person acted: {effects:?}");
    w.pull(PullRequestAction::ReadyForReview, false, Doer::Person);
    w.merged();
    assert_eq!(
        (fix(&w).fixed_without_human, fix(&w).fixed_with_human),
        (0, 1)
    );

    // The agent's own push to its fix changes nothing.
    let mut w = World::red_with_taskgates_draft(AgentReady::Auto);
    let copilot = Pusher {
        id: UserId::new(7),
        by: Doer::Agent,
    };
    let d = crate::task::on_fix_pushed(&w.record, &copilot);
    assert!(!d.record.human_involved);
    w.record = d.record;
    assert!(!merges(&w.push_and_run('b', Doer::Agent, true)).is_empty());
}
