//! The doctor's report as people read it: lines for a terminal
//! (`taskgate doctor`), Markdown for a comment (`/taskgate doctor`).

use super::{Finding, Level, Report};

fn summary(report: &Report) -> String {
    let (blocking, warnings) = (report.count(Level::Block), report.count(Level::Warn));
    let warned = match warnings {
        0 => String::new(),
        1 => "; 1 warning".to_owned(),
        n => format!("; {n} warnings"),
    };
    match blocking {
        0 => format!("Nothing stops taskgate on {}{warned}.", report.repo),
        1 => format!("1 problem stops taskgate on {}{warned}.", report.repo),
        n => format!("{n} problems stop taskgate on {}{warned}.", report.repo),
    }
}

fn terminal_mark(level: Level) -> &'static str {
    match level {
        Level::Ok => "ok  ",
        Level::Note => "note",
        Level::Warn => "warn",
        Level::Block => "FAIL",
    }
}

/// For a terminal: one line per finding, what to change and the links
/// indented under it, a summary last.
pub fn render_terminal(report: &Report) -> String {
    let mut out = format!("taskgate doctor: {}\n\n", report.repo);
    for f in &report.findings {
        out.push_str(&format!(
            "{}  {}: {}\n",
            terminal_mark(f.level),
            f.topic,
            f.says
        ));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("      {fix}\n"));
        }
        for link in &f.links {
            out.push_str(&format!("      {}: {}\n", link.label, link.url));
        }
    }
    out.push('\n');
    out.push_str(&summary(report));
    out.push('\n');
    out
}

fn markdown_mark(level: Level) -> &'static str {
    match level {
        Level::Ok => "✅",
        Level::Note => "ℹ️",
        Level::Warn => "⚠️",
        Level::Block => "❌",
    }
}

fn markdown_line(f: &Finding) -> String {
    let mut line = format!("- {} **{}**: {}", markdown_mark(f.level), f.topic, f.says);
    if let Some(fix) = &f.fix {
        line.push_str(&format!("<br>{fix}"));
    }
    if !f.links.is_empty() {
        let links: Vec<String> = f
            .links
            .iter()
            .map(|l| format!("[{}]({})", l.label, l.url))
            .collect();
        line.push_str(&format!(" ({})", links.join(", ")));
    }
    line
}

/// For a comment: a list, one item per finding, a summary last.
pub fn render_markdown(report: &Report) -> String {
    let mut out = format!("**taskgate doctor** for `{}`\n\n", report.repo);
    for f in &report.findings {
        out.push_str(&markdown_line(f));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&summary(report));
    out
}
