//! How a gate command enters the sandbox: `bwrap … -- sh -c CMD` with
//! its pipes (`--info-fd` for the sandbox's pid 1, `--block-fd` while its
//! network is attached), its pids cgroup and the rlimits set between fork
//! and exec.
//!
//! Owns: building the sandboxed command, reading its pid 1, attaching its network. Must not: wait for or capture the command (`process.rs` does).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::Command;

use super::capture::pipe_pair;
use super::{CommandSpec, Prepared};
use crate::runner::sandbox::net::NetworkError;
use crate::runner::sandbox::{PidsCgroup, SandboxRun};

/// `bwrap … -- sh -c CMD`, in a pids cgroup when one can be made, with the
/// rlimits set on bwrap before it execs (all but RLIMIT_NPROC, which the
/// sandbox's script sets inside its own user namespace).
pub(super) fn sandboxed_command(
    spec: &CommandSpec,
    sandbox: &SandboxRun,
    env: Vec<(OsString, OsString)>,
) -> io::Result<Prepared> {
    // Told where the sandbox's pid 1 is, on a pipe only bwrap gets.
    let (info_read, info_write) = pipe_pair()?;
    let block = if sandbox.network {
        let (read, write) = pipe_pair()?;
        Some((write, read))
    } else {
        None
    };
    let block_fd = block.as_ref().map(|(_, read)| read.as_raw_fd());
    let mut cmd = Command::new(&sandbox.sandbox.program);
    let fd = info_write.as_raw_fd();
    cmd.args(sandbox.args(&spec.workdir, &spec.cmd, Some(fd), block_fd));
    let limits = sandbox.rlimits(spec.timeout + spec.grace);
    let l = &sandbox.sandbox.limits;
    let cgroup = PidsCgroup::create(l.max_processes, l.memory_bytes);
    let procs = cgroup.as_ref().map(PidsCgroup::procs);
    // SAFETY: between fork and exec only async-signal-safe calls
    // (fcntl, open, write, close, setrlimit) on values computed
    // before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for fd in std::iter::once(fd).chain(block_fd) {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(procs) = &procs {
                let f = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if f < 0 || libc::write(f, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
                libc::close(f);
            }
            for (resource, soft, hard) in limits {
                let lim = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(Prepared {
        cmd,
        env: sandbox.env(env),
        info: Some((info_read, info_write)),
        cgroup,
        block,
    })
}

/// The sandbox's pid 1 (outside numbering) from bwrap's `--info-fd` JSON,
/// read up to its closing brace (a sandbox held on `--block-fd` keeps the
/// pipe open); `None` if bwrap ended before saying (it failed to set up).
pub(super) async fn sandbox_pid(info: OwnedFd) -> Option<i32> {
    let mut reader = pipe::Receiver::from_owned_fd(info).ok()?;
    let mut text = Vec::new();
    let read = async {
        let mut buf = [0u8; 256];
        while !text.contains(&b'}') {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()?;
    let json: serde_json::Value = serde_json::from_slice(&text).ok()?;
    json.get("child-pid")?
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 1)
}

/// Why a sandboxed command allowed the network did not start; its Display
/// is the command's output.
#[derive(Debug, thiserror::Error)]
pub enum NetworkStartError {
    #[error("the sandbox did not start (bwrap gave no pid)")]
    NoPid,
    #[error("the sandbox's network could not be set up: {0}")]
    Network(#[source] NetworkError),
    #[error("the sandbox's command could not be started: {0}")]
    Unblock(#[source] io::Error),
}

/// Attaches the network of the sandbox whose pid 1 is `pid`, then lets its
/// command start.
pub(super) async fn attach_network(
    pid: Option<i32>,
    block: &OwnedFd,
) -> Result<crate::runner::sandbox::net::Attached, NetworkStartError> {
    let pid = pid.ok_or(NetworkStartError::NoPid)?;
    let attached = crate::runner::sandbox::net::attach(pid)
        .await
        .map_err(NetworkStartError::Network)?;
    // SAFETY: write(2) of one byte from a valid buffer to a pipe we own.
    if unsafe { libc::write(block.as_raw_fd(), b"1".as_ptr().cast(), 1) } != 1 {
        return Err(NetworkStartError::Unblock(io::Error::last_os_error()));
    }
    Ok(attached)
}
