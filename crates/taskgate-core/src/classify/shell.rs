//! The shell around every tool: commands that could not start (126/127),
//! missing artifacts, a plain `N passed, M failed` line, and the final rule
//! when no tool explained the failure: a plain command that exits non-zero
//! said "no", so it is a `test_failure` naming the command and its status
//! (`lint_failure`/`build_failure` when the command is a linter or a
//! compiler); `unknown` only without an exit status.

use super::status::{ended, Ended};
use super::text::{classification, is_meaningful};
use super::{Classification, Ctx, FailureKind};

/// Exit status 0 is a pass: runners never ask about it, and if asked the
/// classifier says so instead of inventing a failure.
pub(super) fn passed(ctx: &Ctx) -> Classification {
    let lines = [format!(
        "`{}` exited with status 0, which is a pass: nothing to classify",
        ctx.command.trim()
    )];
    classification(FailureKind::Unknown, &lines, Vec::new())
}

/// `x` from a shell's or `timeout`'s "not found" line: bash `bash: line 1:
/// x: command not found`, dash `sh: 1: x: not found`, zsh `zsh: command not
/// found: x`, `timeout: failed to run command ‘x’: No such file or directory`.
fn not_found(line: &str) -> Option<&str> {
    let t = line.trim();
    if let Some(rest) = t
        .strip_suffix(": command not found")
        .or_else(|| t.strip_suffix(": not found"))
    {
        rest.rsplit(": ").next()
    } else if let Some((_, name)) = t.split_once("command not found: ") {
        Some(name)
    } else if let Some((_, rest)) = t.split_once(": failed to run command ") {
        let name = rest.strip_suffix(": No such file or directory")?;
        Some(name.trim_matches(|c| c == '\'' || c == '‘' || c == '’' || c == '"'))
    } else {
        None
    }
}

fn command_not_found(name: &str) -> Classification {
    let lines = [
        format!("command not found: {name}"),
        "install it on the runner or fix the gate command".to_string(),
    ];
    classification(FailureKind::ToolingError, &lines, Vec::new())
}

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
        // make: `make: x: No such file or directory`.
        let by_make = || {
            (t.starts_with("make: ") && t.ends_with(": No such file or directory"))
                .then(|| t.trim_start_matches("make: ").split(": ").next())
                .flatten()
        };
        if let Some(name) = not_found(t).or_else(by_make) {
            return Some(command_not_found(name));
        }
        if let Some(rest) = t
            .strip_suffix(": Permission denied")
            .or_else(|| t.strip_suffix(": cannot execute binary file"))
        {
            let name = rest.rsplit(": ").next().unwrap_or(rest);
            let name = name
                .strip_prefix("failed to run command ")
                .unwrap_or(name)
                .trim_matches(|c| c == '\'' || c == '‘' || c == '’');
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
            "grep",
            "diff",
            "cmp",
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

/// Nothing recognised. A non-zero exit status is the command saying "no":
/// a `test_failure` (or the lint/build kind of a linter or compiler), named
/// with its status and what the status means for well-known commands. A
/// shell's "command not found" anywhere in the output is a `tooling_error`
/// whatever the status. Without an exit status (and without a signal, which
/// [`super::status`] reads first) nothing is known: `unknown`.
pub(super) fn fallback(ctx: &Ctx) -> Classification {
    let cmd = ctx.command.trim();
    if let Some(name) = ctx.log.lines.iter().find_map(|l| not_found(l)) {
        return command_not_found(name);
    }
    let (kind, what) = match ended(ctx) {
        Ended::Exit(code) => (
            kind_by_command(cmd),
            format!(
                "`{cmd}` exited with status {code}{}",
                status_meaning(cmd, code)
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ),
        ),
        // Read by `status::detect` before; kept total for safety.
        Ended::Signal { number, .. } => (
            FailureKind::RuntimeError,
            format!("`{cmd}` was killed by signal {number}"),
        ),
        Ended::Unknown => (
            FailureKind::Unknown,
            format!("`{cmd}` ended without an exit status or a signal"),
        ),
    };
    match ctx.log.last_meaningful() {
        Some(last) if is_meaningful(last) => {
            classification(kind, &[what, format!("last output: {last}")], Vec::new())
        }
        _ => classification(kind, &[format!("{what} and printed nothing")], Vec::new()),
    }
}

/// The program of the command's last step, whose status the shell returns
/// (after `cd … &&`, `env`, variable assignments and `!`), by file name.
fn program(cmd: &str) -> &str {
    let last_step = cmd
        .rsplit([';', '&', '|'])
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or(cmd);
    last_step
        .split_whitespace()
        .find(|w| *w != "!" && *w != "env" && !w.contains('='))
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .unwrap_or("")
}

/// What a documented exit status of a well-known command means.
fn status_meaning(cmd: &str, code: i32) -> Option<&'static str> {
    Some(match (program(cmd), code) {
        ("grep" | "egrep" | "fgrep" | "rg", 1) => "no line matched",
        ("diff" | "cmp", 1) => "the files differ",
        ("test" | "[" | "[[", 1) => "the condition is false",
        _ => return None,
    })
}

/// The kind for a command no parser explained: a linter's or a compiler's
/// own kind when the command is one, otherwise a test that said "no".
fn kind_by_command(cmd: &str) -> FailureKind {
    const LINTERS: &[&str] = &[
        "eslint",
        "ruff",
        "flake8",
        "pylint",
        "mypy",
        "black",
        "isort",
        "shellcheck",
        "golangci-lint",
        "staticcheck",
        "clippy",
        "prettier",
        "hadolint",
        "yamllint",
    ];
    const COMPILERS: &[&str] = &[
        "tsc", "gcc", "g++", "clang", "clang++", "cc", "rustc", "javac",
    ];
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let has = |names: &[&str]| {
        words
            .iter()
            .any(|w| names.contains(&w.rsplit('/').next().unwrap_or(w)))
    };
    let sub = |tool: &str, subs: &[&str]| {
        words
            .windows(2)
            .any(|p| p[0].rsplit('/').next() == Some(tool) && subs.contains(&p[1]))
    };
    if has(LINTERS) || sub("cargo", &["clippy", "fmt"]) || sub("go", &["vet"]) {
        FailureKind::LintFailure
    } else if has(COMPILERS) || sub("cargo", &["build", "check"]) || sub("go", &["build"]) {
        FailureKind::BuildFailure
    } else {
        FailureKind::TestFailure
    }
}
