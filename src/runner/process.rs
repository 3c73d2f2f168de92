//! One command, run the way every gate command runs: `sh -c CMD` in its own
//! process group, stdin from `/dev/null`, a scrubbed environment, stdout and
//! stderr merged into one capped capture, and a timeout; in the
//! [`sandbox`](super::sandbox) when the spec says so (`bwrap … -- sh -c CMD`,
//! with rlimits set on bwrap before it execs, the process count inside).
//!
//! The group is the unit: on timeout or cancellation it gets SIGTERM, then
//! SIGKILL after a grace period; after a normal exit of the leader it gets
//! SIGKILL at once, so background children (a forked server, a stray
//! `sleep &`) never outlive their command. Without the sandbox, a process
//! that calls `setsid` leaves the group and escapes this; its pipe is then
//! abandoned after the grace period rather than waited for. In the sandbox
//! there are two groups: bwrap's monitor outside, and the sandbox's session
//! (its pid 1 and everything under it). SIGTERM goes to the sandbox's group
//! only, SIGKILL to both; the end of pid 1 ends its pid namespace, so even a
//! `setsid` child dies with its command.
//!
//! The capture keeps the first and the last half of `max_output_bytes`, counts
//! every byte and keeps reading to the end, so a command printing gigabytes
//! neither blocks on a full pipe nor grows memory.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::sandbox::{PidsCgroup, SandboxRun, STARTED_MARK};
use super::CancelToken;

mod capture;
mod group;
mod sandboxed;

use capture::{drain, pipe_pair};
use group::Group;
pub use sandboxed::NetworkStartError;
use sandboxed::{attach_network, sandbox_pid, sandboxed_command};

/// Output kept per command unless configured: 4 MiB.
pub const DEFAULT_MAX_OUTPUT: usize = 4 << 20;
/// Between SIGTERM and SIGKILL unless configured.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// Variables passed through from taskgate's environment when set. Nothing
/// else is: tokens (`GITHUB_TOKEN`), taskgate's secrets (private key, webhook
/// secret, API token, database URL) and everything unknown stay out.
/// (`RUSTUP_HOME` lets a rustup toolchain mounted into the sandbox with
/// `TASKGATE_SANDBOX_RO_PATHS` be found while HOME is the sandbox's own.)
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "USER",
    "SHELL",
    "RUSTUP_HOME",
];
/// Variables always set, whatever taskgate's environment says.
pub const ENV_FIXED: &[(&str, &str)] = &[
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    ("CI", "true"),
    ("TASKGATE", "1"),
];
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What to run and within which bounds.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub cmd: String,
    pub workdir: PathBuf,
    pub timeout: Duration,
    pub grace: Duration,
    pub max_output_bytes: usize,
    /// Run inside this sandbox; `None` runs on the host as taskgate's user.
    pub sandbox: Option<SandboxRun>,
    /// Set over the scrubbed environment (the dependencies'
    /// `TASKGATE_DEP_<ID>_SHA`).
    pub env: Vec<(String, String)>,
}

impl CommandSpec {
    pub fn new(cmd: impl Into<String>, workdir: impl Into<PathBuf>, timeout: Duration) -> Self {
        CommandSpec {
            cmd: cmd.into(),
            workdir: workdir.into(),
            timeout,
            grace: DEFAULT_GRACE,
            max_output_bytes: DEFAULT_MAX_OUTPUT,
            sandbox: None,
            env: Vec::new(),
        }
    }
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// Head and tail of the merged output, with a line marking the cut.
    pub output: Vec<u8>,
    /// Every byte printed, kept or not.
    pub output_bytes: u64,
    pub truncated: bool,
    /// In the sandbox: the command never started (its output does not
    /// begin with the sandbox's [`STARTED_MARK`]), so the output is
    /// bubblewrap's own error ("Can't find source path …"), not the
    /// command's. A fault of the runner, never a verdict on the code.
    pub sandbox_failed: bool,
}

impl ProcessOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// The environment a command gets, from taskgate's own.
pub fn scrubbed_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(k, _)| ENV_ALLOWLIST.iter().any(|a| k == a))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    env.extend(ENV_FIXED.iter().map(|(k, v)| (k.into(), v.into())));
    env
}

/// Runs one command to completion, timeout or cancellation. Errors only when
/// it cannot start (no such directory, no `/bin/sh`, no `bwrap`).
pub async fn run_command(spec: &CommandSpec, cancel: &CancelToken) -> io::Result<ProcessOutput> {
    let (read_end, write_end) = pipe_pair()?;
    let start = Instant::now();
    let Spawned {
        mut child,
        info,
        cgroup,
        block,
    } = spawn(spec, write_end)?;
    let mut group = Group {
        leader: child.id().map(|pid| pid as i32),
        sandbox: None,
    };
    if let Some(info) = info {
        group.sandbox = sandbox_pid(info).await;
    }
    // A run allowed the network: its command waits until the namespace is
    // attached; on failure it never runs, and the reason is its output.
    let (_network, network_failed) = match block {
        Some(block) => match attach_network(group.sandbox, &block).await {
            Ok(attached) => (Some(attached), None),
            Err(why) => {
                group.signal(libc::SIGKILL);
                (None, Some(why))
            }
        },
        None => (None, None),
    };
    let reader = pipe::Receiver::from_owned_fd(read_end)?;
    let (stop_tx, stop_rx) = oneshot::channel();
    let mut drain = tokio::spawn(drain(reader, spec.max_output_bytes, stop_rx));

    let (status, timed_out, cancelled) = tokio::select! {
        status = child.wait() => {
            group.signal(libc::SIGKILL);
            (status?, false, false)
        }
        _ = tokio::time::sleep(spec.timeout) => (group.terminate(&mut child, spec.grace).await?, true, false),
        _ = cancel.cancelled() => (group.terminate(&mut child, spec.grace).await?, false, true),
    };
    let duration = start.elapsed();
    let capture = match tokio::time::timeout(spec.grace, &mut drain).await {
        Ok(capture) => capture,
        Err(_) => {
            // Someone outside the group still holds the pipe: stop reading.
            let _ = stop_tx.send(());
            drain.await
        }
    }
    .map_err(io::Error::other)??;
    group.leader = None;
    group.sandbox = None;
    if let Some(cgroup) = cgroup {
        cgroup.remove().await;
    }
    let mut output_bytes = capture.total;
    let (mut output, truncated) = capture.finish();
    let mut sandbox_failed = false;
    if let Some(why) = network_failed {
        output = why.to_string().into_bytes();
        output_bytes = output.len() as u64;
        sandbox_failed = true;
    } else if spec.sandbox.is_some() {
        // The sandbox's script prints the mark before the command runs.
        if output.first() == Some(&STARTED_MARK) {
            output.remove(0);
            output_bytes -= 1;
        } else {
            sandbox_failed = !timed_out && !cancelled;
        }
    }
    Ok(ProcessOutput {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        cancelled,
        duration,
        output,
        output_bytes,
        truncated,
        sandbox_failed,
    })
}

/// A command started, with what its run still needs.
struct Spawned {
    child: Child,
    /// In the sandbox: where bwrap says which pid the sandbox's pid 1 is.
    info: Option<OwnedFd>,
    cgroup: Option<PidsCgroup>,
    /// A sandbox allowed the network: a byte here lets its command start.
    block: Option<OwnedFd>,
}

/// A command ready to spawn, with what must outlive the spawn.
struct Prepared {
    cmd: Command,
    env: Vec<(OsString, OsString)>,
    /// bwrap's info pipe: our read end, and the write end it inherits.
    info: Option<(OwnedFd, OwnedFd)>,
    cgroup: Option<PidsCgroup>,
    /// bwrap's block pipe: our write end, and the read end it inherits.
    block: Option<(OwnedFd, OwnedFd)>,
}

/// Starts the command in a process group of its own, stdout and stderr
/// into `write_end`.
fn spawn(spec: &CommandSpec, write_end: OwnedFd) -> io::Result<Spawned> {
    let mut env = scrubbed_env(std::env::vars_os());
    env.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
    let Prepared {
        mut cmd,
        env,
        info,
        cgroup,
        block,
    } = match &spec.sandbox {
        None => {
            let mut cmd = Command::new("/bin/sh");
            cmd.arg("-c").arg(&spec.cmd);
            Prepared {
                cmd,
                env,
                info: None,
                cgroup: None,
                block: None,
            }
        }
        Some(sandbox) => sandboxed_command(spec, sandbox, env)?,
    };
    cmd.current_dir(&spec.workdir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end.try_clone()?))
        .stderr(Stdio::from(write_end))
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd.spawn()?;
    Ok(Spawned {
        child,
        info: info.map(|(read, _write)| read),
        cgroup,
        block: block.map(|(write, _read)| write),
    })
    // `cmd` drops here, closing our copies of the write ends: the pipe
    // reaches end-of-file when the last process of the group lets go.
}

#[cfg(test)]
mod tests {
    use super::capture::Capture;
    use super::*;

    fn spec(cmd: &str, timeout_ms: u64) -> CommandSpec {
        let mut s = CommandSpec::new(cmd, std::env::temp_dir(), Duration::from_millis(timeout_ms));
        s.grace = Duration::from_millis(500);
        s
    }

    async fn run(cmd: &str, timeout_ms: u64) -> ProcessOutput {
        run_command(&spec(cmd, timeout_ms), &CancelToken::never())
            .await
            .unwrap()
    }

    fn pgrep(pattern: &str) -> bool {
        std::process::Command::new("pgrep")
            .args(["-f", pattern])
            .status()
            .is_ok_and(|s| s.success())
    }

    #[tokio::test]
    async fn exit_codes_and_merged_output() {
        let out = run("echo out; echo err >&2; exit 3", 5_000).await;
        assert_eq!(
            (out.exit_code, out.signal, out.timed_out),
            (Some(3), None, false)
        );
        assert_eq!(String::from_utf8_lossy(&out.output), "out\nerr\n");
        assert_eq!(out.output_bytes, 8);
        assert!(run("true", 5_000).await.success());
    }

    #[tokio::test]
    async fn command_not_found_is_127() {
        let out = run("no-such-command-taskgate", 5_000).await;
        assert_eq!(out.exit_code, Some(127));
        assert!(String::from_utf8_lossy(&out.output).contains("not found"));
    }

    #[tokio::test]
    async fn a_command_that_never_ends_times_out() {
        let t = Instant::now();
        let out = run("sleep 1000", 300).await;
        assert!(out.timed_out && out.exit_code.is_none());
        assert_eq!(out.signal, Some(libc::SIGTERM));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn a_signal_is_reported_as_the_signal_or_as_the_shells_128_plus_n() {
        // The shell itself killed: no exit status, the signal.
        let out = run("echo starting; kill -SEGV $$", 5_000).await;
        assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGSEGV)));
        // A child killed, reported by `sh`: 128+N.
        let out = run("sh -c 'kill -ABRT $$'; exit $?", 5_000).await;
        assert_eq!(
            (out.exit_code, out.signal),
            (Some(128 + libc::SIGABRT), None)
        );
    }

    #[tokio::test]
    async fn children_ignoring_sigterm_are_killed_after_the_grace_period() {
        let marker = "sleep 1001";
        let cmd = format!("sh -c 'trap \"\" TERM; {marker}' & wait");
        let t = Instant::now();
        let out = run(&cmd, 300).await;
        assert!(out.timed_out);
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(!pgrep(marker), "the TERM-ignoring child survived");
    }

    #[tokio::test]
    async fn background_children_die_with_the_leader() {
        let marker = "sleep 1002";
        let t = Instant::now();
        let out = run(&format!("{marker} & echo started"), 5_000).await;
        assert_eq!(out.exit_code, Some(0));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(!pgrep(marker), "the background child survived");
    }

    #[tokio::test]
    async fn a_gigabyte_of_output_is_capped_and_drained() {
        let t = Instant::now();
        let mut s = spec(
            "head -c 1000000000 /dev/zero | tr '\\0' x; echo; echo the-end",
            30_000,
        );
        s.max_output_bytes = 1 << 16;
        let out = run_command(&s, &CancelToken::never()).await.unwrap();
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.output_bytes, 1_000_000_009);
        assert!(out.truncated);
        assert!(out.output.len() < (1 << 16) + 100, "{}", out.output.len());
        let text = String::from_utf8_lossy(&out.output);
        assert!(text.starts_with("xxxx") && text.ends_with("\nthe-end\n"));
        assert!(
            text.contains("[taskgate: 999934473 bytes of output cut here]"),
            "{}",
            &text[32_700..32_800]
        );
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn non_utf8_output_is_kept_as_bytes() {
        let out = run("printf '\\377\\376ok'", 5_000).await;
        assert_eq!(out.output, b"\xff\xfeok");
    }

    #[tokio::test]
    async fn the_environment_is_scrubbed() {
        std::env::set_var("GITHUB_TOKEN", "ghs_secret");
        std::env::set_var("TASKGATE_WEBHOOK_SECRET", "whsec");
        let out = run("env", 5_000).await;
        let env = String::from_utf8_lossy(&out.output);
        assert!(
            !env.contains("ghs_secret") && !env.contains("whsec"),
            "{env}"
        );
        for line in ["CI=true", "TASKGATE=1", "TERM=dumb"] {
            assert!(env.lines().any(|l| l == line), "{line} missing in {env}");
        }
        assert!(env.lines().any(|l| l.starts_with("PATH=")));
    }

    #[tokio::test]
    async fn cancellation_kills_the_group() {
        let (handle, token) = super::super::cancel_pair();
        let t = Instant::now();
        let task =
            tokio::spawn(async move { run_command(&spec("sleep 1003", 60_000), &token).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        handle.cancel();
        let out = task.await.unwrap().unwrap();
        assert!(out.cancelled && !out.timed_out);
        assert!(t.elapsed() < Duration::from_secs(3));
        assert!(!pgrep("sleep 1003"));
    }

    #[tokio::test]
    async fn a_missing_workdir_is_an_error() {
        let s = CommandSpec::new("true", "/nonexistent/taskgate", Duration::from_secs(1));
        assert!(run_command(&s, &CancelToken::never()).await.is_err());
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(8);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnopq", b"rs"] {
            c.push(chunk);
        }
        let (out, truncated) = c.finish();
        assert!(truncated);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "abcd\n[taskgate: 11 bytes of output cut here]\npqrs"
        );
    }
}
