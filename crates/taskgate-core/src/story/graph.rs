//! The story issue's dependency graph as a Mermaid flowchart (GitHub
//! renders ```` ```mermaid ```` blocks). Adapted from
//! `plan::render_mermaid`, with what an issue body needs on top: issue
//! numbers in the nodes, positional node ids, and labels escaped so that no
//! title can end the label, the statement or the code fence.

use std::collections::HashMap;
use std::fmt::Write;

use super::body::Views;
use crate::classify::neutralize_mentions;
use crate::plan::{Plan, Task, TaskId, TaskState};

/// A Mermaid dependency graph: parents are subgraphs, an arrow goes from a
/// task to what waits for it, leaves are coloured by state. Node ids are
/// positional (`t1`, `m1`) so no plan id can clash with Mermaid's syntax.
pub(super) fn mermaid_graph(plan: &Plan, v: &Views) -> String {
    let mut ids: HashMap<&TaskId, String> = HashMap::new();
    let walk = plan.walk();
    for (i, r) in walk.iter().enumerate() {
        ids.entry(&r.task.id.value).or_insert(format!("t{}", i + 1));
    }
    let mut out = String::from("### Dependency graph\n\n```mermaid\ngraph TD\n");
    fn nodes(
        tasks: &[Task],
        depth: usize,
        ids: &HashMap<&TaskId, String>,
        v: &Views,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        for t in tasks {
            let id = &ids[&t.id.value];
            let issue = v
                .issue(&t.id.value)
                .map(|n| format!("#35;{n} · "))
                .unwrap_or_default();
            let title = mermaid_text(&t.title);
            if t.is_parent() {
                let (d, n) = v.progress(t);
                writeln!(out, "{pad}subgraph {id}[\"{issue}{title}: {d}/{n}\"]").ok();
                nodes(&t.tasks, depth + 1, ids, v, out);
                writeln!(out, "{pad}end").ok();
            } else {
                writeln!(out, "{pad}{id}[\"{issue}{title}<br/>{}\"]", v.state(t)).ok();
            }
        }
    }
    nodes(&plan.tasks, 1, &ids, v, &mut out);
    for (i, m) in plan.integration.iter().enumerate() {
        let label = mermaid_text(&format!("integration: {}", m.id.value));
        writeln!(out, "  m{}{{{{\"{label}\"}}}}", i + 1).ok();
    }
    let mut edges = Vec::new();
    for r in &walk {
        for d in &r.task.depends_on {
            edges.push((ids.get(&d.value), ids.get(&r.task.id.value).cloned()));
        }
    }
    for (i, m) in plan.integration.iter().enumerate() {
        for a in &m.after {
            edges.push((ids.get(&a.value), Some(format!("m{}", i + 1))));
        }
    }
    for (from, to) in edges {
        if let (Some(from), Some(to)) = (from, to) {
            writeln!(out, "  {from} --> {to}").ok();
        }
    }
    let mut used = Vec::new();
    for r in walk.iter().filter(|r| !r.task.is_parent()) {
        let s = v.state(r.task);
        writeln!(out, "  class {} {}", ids[&r.task.id.value], state_class(s)).ok();
        if !used.contains(&s) {
            used.push(s);
        }
    }
    for s in TaskState::ALL.into_iter().filter(|s| used.contains(s)) {
        writeln!(out, "  classDef {} {}", state_class(s), state_style(s)).ok();
    }
    out.push_str("```\n\n");
    out
}

fn state_class(s: TaskState) -> String {
    s.name().replace('-', "_")
}

/// Node colours, as in `plan::render_mermaid`.
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

/// Text inside a quoted Mermaid label: one line, every character Mermaid
/// or the Markdown fence could read as syntax written as an entity.
fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in neutralize_mentions(s).chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '`' => out.push_str("#96;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
