//! Reaching the agent of a todo's role (`roles.<name>.agent`,
//! `core::config::agent`) in the way that agent is documented to start
//! (docs/decisions/agents.md), when the todo opens and at each later
//! attempt:
//! - `workflow`: dispatched, with the task, the todo, the branch and the
//!   role as inputs;
//! - `mention`: a comment on the todo that mentions the handle, with the
//!   instructions (one per attempt);
//! - `label`: the label added (taken off and put back at a later attempt,
//!   so GitHub sends `labeled` again);
//! - `copilot`: GitHub assigns Copilot only for a user's token, and
//!   taskgate holds only its App's installation token, so it says so once
//!   on the todo, with what to configure.
//!
//! When a todo closes (fixed, superseded, escalated) the agent is stopped
//! ([`Step::stop_agent`]): the `label` route's label and the role's
//! `assignees` (and Copilot, for `copilot`) are taken off, and nothing
//! mentions or dispatches it for that todo again.
//!
//! Owns: the effects and the texts of each route, and of stopping it.
//! Must not: do IO, or decide when a todo opens or an attempt counts
//! (`core::failure`).

use std::collections::BTreeMap;

use super::evidence::render_evidence_input;
use super::{render, LoopContext, OpenTodo, Step, TodoView};
use crate::config::AgentRoute;
use crate::effect::Effect;
use crate::report::{clip_middle, code_span};
use crate::story::MAX_BODY_CHARS;

/// The `evidence` input of a dispatch, in bytes (so at most as many
/// characters): GitHub caps a dispatch's inputs at 65,535 characters in
/// all; a quarter of that holds the failing tests and the first error of
/// a few gates and leaves the workflow's other inputs all the room they
/// need (docs/decisions/agents.md).
pub const EVIDENCE_INPUT_BYTES: usize = 16_000;

/// The inputs an agent workflow is dispatched with: the workflow `taskgate
/// init` writes declares these (`evidence` may be refused by an older one).
pub const AGENT_INPUTS: [&str; 5] = ["task", "todo", "branch", "role", "evidence"];

/// Copilot coding agent's bot account, the login an issue is assigned to.
pub const COPILOT_LOGIN: &str = "copilot-swe-agent[bot]";

impl Step<'_, '_> {
    /// Starts the agent of `todo`'s role, if it has one, for the todo's
    /// current attempt (`failed_runs`; 1 when it opens).
    pub(super) fn reach_agent(&mut self, todo: &OpenTodo) {
        let role = self.ctx.config.roles.get(&todo.role);
        let Some(route) = role.and_then(|r| r.agent.clone()) else {
            return;
        };
        let first = todo.failed_runs <= 1;
        match route {
            AgentRoute::Workflow(workflow) => self.dispatch(todo, workflow),
            AgentRoute::Mention(handle) => {
                // The mention tells no time left: any `now` does.
                let body = render_agent_mention(&handle, &self.view(todo, todo.opened_at));
                let key = format!("agent attempt={} {}", todo.failed_runs, todo.marker);
                self.comment(&todo.marker, body, key);
            }
            AgentRoute::Label(label) => {
                if !first {
                    self.label(todo, vec![], vec![label.clone()]);
                }
                self.label(todo, vec![label], vec![]);
            }
            AgentRoute::Copilot if first => {
                let body = render_copilot_unreachable(&todo.role, self.ctx.task_branch);
                let key = format!("agent-unreachable {}", todo.marker);
                self.comment(&todo.marker, body, key);
            }
            AgentRoute::Copilot => {}
        }
    }

    /// Stops the agent of a todo that closed: the one it was started
    /// with (recorded when the todo opened), whatever the config says
    /// now. Its label comes off, and the agents' accounts among the
    /// assignees (Copilot, a role's `[bot]` assignees); the people
    /// assigned stay, as GitHub keeps them on a closed issue. Nothing
    /// starts it for this todo again: only the open todo is reached.
    pub(super) fn stop_agent(&mut self, todo: &OpenTodo) {
        let role = self.ctx.config.roles.get(&todo.role);
        let route = if todo.agent == super::stats::UNRECORDED_AGENT {
            role.and_then(|r| r.agent.clone())
        } else {
            AgentRoute::from_name(&todo.agent)
        };
        if let Some(AgentRoute::Label(label)) = &route {
            self.label(todo, vec![], vec![label.clone()]);
        }
        let mut assignees: Vec<String> = role
            .map(|r| r.assignees.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|login| is_agent_account(login))
            .collect();
        if route == Some(AgentRoute::Copilot) {
            assignees.push(COPILOT_LOGIN.to_owned());
        }
        if !assignees.is_empty() {
            self.effects.push(Effect::UnassignMarked {
                repo: self.repo(),
                marker: todo.marker.clone(),
                assignees,
            });
        }
    }

    fn label(&mut self, todo: &OpenTodo, add: Vec<String>, remove: Vec<String>) {
        self.effects.push(Effect::LabelMarked {
            repo: self.repo(),
            marker: todo.marker.clone(),
            add,
            remove,
        });
    }

    fn dispatch(&mut self, todo: &OpenTodo, workflow: String) {
        let mut inputs = BTreeMap::from([
            ("task".to_owned(), self.ctx.task.id.value.to_string()),
            ("todo".to_owned(), todo.marker.clone()),
            ("branch".to_owned(), self.ctx.task_branch.to_owned()),
            ("role".to_owned(), todo.role.clone()),
        ]);
        if let Some(f) = self.latest_failure() {
            let evidence = render_evidence_input(f, EVIDENCE_INPUT_BYTES);
            inputs.insert("evidence".to_owned(), evidence);
        }
        self.effects.push(Effect::DispatchWorkflow {
            repo: self.repo(),
            workflow,
            git_ref: self.ctx.task_branch.to_owned(),
            inputs,
            report_to: Some(todo.marker.clone()),
            attempt: None,
            story_run: None,
        });
    }
}

/// An account an agent acts through: a GitHub App's bot (`name[bot]`) or
/// Copilot's coding agent. A person's login has no `[bot]`.
fn is_agent_account(login: &str) -> bool {
    login.ends_with("[bot]") || login == COPILOT_LOGIN
}

/// The comment that starts a mentioned agent (`@claude`), on the todo:
/// what to do, then the evidence itself (the agent may read only this
/// comment): what changed since the previous attempt and what still fails,
/// each failing gate's tests, log excerpt, reproducing command and check
/// run, and the changes since the last green run; within GitHub's limit.
pub fn render_agent_mention(handle: &str, v: &TodoView) -> String {
    let branch = code_span(v.branch);
    let head = format!(
        "{handle} the acceptance run failed on {branch} (attempt {} of {}). \
         Fix the cause and push the fix to {branch}; taskgate tests each push and closes \
         this issue when the run passes. The evidence follows; this issue's body has it too.\n\n",
        v.todo.failed_runs, v.max_attempts,
    );
    let room = MAX_BODY_CHARS.saturating_sub(head.len());
    let evidence = render::render_evidence(v.failure, v.previous, room);
    clip_middle(&format!("{head}{}", evidence.trim_end()), MAX_BODY_CHARS)
}

/// The agent of a route, named for a person without mentioning it (a
/// mention in a comment would start it again).
pub fn describe_agent(route: &AgentRoute) -> String {
    match route {
        AgentRoute::Copilot => "Copilot".to_owned(),
        AgentRoute::Mention(handle) => {
            format!(
                "the agent mentioned as `{}`",
                handle.trim_start_matches('@')
            )
        }
        AgentRoute::Label(label) => format!("the agent started by the label `{label}`"),
        AgentRoute::Workflow(file) => format!("the agent workflow `{file}`"),
    }
}

/// The escalation report's line on the agents of the episode's `roles`,
/// if any has one: each spent its budget and is no longer started.
pub(super) fn render_agents_spent(ctx: &LoopContext, roles: &[&str]) -> Option<String> {
    let mut seen = Vec::new();
    let lines: Vec<String> = roles
        .iter()
        .filter(|r| {
            let first = !seen.contains(*r);
            seen.push(**r);
            first
        })
        .filter_map(|role| {
            let route = ctx.config.roles.get(*role)?.agent.as_ref()?;
            Some(format!("{} (role `{role}`)", describe_agent(route)))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "**Agent budget spent**: {}. taskgate counted each attempt, stopped the \
         agent on each closed todo, and starts it no more for this task until a \
         person steps in. A push is still tested.\n\n",
        lines.join(", ")
    ))
}

/// Said once on a todo whose role's agent is Copilot: with the base
/// branch to pick, the task branch (`branch`), since Copilot otherwise
/// works from the default branch.
pub fn render_copilot_unreachable(role: &str, branch: &str) -> String {
    format!(
        "taskgate could not start Copilot on this todo: GitHub assigns an issue to \
         Copilot only for a user's token, and taskgate writes with its GitHub App's \
         installation token, for which GitHub leaves Copilot out without an error. \
         Assign this issue to Copilot yourself with base branch {base} (in the \
         assignment dialog; Copilot works from the default branch unless told, and \
         taskgate takes only a pull request into {base}), or give role `{role}` an agent taskgate \
         can start in `.github/taskgate.yml`: `agent: {{ mention: \"@claude\" }}`, \
         `agent: {{ label: fix-me }}` or `agent: {{ workflow: agent.yml }}` \
         (docs/decisions/agents.md).",
        base = code_span(branch),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::FailureKind;
    use crate::failure::tests::{run, Fixture, BRANCH};
    use crate::failure::{on_failed_run, LoopDecision, LoopState};

    /// The coder's todo opened (attempt 1), then its second attempt, with
    /// the coder reached through `agent`.
    fn two_attempts(agent: AgentRoute) -> (LoopDecision, LoopDecision) {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent = Some(agent);
        let opened = on_failed_run(
            &LoopState::default(),
            &run(1, FailureKind::TestFailure, 1_000),
            &f.ctx(),
        );
        let again = on_failed_run(
            &opened.state,
            &run(2, FailureKind::TestFailure, 2_000),
            &f.ctx(),
        );
        (opened, again)
    }

    /// The effects after the todo's own (created and linked, or updated
    /// and commented on): what reached the agent.
    fn reaching(d: &LoopDecision) -> Vec<&Effect> {
        let from = d
            .effects
            .iter()
            .rposition(|e| matches!(e, Effect::LinkSubIssue { .. }))
            .or_else(|| {
                d.effects.iter().rposition(
                    |e| matches!(e, Effect::CommentOnMarker { comment_marker, .. } if comment_marker.starts_with("todo-attempt")),
                )
            })
            .expect("the todo's own effects");
        d.effects[from + 1..].iter().collect()
    }

    const TODO: &str = "story=file:s task=data todo=1";

    #[test]
    fn a_mentioned_agent_gets_a_comment_with_the_instructions_at_each_attempt() {
        let (opened, again) = two_attempts(AgentRoute::Mention("@claude".into()));
        let [Effect::CommentOnMarker {
            marker,
            body,
            comment_marker,
            ..
        }] = reaching(&opened)[..]
        else {
            panic!("{:?}", opened.effects);
        };
        assert_eq!(marker, TODO);
        assert_eq!(comment_marker, &format!("agent attempt=1 {TODO}"));
        insta::assert_snapshot!(body, @r#"
            @claude the acceptance run failed on `taskgate/task-2-data` (attempt 1 of 2). Fix the cause and push the fix to `taskgate/task-2-data`; taskgate tests each push and closes this issue when the run passes. The evidence follows; this issue's body has it too.

            ### Diagnosis (run 1 at `000000000000`)

            #### Gate `unit`: test_failure

            ```text
            1 failed: tests/test_a.py::test_fetch - assert 3 >= 10
            ```

            Reproduce from the repository root:

            - `git checkout 0000000000000000000000000000000000000001 && pytest -q`

            Full log: the check run of gate `unit` on commit `000000000000`.

            ### Changes since the last green run

            No green run is recorded for this task yet.

            ```text
            abc1234 Add fetch
            ```
            "#);
        let [Effect::CommentOnMarker {
            body,
            comment_marker,
            ..
        }] = reaching(&again)[..]
        else {
            panic!("{:?}", again.effects);
        };
        assert_eq!(comment_marker, &format!("agent attempt=2 {TODO}"));
        assert!(body.starts_with("@claude ") && body.contains("(attempt 2 of 2)"));
    }

    #[test]
    fn a_labelled_agent_gets_its_label_and_gets_it_again_at_a_later_attempt() {
        let (opened, again) = two_attempts(AgentRoute::Label("fix-me".into()));
        let label = |add: &[&str], remove: &[&str]| Effect::LabelMarked {
            repo: Fixture::new().repo,
            marker: TODO.into(),
            add: add.iter().map(|s| s.to_string()).collect(),
            remove: remove.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(reaching(&opened), [&label(&["fix-me"], &[])]);
        assert_eq!(
            reaching(&again),
            [&label(&[], &["fix-me"]), &label(&["fix-me"], &[])],
            "off and on again, so GitHub sends `labeled` again"
        );
    }

    #[test]
    fn a_workflow_agent_is_dispatched_at_each_attempt() {
        let (opened, again) = two_attempts(AgentRoute::Workflow("agent.yml".into()));
        for d in [&opened, &again] {
            let [Effect::DispatchWorkflow {
                workflow, git_ref, ..
            }] = reaching(d)[..]
            else {
                panic!("{:?}", d.effects);
            };
            assert_eq!((workflow.as_str(), git_ref.as_str()), ("agent.yml", BRANCH));
        }
    }

    #[test]
    fn copilot_cannot_be_started_with_the_apps_token_and_the_todo_says_so_once_with_the_base_branch(
    ) {
        let (opened, again) = two_attempts(AgentRoute::Copilot);
        let [Effect::CommentOnMarker {
            marker,
            body,
            comment_marker,
            ..
        }] = reaching(&opened)[..]
        else {
            panic!("{:?}", opened.effects);
        };
        assert_eq!(
            (marker.as_str(), comment_marker.as_str()),
            (TODO, &*format!("agent-unreachable {TODO}"))
        );
        insta::assert_snapshot!(body, @r#"taskgate could not start Copilot on this todo: GitHub assigns an issue to Copilot only for a user's token, and taskgate writes with its GitHub App's installation token, for which GitHub leaves Copilot out without an error. Assign this issue to Copilot yourself with base branch `taskgate/task-2-data` (in the assignment dialog; Copilot works from the default branch unless told, and taskgate takes only a pull request into `taskgate/task-2-data`), or give role `coder` an agent taskgate can start in `.github/taskgate.yml`: `agent: { mention: "@claude" }`, `agent: { label: fix-me }` or `agent: { workflow: agent.yml }` (docs/decisions/agents.md)."#);
        let todo_body = opened
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::CreateIssue { body, .. } => Some(body.as_str()),
                _ => None,
            })
            .expect("the todo");
        let first = todo_body.split("\n\n").next().unwrap();
        insta::assert_snapshot!(first, @r#"The acceptance run of task **Data loading** failed with **test_failure**; this todo is routed to the **coder** role. Push the fix to `taskgate/task-2-data`: the next green run closes it. To have Copilot fix it, assign this issue to Copilot and choose `taskgate/task-2-data` as the base branch in the assignment dialog: Copilot opens its own pull request into that branch, which taskgate tests with the task's gates (and merges when they pass, under `review: auto`). A pull request into another branch is not taken."#);
        assert!(reaching(&again).is_empty(), "once: {:?}", again.effects);
    }

    /// The coder's todo, reached through `agent`, opened at 1 000 s and
    /// closed by `close` (a transition on the open state).
    fn closed_by(
        agent: AgentRoute,
        close: impl Fn(&LoopState, &crate::failure::LoopContext) -> LoopDecision,
    ) -> Vec<Effect> {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent = Some(agent);
        f.limits.max_branch_depth = 1;
        let opened = on_failed_run(
            &LoopState::default(),
            &run(1, FailureKind::TestFailure, 1_000),
            &f.ctx(),
        );
        close(&opened.state, &f.ctx()).effects
    }

    /// What stopped the agent on the todo: its label off, its assignees off.
    fn stopping(effects: &[Effect]) -> Vec<&Effect> {
        effects
            .iter()
            .filter(|e| {
                matches!(e, Effect::UnassignMarked { .. })
                    || matches!(e, Effect::LabelMarked { add, .. } if add.is_empty())
            })
            .collect()
    }

    #[test]
    fn a_closing_todo_stops_its_agent_whether_fixed_superseded_or_escalated() {
        let label = || AgentRoute::Label("fix-me".into());
        let off = Effect::LabelMarked {
            repo: Fixture::new().repo,
            marker: TODO.into(),
            add: vec![],
            remove: vec!["fix-me".into()],
        };
        let unassign = |who: &[&str]| Effect::UnassignMarked {
            repo: Fixture::new().repo,
            marker: TODO.into(),
            assignees: who.iter().map(|s| s.to_string()).collect(),
        };
        let sha = crate::ids::sha(&"f".repeat(40));
        let fixed = closed_by(label(), |s, c| {
            crate::failure::on_green_run(s, &sha, 2_000, c)
        });
        assert_eq!(stopping(&fixed), [&off], "alice, a person, stays assigned");
        let spent = closed_by(label(), |s, c| {
            let again = on_failed_run(s, &run(2, FailureKind::TestFailure, 2_000), c);
            on_failed_run(&again.state, &run(3, FailureKind::TestFailure, 3_000), c)
        });
        assert_eq!(stopping(&spent), [&off], "escalated");
        let timed_out = closed_by(label(), |s, c| crate::failure::on_tick(s, 1_000_000, c));
        assert_eq!(stopping(&timed_out), [&off]);
        let copilot = closed_by(AgentRoute::Copilot, |s, c| {
            crate::failure::on_green_run(s, &sha, 2_000, c)
        });
        assert_eq!(
            stopping(&copilot),
            [&unassign(&[COPILOT_LOGIN])],
            "Copilot, which a person assigned, is taken off"
        );
    }

    #[test]
    fn the_agent_a_todo_started_is_the_one_stopped_and_only_agents_are_unassigned() {
        let mut f = Fixture::new();
        let coder = f.config.roles.get_mut("coder").unwrap();
        coder.agent = Some(AgentRoute::Label("fix-me".into()));
        coder.assignees = vec!["alice".into(), "openhands[bot]".into()];
        let opened = on_failed_run(
            &LoopState::default(),
            &run(1, FailureKind::TestFailure, 1_000),
            &f.ctx(),
        );
        // The route changes while the todo is open.
        f.config.roles.get_mut("coder").unwrap().agent =
            Some(AgentRoute::Mention("@claude".into()));
        let sha = crate::ids::sha(&"f".repeat(40));
        let fixed = crate::failure::on_green_run(&opened.state, &sha, 2_000, &f.ctx());
        assert_eq!(
            stopping(&fixed.effects),
            [
                &Effect::LabelMarked {
                    repo: f.repo.clone(),
                    marker: TODO.into(),
                    add: vec![],
                    remove: vec!["fix-me".into()],
                },
                &Effect::UnassignMarked {
                    repo: f.repo.clone(),
                    marker: TODO.into(),
                    assignees: vec!["openhands[bot]".into()],
                }
            ],
            "the label it was started by, and the bot, not the person"
        );
    }

    #[test]
    fn every_route_is_read_back_from_its_name() {
        for route in [
            AgentRoute::Copilot,
            AgentRoute::Mention("@claude".into()),
            AgentRoute::Label("fix-me".into()),
            AgentRoute::Workflow("agent.yml".into()),
        ] {
            assert_eq!(AgentRoute::from_name(&route.name()), Some(route));
        }
        for other in ["none", "unknown", "", "robot:x"] {
            assert_eq!(AgentRoute::from_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_superseded_todo_stops_its_agent_and_the_deeper_one_reaches_its_own() {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent = Some(AgentRoute::Label("fix-me".into()));
        let ctx = f.ctx();
        let mut s = LoopState::default();
        for (n, at) in [(1, 1_000), (2, 2_000)] {
            s = on_failed_run(&s, &run(n, FailureKind::TestFailure, at), &ctx).state;
        }
        let deeper = on_failed_run(&s, &run(3, FailureKind::TestFailure, 3_000), &ctx);
        assert_eq!(
            deeper.outcome,
            crate::failure::LoopOutcome::Deepened { depth: 2 }
        );
        let stopped: Vec<&str> = stopping(&deeper.effects)
            .iter()
            .map(|e| match e {
                Effect::LabelMarked { marker, .. } | Effect::UnassignMarked { marker, .. } => {
                    marker.as_str()
                }
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            stopped,
            [TODO],
            "the spent todo's label, not the deeper one's"
        );
    }

    /// The coder reached by `@claude`, escalating after one todo's attempts.
    fn claude_with_one_level() -> Fixture {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent =
            Some(AgentRoute::Mention("@claude".into()));
        f.limits.max_branch_depth = 1;
        f
    }

    #[test]
    fn after_an_escalation_a_failed_run_reaches_no_agent() {
        let f = claude_with_one_level();
        let ctx = f.ctx();
        let mut s = LoopState::default();
        for (n, at) in [(1, 1_000), (2, 2_000), (3, 3_000)] {
            s = on_failed_run(&s, &run(n, FailureKind::TestFailure, at), &ctx).state;
        }
        assert!(s.escalation.is_some());
        let after = on_failed_run(&s, &run(4, FailureKind::TestFailure, 4_000), &ctx);
        assert!(after.effects.is_empty(), "{:?}", after.effects);
        assert_eq!(after.state.failures.len(), 4, "the run is still recorded");
    }

    #[test]
    fn the_escalation_report_names_the_agent_whose_budget_is_spent_without_mentioning_it() {
        let f = claude_with_one_level();
        let ctx = f.ctx();
        let mut s = LoopState::default();
        let mut last = None;
        for (n, at) in [(1, 1_000), (2, 2_000), (3, 3_000)] {
            let d = on_failed_run(&s, &run(n, FailureKind::TestFailure, at), &ctx);
            s = d.state.clone();
            last = Some(d);
        }
        let report = last
            .unwrap()
            .effects
            .into_iter()
            .find_map(|e| match e {
                Effect::CommentOnMarker { body, .. } if body.contains("needs a person") => {
                    Some(body)
                }
                _ => None,
            })
            .unwrap();
        let line = report
            .lines()
            .find(|l| l.starts_with("**Agent budget"))
            .unwrap();
        insta::assert_snapshot!(line, @"**Agent budget spent**: the agent mentioned as `claude` (role `coder`). taskgate counted each attempt, stopped the agent on each closed todo, and starts it no more for this task until a person steps in. A push is still tested.");
        assert!(
            !report.contains("@claude"),
            "a mention would start it again"
        );
    }

    #[test]
    fn a_role_without_an_agent_reaches_none() {
        let mut f = Fixture::new();
        f.config.roles.get_mut("coder").unwrap().agent = None;
        let d = on_failed_run(
            &LoopState::default(),
            &run(1, FailureKind::TestFailure, 1_000),
            &f.ctx(),
        );
        assert!(reaching(&d).is_empty(), "{:?}", d.effects);
    }
}
