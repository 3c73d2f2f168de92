//! The network of a sandbox allowed it (see
//! docs/decisions/sandbox-network.md): egress to public addresses only.
//!
//! Owns: attaching slirp4netns to a sandbox's own network namespace, and
//! the routes that make the host's addresses and every private, link-local
//! and shared range unreachable from it. Must not: decide whether a run
//! gets the network (`core::network` does), or start the sandbox
//! (`super::process` does, holding the command back on bubblewrap's
//! `--block-fd` until [`attach`] is done).
//!
//! The sandbox always has a network namespace of its own (bubblewrap's
//! `--unshare-net`). Allowed the network, before the command runs:
//! 1. the routes: `unreachable` for the ranges in [`BLOCKED`] and for each
//!    of the host's own addresses (a service the host binds to 0.0.0.0 would
//!    otherwise answer on them), set with `ip` inside the namespace;
//! 2. slirp4netns: a tap device whose packets become the host's sockets,
//!    `--disable-host-loopback` (its gateway is not the host's 127.0.0.1),
//!    `--disable-dns` (its resolver address would forward every port to the
//!    host's resolver), in a sandbox and seccomp filter of its own.
//!
//! Routes come first, so a failure half-way leaves the namespace without a
//! way out, never with an unfiltered one. Task code cannot change them: it
//! has no capabilities and cannot make a user namespace to get some.
//! IPv6 is not given (no IPv6 route at all).

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// Ranges never reached from a sandbox: "this network", private (RFC 1918),
/// shared address space (carrier-grade NAT; Alibaba's metadata server),
/// link-local (cloud metadata at 169.254.169.254), benchmarking, multicast
/// and reserved.
pub const BLOCKED: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// Whether `a` is outside every range a sandbox may not reach (and not
/// loopback).
pub fn is_public(a: Ipv4Addr) -> bool {
    !a.is_loopback()
        && !BLOCKED.iter().any(|net| {
            let (base, len) = net.split_once('/').expect("a CIDR");
            let base: Ipv4Addr = base.parse().expect("an address");
            let len: u32 = len.parse().expect("a prefix length");
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            u32::from(a) & mask == u32::from(base) & mask
        })
}

/// Why a sandbox allowed the network could not get it: its command does
/// not run, and this is its output.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("the sandbox's network namespace: {0}")]
    Namespace(#[source] std::io::Error),
    #[error("the sandbox's user namespace: {0}")]
    UserNamespace(#[source] std::io::Error),
    #[error("`ip` could not start (install iproute2): {0}")]
    IpMissing(#[source] std::io::Error),
    #[error("`ip`: {0}")]
    Ip(#[source] std::io::Error),
    #[error("`ip` did not finish within 10 s")]
    IpTimeout,
    #[error("setting the sandbox's routes failed ({status}): {stderr}")]
    Routes { status: ExitStatus, stderr: String },
    #[error("slirp4netns could not start (install slirp4netns): {0}")]
    SlirpMissing(#[source] std::io::Error),
    #[error("slirp4netns: {0}")]
    Slirp(#[source] std::io::Error),
    /// slirp4netns did not say it was ready; what it wrote to stderr.
    #[error("slirp4netns did not set the sandbox's network up: {0}")]
    SlirpNotReady(String),
    #[error("pipe: {0}")]
    Pipe(#[source] std::io::Error),
}

/// slirp4netns serving one sandbox; it stops when this is dropped (its
/// exit pipe closes, and it is killed).
#[derive(Debug)]
pub struct Attached {
    _slirp: tokio::process::Child,
    _exit: OwnedFd,
}

/// Gives the network namespace of the sandbox whose pid 1 is `pid` (outside
/// numbering) egress to public addresses only. The error says what failed.
pub async fn attach(pid: i32) -> Result<Attached, NetworkError> {
    let net =
        std::fs::File::open(format!("/proc/{pid}/ns/net")).map_err(NetworkError::Namespace)?;
    // The user namespace bubblewrap made it in: the one that may change it.
    // SAFETY: NS_GET_USERNS on a namespace fd returns a new fd or -1.
    let owner = unsafe { libc::ioctl(net.as_raw_fd(), NS_GET_USERNS) };
    if owner < 0 {
        return Err(NetworkError::UserNamespace(std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd we own.
    let owner = unsafe { OwnedFd::from_raw_fd(owner) };
    set_routes(&owner, net.as_raw_fd(), &host_addresses()).await?;
    start_slirp(&owner, pid).await
}

const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// `ip -batch -` inside the namespace, with the capability to change it.
async fn set_routes(owner: &OwnedFd, net: RawFd, host: &[Ipv4Addr]) -> Result<(), NetworkError> {
    let mut batch: String = BLOCKED
        .iter()
        .map(|r| format!("route add unreachable {r}\n"))
        .collect();
    for a in host.iter().filter(|a| is_public(**a)) {
        batch.push_str(&format!("route add unreachable {a}/32\n"));
    }
    let mut cmd =
        std::process::Command::new(find("ip", &["/usr/sbin", "/sbin", "/usr/bin", "/bin"]));
    cmd.args(["-batch", "-"])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let user = owner.as_raw_fd();
    // SAFETY: only setns(2), capget/capset(2) and prctl(2) between fork and
    // exec, on fds opened before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::setns(net, libc::CLONE_NEWNET) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            keep_net_admin_across_exec()
        });
    }
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .map_err(NetworkError::IpMissing)?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        stdin
            .write_all(batch.as_bytes())
            .await
            .map_err(NetworkError::Ip)?;
    }
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .map_err(|_| NetworkError::IpTimeout)?
        .map_err(NetworkError::Ip)?;
    if !out.status.success() {
        return Err(NetworkError::Routes {
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// Joining a user namespace gives every capability in it, but `exec` of a
/// program by a user other than the namespace's root clears them: carry
/// CAP_NET_ADMIN over as an ambient capability.
fn keep_net_admin_across_exec() -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_NET_ADMIN: u32 = 12;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget/capset with a v3 header and two data structs, as the
    // kernel expects; prctl with integer arguments.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        data[0].inheritable |= 1 << CAP_NET_ADMIN;
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let raise = libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_RAISE as libc::c_ulong,
            CAP_NET_ADMIN as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
        if raise != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// slirp4netns on the namespace, once it says the tap device is up.
async fn start_slirp(owner: &OwnedFd, pid: i32) -> Result<Attached, NetworkError> {
    let (ready_read, ready_write) = pipe()?;
    let (exit_read, exit_write) = pipe()?;
    let user = owner.as_raw_fd();
    let (ready, exit) = (ready_write.as_raw_fd(), exit_read.as_raw_fd());
    let mut cmd = std::process::Command::new(find("slirp4netns", &["/usr/bin", "/bin"]));
    cmd.args([
        "--configure",
        "--mtu=65520",
        "--disable-host-loopback",
        "--disable-dns",
        "--enable-sandbox",
        "--enable-seccomp",
    ])
    .arg(format!("--ready-fd={ready}"))
    .arg(format!("--exit-fd={exit}"))
    .arg(format!("--userns-path=/proc/self/fd/{user}"))
    .arg(pid.to_string())
    .arg("tap0")
    .env_clear()
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    // SAFETY: only fcntl(2) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for fd in [user, ready, exit] {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .map_err(NetworkError::SlirpMissing)?;
    drop((ready_write, exit_read));
    let mut ready =
        tokio::net::unix::pipe::Receiver::from_owned_fd(ready_read).map_err(NetworkError::Slirp)?;
    let mut byte = [0u8; 1];
    let said = tokio::time::timeout(Duration::from_secs(10), ready.read(&mut byte)).await;
    if !matches!(said, Ok(Ok(1))) {
        let _ = child.start_kill();
        let mut why = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ =
                tokio::time::timeout(Duration::from_secs(2), err.read_to_string(&mut why)).await;
        }
        return Err(NetworkError::SlirpNotReady(why.trim().to_owned()));
    }
    Ok(Attached {
        _slirp: child,
        _exit: exit_write,
    })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), NetworkError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(NetworkError::Pipe(std::io::Error::last_os_error()));
    }
    // SAFETY: fresh fds we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `name` in the first of `dirs` that has it (taskgate's PATH may lack
/// `/usr/sbin`), else as PATH finds it.
fn find(name: &str, dirs: &[&str]) -> PathBuf {
    dirs.iter()
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// The host's own IPv4 addresses, as the network namespace taskgate runs in
/// shows them.
pub fn host_addresses() -> Vec<Ipv4Addr> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below; each entry's address is
    // read only when it is an AF_INET one.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return found;
        }
        let mut at = list;
        while !at.is_null() {
            let addr = (*at).ifa_addr;
            if !addr.is_null() && i32::from((*addr).sa_family) == libc::AF_INET {
                let sin = addr.cast::<libc::sockaddr_in>();
                found.push(Ipv4Addr::from(u32::from_be((*sin).sin_addr.s_addr)));
            }
            at = (*at).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    found
}

#[cfg(test)]
mod attacks;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_means_outside_every_blocked_range() {
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "127.0.0.1",
            "0.0.0.0",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "192.0.2.2",
            "203.0.113.9",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn a_network_that_could_not_be_attached_says_which_step_failed() {
        use crate::runner::process::NetworkStartError;
        use std::os::unix::process::ExitStatusExt;
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let said = [
            NetworkError::Namespace(io()),
            NetworkError::UserNamespace(io()),
            NetworkError::IpMissing(io()),
            NetworkError::Ip(io()),
            NetworkError::IpTimeout,
            NetworkError::Routes {
                status: ExitStatus::from_raw(2 << 8),
                stderr: "RTNETLINK answers: Operation not permitted".into(),
            },
            NetworkError::SlirpMissing(io()),
            NetworkError::Slirp(io()),
            NetworkError::SlirpNotReady("cannot open tap0".into()),
            NetworkError::Pipe(io()),
        ]
        .map(|e| NetworkStartError::Network(e).to_string());
        insta::assert_snapshot!(said.join("\n"), @r"
            the sandbox's network could not be set up: the sandbox's network namespace: entity not found
            the sandbox's network could not be set up: the sandbox's user namespace: entity not found
            the sandbox's network could not be set up: `ip` could not start (install iproute2): entity not found
            the sandbox's network could not be set up: `ip`: entity not found
            the sandbox's network could not be set up: `ip` did not finish within 10 s
            the sandbox's network could not be set up: setting the sandbox's routes failed (exit status: 2): RTNETLINK answers: Operation not permitted
            the sandbox's network could not be set up: slirp4netns could not start (install slirp4netns): entity not found
            the sandbox's network could not be set up: slirp4netns: entity not found
            the sandbox's network could not be set up: slirp4netns did not set the sandbox's network up: cannot open tap0
            the sandbox's network could not be set up: pipe: entity not found
            ");
        insta::assert_snapshot!(NetworkStartError::NoPid, @"the sandbox did not start (bwrap gave no pid)");
        insta::assert_snapshot!(NetworkStartError::Unblock(io()), @"the sandbox's command could not be started: entity not found");
    }
}
