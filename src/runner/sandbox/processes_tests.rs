//! The sandbox's process limit is per run, not per host user: two runs of
//! the same non-root user at once, one fork-bombing, through the local
//! runner's own path ([`run_in`]) with the real `bwrap`.
//!
//! When the tests run as root (where the kernel never applies RLIMIT_NPROC),
//! bwrap is started through a wrapper that drops to `nobody` first, as a
//! non-root taskgate would run it; the per-command pids cgroup root makes
//! is per run already and not what is shown here. Must not: touch the
//! runner's code paths beyond that wrapper.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::tests::{options, run_in, Host};
use super::*;

const NOBODY: u32 = 65534;

/// Spawns `sleep` children until fork fails (200 at most), in a subshell
/// dash abandons at the first failed fork; says how many it started on the
/// `ready` FIFO, holds them until a line on `go`, then ends (and they die
/// with its pid namespace).
const BOMB: &str = "( i=0; while [ $i -lt 200 ]; do sleep 3019 & i=$((i+1)); echo $i > /tmp/n; done ); \
     read n < /tmp/n; echo \"bombed $n\" > /workspace/ready; read x < /workspace/go; echo \"held $n\"";
/// Starts 20 `sleep` children, all of them or says where it stopped.
const TWENTY: &str =
    "i=0; while [ $i -lt 20 ]; do sleep 3020 & i=$((i+1)); done; echo \"started $i\"";

#[tokio::test]
async fn a_fork_bomb_in_one_run_leaves_another_run_of_the_same_user_its_processes() {
    let wrapper = tempfile::tempdir().unwrap();
    let sandbox = Arc::new(Sandbox {
        program: unprivileged_bwrap(wrapper.path()),
        limits: Limits {
            max_processes: 32,
            ..Limits::default()
        },
        ..Sandbox::default()
    });
    let (bomber, other) = (Host::new(), Host::new());
    for host in [&bomber, &other] {
        open_to_nobody(host);
    }
    let ready = fifo(&bomber.workspace, "ready");
    let go = fifo(&bomber.workspace, "go");
    let mut bomb = tokio::spawn({
        let (dir, sandbox) = (bomber.workspace.clone(), sandbox.clone());
        async move { run_in(&dir, BOMB, options(Isolation::Sandbox(sandbox))).await }
    });
    let bombed = tokio::task::spawn_blocking(move || read_all(&ready));
    let said = tokio::select! {
        ended = &mut bomb => panic!("the fork bomb ended before it said so: {ended:?}"),
        said = bombed => said.unwrap(),
    };
    let bombed: u64 = said
        .trim()
        .strip_prefix("bombed ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(bombed < 32, "its own limit held: {bombed} started");

    // While the bomber holds every process its limit allows.
    let (report, out) = run_in(
        &other.workspace,
        TWENTY,
        options(Isolation::Sandbox(sandbox.clone())),
    )
    .await;
    // Read-write: never blocks, whatever became of the bomber.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&go)
        .and_then(|mut f| f.write_all(b"go\n"))
        .unwrap();
    assert_eq!(out, "started 20\n", "{:?}", report.gates[0].summary);
    assert!(report.passed(), "{out}");
    let (_, held) = bomb.await.unwrap();
    assert!(
        held.ends_with(&format!("held {bombed}\n")),
        "the bomber outlived the other run: {held}"
    );
}

/// `bwrap` as the tests' user when it is not root; as `nobody` otherwise,
/// through a script that also lets `nobody` into the run's private `/etc`
/// directory (taskgate's own user owns it in a real run).
fn unprivileged_bwrap(dir: &Path) -> PathBuf {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return PathBuf::from("bwrap");
    }
    assert!(
        Path::new("/usr/bin/setpriv").exists() && Path::new("/usr/bin/bwrap").exists(),
        "running as root, the test needs /usr/bin/setpriv to start /usr/bin/bwrap as nobody"
    );
    let script = dir.join("bwrap-as-nobody");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case $a in */taskgate-sandbox-*/passwd) chmod 0755 \"${{a%/passwd}}\";; esac; done\n\
             exec /usr/bin/setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups /usr/bin/bwrap \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The host's directories down to the workspace enterable, the workspace
/// writable, by `nobody`.
fn open_to_nobody(host: &Host) {
    let mut dir = host.workspace.as_path();
    while dir.starts_with(&host.root) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir = dir.parent().unwrap();
    }
    std::fs::set_permissions(&host.workspace, std::fs::Permissions::from_mode(0o777)).unwrap();
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    path
}

/// Blocks until a writer opened the FIFO and closed it.
fn read_all(path: &Path) -> String {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .unwrap();
    text
}
