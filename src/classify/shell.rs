//! The shell around every tool: commands that could not start (126/127),
//! missing artifacts, a plain `N passed, M failed` line, signals, and the
//! final fallback when nothing was recognised.

use super::text::{classification, is_meaningful};
use super::{Classification, Ctx, FailureKind};

/// A command that never ran: not found (127) or not executable (126).
pub(super) fn launch_failure(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    let via_make = log
        .lines
        .iter()
        .any(|l| l.ends_with("Error 127") || l.ends_with("Error 126"));
    if ctx.exit_code != Some(127) && ctx.exit_code != Some(126) && !via_make {
        return None;
    }
    for line in &log.lines {
        let t = line.trim();
        // bash: `bash: line 1: x: command not found`; dash: `sh: 1: x: not found`;
        // zsh: `zsh: command not found: x`; make: `make: x: No such file or directory`.
        let not_found = if let Some(rest) = t
            .strip_suffix(": command not found")
            .or_else(|| t.strip_suffix(": not found"))
        {
            rest.rsplit(": ").next()
        } else if let Some(name) = t.split_once("command not found: ").map(|(_, n)| n) {
            Some(name)
        } else if t.starts_with("make: ") && t.ends_with(": No such file or directory") {
            t.trim_start_matches("make: ").split(": ").next()
        } else {
            None
        };
        if let Some(name) = not_found {
            let lines = [
                format!("command not found: {name}"),
                "install it on the runner or fix the gate command".to_string(),
            ];
            return Some(classification(
                FailureKind::ToolingError,
                &lines,
                Vec::new(),
            ));
        }
        if let Some(rest) = t
            .strip_suffix(": Permission denied")
            .or_else(|| t.strip_suffix(": cannot execute binary file"))
        {
            let name = rest.rsplit(": ").next().unwrap_or(rest);
            let lines = [
                format!("not executable: {name} (permission denied)"),
                "run `chmod +x` on it or call it through its interpreter".to_string(),
            ];
            return Some(classification(
                FailureKind::ToolingError,
                &lines,
                Vec::new(),
            ));
        }
    }
    let (what, hint) = match ctx.exit_code {
        Some(126) => (
            "is not executable (exit 126)",
            "check the file's mode and interpreter line",
        ),
        _ => (
            "exited with 127: command not found",
            "install the tool on the runner or fix the gate command",
        ),
    };
    let lines = [format!("`{}` {what}", ctx.command.trim()), hint.to_string()];
    Some(classification(
        FailureKind::ToolingError,
        &lines,
        Vec::new(),
    ))
}

/// Output-level rules that belong to no tool family.
pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    missing_artifact(ctx).or_else(|| plain_totals(ctx))
}

/// `ls: cannot access 'x': No such file or directory`, `cat: x: No such file
/// or directory`, or a silent `test -f x`: an expected artifact is absent.
fn missing_artifact(ctx: &Ctx) -> Option<Classification> {
    let from_output = ctx.log.lines.iter().find_map(|l| {
        let rest = l.strip_suffix(": No such file or directory")?;
        let (tool, path) = rest.split_once(": ")?;
        let ok = [
            "ls",
            "cat",
            "stat",
            "cp",
            "tar",
            "head",
            "wc",
            "sha256sum",
            "unzip",
        ]
        .contains(&tool);
        let path = path
            .trim_start_matches("cannot access ")
            .trim_start_matches("cannot stat ")
            .trim_start_matches("cannot statx ");
        ok.then(|| {
            path.trim_matches(|c| c == '\'' || c == '"' || c == '‘' || c == '’')
                .to_string()
        })
    });
    let from_command = || {
        if !ctx.log.is_blank() {
            return None;
        }
        let words: Vec<&str> = ctx.command.split_whitespace().collect();
        match words.as_slice() {
            ["test" | "[", flag, path, ..] if ["-f", "-e", "-s", "-d"].contains(flag) => {
                Some(path.to_string())
            }
            _ => None,
        }
    };
    let path = from_output.or_else(from_command)?;
    let lines = [
        format!("missing artifact: {path}"),
        format!("`{}` expected it to exist", ctx.command.trim()),
    ];
    Some(classification(
        FailureKind::SpecMismatch,
        &lines,
        Vec::new(),
    ))
}

/// The plain closing line any runner may print: `N passed, M failed`.
fn plain_totals(ctx: &Ctx) -> Option<Classification> {
    let line = ctx.log.lines.iter().rev().find(|l| {
        let t = l.trim();
        let t = t
            .split_once(": ")
            .filter(|(w, _)| !w.contains(' '))
            .map(|(_, r)| r)
            .unwrap_or(t);
        let mut parts = t.split(", ");
        let passed = parts
            .next()
            .and_then(|p| p.strip_suffix(" passed"))
            .is_some_and(|n| n.parse::<u32>().is_ok());
        let failed = parts
            .next()
            .and_then(|p| p.strip_suffix(" failed"))
            .and_then(|n| n.parse::<u32>().ok());
        passed && failed.is_some_and(|n| n > 0)
    })?;
    Some(classification(
        FailureKind::TestFailure,
        &[format!("tests failed: {}", line.trim())],
        Vec::new(),
    ))
}

/// Nothing recognised: say what is known, and quote the last meaningful line.
pub(super) fn fallback(ctx: &Ctx) -> Classification {
    let cmd = ctx.command.trim();
    let (kind, what) = match ctx.exit_code {
        Some(code) => (
            FailureKind::Unknown,
            format!("`{cmd}` exited with code {code}"),
        ),
        None => (
            FailureKind::ToolingError,
            format!("`{cmd}` was killed by a signal"),
        ),
    };
    match ctx.log.last_meaningful() {
        Some(last) if is_meaningful(last) => {
            classification(kind, &[what, format!("last output: {last}")], Vec::new())
        }
        _ => classification(kind, &[format!("{what} and printed nothing")], Vec::new()),
    }
}
