//! How a command ended, read by convention before any tool's own output: a
//! signal (delivered directly, or reported by `sh` as exit status 128+N),
//! the statuses coreutils `timeout` documents, and a crash that a wrapper
//! (make, cargo, a shell script, Python's faulthandler) reported in its
//! output while exiting with a status of its own.
//!
//! Owns: the table of signals (name, meaning, kind) and the reading of
//! `timeout`'s statuses. Must not: parse a tool's diagnostics (the families
//! do that); from the output it only quotes one line.
//!
//! The idea a reader needs: a crash (SIGSEGV, SIGABRT, …) is a
//! `runtime_error` whatever ran; a timeout, by `timeout` or by a time limit,
//! is a `timeout`; a command stopped from outside (SIGTERM, SIGINT, SIGHUP
//! without `timeout`) is a `tooling_error`. 126/127 are read earlier, by
//! [`super::shell::launch_failure`], for `timeout` and shells alike.

use super::text::{classification, is_meaningful};
use super::{Classification, Ctx, FailureKind};

/// One POSIX signal as taskgate reads it.
struct Signal {
    number: i32,
    name: &'static str,
    /// What it means, in a few words.
    meaning: &'static str,
    /// The text glibc's `strsignal` gives, which shells and make print.
    described: &'static str,
    kind: FailureKind,
}

const fn sig(
    number: i32,
    name: &'static str,
    meaning: &'static str,
    described: &'static str,
    kind: FailureKind,
) -> Signal {
    Signal {
        number,
        name,
        meaning,
        described,
        kind,
    }
}

/// The Linux signals a command can die of (x86-64 and arm64 numbering).
/// Kinds: a crash is the code's fault, a time limit is a timeout, and a
/// command stopped from outside is the tooling's.
#[rustfmt::skip]
const SIGNALS: [Signal; 16] = [
    sig(1, "SIGHUP", "hangup", "Hangup", STOPPED),
    sig(2, "SIGINT", "interrupted", "Interrupt", STOPPED),
    sig(3, "SIGQUIT", "quit", "Quit", STOPPED),
    sig(4, "SIGILL", "illegal instruction", "Illegal instruction", CRASH),
    sig(5, "SIGTRAP", "trace/breakpoint trap", "Trace/breakpoint trap", CRASH),
    sig(6, "SIGABRT", "aborted", "Aborted", CRASH),
    sig(7, "SIGBUS", "bus error", "Bus error", CRASH),
    sig(8, "SIGFPE", "arithmetic error", "Floating point exception", CRASH),
    sig(9, "SIGKILL", "killed", "Killed", CRASH),
    sig(11, "SIGSEGV", "segmentation fault", "Segmentation fault", CRASH),
    sig(13, "SIGPIPE", "broken pipe", "Broken pipe", CRASH),
    sig(14, "SIGALRM", "alarm clock", "Alarm clock", TIME_LIMIT),
    sig(15, "SIGTERM", "terminated", "Terminated", STOPPED),
    sig(24, "SIGXCPU", "CPU time limit exceeded", "CPU time limit exceeded", TIME_LIMIT),
    sig(25, "SIGXFSZ", "file size limit exceeded", "File size limit exceeded", CRASH),
    sig(31, "SIGSYS", "bad system call", "Bad system call", CRASH),
];

const CRASH: FailureKind = FailureKind::RuntimeError;
const TIME_LIMIT: FailureKind = FailureKind::Timeout;
const STOPPED: FailureKind = FailureKind::ToolingError;

const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;
/// Highest standard signal: 128+N above it is an exit status, not a signal.
const MAX_SIGNAL: i32 = 31;

/// The signal numbered `n`; one not in the table is a crash of unknown name.
fn signal(n: i32) -> Signal {
    SIGNALS
        .into_iter()
        .find(|s| s.number == n)
        .unwrap_or(Signal {
            number: n,
            name: "signal",
            meaning: "unexpected signal",
            described: "",
            kind: CRASH,
        })
}

impl Signal {
    /// `SIGSEGV (segmentation fault)`, or `signal 10` when unnamed.
    fn show(&self) -> String {
        if self.described.is_empty() {
            format!("signal {}", self.number)
        } else {
            format!("{} ({})", self.name, self.meaning)
        }
    }

    /// What happened to the command, as a verb phrase.
    fn what_happened(&self) -> String {
        match (self.kind, self.number) {
            (_, SIGKILL) => {
                "was killed by SIGKILL (out of memory, or killed from outside)".to_string()
            }
            (FailureKind::ToolingError, _) => {
                format!("was stopped from outside by {}", self.show())
            }
            (FailureKind::Timeout, _) => format!("hit a time limit: {}", self.show()),
            _ => format!("crashed with {}", self.show()),
        }
    }
}

/// How the status says the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// A plain exit status (not 0, not 128+N).
    Exit(i32),
    /// Killed by signal N, directly (`status` is `None`) or as reported by
    /// a shell (`status` is 128+N).
    Signal { number: i32, status: Option<i32> },
    /// Neither an exit status nor a signal is known.
    Unknown,
}

pub(super) fn ended(ctx: &Ctx) -> Ended {
    match (ctx.exit_code, ctx.signal) {
        (None, Some(n)) => Ended::Signal {
            number: n,
            status: None,
        },
        (Some(code), _) if (129..=128 + MAX_SIGNAL).contains(&code) => Ended::Signal {
            number: code - 128,
            status: Some(code),
        },
        (Some(code), _) => Ended::Exit(code),
        (None, None) => Ended::Unknown,
    }
}

/// Conclusions from the status alone: `timeout`'s statuses, then signals.
pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let ended = ended(ctx);
    if ctx.command_has(&["timeout"]) {
        if let Some(c) = under_timeout(ctx, ended) {
            return Some(c);
        }
    }
    let Ended::Signal { number, status } = ended else {
        return None;
    };
    let s = signal(number);
    let how = match status {
        Some(code) => format!(" (exit status {code} = 128+{number})"),
        None => " (no exit status: the signal ended it)".to_string(),
    };
    let mut lines = vec![format!(
        "`{}` {}{how}",
        ctx.command.trim(),
        s.what_happened()
    )];
    lines.extend(last_output(ctx, None));
    Some(classification(s.kind, &lines, Vec::new()))
}

/// coreutils `timeout`: 124 when the time ran out, 125 when `timeout`
/// itself failed, 128+9 when it had to send SIGKILL (`-s KILL`,
/// `--kill-after`), the child's SIGTERM with `--preserve-status`.
fn under_timeout(ctx: &Ctx, ended: Ended) -> Option<Classification> {
    let cmd = ctx.command.trim();
    let (lines, kind) = match ended {
        Ended::Exit(124) => (
            vec![format!(
                "timed out{}: `{cmd}` (coreutils `timeout` exits 124)",
                timeout_duration(ctx.command)
                    .map(|d| format!(" after {d}"))
                    .unwrap_or_default()
            )],
            FailureKind::Timeout,
        ),
        Ended::Signal {
            number: n @ (SIGKILL | SIGTERM),
            status,
        } => (
            vec![format!(
                "timed out{}: `{cmd}` (`timeout` ended it with {}{})",
                timeout_duration(ctx.command)
                    .map(|d| format!(" after {d}"))
                    .unwrap_or_default(),
                signal(n).name,
                status.map(|s| format!(", exit {s}")).unwrap_or_default()
            )],
            FailureKind::Timeout,
        ),
        Ended::Exit(125) => {
            let why = ctx
                .log
                .lines
                .iter()
                .map(|l| l.trim())
                .find(|l| l.starts_with("timeout: "))
                .map(|l| format!(": {l}"))
                .unwrap_or_default();
            let lines = vec![
                format!("`timeout` itself failed (exit 125){why}"),
                format!("fix the gate command `{cmd}`"),
            ];
            return Some(classification(
                FailureKind::ToolingError,
                &lines,
                Vec::new(),
            ));
        }
        _ => return None,
    };
    let mut lines = lines;
    lines.extend(last_output(ctx, None));
    Some(classification(kind, &lines, Vec::new()))
}

/// The DURATION argument of `timeout [OPTION]... DURATION COMMAND`, shown
/// with its unit (`1 s`, `5m`).
fn timeout_duration(command: &str) -> Option<String> {
    let mut words = command.split_whitespace().skip_while(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        base != "timeout"
    });
    words.next()?;
    while let Some(w) = words.next() {
        match w {
            "-s" | "--signal" | "-k" | "--kill-after" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => {
                let number = w.trim_end_matches(['s', 'm', 'h', 'd']);
                if number.is_empty() || number.parse::<f64>().is_err() {
                    return None;
                }
                return Some(if number == w {
                    format!("{w} s")
                } else {
                    w.to_string()
                });
            }
        }
    }
    None
}

/// A crash that a wrapper reported while exiting with a status of its own:
/// make's `*** [Makefile:2: run] Segmentation fault`, cargo's `(signal: 11,
/// SIGSEGV: …)`, bash's `line 3: 4242 Aborted (core dumped) ./x`, dash's
/// bare `Segmentation fault`, Python's `Fatal Python error: Segmentation
/// fault`. Only crash signals count here, never `Killed` or `Terminated`.
pub(super) fn crash_in_output(ctx: &Ctx) -> Option<Classification> {
    let (i, s) = ctx
        .log
        .lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| reported_crash(l).map(|s| (i, s)))?;
    let line = ctx.log.lines[i].trim();
    let mut lines = vec![format!("`{}` {}", ctx.command.trim(), s.what_happened())];
    if line.len() > s.described.len() + " (core dumped)".len() {
        lines.push(format!("reported as: {line}"));
    }
    lines.extend(last_output(ctx, Some(i)));
    Some(classification(s.kind, &lines, Vec::new()))
}

/// The crash signal one line of output reports, if it reports one.
fn reported_crash(line: &str) -> Option<Signal> {
    let t = line.trim();
    // cargo: `process didn't exit successfully: `…` (signal: 11, SIGSEGV: …)`
    if let Some((_, rest)) = t.split_once("(signal: ") {
        let n = rest.split(',').next()?.trim().parse::<i32>().ok()?;
        return Some(signal(n)).filter(is_crash);
    }
    let body = t.strip_suffix(" (core dumped)").unwrap_or(t).trim_end();
    if let Some(rest) = t.strip_prefix("Fatal Python error: ") {
        return SIGNALS
            .into_iter()
            .filter(is_crash)
            .find(|s| rest.starts_with(s.described));
    }
    SIGNALS.into_iter().filter(is_crash).find(|s| {
        let d = s.described;
        // dash: the description alone; make: `make: *** [target] Aborted`.
        // (A bare `Aborted` or `Broken pipe` is also ordinary prose.)
        let alone =
            body == d && (!["Aborted", "Broken pipe"].contains(&d) || t.ends_with("(core dumped)"));
        let by_make =
            t.starts_with("make") && t.contains(": *** [") && body.ends_with(&format!("] {d}"));
        // bash: `script: line 3: 4242 Segmentation fault      ./crash`
        let by_bash = t.contains(": line ")
            && t.split_once(&format!(" {d} "))
                .or_else(|| t.strip_suffix(d).map(|b| (b, "")))
                .is_some_and(|(before, _)| {
                    before.rsplit(' ').next().is_some_and(|pid| {
                        !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
                    })
                });
        alone || by_make || by_bash
    })
}

fn is_crash(s: &Signal) -> bool {
    s.kind == FailureKind::RuntimeError && s.number != SIGKILL
}

/// `last output: …`, the last meaningful line (before line `before`, when
/// given) that is not a shell's or make's restatement of the signal.
fn last_output(ctx: &Ctx, before: Option<usize>) -> Option<String> {
    let end = before.unwrap_or(ctx.log.lines.len());
    ctx.log.lines[..end]
        .iter()
        .rev()
        .map(|l| l.trim())
        // A header such as cargo's `Caused by:` says nothing by itself.
        .find(|l| {
            is_meaningful(l)
                && !l.ends_with(':')
                && reported_crash(l).is_none()
                && !restates_signal(l)
        })
        .map(|l| format!("last output: {l}"))
}

/// `Killed`, `Terminated`, `Segmentation fault (core dumped)` and the like.
fn restates_signal(line: &str) -> bool {
    let body = line.strip_suffix(" (core dumped)").unwrap_or(line).trim();
    SIGNALS.iter().any(|s| s.described == body)
}

#[cfg(test)]
mod tests {
    use super::super::{classify, Outcome};
    use super::*;

    fn run(
        command: &str,
        exit_code: Option<i32>,
        signal: Option<i32>,
        output: &str,
    ) -> Classification {
        classify(&Outcome {
            command,
            exit_code,
            signal,
            timed_out: false,
            timeout_seconds: None,
            output: output.as_bytes(),
        })
    }

    #[test]
    fn exit_128_plus_a_crash_signal_is_a_runtime_error_naming_the_signal() {
        for (code, name) in [
            (139, "SIGSEGV"),
            (134, "SIGABRT"),
            (135, "SIGBUS"),
            (136, "SIGFPE"),
            (132, "SIGILL"),
        ] {
            let c = run("./crash", Some(code), None, "starting\n");
            assert_eq!(c.kind, FailureKind::RuntimeError, "{code}");
            assert!(c.summary.contains(name), "{code}: {}", c.summary);
        }
        let c = run("./crash", Some(139), None, "starting\nSegmentation fault\n");
        insta::assert_snapshot!(c.summary, @r"
        `./crash` crashed with SIGSEGV (segmentation fault) (exit status 139 = 128+11)
        last output: starting
        ");
    }

    #[test]
    fn a_signal_delivered_directly_is_read_without_an_exit_status() {
        let c = run("kill -SEGV $$", None, Some(11), "");
        assert_eq!(c.kind, FailureKind::RuntimeError);
        insta::assert_snapshot!(c.summary, @"`kill -SEGV $$` crashed with SIGSEGV (segmentation fault) (no exit status: the signal ended it)");
        let c = run("./serve", None, Some(15), "listening\nTerminated\n");
        assert_eq!(c.kind, FailureKind::ToolingError);
        insta::assert_snapshot!(c.summary, @r"
        `./serve` was stopped from outside by SIGTERM (terminated) (no exit status: the signal ended it)
        last output: listening
        ");
    }

    #[test]
    fn sigkill_without_timeout_is_a_runtime_error_that_suggests_memory() {
        let c = run("python big.py", Some(137), None, "loading\nKilled\n");
        assert_eq!(c.kind, FailureKind::RuntimeError);
        assert!(c.summary.contains("out of memory"), "{}", c.summary);
        assert!(c.summary.contains("last output: loading"), "{}", c.summary);
    }

    #[test]
    fn cpu_time_limit_and_alarm_are_timeouts() {
        assert_eq!(
            run("./spin", Some(152), None, "").kind,
            FailureKind::Timeout
        );
        assert_eq!(run("./spin", None, Some(14), "").kind, FailureKind::Timeout);
    }

    #[test]
    fn coreutils_timeout_statuses_are_told_apart() {
        let c = run("timeout 1 sleep 5", Some(124), None, "");
        assert_eq!(c.kind, FailureKind::Timeout);
        insta::assert_snapshot!(c.summary, @"timed out after 1 s: `timeout 1 sleep 5` (coreutils `timeout` exits 124)");
        let c = run("timeout -s KILL 2m ./server", Some(137), None, "Killed\n");
        assert_eq!(c.kind, FailureKind::Timeout);
        insta::assert_snapshot!(c.summary, @"timed out after 2m: `timeout -s KILL 2m ./server` (`timeout` ended it with SIGKILL, exit 137)");
        let c = run(
            "timeout --preserve-status -k 5 10 make test",
            Some(143),
            None,
            "",
        );
        assert_eq!(c.kind, FailureKind::Timeout);
        let c = run(
            "timeout 1x sleep 2",
            Some(125),
            None,
            "timeout: invalid time interval ‘1x’\nTry 'timeout --help' for more information.\n",
        );
        assert_eq!(c.kind, FailureKind::ToolingError);
        insta::assert_snapshot!(c.summary, @r"
        `timeout` itself failed (exit 125): timeout: invalid time interval ‘1x’
        fix the gate command `timeout 1x sleep 2`
        ");
        // A crash under `timeout` is still a crash.
        let c = run("timeout 10 ./crash", Some(139), None, "");
        assert_eq!(c.kind, FailureKind::RuntimeError);
    }

    #[test]
    fn status_124_without_timeout_in_the_command_is_a_plain_failure() {
        let c = run("./check.sh", Some(124), None, "");
        assert_eq!(c.kind, FailureKind::TestFailure);
    }

    #[test]
    fn crashes_reported_by_wrappers_are_runtime_errors() {
        let cases = [
            ("make run", Some(2), "./crash\nmake: *** [Makefile:2: run] Segmentation fault (core dumped)\n", "SIGSEGV"),
            ("cargo test", Some(101), "error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully: `/t/deps/x-1` (signal: 6, SIGABRT: process abort signal)\n", "SIGABRT"),
            ("./run.sh", Some(1), "./run.sh: line 3: 4242 Bus error               (core dumped) ./x\n", "SIGBUS"),
            ("./run.sh", Some(1), "starting\nSegmentation fault\ndone\n", "SIGSEGV"),
            ("python -X faulthandler t.py", Some(1), "Fatal Python error: Segmentation fault\n\nCurrent thread:\n", "SIGSEGV"),
        ];
        for (cmd, code, out, name) in cases {
            let c = run(cmd, code, None, out);
            assert_eq!(c.kind, FailureKind::RuntimeError, "{cmd}: {}", c.summary);
            assert!(c.summary.contains(name), "{cmd}: {}", c.summary);
        }
        // Not a crash report: a word in a sentence, `Killed`, a bare `Aborted`.
        for out in [
            "test segmentation fault handler ... FAILED\n",
            "Killed\n",
            "Aborted\n",
            "Broken pipe\n",
            "make: *** [Makefile:2: run] Error 1\n",
        ] {
            let c = run("./run.sh", Some(1), None, out);
            assert_ne!(c.kind, FailureKind::RuntimeError, "{out}");
        }
    }

    #[test]
    fn timeout_duration_skips_options() {
        assert_eq!(
            timeout_duration("timeout 1 sleep 5").as_deref(),
            Some("1 s")
        );
        assert_eq!(
            timeout_duration("timeout -k 5 --preserve-status 2.5m x").as_deref(),
            Some("2.5m")
        );
        assert_eq!(
            timeout_duration("/usr/bin/timeout -s KILL 10s x").as_deref(),
            Some("10s")
        );
        assert_eq!(timeout_duration("timeout"), None);
        assert_eq!(timeout_duration("timeout 1x sleep"), None);
    }
}
