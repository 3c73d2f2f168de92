//! Issue bodies of a story and its tasks (SPEC §1, §3): Markdown that reads
//! well on GitHub and ends with the hidden [`Marker`] line.
//!
//! Bodies are a deterministic function of the plan (file order) and the task
//! views (a `BTreeMap`): an unchanged plan renders byte-identical text, so
//! the sync can compare and skip the write. Text users wrote is escaped:
//! titles become inert inline text, descriptions keep their Markdown but
//! cannot ping anyone, open a stray code fence or forge a marker. Commands
//! are shown verbatim in code spans. A body never exceeds
//! [`MAX_BODY_CHARS`]; a plan too large for that is shown collapsed.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use super::graph::mermaid_graph;
use super::markers::Marker;
use crate::classify::neutralize_mentions;
use crate::ids::StoryId;
use crate::plan::{
    effective_tests, parent_state, EffectiveTests, MetricOp, Plan, RepoFiles, Task, TaskId,
    TaskState, TestSpec,
};

/// GitHub refuses issue bodies longer than 65,536 characters; bytes are
/// counted here (never fewer than characters), with room to spare.
pub const MAX_BODY_CHARS: usize = 65_000;

/// What the engine knows about one task: its issue once created, its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    pub issue: Option<u64>,
    pub state: TaskState,
    /// The task issue's marker key, for a body rendered before the issue
    /// has a number: it is then named by a reference the executor
    /// resolves (`refs`). `None`: named by its title.
    pub marker: Option<String>,
    /// The task's branch and what it was started from, once the task
    /// became ready (`core::story::start`).
    pub branch: Option<(String, super::BranchStart)>,
}

/// The story issue's body. The story title is the issue title and is not
/// repeated. Tasks missing from `tasks` are pending and have no issue yet;
/// a parent without a view gets its state from its children.
pub fn render_story_body(
    story: &StoryId,
    plan: &Plan,
    tasks: &BTreeMap<TaskId, TaskView>,
    repo: &dyn RepoFiles,
) -> String {
    story_body(story, plan, tasks, repo, "")
}

/// [`render_story_body`] of a story whose tasks span repositories (issue
/// 49): the "Parts" section (`story::parts`) follows the progress line.
pub fn render_story_body_with_parts(
    story: &StoryId,
    plan: &Plan,
    tasks: &BTreeMap<TaskId, TaskView>,
    repo: &dyn RepoFiles,
    parts: &str,
) -> String {
    story_body(story, plan, tasks, repo, parts)
}

fn story_body(
    story: &StoryId,
    plan: &Plan,
    tasks: &BTreeMap<TaskId, TaskView>,
    repo: &dyn RepoFiles,
    parts: &str,
) -> String {
    let v = Views::new(plan, tasks);
    let marker = Marker::Story {
        story: story.clone(),
    }
    .render();
    let leaves = plan.leaves();
    let done = leaves
        .iter()
        .filter(|t| v.state(t) == TaskState::Completed)
        .count();
    let head = format!("**{done}/{} tasks complete**\n\n{parts}", leaves.len());
    let milestones = milestones_section(plan, &v);
    let compose = |tree: &str, graph: &str| format!("{head}{tree}{milestones}{graph}{marker}\n");

    let mut tree = String::from("### Tasks\n\n");
    checklist(&plan.tasks, 0, usize::MAX, &v, Some(repo), &mut tree);
    tree.push('\n');
    let full = compose(&tree, &mermaid_graph(plan, &v));
    if full.len() <= MAX_BODY_CHARS {
        return full;
    }
    let without_graph = compose(&tree, "");
    if without_graph.len() <= MAX_BODY_CHARS {
        return without_graph;
    }
    let note = format!(
        "### Tasks\n\n> This plan has {} tasks, too many to show within GitHub's size limit for an \
         issue: only top-level tasks are listed and the dependency graph is left out. \
         `taskgate plan show` prints the whole tree.\n\n",
        plan.walk().len()
    );
    let mut milestones = milestones;
    if milestones.len() > MAX_BODY_CHARS / 4 {
        milestones = format!(
            "### Integration milestones\n\n{} milestones (too many to list here).\n\n",
            plan.integration.len()
        );
    }
    let compose = |tree: &str| format!("{head}{tree}{milestones}{marker}\n");
    let budget = MAX_BODY_CHARS.saturating_sub(compose(&note).len() + 64);
    let mut lines = String::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        let mut line = String::new();
        checklist(std::slice::from_ref(t), 0, 0, &v, None, &mut line);
        if lines.len() + line.len() > budget {
            writeln!(lines, "- … and {} more", plan.tasks.len() - i).ok();
            break;
        }
        lines.push_str(&line);
    }
    compose(&format!("{note}{lines}\n"))
}

/// A task issue's body: description, acceptance checklist, subtasks,
/// dependencies, role, then the marker. The task's own title is the issue
/// title and is not repeated; the acceptance boxes are ticked once the task
/// is in review or completed (its gates have passed).
pub fn render_task_body(
    story: &StoryId,
    plan: &Plan,
    task: &Task,
    tasks: &BTreeMap<TaskId, TaskView>,
    repo: &dyn RepoFiles,
) -> String {
    TaskBodies::new(plan, tasks).render(story, task, repo)
}

/// The task bodies of one plan, its parents' states aggregated and its
/// tasks indexed once: a pass renders every task's body, and doing that
/// work per body made a pass quadratic in the plan (issue 32: most of a
/// 1,000-task plan's time).
pub struct TaskBodies<'a> {
    v: Views<'a>,
}

impl<'a> TaskBodies<'a> {
    pub fn new(plan: &'a Plan, tasks: &'a BTreeMap<TaskId, TaskView>) -> Self {
        TaskBodies {
            v: Views::new(plan, tasks),
        }
    }

    /// [`render_task_body`] of `task`, one of the plan's tasks.
    pub fn render(&self, story: &StoryId, task: &Task, repo: &dyn RepoFiles) -> String {
        task_body(story, task, &self.v, repo)
    }
}

fn task_body(story: &StoryId, task: &Task, v: &Views, repo: &dyn RepoFiles) -> String {
    let mut rest = String::new();
    acceptance_section(task, v, repo, &mut rest);
    if task.is_parent() {
        let (d, n) = v.progress(task);
        writeln!(rest, "\n### Subtasks: {d}/{n} complete\n").ok();
        checklist(&task.tasks, 0, 0, v, Some(repo), &mut rest);
    }
    if v.state(task) == TaskState::Blocked {
        blocked_note(task, v, &mut rest);
    }
    if !task.depends_on.is_empty() {
        depends_on_section(task, v, &mut rest);
    }
    branch_section(task, v, &mut rest);
    task_footer(story, task, &mut rest);
    match task
        .description
        .as_deref()
        .map(markdown_block)
        .filter(|d| !d.is_empty())
    {
        Some(description) => with_description(&description, rest),
        None => rest,
    }
}

/// The acceptance checklist: tests (declared or discovered), artifacts
/// and metrics, ticked once the task's gates have passed.
fn acceptance_section(task: &Task, v: &Views, repo: &dyn RepoFiles, rest: &mut String) {
    rest.push_str("### Acceptance\n\n");
    let passed = matches!(v.state(task), TaskState::Review | TaskState::Completed);
    let check = if passed { "- [x]" } else { "- [ ]" };
    match effective_tests(task, repo) {
        EffectiveTests::Declared(tests) => {
            for t in tests {
                writeln!(rest, "{check} {}", test_line(t)).ok();
            }
        }
        EffectiveTests::Discovered(d) => {
            writeln!(rest, "{check} {} (discovered: {})", test_line(&d.as_test()), d.reason).ok();
        }
        EffectiveTests::NotRequired if task.is_parent() => {
            rest.push_str("Complete when every subtask is complete.\n");
        }
        EffectiveTests::NotRequired => rest.push_str(
            "No testing required (`requires_testing: false`): complete when its pull request merges.\n",
        ),
        EffectiveTests::Missing => rest.push_str(
            "- [ ] No test command declared or discovered: the plan does not validate.\n",
        ),
    }
    for a in &task.acceptance.expected_artifacts {
        writeln!(rest, "{check} Artifact {} exists", code(a)).ok();
    }
    for m in &task.acceptance.metrics {
        let rule = format!("{} {} {}", m.name, metric_symbol(m.operator), m.value);
        writeln!(rest, "{check} Metric {}", code(&rule)).ok();
    }
}

/// Why a blocked task is blocked: the dependencies that fail, or else its
/// own failure loop, which needs a person.
fn blocked_note(task: &Task, v: &Views, rest: &mut String) {
    let failing: Vec<String> = task
        .depends_on
        .iter()
        .filter(|d| {
            matches!(
                v.state_of(&d.value),
                TaskState::TestFailed | TaskState::Blocked
            )
        })
        .map(|d| match v.task(&d.value) {
            Some(dep) => v.name(dep),
            None => code(d.value.as_str()),
        })
        .collect();
    if failing.is_empty() {
        rest.push_str(
            "\n> **Blocked:** its failure loop reached a bound and needs a person; see the escalation report in the comments.\n",
        );
    } else {
        writeln!(
            rest,
            "\n> **Blocked** by {}: failing its acceptance tests. This task becomes ready by itself when {} pass.",
            failing.join(", "),
            if failing.len() == 1 { "they" } else { "all of them" }
        )
        .ok();
    }
}

/// Each dependency with its state.
fn depends_on_section(task: &Task, v: &Views, rest: &mut String) {
    rest.push_str("\n### Depends on\n\n");
    for d in &task.depends_on {
        let name = match v.task(&d.value) {
            Some(dep) => v.name(dep),
            None => code(d.value.as_str()),
        };
        writeln!(rest, "- {name} · {}", code(v.state_of(&d.value).name())).ok();
    }
}

/// What the task's branch was started from, where that says something: a
/// task with dependencies (their merged work is in it), or a branch that
/// existed and was brought up to date. A task without dependencies whose
/// branch was made at the story head says nothing more (its issue is not
/// edited for it).
fn branch_section(task: &Task, v: &Views, rest: &mut String) {
    let Some((name, start)) = v.given.get(&task.id.value).and_then(|t| t.branch.as_ref()) else {
        return;
    };
    if task.depends_on.is_empty() && start.how == super::StartHow::Created {
        return;
    }
    let deps: Vec<String> = task
        .depends_on
        .iter()
        .map(|d| match v.task(&d.value) {
            Some(dep) => v.name(dep),
            None => code(d.value.as_str()),
        })
        .collect();
    writeln!(
        rest,
        "\n### Branch\n\n{}",
        super::start::render_branch_line(name, start, &deps)
    )
    .ok();
}

/// Role, failure routing and plan id, then the marker.
fn task_footer(story: &StoryId, task: &Task, rest: &mut String) {
    rest.push('\n');
    let role = match &task.role {
        Some(r) => code(&r.value),
        None => "not set in the plan (the repository's routing decides)".into(),
    };
    writeln!(rest, "**Role:** {role}  ").ok();
    if !task.failure_routing.is_empty() {
        let routes: Vec<String> = task
            .failure_routing
            .iter()
            .map(|(kind, role)| format!("{} → {}", code(kind), code(&role.value)))
            .collect();
        writeln!(rest, "**Failure routing:** {}  ", routes.join(", ")).ok();
    }
    writeln!(rest, "**Plan id:** {}", code(task.id.as_str())).ok();
    let marker = Marker::Task {
        story: story.clone(),
        task: task.id.value.clone(),
    }
    .render();
    writeln!(rest, "\n{marker}").ok();
}

/// The description above the rest, shortened when the whole would exceed
/// [`MAX_BODY_CHARS`] (the rest, with the marker, is always kept).
fn with_description(description: &str, rest: String) -> String {
    let body = format!("{description}\n\n{rest}");
    if body.len() <= MAX_BODY_CHARS {
        return body;
    }
    let note = "\n\n*(description shortened to fit GitHub's size limit; the plan has it all)*";
    let mut keep = MAX_BODY_CHARS.saturating_sub(rest.len() + note.len() + 16);
    while !description.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{note}\n\n{rest}", markdown_block(&description[..keep]))
}

/// States and issue numbers of every task, parents aggregated.
pub(super) struct Views<'a> {
    given: &'a BTreeMap<TaskId, TaskView>,
    states: HashMap<TaskId, TaskState>,
    /// Every task by id: a body names its dependencies, and looking each
    /// up by walking the plan cost a walk per dependency.
    by_id: HashMap<&'a TaskId, &'a Task>,
}

impl<'a> Views<'a> {
    pub(super) fn new(plan: &'a Plan, given: &'a BTreeMap<TaskId, TaskView>) -> Self {
        fn go(
            tasks: &[Task],
            given: &BTreeMap<TaskId, TaskView>,
            out: &mut HashMap<TaskId, TaskState>,
        ) -> Vec<TaskState> {
            tasks
                .iter()
                .map(|t| {
                    let children = go(&t.tasks, given, out);
                    let state = match given.get(&t.id.value) {
                        Some(view) => view.state,
                        None if t.is_parent() => parent_state(&children),
                        None => TaskState::Pending,
                    };
                    out.entry(t.id.value.clone()).or_insert(state);
                    state
                })
                .collect()
        }
        let mut states = HashMap::new();
        go(&plan.tasks, given, &mut states);
        let by_id = plan
            .walk()
            .into_iter()
            .map(|r| (&r.task.id.value, r.task))
            .collect();
        Views {
            given,
            states,
            by_id,
        }
    }

    /// The plan's task `id`, as [`Plan::task`] finds it.
    pub(super) fn task(&self, id: &TaskId) -> Option<&'a Task> {
        self.by_id.get(id).copied()
    }

    pub(super) fn state_of(&self, id: &TaskId) -> TaskState {
        self.states.get(id).copied().unwrap_or(TaskState::Pending)
    }

    pub(super) fn state(&self, t: &Task) -> TaskState {
        self.state_of(&t.id.value)
    }

    pub(super) fn issue(&self, id: &TaskId) -> Option<u64> {
        self.given.get(id).and_then(|v| v.issue)
    }

    /// `#12` once the issue exists (GitHub shows its title), else the title.
    pub(super) fn name(&self, t: &Task) -> String {
        self.numbered(t, "", &inline(&t.title))
    }

    /// `#12` and `suffix` once the issue exists, else `fallback`; before
    /// the number is known but with the marker, a reference to it.
    pub(super) fn numbered(&self, t: &Task, suffix: &str, fallback: &str) -> String {
        let view = self.given.get(&t.id.value);
        match (
            view.and_then(|v| v.issue),
            view.and_then(|v| v.marker.as_ref()),
        ) {
            (Some(n), _) => format!("#{n}{suffix}"),
            (None, Some(marker)) => super::refs::issue_ref(marker, suffix, fallback),
            (None, None) => fallback.to_owned(),
        }
    }

    /// Direct children complete, of all direct children.
    pub(super) fn progress(&self, t: &Task) -> (usize, usize) {
        let done = t
            .tasks
            .iter()
            .filter(|c| self.state(c) == TaskState::Completed)
            .count();
        (done, t.tasks.len())
    }
}

/// A nested checklist down to `max_depth` levels below `depth`. With a
/// `repo`, leaves tested by a discovered command or not tested say so.
fn checklist(
    tasks: &[Task],
    depth: usize,
    max_depth: usize,
    v: &Views,
    repo: Option<&dyn RepoFiles>,
    out: &mut String,
) {
    for t in tasks {
        let state = v.state(t);
        let check = if state == TaskState::Completed {
            "x"
        } else {
            " "
        };
        let mut line = format!("{}- [{check}] ", "  ".repeat(depth));
        if t.is_parent() {
            let (d, n) = v.progress(t);
            line.push_str(&v.numbered(t, " · ", ""));
            write!(line, "{}: {d}/{n}", inline(&t.title)).ok();
        } else {
            line.push_str(&v.name(t));
        }
        write!(line, " · {}", code(state.name())).ok();
        match repo.map(|r| effective_tests(t, r)) {
            Some(EffectiveTests::Discovered(d)) => {
                write!(line, " · tested by {} (discovered)", code(&d.cmd)).ok();
            }
            Some(EffectiveTests::NotRequired) if !t.is_parent() => {
                line.push_str(" · no testing required");
            }
            _ => {}
        }
        writeln!(out, "{line}").ok();
        if depth < max_depth {
            checklist(&t.tasks, depth + 1, max_depth, v, repo, out);
        }
    }
}

fn milestones_section(plan: &Plan, v: &Views) -> String {
    if plan.integration.is_empty() {
        return String::new();
    }
    let mut out = String::from("### Integration milestones\n\n");
    for m in &plan.integration {
        let timeout = m
            .timeout_seconds
            .map(|s| format!(" (timeout {s}s)"))
            .unwrap_or_default();
        let waiting: Vec<String> = m
            .after
            .iter()
            .filter(|a| v.state_of(&a.value) != TaskState::Completed)
            .map(|a| match plan.task(&a.value) {
                Some(t) => format!("{} ({})", v.name(t), code(v.state(t).name())),
                None => code(a.value.as_str()),
            })
            .collect();
        let status = if waiting.is_empty() {
            "ready: everything it waits for is complete".to_string()
        } else {
            format!("waits for {}", waiting.join(", "))
        };
        writeln!(
            out,
            "- {}: {}{timeout} on the story branch · {status}",
            code(m.id.value.as_str()),
            code(&m.cmd)
        )
        .ok();
    }
    out.push('\n');
    out
}

/// `cmd` — gate `unit`, timeout 30s
fn test_line(t: &TestSpec) -> String {
    let timeout = t
        .timeout_seconds
        .map(|s| format!(", timeout {s}s"))
        .unwrap_or_default();
    format!("{} — gate {}{timeout}", code(&t.cmd), code(&t.gate))
}

fn metric_symbol(op: MetricOp) -> &'static str {
    match op {
        MetricOp::Ge => "≥",
        MetricOp::Le => "≤",
        MetricOp::Gt => ">",
        MetricOp::Lt => "<",
        MetricOp::Eq => "=",
        MetricOp::Ne => "≠",
    }
}

/// A code span that holds `s` verbatim on one line, whatever backticks it
/// contains (the fence is one backtick longer than its longest run).
fn code(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || longest > 0 && s.starts_with(' ') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A title as inert inline Markdown: one line, Markdown and HTML syntax
/// backslash-escaped, mentions and issue references neutralised.
pub(crate) fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.split_whitespace().collect::<Vec<_>>().join(" ").chars() {
        if "\\`*_[]<>|~&!".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    neutralize_mentions(&out)
}

/// A description as Markdown: kept as written, but mentions neutralised,
/// HTML comments defused (no hidden text, no forged marker) and an
/// unclosed code fence closed so it cannot swallow the rest of the body.
pub(crate) fn markdown_block(s: &str) -> String {
    let mut out = neutralize_mentions(s.trim()).replace("<!--", "&lt;!--");
    let mut open: Option<String> = None;
    for line in out.lines() {
        let t = line.trim_start();
        if line.len() - t.len() > 3 {
            continue;
        }
        let fence: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
        if fence.len() < 3 || fence.chars().any(|c| c != fence.chars().next().unwrap()) {
            continue;
        }
        open = match open {
            Some(o) if fence.starts_with(&o) && t[fence.len()..].trim().is_empty() => None,
            Some(o) => Some(o),
            None => Some(fence),
        };
    }
    if let Some(fence) = open {
        write!(out, "\n{fence}").ok();
    }
    out
}

#[cfg(test)]
mod tests;
