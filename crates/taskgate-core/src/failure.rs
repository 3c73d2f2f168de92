//! The failure loop's policy (SPEC §4): what happens to a task when its
//! acceptance run fails, passes, times out or a person approves a branch
//! todo. A failed run opens (or updates) a *branch todo* issue routed to a
//! role, bounded retries go deeper, and a hit bound escalates to a human.
//!
//! Owns: the per-task [`LoopState`] (stored as JSON in the task's row by the
//! shell; it and the transitions' inputs and answers are in `records`), the transitions [`on_failed_run`], [`on_green_run`],
//! [`on_approve_branch`] and [`on_tick`], routing ([`route`]), reaching the role's agent (`agent`) and the texts
//! of branch todos, attempt comments and escalation reports ([`render`]).
//! Must not: do IO, await, read the clock (time comes in as `now`, unix
//! seconds) or know how effects are performed. It never sets the task's
//! `state:*` label: [`is_task_blocked`] tells the caller when to.
//!
//! Ideas a reader needs:
//! - **Counting.** The run that opens a todo is its attempt 1; each later
//!   failed run on it is the next attempt, up to `N` (`max_debug_attempts`,
//!   or the task's `max_retries`). The failed run after attempt `N/N`
//!   closes the spent todo (superseded) and opens one level deeper,
//!   re-routed by [`route`]; at the deepest level (`D`) it escalates
//!   instead. So a task that always fails gets exactly `N × D` failed runs
//!   into todos, and the next one escalates, once.
//! - **Episodes.** A green run ends an episode; the next failure starts a
//!   new *round*, whose todo markers carry the round number, so they never
//!   collide with the closed todos of an earlier round.
//! - **Idempotence.** Failed runs carry the shell's attempt number; one not
//!   newer than the last seen (a redelivered webhook) changes nothing. Every
//!   comment carries a marker unique to what it reports.

mod agent;
mod budget;
mod evidence;
mod links;
mod records;
mod render;
mod route;
mod stats;

#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

use crate::classify::FailureKind;
use crate::config::{AgentRoute, Limits};
use crate::effect::{Effect, IssueState};
use crate::ids::{CommitSha, RepoName};
use crate::plan::Task;
use crate::story::{labels, Marker};

pub use agent::{
    describe_agent, render_agent_mention, render_copilot_unreachable, AGENT_INPUTS, COPILOT_LOGIN,
    EVIDENCE_INPUT_BYTES,
};
pub use budget::{budget_audit, BudgetAudit};
pub use evidence::{changed_files_text, failing_tests, log_excerpt, FailingTest, RunLinks};
pub use links::{missing_check_runs, on_check_runs_known};
pub use records::{
    Bound, ClosedTodo, Escalation, FailedRun, FailureRecord, GateFailure, GreenFix, LoopContext,
    LoopDecision, LoopOutcome, LoopState, LoopTotals, OpenTodo, Proposal, Resolution,
    KEPT_FAILURES, KEPT_HISTORY,
};
pub use render::{
    render_attempt_comment, render_deferred_comment, render_escalated_todo_comment,
    render_escalation_report, render_fixed_comment, render_proposal_comment,
    render_superseded_comment, render_todo_body, render_todo_title, TodoView,
};
pub use route::route;
pub use stats::{
    render_fix_rates, FixTotals, LoopStats, SecondsBuckets, MAX_AGENTS, NO_AGENT, OTHER_AGENTS,
    SECONDS_BUCKETS, UNRECORDED_AGENT,
};

/// Clip limits for what is stored and shown, in bytes.
const SUMMARY_BYTES: usize = 2_000;
const COMMAND_BYTES: usize = 300;
const COMMANDS_KEPT: usize = 5;
const GATES_KEPT: usize = 10;
const CHANGES_BYTES: usize = 4_000;
/// Failing tests kept per gate, and the bytes of each one's message.
pub const TESTS_KEPT: usize = 10;
const TEST_MESSAGE_BYTES: usize = 600;
const TEST_NAME_BYTES: usize = 300;
/// Bytes of a gate's log excerpt.
const EXCERPT_BYTES: usize = 2_000;
/// Failed runs that keep their excerpts and test messages: the latest and
/// the one before it (what still fails); older ones keep test names only.
const FULL_EVIDENCE_KEPT: usize = 2;

/// The attempts a todo of this task gets: the task's `max_retries`, else
/// the story's `max_debug_attempts`; at least 1.
pub fn max_attempts(task: &Task, limits: &Limits) -> u32 {
    task.max_retries.unwrap_or(limits.max_debug_attempts).max(1)
}

/// The reason text when the loop has blocked the task (escalated), else
/// `None`. A green run does not clear it: a person does, with
/// [`clear_escalation`].
pub fn is_task_blocked(state: &LoopState) -> Option<String> {
    state
        .escalation
        .as_ref()
        .map(|e| render::render_bound(e.reason).to_owned())
}

/// A person has taken over (e.g. `/taskgate resume`): the escalation is
/// forgotten and the next failure starts a new episode.
pub fn clear_escalation(state: &LoopState) -> LoopState {
    LoopState {
        escalation: None,
        ..state.clone()
    }
}

/// Failures are ignored while escalated, until a green run.
fn ignoring_failures(state: &LoopState) -> bool {
    state.escalation.as_ref().is_some_and(|e| !e.passed_since)
}

struct Step<'c, 'a> {
    s: LoopState,
    effects: Vec<Effect>,
    ctx: &'c LoopContext<'a>,
}

impl<'c, 'a> Step<'c, 'a> {
    fn new(state: &LoopState, ctx: &'c LoopContext<'a>) -> Self {
        Step {
            s: state.clone(),
            effects: Vec::new(),
            ctx,
        }
    }

    fn done(self, outcome: LoopOutcome) -> LoopDecision {
        LoopDecision {
            state: self.s,
            effects: self.effects,
            outcome,
        }
    }

    fn repo(&self) -> RepoName {
        self.ctx.repo.clone()
    }

    fn todo_marker(&self, depth: u32) -> String {
        Marker::BranchTodo {
            story: self.ctx.story.to_owned(),
            task: self.ctx.task.id.value.clone(),
            depth,
            round: self.s.round.max(1),
        }
        .key()
    }

    fn comment(&mut self, marker: &str, body: String, comment_marker: String) {
        self.effects.push(Effect::CommentOnMarker {
            repo: self.repo(),
            marker: marker.to_owned(),
            body,
            comment_marker,
        });
    }

    /// The todo's body written again (its title, labels and state kept).
    fn set_body(&mut self, marker: &str, body: String) {
        self.effects.push(Effect::UpdateIssue {
            repo: self.repo(),
            marker: marker.to_owned(),
            title: None,
            body: Some(body),
            labels: None,
            state: None,
        });
    }

    fn set_state(&mut self, marker: &str, state: IssueState) {
        self.effects.push(Effect::UpdateIssue {
            repo: self.repo(),
            marker: marker.to_owned(),
            title: None,
            body: None,
            labels: None,
            state: Some(state),
        });
    }

    fn ensure_label(&mut self, name: &str) {
        if let Some(spec) = labels::spec(name) {
            self.effects.push(Effect::EnsureLabel {
                repo: self.repo(),
                name: spec.name,
                color: spec.color,
                description: spec.description,
            });
        }
    }

    fn latest_failure(&self) -> Option<&FailureRecord> {
        self.s.failures.last()
    }

    fn view<'v>(&'v self, todo: &'v OpenTodo, now: i64) -> TodoView<'v> {
        TodoView {
            task: self.ctx.task,
            todo,
            failure: self.latest_failure(),
            previous: self.s.failures.iter().rev().nth(1),
            branch: self.ctx.task_branch,
            prefix: &self.ctx.config.commands.prefix,
            max_attempts: max_attempts(self.ctx.task, self.ctx.limits),
            max_depth: self.ctx.limits.max_branch_depth,
            timeout_seconds: self.ctx.limits.branch_timeout_seconds,
            now,
        }
    }

    /// Opens the todo at `depth` for the latest failure, or proposes it in
    /// manual mode.
    fn open_or_propose(&mut self, depth: u32, now: i64) -> LoopOutcome {
        let kind = self
            .latest_failure()
            .and_then(|f| f.gates.first())
            .map_or(FailureKind::Unknown, |g| g.kind);
        let role = route(kind, self.ctx.task, self.ctx.config, depth);
        let marker = self.todo_marker(depth);
        if self.ctx.auto_fix {
            self.open_todo(marker, depth, kind, role, now);
            return if depth > 1 {
                LoopOutcome::Deepened { depth }
            } else {
                LoopOutcome::Opened { depth }
            };
        }
        let proposal = Proposal {
            marker,
            depth,
            kind,
            role,
            attempt: self.latest_failure().map_or(0, |f| f.attempt),
            proposed_at: now,
        };
        let body = render_proposal_comment(
            self.ctx.task,
            &proposal,
            self.latest_failure(),
            self.ctx.limits.max_branch_depth,
            &self.ctx.config.commands.prefix,
        );
        let task_marker = self.ctx.task_marker.to_owned();
        self.comment(&task_marker, body, format!("proposal {}", proposal.marker));
        self.s.proposal = Some(proposal);
        LoopOutcome::Proposed
    }

    fn open_todo(&mut self, marker: String, depth: u32, kind: FailureKind, role: String, now: i64) {
        let route = self
            .ctx
            .config
            .roles
            .get(&role)
            .and_then(|r| r.agent.as_ref());
        let todo = OpenTodo {
            marker,
            depth,
            failed_runs: 1,
            kind,
            role,
            opened_at: now,
            agent: route.map_or_else(|| NO_AGENT.to_owned(), AgentRoute::name),
        };
        let role_label = labels::role_label(&todo.role);
        let kind_label = labels::kind_label(kind);
        for name in [labels::BRANCH_TODO, &role_label, &kind_label] {
            self.ensure_label(name);
        }
        let role = self.ctx.config.roles.get(&todo.role);
        let mut issue_labels = vec![labels::BRANCH_TODO.to_owned(), role_label, kind_label];
        for extra in role.map(|r| r.labels.clone()).unwrap_or_default() {
            if !issue_labels.contains(&extra) {
                issue_labels.push(extra);
            }
        }
        self.effects.push(Effect::CreateIssue {
            repo: self.repo(),
            marker: todo.marker.clone(),
            title: render_todo_title(self.ctx.task, kind),
            body: render_todo_body(&self.view(&todo, now)),
            labels: issue_labels,
            assignees: role.map(|r| r.assignees.clone()).unwrap_or_default(),
        });
        self.effects.push(Effect::LinkSubIssue {
            repo: self.repo(),
            parent: self.ctx.task_marker.to_owned(),
            child: todo.marker.clone(),
            replace_parent: false,
            child_repo: None,
        });
        self.reach_agent(&todo);
        self.s.totals.count_opened(&todo);
        self.s.open = Some(todo);
    }

    fn close_open(&mut self, now: i64, resolution: Resolution) -> Option<OpenTodo> {
        let todo = self.s.open.take()?;
        let state = match resolution {
            Resolution::Fixed => IssueState::ClosedCompleted,
            Resolution::Superseded | Resolution::Escalated => IssueState::ClosedNotPlanned,
        };
        self.set_state(&todo.marker, state);
        self.stop_agent(&todo);
        self.s.history.push(ClosedTodo {
            marker: todo.marker.clone(),
            depth: todo.depth,
            kind: todo.kind,
            role: todo.role.clone(),
            opened_at: todo.opened_at,
            closed_at: now,
            resolution,
            failed_runs: todo.failed_runs,
            agent: todo.agent.clone(),
        });
        let excess = self.s.history.len().saturating_sub(KEPT_HISTORY);
        self.s.history.drain(..excess);
        self.s.totals.count_closed(&todo, resolution, now);
        if resolution == Resolution::Fixed {
            self.s.greened.push(GreenFix {
                kind: todo.kind,
                agent: todo.agent.clone(),
                at: now,
                person: self.ctx.human_involved,
                person_after: false,
            });
            let excess = self.s.greened.len().saturating_sub(KEPT_HISTORY);
            self.s.greened.drain(..excess);
        }
        Some(todo)
    }

    fn escalate(mut self, reason: Bound, now: i64) -> LoopDecision {
        if let Some(todo) = self.s.open.clone() {
            let body = render_escalated_todo_comment(reason);
            self.comment(
                &todo.marker,
                body,
                format!("todo-escalated {}", todo.marker),
            );
            self.close_open(now, Resolution::Escalated);
        }
        self.s.proposal = None;
        self.s.deferred = false;
        let round = self.s.round;
        self.s.escalation = Some(Escalation {
            reason,
            at: now,
            round,
            passed_since: false,
        });
        self.ensure_label(labels::NEEDS_HUMAN);
        let task_marker = self.ctx.task_marker.to_owned();
        self.effects.push(Effect::LabelMarked {
            repo: self.repo(),
            marker: task_marker.clone(),
            add: vec![labels::NEEDS_HUMAN.to_owned()],
            remove: vec![],
        });
        let report = render_escalation_report(self.ctx, &self.s, reason);
        self.comment(
            &task_marker,
            report,
            format!("escalation round={round} {task_marker}"),
        );
        self.done(LoopOutcome::Escalated(reason))
    }

    fn timed_out(&self, now: i64) -> bool {
        let limit = i64::try_from(self.ctx.limits.branch_timeout_seconds).unwrap_or(i64::MAX);
        self.s
            .open
            .as_ref()
            .is_some_and(|t| now.saturating_sub(t.opened_at) >= limit)
    }
}

/// A failed run: opens, updates, deepens, proposes, defers or escalates.
pub fn on_failed_run(state: &LoopState, run: &FailedRun, ctx: &LoopContext) -> LoopDecision {
    let mut step = Step::new(state, ctx);
    if run.attempt <= state.last_attempt {
        return step.done(LoopOutcome::Nothing);
    }
    step.s.last_attempt = run.attempt;
    step.s.failures.push(record(run));
    let excess = step.s.failures.len().saturating_sub(KEPT_FAILURES);
    step.s.failures.drain(..excess);
    let older = step.s.failures.len().saturating_sub(FULL_EVIDENCE_KEPT);
    for f in &mut step.s.failures[..older] {
        evidence::forget_details(f);
    }
    if ignoring_failures(&step.s) {
        return step.done(LoopOutcome::Nothing);
    }
    let now = run.now;
    if step.timed_out(now) {
        return step.escalate(Bound::Timeout, now);
    }
    let max = max_attempts(ctx.task, ctx.limits);
    let max_depth = ctx.limits.max_branch_depth.max(1);

    if let Some(todo) = step.s.open.clone() {
        if todo.depth > max_depth {
            return step.escalate(Bound::Depth, now);
        }
        if todo.failed_runs < max {
            let failed_runs = todo.failed_runs + 1;
            let todo = OpenTodo {
                failed_runs,
                ..todo
            };
            let view = step.view(&todo, now);
            let body = render_todo_body(&view);
            let comment = render_attempt_comment(&view);
            step.set_body(&todo.marker, body);
            step.comment(
                &todo.marker,
                comment,
                format!("todo-attempt={} {}", run.attempt, todo.marker),
            );
            step.reach_agent(&todo);
            step.s.open = Some(todo);
            return step.done(LoopOutcome::Updated { failed_runs });
        }
        // Spent: supersede with a deeper todo.
        let depth = todo.depth + 1;
        if depth > max_depth {
            return step.escalate(Bound::Attempts, now);
        }
        let body = render_superseded_comment(&todo, depth, max_depth);
        step.comment(
            &todo.marker,
            body,
            format!("todo-superseded {}", todo.marker),
        );
        step.close_open(now, Resolution::Superseded);
        let outcome = step.open_or_propose(depth, now);
        return step.done(outcome);
    }

    if step.s.proposal.is_some() {
        // Waiting for a person; the proposal stays as it was posted.
        return step.done(LoopOutcome::Nothing);
    }
    if !step.s.deferred {
        step.s.round += 1;
    }
    if ctx.open_todos_in_story >= ctx.limits.max_concurrent_branches {
        if !step.s.deferred {
            step.s.deferred = true;
            let body = render_deferred_comment(ctx.limits.max_concurrent_branches);
            let marker = format!("deferred round={} {}", step.s.round, ctx.task_marker);
            step.comment(ctx.task_marker, body, marker);
        }
        return step.done(LoopOutcome::Deferred);
    }
    step.s.deferred = false;
    let outcome = step.open_or_propose(1, now);
    step.done(outcome)
}

/// A green run: closes the open todo as completed with its resolution time,
/// drops a pending proposal and records the commit. An escalation stays
/// (see [`is_task_blocked`]), but failures are handled again after it.
pub fn on_green_run(
    state: &LoopState,
    sha: &CommitSha,
    now: i64,
    ctx: &LoopContext,
) -> LoopDecision {
    let mut step = Step::new(state, ctx);
    step.s.last_green = Some(sha.clone());
    step.s.proposal = None;
    step.s.deferred = false;
    if let Some(e) = &mut step.s.escalation {
        e.passed_since = true;
    }
    let Some(todo) = step.s.open.clone() else {
        return step.done(LoopOutcome::Nothing);
    };
    let resolution_seconds = now.saturating_sub(todo.opened_at).max(0);
    let body = render_fixed_comment(sha, todo.failed_runs, resolution_seconds);
    step.comment(&todo.marker, body, format!("todo-fixed {}", todo.marker));
    step.close_open(now, Resolution::Fixed);
    step.done(LoopOutcome::Closed { resolution_seconds })
}

/// The task completed at `now`: the todos green runs closed count as
/// fixed, without a person when none acted from their opening to now
/// (SPEC §9, issue 50); one that went green with no person and then
/// waited for one counts that wait too.
pub fn on_task_completed(state: &LoopState, now: i64) -> LoopState {
    let mut s = state.clone();
    for fix in std::mem::take(&mut s.greened) {
        if fix.person || fix.person_after {
            s.fixed_with_human += 1;
        } else {
            s.fixed_without_human += 1;
        }
        s.totals.count_completed(&fix, now);
    }
    s
}

/// A person acted on the task (a review command, a ready for review, a
/// push or a retry of theirs): the todos already green count their wait
/// for a person.
pub fn note_person(state: &LoopState) -> LoopState {
    let mut s = state.clone();
    for fix in &mut s.greened {
        fix.person_after = true;
    }
    s
}

/// `/taskgate approve-branch`: opens the proposed todo (manual mode). The
/// concurrency limit is not checked again: a person decided.
pub fn on_approve_branch(state: &LoopState, now: i64, ctx: &LoopContext) -> LoopDecision {
    let mut step = Step::new(state, ctx);
    let Some(p) = step.s.proposal.take() else {
        return step.done(LoopOutcome::Nothing);
    };
    if step.s.open.is_some() || ignoring_failures(&step.s) {
        return Step::new(state, ctx).done(LoopOutcome::Nothing);
    }
    step.open_todo(p.marker, p.depth, p.kind, p.role, now);
    step.done(if p.depth > 1 {
        LoopOutcome::Deepened { depth: p.depth }
    } else {
        LoopOutcome::Opened { depth: p.depth }
    })
}

/// Time passes: an open todo older than `branch_timeout_seconds` escalates.
pub fn on_tick(state: &LoopState, now: i64, ctx: &LoopContext) -> LoopDecision {
    let step = Step::new(state, ctx);
    if step.timed_out(now) {
        step.escalate(Bound::Timeout, now)
    } else {
        step.done(LoopOutcome::Nothing)
    }
}

/// The run as stored: at most [`GATES_KEPT`] gates, texts clipped.
fn record(run: &FailedRun) -> FailureRecord {
    use crate::report::clip_middle;
    FailureRecord {
        attempt: run.attempt,
        sha: run.sha.clone(),
        gates: run
            .gates
            .iter()
            .take(GATES_KEPT)
            .map(|g| GateFailure {
                gate: clip_middle(&g.gate, COMMAND_BYTES),
                kind: g.kind,
                summary: clip_middle(&g.summary, SUMMARY_BYTES),
                commands: g
                    .commands
                    .iter()
                    .take(COMMANDS_KEPT)
                    .map(|c| clip_middle(c, COMMAND_BYTES))
                    .collect(),
                tests: g
                    .tests
                    .iter()
                    .take(TESTS_KEPT)
                    .map(|t| FailingTest {
                        name: clip_middle(&t.name, TEST_NAME_BYTES),
                        location: t.location.as_deref().map(|l| clip_middle(l, COMMAND_BYTES)),
                        message: clip_middle(&t.message, TEST_MESSAGE_BYTES),
                    })
                    .collect(),
                tests_failed: g.tests_failed.max(g.tests.len()),
                excerpt: g.excerpt.as_deref().map(|e| clip_middle(e, EXCERPT_BYTES)),
                check_run: evidence::kept_url(g.check_run.as_deref()),
            })
            .collect(),
        changes_since_green: run
            .changes_since_green
            .as_deref()
            .map(|c| clip_middle(c, CHANGES_BYTES)),
        at: run.now,
        last_green: run.last_green.clone(),
        repo_url: evidence::kept_url(run.repo_url.as_deref()),
    }
}
