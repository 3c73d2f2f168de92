//! `roles.<name>.agent`: how the todos routed to a role reach an agent.
//! Each agent people run on GitHub has its own documented trigger
//! (docs/decisions/agents.md): Copilot's coding agent is assigned the
//! issue, Claude Code's action and the OpenHands resolver answer a mention
//! or a label, anything else runs as a `workflow_dispatch` workflow.
//!
//! ```yaml
//! roles:
//!   coder: { agent: copilot }
//!   tester: { agent: { mention: "@claude" } }
//!   debugger: { agent: { label: fix-me } }
//!   architect: { agent: { workflow: agent.yml } }
//!   reviewer: { agent: { mention: "@claude", ready: never } }
//! ```
//!
//! `ready` says who says "done" when the agent's fix turns every gate
//! green (`core::task::ready`): `auto` (the default) lets taskgate mark
//! its own draft task PR ready for review, `never` leaves that to a
//! person.
//!
//! `agent_workflow: <file>` (the older key) is read as
//! `agent: { workflow: <file> }`; a role with both is refused.
//!
//! Owns: [`AgentRoute`], [`AgentReady`], the reasons a route is refused
//! ([`AgentProblem`]) and reading both keys of a role. Must not: decide
//! what a route does with a todo (`core::failure`), do IO.

use serde::Serialize;

use crate::plan::yaml::{self, Fields, Node, Value};
use crate::plan::{Problem, ProblemKind};

/// How a role's todos reach an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRoute {
    /// The todo is assigned to GitHub's Copilot coding agent.
    Copilot,
    /// A comment on the todo mentions this handle (with its `@`) and
    /// carries the instructions.
    Mention(String),
    /// The todo gets this label (the OpenHands resolver's `fix-me`).
    Label(String),
    /// This workflow file runs as a `workflow_dispatch`.
    Workflow(String),
}

impl AgentRoute {
    /// The workflow a [`AgentRoute::Workflow`] dispatches.
    pub fn workflow(&self) -> Option<&str> {
        match self {
            AgentRoute::Workflow(file) => Some(file),
            _ => None,
        }
    }

    /// The route [`AgentRoute::name`] wrote (a todo records it when it
    /// opens, so the agent it started is the one stopped even when the
    /// config changed since); `None` for any other text.
    pub fn from_name(name: &str) -> Option<AgentRoute> {
        if name == "copilot" {
            return Some(AgentRoute::Copilot);
        }
        let (kind, value) = name.split_once(':')?;
        let value = value.to_owned();
        match kind {
            "mention" => Some(AgentRoute::Mention(value)),
            "label" => Some(AgentRoute::Label(value)),
            "workflow" => Some(AgentRoute::Workflow(value)),
            _ => None,
        }
    }

    /// The agent's name in the fix-rate figures (`copilot`,
    /// `mention:@claude`, `label:fix-me`, `workflow:agent.yml`), cut to
    /// [`AGENT_NAME_BYTES`].
    pub fn name(&self) -> String {
        let name = match self {
            AgentRoute::Copilot => "copilot".to_owned(),
            AgentRoute::Mention(handle) => format!("mention:{handle}"),
            AgentRoute::Label(label) => format!("label:{label}"),
            AgentRoute::Workflow(file) => format!("workflow:{file}"),
        };
        let mut end = name.len().min(AGENT_NAME_BYTES);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name[..end].to_owned()
    }
}

/// Whether taskgate may mark its own draft task PR ready for review when
/// a branch todo of the role closes because its agent's push turned every
/// gate green (`roles.<name>.agent.ready`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentReady {
    /// taskgate marks its own draft ready (and `review: auto` merges it).
    #[default]
    Auto,
    /// The draft stays a draft: a person marks it ready.
    Never,
}

/// The longest agent name kept in the fix-rate figures, in bytes.
pub const AGENT_NAME_BYTES: usize = 80;

/// Why a role's `agent` (or `agent_workflow`) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AgentProblem {
    #[error("`{found}` is not a way to reach an agent; write `copilot`, `{{ mention: \"@handle\" }}`, `{{ label: <label> }}` or `{{ workflow: <file>.yml }}`")]
    UnknownForm { found: String },
    #[error("no agent is named; write `copilot`, `{{ mention: \"@handle\" }}`, `{{ label: <label> }}` or `{{ workflow: <file>.yml }}`")]
    NoForm,
    #[error(
        "it names two agents, `{first}` and `{second}`; a role's todos reach one agent: keep one"
    )]
    TwoForms { first: String, second: String },
    #[error("`{handle}` is not a mention: write the handle with its `@`, as in `@{handle}`")]
    MentionWithoutAt { handle: String },
    #[error("`{handle}` is not a mention: a GitHub handle has no spaces")]
    MentionWithSpace { handle: String },
    #[error("the label is empty: name the label the agent watches, e.g. `fix-me`")]
    EmptyLabel,
    #[error("`{file}` is not a workflow file name: write the name of a file in `.github/workflows/` ending in `.yml` or `.yaml`, e.g. `agent.yml`")]
    NotAWorkflowFile { file: String },
    #[error("`agent_workflow` and `agent` both name the agent; `agent_workflow: <file>` is the older spelling of `agent: {{ workflow: <file> }}`: keep one")]
    BothKeys,
}

/// The role's agent from `agent` or `agent_workflow`, every problem with
/// its place (`None` when it names none or is refused), and its `ready`.
pub(super) fn read_agent(
    role: &str,
    rf: &Fields,
    p: &mut Vec<Problem>,
) -> (Option<AgentRoute>, AgentReady) {
    let ready = rf
        .get("agent")
        .filter(|n| matches!(n.value, Value::Map(_)))
        .map_or(AgentReady::Auto, |n| read_ready(n, role, p));
    (read_route(role, rf, p), ready)
}

/// `ready: auto | never` in the mapping form; `auto` when not said (its
/// unknown keys are reported by [`read_form`]).
fn read_ready(n: &Node, role: &str, p: &mut Vec<Problem>) -> AgentReady {
    let Value::Map(entries) = &n.value else {
        return AgentReady::Auto;
    };
    let Some((_, _, value)) = entries.iter().find(|(k, _, _)| k == "ready") else {
        return AgentReady::Auto;
    };
    let field = format!("roles.{role}.agent.ready");
    match yaml::as_str(value, &field, p).as_deref() {
        Some("never") => AgentReady::Never,
        Some("auto") | None => AgentReady::Auto,
        Some(other) => {
            p.push(Problem::new(
                Some(value.pos),
                ProblemKind::InvalidValue {
                    field,
                    suggestion: yaml::did_you_mean(
                        other,
                        crate::schema::config::AGENT_READY.iter().copied(),
                    ),
                    value: other.to_owned(),
                    expected: "auto, never".into(),
                },
            ));
            AgentReady::Auto
        }
    }
}

fn read_route(role: &str, rf: &Fields, p: &mut Vec<Problem>) -> Option<AgentRoute> {
    let old = rf.get("agent_workflow");
    let new = rf.get("agent");
    if let (Some(_), Some(n)) = (old, new) {
        p.push(refused(n, role, "agent", AgentProblem::BothKeys));
        return None;
    }
    if let Some(n) = old {
        let file = yaml::as_str(n, "agent_workflow", p)?;
        return checked(n, role, "agent_workflow", AgentRoute::Workflow(file), p);
    }
    let n = new?;
    let route = match &n.value {
        Value::Str(s) if s == "copilot" => AgentRoute::Copilot,
        Value::Str(s) => {
            let found = s.clone();
            p.push(refused(
                n,
                role,
                "agent",
                AgentProblem::UnknownForm { found },
            ));
            return None;
        }
        Value::Map(_) => read_form(n, role, p)?,
        _ => {
            let field = format!("roles.{role}.agent");
            p.push(yaml::wrong_type(n, &field, "`copilot` or a mapping"));
            return None;
        }
    };
    checked(n, role, "agent", route, p)
}

/// `{ mention: … }`, `{ label: … }` or `{ workflow: … }`: exactly one.
fn read_form(n: &Node, role: &str, p: &mut Vec<Problem>) -> Option<AgentRoute> {
    let what = format!("role `{role}`'s agent");
    let f = Fields::of(n, &what, &crate::schema::config::AGENT, p)?;
    // `ready` rides beside the one way to reach the agent.
    let named: Vec<&str> = crate::schema::config::AGENT
        .one_of
        .iter()
        .copied()
        .filter(|k| f.get(k).is_some())
        .collect();
    match named.as_slice() {
        // An unknown key was reported already, with its "did you mean".
        [] if matches!(&n.value, Value::Map(e) if e.iter().any(|(k, _, _)| crate::schema::config::AGENT.field(k).is_none())) => {
            None
        }
        [] => {
            p.push(refused(n, role, "agent", AgentProblem::NoForm));
            None
        }
        [form] => {
            let value = f.str(form, p)?;
            Some(match *form {
                "mention" => AgentRoute::Mention(value),
                "label" => AgentRoute::Label(value),
                _ => AgentRoute::Workflow(value),
            })
        }
        [first, second, ..] => {
            let (first, second) = (first.to_string(), second.to_string());
            let why = AgentProblem::TwoForms { first, second };
            p.push(refused(n, role, "agent", why));
            None
        }
    }
}

/// The route when its value can be used, else its problem.
fn checked(
    n: &Node,
    role: &str,
    key: &str,
    route: AgentRoute,
    p: &mut Vec<Problem>,
) -> Option<AgentRoute> {
    match route_problem(&route) {
        None => Some(route),
        Some(why) => {
            let (at, key) = match value_node(n) {
                Some((form, v)) => (v, format!("{key}.{form}")),
                None => (n, key.to_owned()),
            };
            p.push(refused(at, role, &key, why));
            None
        }
    }
}

fn route_problem(route: &AgentRoute) -> Option<AgentProblem> {
    match route {
        AgentRoute::Copilot => None,
        AgentRoute::Mention(handle) => match handle.strip_prefix('@') {
            _ if handle.chars().any(char::is_whitespace) || handle.is_empty() => {
                Some(AgentProblem::MentionWithSpace {
                    handle: handle.clone(),
                })
            }
            Some(name) if !name.is_empty() => None,
            _ => Some(AgentProblem::MentionWithoutAt {
                handle: handle.clone(),
            }),
        },
        AgentRoute::Label(label) if label.trim().is_empty() => Some(AgentProblem::EmptyLabel),
        AgentRoute::Label(_) => None,
        AgentRoute::Workflow(file) => {
            let yaml_file = file.ends_with(".yml") || file.ends_with(".yaml");
            let stem = file.trim_end_matches(".yaml").trim_end_matches(".yml");
            let plain = !file.contains(['/', '\\']) && !file.chars().any(char::is_whitespace);
            (!(yaml_file && plain && !stem.is_empty()))
                .then(|| AgentProblem::NotAWorkflowFile { file: file.clone() })
        }
    }
}

/// The form and its value in a one-form mapping (`{ label: "" }` →
/// `label`, `""`), so a problem points at the value that is wrong.
fn value_node(n: &Node) -> Option<(&str, &Node)> {
    match &n.value {
        Value::Map(entries) => entries.first().map(|(k, _, v)| (k.as_str(), v)),
        _ => None,
    }
}

fn refused(n: &Node, role: &str, key: &str, problem: AgentProblem) -> Problem {
    let field = format!("roles.{role}.{key}");
    Problem::new(Some(n.pos), ProblemKind::Agent { field, problem })
}
