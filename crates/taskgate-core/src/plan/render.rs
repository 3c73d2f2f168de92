//! Texts people read about plans: the validation report (`taskgate plan
//! validate`), the task tree with states and dependencies (`plan show`, the
//! story issue), and a Mermaid graph (`plan show --mermaid`, the dashboard).

use std::collections::HashMap;
use std::fmt::Write;

use super::discover::{effective_tests, EffectiveTests, RepoFiles};
use super::{Plan, PlanReport, Problem, Task, TaskId, TaskState, TestSpec};

/// One line per problem (`file:line:col: error: message`), then a summary
/// line per file.
pub fn render_validation_report(reports: &[PlanReport]) -> String {
    report_text(reports, false)
}

/// [`render_validation_report`] with each problem's JSON pointer: what a
/// check run shows, for a person and for an agent fixing the file.
pub fn render_check_report(reports: &[PlanReport]) -> String {
    report_text(reports, true)
}

fn report_text(reports: &[PlanReport], pointers: bool) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&problems_text(&r.file, &r.problems, pointers));
        let warnings = match r.warning_count() {
            0 => String::new(),
            1 => ", 1 warning".into(),
            n => format!(", {n} warnings"),
        };
        match &r.plan {
            Some(plan) if r.is_ok() => {
                let tasks = plan.walk().len();
                let milestones = plan.integration.len();
                writeln!(
                    out,
                    "{}: ok ({tasks} task{}, {milestones} milestone{}){warnings}",
                    r.file,
                    plural(tasks),
                    plural(milestones)
                )
                .ok();
            }
            _ => {
                let n = r.error_count();
                writeln!(out, "{}: {n} error{}{warnings}", r.file, plural(n)).ok();
            }
        }
    }
    out
}

/// `file:line:col: error: message`, one line per problem (no summary):
/// also for `.github/taskgate.yml` problems.
pub fn render_problems(file: &str, problems: &[Problem]) -> String {
    problems_text(file, problems, false)
}

/// [`render_problems`] with each problem's JSON pointer, as check runs show
/// them.
pub fn render_check_problems(file: &str, problems: &[Problem]) -> String {
    problems_text(file, problems, true)
}

fn problems_text(file: &str, problems: &[Problem], pointers: bool) -> String {
    let mut out = String::new();
    for p in problems {
        let severity = if p.is_error() { "error" } else { "warning" };
        let at = match &p.pointer {
            Some(pointer) if pointers && !pointer.is_empty() => format!(" (at {pointer})"),
            _ => String::new(),
        };
        match p.pos {
            Some(pos) => writeln!(
                out,
                "{file}:{}:{}: {severity}: {}{at}",
                pos.line, pos.column, p.message
            ),
            None => writeln!(out, "{file}: {severity}: {}{at}", p.message),
        }
        .ok();
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A parent's state from its children's (SPEC §3: a parent completes when
/// all its children do).
pub fn parent_state(children: &[TaskState]) -> TaskState {
    use TaskState::*;
    if !children.is_empty() && children.iter().all(|s| *s == Completed) {
        Completed
    } else if children.contains(&Blocked) {
        Blocked
    } else if children
        .iter()
        .any(|s| matches!(s, InProgress | Testing | TestFailed | Review | Completed))
    {
        // Work has started under this parent.
        InProgress
    } else if children.contains(&Ready) {
        // Nothing started yet, but something can be.
        Ready
    } else if !children.is_empty() && children.iter().all(|s| *s == Paused) {
        Paused
    } else {
        Pending
    }
}

/// States for every task: given ones, parents aggregated, others pending.
pub fn resolve_states(
    plan: &Plan,
    given: &HashMap<TaskId, TaskState>,
) -> HashMap<TaskId, TaskState> {
    fn go(
        tasks: &[Task],
        given: &HashMap<TaskId, TaskState>,
        out: &mut HashMap<TaskId, TaskState>,
    ) -> Vec<TaskState> {
        tasks
            .iter()
            .map(|t| {
                let state = if t.is_parent() {
                    let children = go(&t.tasks, given, out);
                    given
                        .get(&t.id.value)
                        .copied()
                        .unwrap_or_else(|| parent_state(&children))
                } else {
                    given
                        .get(&t.id.value)
                        .copied()
                        .unwrap_or(TaskState::Pending)
                };
                out.insert(t.id.value.clone(), state);
                state
            })
            .collect()
    }
    let mut out = HashMap::new();
    go(&plan.tasks, given, &mut out);
    out
}

/// A parent's direct children complete, of all its direct children.
pub fn progress(task: &Task, states: &HashMap<TaskId, TaskState>) -> (usize, usize) {
    let done = task
        .tasks
        .iter()
        .filter(|c| states.get(&c.id.value) == Some(&TaskState::Completed))
        .count();
    (done, task.tasks.len())
}

fn test_line(t: &TestSpec) -> String {
    let gate = if t.gate == super::DEFAULT_GATE {
        String::new()
    } else {
        format!(" ({})", t.gate)
    };
    let timeout = t
        .timeout_seconds
        .map(|s| format!("  (timeout {s}s)"))
        .unwrap_or_default();
    let reports = if t.reports.is_empty() {
        String::new()
    } else {
        format!("  (reports: {})", t.reports.join(", "))
    };
    format!("test{gate}: {}{timeout}{reports}", t.cmd)
}

/// The task tree: ids, titles, states, progress of parents, dependencies,
/// and how each leaf is tested (a discovered command is shown with why).
/// Tasks missing from `states` are `pending`; parents are aggregated.
pub fn render_tree(
    plan: &Plan,
    states: &HashMap<TaskId, TaskState>,
    repo: &dyn RepoFiles,
) -> String {
    let states = resolve_states(plan, states);
    let leaves = plan.leaves();
    let done = leaves
        .iter()
        .filter(|t| states.get(&t.id.value) == Some(&TaskState::Completed))
        .count();
    let mut out = format!("{} — {done}/{} tasks complete\n", plan.story, leaves.len());
    render_level(&plan.tasks, "", &states, repo, &mut out);
    if !plan.integration.is_empty() {
        out.push_str("integration:\n");
        for m in &plan.integration {
            let after: Vec<&str> = m.after.iter().map(|a| a.as_str()).collect();
            let timeout = m
                .timeout_seconds
                .map(|s| format!("  (timeout {s}s)"))
                .unwrap_or_default();
            writeln!(
                out,
                "  {} after {}: {}{timeout}",
                m.id.value,
                after.join(", "),
                m.cmd
            )
            .ok();
        }
    }
    out
}

fn render_level(
    tasks: &[Task],
    indent: &str,
    states: &HashMap<TaskId, TaskState>,
    repo: &dyn RepoFiles,
    out: &mut String,
) {
    for (i, t) in tasks.iter().enumerate() {
        let last = i + 1 == tasks.len();
        let (branch, cont) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        let state = states
            .get(&t.id.value)
            .copied()
            .unwrap_or(TaskState::Pending);
        let mut head = format!("{indent}{branch}{} · {} [{state}]", t.id.value, t.title);
        if t.is_parent() {
            let (d, n) = progress(t, states);
            write!(head, " {d}/{n}").ok();
        }
        writeln!(out, "{head}").ok();
        let child_indent = format!("{indent}{cont}");
        // Details sit under the task, indented past its children's branches.
        let detail = format!(
            "{child_indent}{}",
            if t.is_parent() { "│  " } else { "   " }
        );
        let mut details = Vec::new();
        if let Some(role) = &t.role {
            details.push(format!("role: {}", role.value));
        }
        if !t.depends_on.is_empty() {
            let deps: Vec<String> = t
                .depends_on
                .iter()
                .map(|d| {
                    let s = states
                        .get(&d.value)
                        .map(|s| format!(" [{s}]"))
                        .unwrap_or_default();
                    format!("{}{s}", d.value)
                })
                .collect();
            details.push(format!("depends on: {}", deps.join(", ")));
        }
        match effective_tests(t, repo) {
            EffectiveTests::Declared(tests) => details.extend(tests.iter().map(test_line)),
            EffectiveTests::Discovered(d) => {
                details.push(format!("test: {}  (discovered: {})", d.cmd, d.reason))
            }
            EffectiveTests::NotRequired if !t.is_parent() => {
                details.push("no testing required".into())
            }
            EffectiveTests::NotRequired => {}
            EffectiveTests::Missing => {
                details.push("test: none found (this plan does not validate)".into())
            }
        }
        details.extend(
            t.acceptance
                .expected_artifacts
                .iter()
                .map(|a| format!("expects: {a}")),
        );
        details.extend(
            t.acceptance
                .metrics
                .iter()
                .map(|m| format!("metric: {} {} {}", m.name, m.operator.symbol(), m.value)),
        );
        details.extend(
            t.acceptance
                .required_tests
                .iter()
                .map(|id| format!("requires test: {id}")),
        );
        for d in details {
            writeln!(out, "{}", format!("{detail}{d}").trim_end()).ok();
        }
        render_level(&t.tasks, &child_indent, states, repo, out);
    }
}

/// Node ids that Mermaid accepts (no `end`, no `-`), unique per plan id.
fn mermaid_ids(plan: &Plan) -> HashMap<TaskId, String> {
    let mut out = HashMap::new();
    let mut used = std::collections::HashSet::new();
    let ids = plan
        .walk()
        .into_iter()
        .map(|r| r.task.id.value.clone())
        .chain(plan.integration.iter().map(|m| m.id.value.clone()));
    for id in ids {
        let base: String = id
            .as_str()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut name = format!("t_{base}");
        let mut n = 2;
        while !used.insert(name.clone()) {
            name = format!("t_{base}_{n}");
            n += 1;
        }
        out.entry(id).or_insert(name);
    }
    out
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

fn state_class(s: TaskState) -> String {
    s.name().replace('-', "_")
}

/// A Mermaid flowchart: parents are subgraphs, an arrow goes from a task to
/// the tasks that wait for it, nodes are coloured by state.
pub fn render_mermaid(plan: &Plan, states: &HashMap<TaskId, TaskState>) -> String {
    let states = resolve_states(plan, states);
    let ids = mermaid_ids(plan);
    let mut out = String::from("flowchart TD\n");
    writeln!(out, "  %% {}", plan.story.replace('\n', " ")).ok();
    fn nodes(
        tasks: &[Task],
        depth: usize,
        ids: &HashMap<TaskId, String>,
        states: &HashMap<TaskId, TaskState>,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        for t in tasks {
            let id = &ids[&t.id.value];
            let state = states[&t.id.value];
            let label = mermaid_text(&format!("{}: {}", t.id.value, t.title));
            if t.is_parent() {
                let (d, n) = progress(t, states);
                writeln!(out, "{pad}subgraph {id}[\"{label} ({d}/{n})\"]").ok();
                nodes(&t.tasks, depth + 1, ids, states, out);
                writeln!(out, "{pad}end").ok();
            } else {
                writeln!(out, "{pad}{id}[\"{label}<br/>{state}\"]").ok();
            }
        }
    }
    nodes(&plan.tasks, 1, &ids, &states, &mut out);
    for m in &plan.integration {
        writeln!(
            out,
            "  {}{{{{\"{}\"}}}}",
            ids[&m.id.value],
            mermaid_text(&format!("integration: {}", m.id.value))
        )
        .ok();
    }
    let walk = plan.walk();
    for r in &walk {
        for d in r.task.depends_on.iter().filter_map(|d| ids.get(&d.value)) {
            writeln!(out, "  {d} --> {}", ids[&r.task.id.value]).ok();
        }
    }
    for m in &plan.integration {
        for a in m.after.iter().filter_map(|a| ids.get(&a.value)) {
            writeln!(out, "  {a} --> {}", ids[&m.id.value]).ok();
        }
    }
    let mut used: Vec<TaskState> = Vec::new();
    for r in walk.iter().filter(|r| !r.task.is_parent()) {
        let s = states[&r.task.id.value];
        writeln!(out, "  class {} {}", ids[&r.task.id.value], state_class(s)).ok();
        if !used.contains(&s) {
            used.push(s);
        }
    }
    for s in TaskState::ALL.into_iter().filter(|s| used.contains(s)) {
        writeln!(out, "  classDef {} {}", state_class(s), state_style(s)).ok();
    }
    out
}

fn state_style(s: TaskState) -> &'static str {
    match s {
        TaskState::Pending => "fill:#f6f8fa,stroke:#8c959f",
        TaskState::Ready => "fill:#ddf4ff,stroke:#0969da",
        TaskState::InProgress | TaskState::Testing => "fill:#fff8c5,stroke:#9a6700",
        TaskState::TestFailed => "fill:#ffebe9,stroke:#cf222e",
        TaskState::Review => "fill:#fbefff,stroke:#8250df",
        TaskState::Completed => "fill:#dafbe1,stroke:#1a7f37",
        TaskState::Blocked => "fill:#ffebe9,stroke:#cf222e,stroke-dasharray:4",
        TaskState::Paused | TaskState::Rejected => "fill:#eaeef2,stroke:#57606a",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RepoConfig;
    use crate::plan::{check_plan, MemFiles, NoFiles};

    const MOMENTUM: &str = include_str!("../../fixtures/plans/momentum.yml");

    fn plan(src: &str, repo: &dyn RepoFiles) -> Plan {
        check_plan("plan.yml", src, &RepoConfig::default(), repo)
            .plan
            .expect("valid plan")
    }

    fn states(pairs: &[(&str, TaskState)]) -> HashMap<TaskId, TaskState> {
        pairs.iter().map(|(id, s)| (TaskId::new(*id), *s)).collect()
    }

    #[test]
    fn tree_shows_states_dependencies_and_tests() {
        let p = plan(MOMENTUM, &NoFiles);
        let s = states(&[
            ("data", TaskState::Completed),
            ("entry", TaskState::Testing),
        ]);
        insta::assert_snapshot!(render_tree(&p, &s, &NoFiles), @r"
        Momentum strategy with RSI — 1/3 tasks complete
        ├─ data · Data loading integration [completed]
        │     role: coder
        │     test (unit): pytest tests/test_adapter.py::test_fetch -q  (timeout 30s)
        │     test (lint): ruff check .
        │     expects: Backtest/backtesting_adapter.py
        │     metric: rows_min >= 10
        └─ signals · Signals [in-progress] 0/2
           ├─ entry · Entry conditions [testing]
           │     depends on: data [completed]
           │     test: pytest tests/test_entry.py
           └─ docs · Strategy notes [pending]
                 no testing required
        integration:
          backtest after signals: pytest tests/integration -q  (timeout 300s)
        ");
    }

    #[test]
    fn tree_shows_report_globs_and_required_tests() {
        let src = "story: S\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ cmd: pytest, reports: [junit.xml] }]\n      required_tests: ['tests/test_x.py::test_y']\n";
        insta::assert_snapshot!(render_tree(&plan(src, &NoFiles), &HashMap::new(), &NoFiles), @r"
        S — 0/1 tasks complete
        └─ a · a [pending]
              test: pytest  (reports: junit.xml)
              requires test: tests/test_x.py::test_y
        ");
    }

    #[test]
    fn tree_shows_the_discovered_command_and_why() {
        let src = "story: Reporting\ntasks:\n  - { id: api, title: API }\n  - { id: ui, title: UI, depends_on: [api] }\n";
        let repo = MemFiles::new(&[
            ("Makefile", "test-api:\n\tcargo test api\n"),
            ("Cargo.toml", ""),
        ]);
        insta::assert_snapshot!(render_tree(&plan(src, &repo), &HashMap::new(), &repo), @r"
        Reporting — 0/2 tasks complete
        ├─ api · API [pending]
        │     test: make test-api  (discovered: the Makefile has a `test-api` target)
        └─ ui · UI [pending]
              depends on: api [pending]
              test: cargo test  (discovered: Cargo.toml: a Rust project)
        ");
    }

    #[test]
    fn mermaid_graph_of_the_momentum_plan() {
        let p = plan(MOMENTUM, &NoFiles);
        let s = states(&[
            ("data", TaskState::Completed),
            ("entry", TaskState::TestFailed),
        ]);
        insta::assert_snapshot!(render_mermaid(&p, &s), @r#"
        flowchart TD
          %% Momentum strategy with RSI
          t_data["data: Data loading integration<br/>completed"]
          subgraph t_signals["signals: Signals (0/2)"]
            t_entry["entry: Entry conditions<br/>test-failed"]
            t_docs["docs: Strategy notes<br/>pending"]
          end
          t_backtest{{"integration: backtest"}}
          t_data --> t_entry
          t_signals --> t_backtest
          class t_data completed
          class t_entry test_failed
          class t_docs pending
          classDef pending fill:#f6f8fa,stroke:#8c959f
          classDef test_failed fill:#ffebe9,stroke:#cf222e
          classDef completed fill:#dafbe1,stroke:#1a7f37
        "#);
    }

    #[test]
    fn mermaid_ids_avoid_keywords_and_collisions() {
        let src = "story: 'Say \"hi\"'\ntasks:\n  - { id: end, title: 'a <b>', acceptance: { tests: [x] } }\n  - { id: a-b, acceptance: { tests: [x] } }\n  - { id: a_b, depends_on: [a-b], acceptance: { tests: [x] } }\n";
        insta::assert_snapshot!(render_mermaid(&plan(src, &NoFiles), &HashMap::new()), @r#"
        flowchart TD
          %% Say "hi"
          t_end["end: a #lt;b#gt;<br/>pending"]
          t_a_b["a-b: a-b<br/>pending"]
          t_a_b_2["a_b: a_b<br/>pending"]
          t_a_b --> t_a_b_2
          class t_end pending
          class t_a_b pending
          class t_a_b_2 pending
          classDef pending fill:#f6f8fa,stroke:#8c959f
        "#);
    }

    #[test]
    fn report_for_several_files() {
        let ok = check_plan("good.yml", MOMENTUM, &RepoConfig::default(), &NoFiles);
        let bad = check_plan(
            "bad.yml",
            "story: x\ntasks:\n  - { id: a }\n",
            &RepoConfig::default(),
            &NoFiles,
        );
        insta::assert_snapshot!(render_validation_report(&[ok, bad]), @r"
        good.yml: ok (4 tasks, 1 milestone)
        bad.yml:3:11: error: task `a` requires testing but has no tests and no test command could be discovered (add `acceptance.tests`, a Makefile target `test-a`, or `requires_testing: false`)
        bad.yml: 1 error
        ");
    }

    #[test]
    fn parent_state_aggregates_children() {
        use TaskState::*;
        assert_eq!(parent_state(&[Completed, Completed]), Completed);
        assert_eq!(parent_state(&[Completed, Pending]), InProgress);
        assert_eq!(parent_state(&[Blocked, Testing]), Blocked);
        assert_eq!(parent_state(&[Pending, Pending]), Pending);
        assert_eq!(parent_state(&[Pending, Ready]), Ready);
    }
}
