//! Integration milestones (SPEC §3): once every task a milestone names is
//! complete, its command runs on the story branch's head as the check run
//! `taskgate/integration-<id>`.
//!
//! A milestone is run as a *pseudo task* with the same machinery as a task
//! (attempts, check runs, the failure loop): its subject is
//! [`RunSubject::Milestone`](crate::task::RunSubject), stored as
//! `@integration/<id>`. A failure
//! opens a diagnostic branch todo on the story issue; a second failed round
//! escalates: the story gets one report and `needs-human`, and is not
//! shippable until the milestone passes.

use crate::config::Limits;
use crate::plan::{Acceptance, Milestone, Plan, Pos, Spanned, Task, TaskId, TaskState, TestSpec};

/// The gate (and so the check run `taskgate/<gate>`) of a milestone.
pub fn milestone_gate(milestone: &str) -> String {
    format!("integration-{milestone}")
}

/// The milestone as a task the runner and the failure loop understand: one
/// gate, one command; one attempt per round and one depth, so the second
/// failed round escalates.
pub fn milestone_task(m: &Milestone) -> Task {
    let id = m.id.value.as_str();
    let after: Vec<String> = m.after.iter().map(|a| format!("`{}`", a.value)).collect();
    Task {
        id: Spanned {
            value: TaskId::new(milestone_gate(id)),
            pos: Pos::default(),
        },
        title: format!("Integration milestone {id}"),
        description: Some(format!(
            "Runs on the story branch once {} are complete.",
            after.join(", ")
        )),
        repo: None,
        role: None,
        depends_on: vec![],
        tasks: vec![],
        acceptance: Acceptance {
            tests: vec![TestSpec {
                cmd: m.cmd.clone(),
                timeout_seconds: m.timeout_seconds,
                gate: milestone_gate(id),
                reports: vec![],
            }],
            expected_artifacts: vec![],
            metrics: vec![],
            required_tests: vec![],
        },
        failure_routing: Default::default(),
        requires_testing: true,
        max_retries: Some(1),
        review: None,
    }
}

/// A milestone's limits: two failed rounds, then a person.
pub fn milestone_limits(story: &Limits) -> Limits {
    Limits {
        max_debug_attempts: 1,
        max_branch_depth: 1,
        ..story.clone()
    }
}

/// The milestones whose tasks are all complete, given each leaf's state.
pub fn ready_milestones<'p>(
    plan: &'p Plan,
    state_of: &dyn Fn(&TaskId) -> Option<TaskState>,
) -> Vec<&'p Milestone> {
    let complete = |id: &TaskId| -> bool {
        match plan.task(id) {
            Some(t) if t.is_parent() => leaves(t)
                .iter()
                .all(|l| state_of(&l.id.value) == Some(TaskState::Completed)),
            Some(_) => state_of(id) == Some(TaskState::Completed),
            None => false,
        }
    };
    plan.integration
        .iter()
        .filter(|m| m.after.iter().all(|a| complete(&a.value)))
        .collect()
}

fn leaves(task: &Task) -> Vec<&Task> {
    if task.is_parent() {
        task.tasks.iter().flat_map(leaves).collect()
    } else {
        vec![task]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    const PLAN: &str = "story: S\nintegration:\n  - { id: backtest, after: [signals], cmd: 'pytest tests/integration -q', timeout_seconds: 300 }\n  - { id: smoke, after: [data], cmd: 'true' }\ntasks:\n  - { id: data, title: D, acceptance: { tests: [{ cmd: 'true' }] } }\n  - id: signals\n    title: Signals\n    tasks:\n      - { id: entry, title: E, acceptance: { tests: [{ cmd: 'true' }] } }\n      - { id: exit, title: X, acceptance: { tests: [{ cmd: 'true' }] } }\n";

    #[test]
    fn a_milestone_is_ready_when_every_leaf_it_names_is_complete() {
        let (plan, problems) = parse_plan(PLAN);
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        let done = |ids: &'static [&'static str]| {
            move |id: &TaskId| ids.contains(&id.as_str()).then_some(TaskState::Completed)
        };
        let ready = |ids: &'static [&'static str]| -> Vec<String> {
            ready_milestones(&plan, &done(ids))
                .iter()
                .map(|m| m.id.value.to_string())
                .collect()
        };
        assert!(ready(&[]).is_empty());
        assert_eq!(ready(&["data"]), ["smoke"]);
        assert_eq!(ready(&["data", "entry"]), ["smoke"]);
        assert_eq!(ready(&["data", "entry", "exit"]), ["backtest", "smoke"]);
    }

    #[test]
    fn a_milestone_runs_as_a_pseudo_task_with_one_gate() {
        let (plan, _) = parse_plan(PLAN);
        let plan = plan.unwrap();
        let task = milestone_task(&plan.integration[0]);
        assert_eq!(task.acceptance.tests[0].gate, "integration-backtest");
        assert_eq!(task.acceptance.tests[0].timeout_seconds, Some(300));
        let limits = milestone_limits(&Limits::default());
        assert_eq!((limits.max_debug_attempts, limits.max_branch_depth), (1, 1));
    }
}
