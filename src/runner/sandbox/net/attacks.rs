//! A sandbox allowed the network against real attacks,
//! through the local runner's own path with the real bwrap, slirp4netns and
//! ip.
//!
//! No internet here, and the host's own network must not change: each test
//! runs in a network namespace of its own (root only; elsewhere it says it
//! was skipped). There the "host" has a listener on every address, private,
//! link-local and shared addresses of its own, an address of its own that
//! is public, and a public range routed to itself (a `local` route: it
//! answers for 203.0.113.0/24 without owning an address there), standing
//! for the internet. Each attack was seen to succeed with the routes (or
//! `--disable-host-loopback`) taken out.

use std::net::TcpListener;
use std::sync::Arc;

use crate::runner::local::RunOptions;
use crate::runner::sandbox::tests::{options, run_in, Host};
use crate::runner::{Isolation, Sandbox};
use taskgate_core::network::Network;

/// The addresses the test's host has, beside 127.0.0.1.
const HOST_SETUP: &[&str] = &[
    "link set lo up",
    "addr add 10.77.0.1/32 dev lo",
    "addr add 172.16.77.1/32 dev lo",
    "addr add 192.168.77.1/32 dev lo",
    "addr add 169.254.169.254/32 dev lo",
    "addr add 100.100.100.200/32 dev lo",
    "addr add 198.51.100.7/32 dev lo",
    "-6 addr add fd00:77::1/128 dev lo",
    "route add local 203.0.113.0/24 dev lo",
];

/// What each address gave a connection from inside the sandbox (`ok`, or
/// the error), and how many connections the host's listener accepted; `None`
/// where this host cannot make a network namespace for the test.
fn connect_from_sandbox(targets: &[&str]) -> Option<(String, usize)> {
    let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    std::thread::spawn(move || {
        // SAFETY: unshare(2) of this thread's network namespace only.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            eprintln!(
                "skipped: cannot make a network namespace for the test ({})",
                std::io::Error::last_os_error()
            );
            return None;
        }
        for line in HOST_SETUP {
            let status = std::process::Command::new("ip")
                .args(line.split(' '))
                .status()
                .expect("ip runs");
            assert!(status.success(), "ip {line}");
        }
        // Every address of the host, v4 and v6.
        let listener = TcpListener::bind("[::]:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let script = format!(
            "python3 -c '
import socket
for t in {targets:?}:
    try:
        socket.create_connection((t, {port}), timeout=3).close()
        print(t, \"ok\")
    except OSError as e:
        print(t, e.strerror or e)
'"
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (report, out) = runtime.block_on(run_in(
            &Host::new().workspace,
            &script,
            RunOptions {
                network: Network::Allowed,
                ..options(Isolation::Sandbox(Arc::new(Sandbox::default())))
            },
        ));
        assert!(report.runner_fault.is_none(), "{report:#?}");
        let accepted = std::iter::from_fn(|| listener.accept().ok()).count();
        Some((out, accepted))
    })
    .join()
    .unwrap()
}

#[test]
fn the_hosts_loopback_is_unreachable_with_the_network() {
    // 10.0.2.2 is slirp4netns's gateway, which would be the host's 127.0.0.1.
    let Some((out, accepted)) = connect_from_sandbox(&["127.0.0.1", "10.0.2.2"]) else {
        return;
    };
    assert_eq!(accepted, 0, "{out}");
    assert!(!out.contains(" ok"), "{out}");
}

#[test]
fn link_local_addresses_are_unreachable_with_the_network() {
    let Some((out, accepted)) = connect_from_sandbox(&["169.254.169.254", "100.100.100.200"])
    else {
        return;
    };
    assert_eq!(accepted, 0, "{out}");
    insta::assert_snapshot!(out, @r"
    169.254.169.254 No route to host
    100.100.100.200 No route to host
    ");
}

#[test]
fn private_addresses_and_the_hosts_own_are_unreachable_with_the_network() {
    let targets = [
        "10.77.0.1",
        "172.16.77.1",
        "192.168.77.1",
        "198.51.100.7",
        "fd00:77::1",
    ];
    let Some((out, accepted)) = connect_from_sandbox(&targets) else {
        return;
    };
    assert_eq!(accepted, 0, "{out}");
    insta::assert_snapshot!(out, @r"
    10.77.0.1 No route to host
    172.16.77.1 No route to host
    192.168.77.1 No route to host
    198.51.100.7 No route to host
    fd00:77::1 Network is unreachable
    ");
}

#[test]
fn a_public_address_is_reached_with_the_network() {
    let Some((out, accepted)) = connect_from_sandbox(&["203.0.113.9"]) else {
        return;
    };
    assert_eq!((out.as_str(), accepted), ("203.0.113.9 ok\n", 1));
}
