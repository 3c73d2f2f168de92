//! One command of a gate: run, re-run once at once if it failed, and
//! classified, its findings' paths made relative to the repository.
//!
//! Owns: the fail-then-pass rule (`flaky`, a `test_failure` becomes
//! `flaky_test`) and the `tooling_error` of a command that could not start
//! or whose sandbox did not start: a fault of the runner ([`Ran::fault`]),
//! which ends the run without a verdict on the code. A command that failed
//! on its run's full capped disk is `tooling_error` saying so.
//! Must not: decide the gate's verdict (the parent does, through
//! `decide_verdict`) or run anything outside [`run_command`].

use std::path::Path;
use std::time::Duration;

use super::super::process::{run_command, CommandSpec, ProcessOutput};
use super::super::sandbox::disk;
use super::super::sandbox::{RunDisk, SandboxRun};
use super::{workspace_roots, RunOptions};
use taskgate_core::classify::{classify, Classification, FailureKind, Outcome};
use taskgate_core::plan::TestSpec;
use taskgate_core::report::{relative_path, CommandResult};

/// A command's result, and whether the runner itself failed to run it.
pub(super) struct Ran {
    pub result: CommandResult,
    /// The command could not start, or bubblewrap failed before its
    /// sandbox started ("Can't find source path …"): the runner's fault,
    /// said in these words; never a verdict on the code.
    pub fault: Option<String>,
}

/// One command, re-run once at once if it failed.
pub(super) async fn run_test(
    workdir: &Path,
    test: &TestSpec,
    options: &RunOptions,
    sandbox: Option<&SandboxRun>,
) -> Ran {
    let timeout = test
        .timeout_seconds
        .map_or(options.default_timeout, Duration::from_secs);
    let spec = CommandSpec {
        cmd: test.cmd.clone(),
        workdir: workdir.to_owned(),
        timeout,
        grace: options.grace,
        max_output_bytes: options.max_output_bytes,
        sandbox: sandbox.cloned(),
        env: super::super::deps::dep_env(&options.deps),
    };
    let first = run_once(&spec, test, options, workdir).await;
    let rerun = options.rerun_failures
        && first.fault.is_none()
        && !first.result.passed()
        && !first.result.timed_out
        && !options.cancel.is_cancelled();
    if !rerun {
        return first;
    }
    let second = run_once(&spec, test, options, workdir).await;
    if second.fault.is_some() || !second.result.passed() {
        return second;
    }
    let (first, second) = (first.result, second.result);
    let classification = first.classification.map(|mut k| {
        if k.kind == FailureKind::TestFailure {
            k.kind = FailureKind::FlakyTest;
        }
        k
    });
    let result = CommandResult {
        exit_code: second.exit_code,
        signal: second.signal,
        duration_ms: first.duration_ms + second.duration_ms,
        flaky: true,
        classification,
        ..first
    };
    Ran {
        result,
        fault: None,
    }
}

async fn run_once(
    spec: &CommandSpec,
    test: &TestSpec,
    options: &RunOptions,
    workdir: &Path,
) -> Ran {
    let timeout_seconds = spec.timeout.as_secs();
    let out = match run_command(spec, &options.cancel).await {
        Ok(out) if out.sandbox_failed => return sandbox_failed(out, test, timeout_seconds),
        Ok(out) => out,
        Err(e) => {
            let message = format!(
                "taskgate could not start `{}` in {}: {e}",
                test.cmd,
                workdir.display()
            );
            return Ran {
                fault: Some(message.clone()),
                result: not_started(test, timeout_seconds, message, String::new()),
            };
        }
    };
    let classification = (!out.success() && !out.cancelled).then(|| {
        match &options.disk {
            // The disk is full: whatever the tool said, that is why.
            RunDisk::Capped { bytes } if disk::is_full(workdir) => Classification {
                kind: FailureKind::ToolingError,
                summary: RunDisk::full_message(*bytes),
                findings: Vec::new(),
            },
            RunDisk::Capped { .. } | RunDisk::Uncapped { .. } | RunDisk::Host => {
                classified(&out, test, timeout_seconds, workdir, spec.sandbox.is_some())
            }
        }
    });
    let ProcessOutput {
        exit_code,
        signal,
        timed_out,
        duration,
        output,
        output_bytes,
        truncated,
        ..
    } = out;
    let result = CommandResult {
        cmd: test.cmd.clone(),
        gate: test.gate.clone(),
        exit_code,
        signal,
        timed_out,
        timeout_seconds,
        duration_ms: duration.as_millis() as u64,
        output: String::from_utf8_lossy(&output).into_owned(),
        output_bytes,
        truncated,
        flaky: false,
        classification,
    };
    Ran {
        result,
        fault: None,
    }
}

/// bubblewrap ended before its sandbox started: what it printed is its
/// own complaint (a path it could not find, a namespace it may not make),
/// said as the runner's fault with its first line.
fn sandbox_failed(out: ProcessOutput, test: &TestSpec, timeout_seconds: u64) -> Ran {
    let printed = String::from_utf8_lossy(&out.output).into_owned();
    let first_line = printed
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("it exited without a word");
    let first_line: String = first_line.chars().take(300).collect();
    let message = format!("the sandbox did not start ({first_line})");
    Ran {
        fault: Some(message.clone()),
        result: not_started(test, timeout_seconds, message, printed),
    }
}

/// A command that never ran: `tooling_error`, saying why.
fn not_started(
    test: &TestSpec,
    timeout_seconds: u64,
    message: String,
    printed: String,
) -> CommandResult {
    let output = if printed.is_empty() {
        message.clone()
    } else {
        printed
    };
    CommandResult {
        cmd: test.cmd.clone(),
        gate: test.gate.clone(),
        exit_code: None,
        signal: None,
        timed_out: false,
        timeout_seconds,
        duration_ms: 0,
        output_bytes: output.len() as u64,
        output,
        truncated: false,
        flaky: false,
        classification: Some(Classification {
            kind: FailureKind::ToolingError,
            summary: message,
            findings: Vec::new(),
        }),
    }
}

fn classified(
    out: &ProcessOutput,
    test: &TestSpec,
    timeout_seconds: u64,
    workdir: &Path,
    sandboxed: bool,
) -> Classification {
    let mut c = classify(&Outcome {
        command: &test.cmd,
        exit_code: out.exit_code,
        signal: out.signal,
        timed_out: out.timed_out,
        timeout_seconds: Some(timeout_seconds),
        output: &out.output,
    });
    // Findings name files relative to the repository, whatever the tool printed.
    let roots = workspace_roots(workdir, sandboxed);
    for f in &mut c.findings {
        if let Some(rel) = roots
            .iter()
            .find_map(|r| relative_path(&f.path, r).filter(|_| f.path.starts_with(r.as_str())))
        {
            f.path = rel;
        }
    }
    c
}
