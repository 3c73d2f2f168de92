//! The failure loop's budget decisions, for the audit log (issue 30,
//! item 3): a transition of a task's [`LoopState`] read as the decisions
//! it made about the budgets taskgate enforces for an agent, each an
//! [`AuditEntry`] by taskgate itself ([`AuditVia::Loop`]):
//! - `attempt_counted`: a failed run counted toward a todo's attempts
//!   (`max_debug_attempts`, or the task's `max_retries`);
//! - `budget_spent`: a todo's attempts (superseded by a deeper one), the
//!   story's open todos (`max_concurrent_branches`: the task waits), or a
//!   bound (escalated to a person);
//! - `agent_stopped`: a todo closed and its agent was stopped.
//!
//! Owns: reading the before and after states as those entries, with the
//! times the states carry (the failed run's, the closing's, the
//! escalation's). Must not: decide anything (`core::failure` did), read
//! the clock, or store anything (the shell puts each entry's
//! `Change::Audited` in the decision that made the transition).

use super::{ClosedTodo, LoopState, Resolution};
use crate::audit::{AuditAction, AuditActor, AuditEntry, AuditVia, LOOP_LOGIN};
use crate::config::RepoConfig;
use crate::ids::RepoName;

use super::agent::describe_agent;

/// What [`budget_audit`] names in its entries.
#[derive(Debug, Clone, Copy)]
pub struct BudgetAudit<'a> {
    pub repo: &'a RepoName,
    /// The task, as `core::audit::task_object` names it.
    pub object: &'a str,
    pub config: &'a RepoConfig,
    /// The attempts a todo of this task gets (`failure::max_attempts`).
    pub max_attempts: u32,
    /// Story-effective `max_concurrent_branches`.
    pub max_concurrent_branches: u32,
}

/// The budget decisions of the transition `before` → `after`, oldest
/// first; none when the loop did not move.
pub fn budget_audit(before: &LoopState, after: &LoopState, at: &BudgetAudit) -> Vec<AuditEntry> {
    let mut out = Vec::new();
    let entry = |at_s: i64, action: AuditAction, reason: String| {
        let by = AuditActor {
            id: None,
            login: LOOP_LOGIN,
        };
        AuditEntry::new(at.repo, at_s, by, action, at.object, AuditVia::Loop).because(Some(reason))
    };
    let run_at = after.failures.last().map_or(0, |f| f.at);
    for closed in after
        .history
        .iter()
        .filter(|c| !before.history.iter().any(|b| b.marker == c.marker))
    {
        if closed.resolution == Resolution::Superseded {
            let reason = format!(
                "branch todo `{}` used its {} of {} attempts; a deeper todo replaces it",
                closed.marker, closed.failed_runs, at.max_attempts
            );
            out.push(entry(closed.closed_at, AuditAction::BudgetSpent, reason));
        }
        if let Some(reason) = stopped(closed, at.config) {
            out.push(entry(closed.closed_at, AuditAction::AgentStopped, reason));
        }
    }
    if let Some(e) = &after.escalation {
        let new = before
            .escalation
            .as_ref()
            .is_none_or(|b| (b.round, b.at) != (e.round, e.at));
        if new {
            let reason = format!(
                "{}: escalated to a person, no agent is started for this task",
                super::render::render_bound(e.reason)
            );
            out.push(entry(e.at, AuditAction::BudgetSpent, reason));
        }
    }
    if after.deferred && !before.deferred {
        let reason = format!(
            "the story has {} open branch todos (`max_concurrent_branches`): this task's waits",
            at.max_concurrent_branches
        );
        out.push(entry(run_at, AuditAction::BudgetSpent, reason));
    }
    if let Some(t) = &after.open {
        let counted = match &before.open {
            Some(b) if b.marker == t.marker => t.failed_runs > b.failed_runs,
            _ => true,
        };
        if counted {
            let agent = at
                .config
                .roles
                .get(&t.role)
                .and_then(|r| r.agent.as_ref())
                .map_or_else(|| "no agent".to_owned(), describe_agent);
            let reason = format!(
                "attempt {} of {} on branch todo `{}` (role `{}`, {agent})",
                t.failed_runs, at.max_attempts, t.marker, t.role
            );
            out.push(entry(
                run_at.max(t.opened_at),
                AuditAction::AttemptCounted,
                reason,
            ));
        }
    }
    out
}

/// Why the agent of `closed`'s role was stopped, if it had one or its
/// role assigns people.
fn stopped(closed: &ClosedTodo, config: &RepoConfig) -> Option<String> {
    let role = config.roles.get(&closed.role)?;
    if role.agent.is_none() && role.assignees.is_empty() {
        return None;
    }
    let how = match closed.resolution {
        Resolution::Fixed => "fixed",
        Resolution::Superseded => "superseded",
        Resolution::Escalated => "escalated",
    };
    let agent = role
        .agent
        .as_ref()
        .map_or_else(|| "its assignees".to_owned(), describe_agent);
    Some(format!(
        "branch todo `{}` closed ({how}) after {} attempt(s): {agent} stopped on it (its label and agents' assignees off, no more triggers)",
        closed.marker, closed.failed_runs
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::FailureKind;
    use crate::config::AgentRoute;
    use crate::failure::tests::{run, Fixture};
    use crate::failure::{max_attempts, on_failed_run, LoopContext};

    /// Each entry as `at action: reason`, as the audit log shows it.
    fn lines(entries: &[AuditEntry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| {
                assert_eq!((e.actor_id, e.actor_login.as_str()), (None, LOOP_LOGIN));
                assert_eq!(
                    (e.via, e.object.as_str()),
                    (AuditVia::Loop, "task #2 (data)")
                );
                format!(
                    "{} {}: {}",
                    e.at_s,
                    e.action.name(),
                    e.reason.as_deref().unwrap()
                )
            })
            .collect()
    }

    fn audit_of(
        f: &Fixture,
        ctx: &LoopContext,
        before: &LoopState,
        after: &LoopState,
    ) -> Vec<String> {
        let at = BudgetAudit {
            repo: &f.repo,
            object: "task #2 (data)",
            config: &f.config,
            max_attempts: max_attempts(ctx.task, ctx.limits),
            max_concurrent_branches: ctx.limits.max_concurrent_branches,
        };
        lines(&budget_audit(before, after, &at))
    }

    #[test]
    fn each_attempt_each_spent_budget_and_each_stopped_agent_is_audited() {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent = Some(AgentRoute::Label("fix-me".into()));
        let ctx = f.ctx();
        let mut s = LoopState::default();
        let mut audited = Vec::new();
        for n in 1..=5 {
            let next = on_failed_run(
                &s,
                &run(n, FailureKind::TestFailure, i64::from(n) * 1_000),
                &ctx,
            );
            audited.extend(audit_of(&f, &ctx, &s, &next.state));
            s = next.state;
        }
        insta::assert_snapshot!(audited.join("\n"), @r"
        1000 attempt_counted: attempt 1 of 2 on branch todo `story=file:s task=data todo=1` (role `coder`, the agent started by the label `fix-me`)
        2000 attempt_counted: attempt 2 of 2 on branch todo `story=file:s task=data todo=1` (role `coder`, the agent started by the label `fix-me`)
        3000 budget_spent: branch todo `story=file:s task=data todo=1` used its 2 of 2 attempts; a deeper todo replaces it
        3000 agent_stopped: branch todo `story=file:s task=data todo=1` closed (superseded) after 2 attempt(s): the agent started by the label `fix-me` stopped on it (its label and agents' assignees off, no more triggers)
        3000 attempt_counted: attempt 1 of 2 on branch todo `story=file:s task=data todo=2` (role `debugger`, no agent)
        4000 attempt_counted: attempt 2 of 2 on branch todo `story=file:s task=data todo=2` (role `debugger`, no agent)
        5000 budget_spent: every branch todo used its attempts and the task still fails: escalated to a person, no agent is started for this task
        ");
        let again = on_failed_run(&s, &run(6, FailureKind::TestFailure, 6_000), &ctx);
        assert!(
            audit_of(&f, &ctx, &s, &again.state).is_empty(),
            "escalated: nothing counted"
        );
    }

    #[test]
    fn a_task_waiting_for_the_storys_open_todos_is_audited_once() {
        let mut f = Fixture::new();
        f.open_todos_in_story = f.limits.max_concurrent_branches;
        let ctx = f.ctx();
        let first = on_failed_run(
            &LoopState::default(),
            &run(1, FailureKind::TestFailure, 1_000),
            &ctx,
        );
        let second = on_failed_run(&first.state, &run(2, FailureKind::TestFailure, 2_000), &ctx);
        assert_eq!(
            audit_of(&f, &ctx, &LoopState::default(), &first.state),
            [format!(
                "1000 budget_spent: the story has {} open branch todos (`max_concurrent_branches`): this task's waits",
                f.limits.max_concurrent_branches
            )]
        );
        assert!(audit_of(&f, &ctx, &first.state, &second.state).is_empty());
    }
}
