//! A run's disk against task code that fills it or locks its folders,
//! through the local runner's own path (`LocalRunner::run_commit`, the
//! real `bwrap`), and the removal of what task code left.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::runner::local::{Checkout, GateSpec, RunOptions};
use crate::runner::mirror::tests::Origin;
use crate::runner::sandbox::{Isolation, Limits, Sandbox};
use crate::runner::{LocalRunner, MirrorStore};
use taskgate_core::classify::FailureKind;
use taskgate_core::plan::TestSpec;
use taskgate_core::report::RunReport;
use taskgate_core::task::RunSubject;

fn gate(cmd: &str) -> Vec<GateSpec> {
    let mut gate = GateSpec::named("test");
    gate.tests.push(TestSpec {
        cmd: cmd.into(),
        gate: "test".into(),
        timeout_seconds: None,
        reports: Vec::new(),
    });
    vec![gate]
}

/// Runs `cmd` as a bot's run of a fresh commit, sandboxed with a disk of
/// `disk_mib`; the report and the workspaces' parent folder.
async fn run_capped(cmd: &str, disk_mib: u64, tmp: &Path) -> RunReport {
    let origin = Origin::new();
    let sha = origin.commit(&[("README", "hello")], "first");
    let mirror = MirrorStore::new(tmp.join("mirrors")).mirror("o/r").unwrap();
    let sandbox = Sandbox {
        limits: Limits {
            run_disk_bytes: disk_mib << 20,
            ..Limits::default()
        },
        ..Sandbox::default()
    };
    let options = RunOptions {
        default_timeout: Duration::from_secs(30),
        grace: Duration::from_millis(500),
        rerun_failures: false,
        sha: Some(sha),
        isolation: Isolation::Sandbox(Arc::new(sandbox)),
        ..RunOptions::default()
    };
    LocalRunner::new(1)
        .run_commit(
            Checkout {
                mirror: &mirror,
                url: origin.url(),
                token: None,
                workspaces: tmp.join("ws"),
                deps: Vec::new(),
            },
            RunSubject::Task("t".into()),
            gate(cmd),
            options,
            |_| {},
        )
        .await
        .unwrap()
}

fn left_in(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_task_writing_past_its_disk_fails_as_tooling_error_and_the_host_is_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    // 40 MB into a disk of 16 MiB: far under RLIMIT_FSIZE (1 GiB), so
    // without a disk of its own it is written to the host's.
    let report = run_capped(
        "head -c 40000000 /dev/zero > big; s=$?; echo \"size $(wc -c < big) on $(stat -f -c %T .)\"; exit $s",
        16,
        tmp.path(),
    )
    .await;
    let gate = &report.gates[0];
    let output = &gate.commands[0].output;
    if gate.warnings.iter().any(|w| w.contains("not capped")) {
        // A host where taskgate may not mount (not root): said, not hidden.
        eprintln!("this host cannot mount a run's disk: {:?}", gate.warnings);
        return;
    }
    assert!(!gate.passed, "{report:?}");
    assert_eq!(gate.kind, Some(FailureKind::ToolingError), "{report:?}");
    insta::assert_snapshot!(gate.summary.as_deref().unwrap_or(""), @"the run used its 16 MiB of disk (TASKGATE_RUN_DISK_MIB); nothing outside its workspace was written");
    assert!(output.contains("on tmpfs"), "{output}");
    let size: u64 = output
        .split("size ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{output}"));
    assert!(size <= 16 << 20, "{size} bytes written");
    assert!(
        report.runner_fault.is_none(),
        "the code's doing, not the runner's"
    );
    // It was written on the run's tmpfs, never the host's disk, and
    // nothing of it is left: the workspace and its tmpfs are gone.
    assert!(left_in(&tmp.path().join("ws")).is_empty());
}

#[tokio::test]
async fn a_task_making_its_folders_read_only_is_still_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let report = run_capped(
        "mkdir -p d/e && echo x > d/e/f && chmod -R a-w d . && echo locked",
        16,
        tmp.path(),
    )
    .await;
    assert!(report.passed(), "{report:?}");
    assert!(left_in(&tmp.path().join("ws")).is_empty());
}

/// Runs `f` on a thread whose file accesses are those of an unprivileged
/// user (`nobody`) when the tests run as root, for whom folder modes
/// mean nothing.
fn unprivileged<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: changes this thread's filesystem ids only; the thread
            // ends with `f`.
            unsafe {
                if libc::geteuid() == 0 {
                    libc::setfsgid(65534);
                    libc::setfsuid(65534);
                }
            }
            f()
        })
        .join()
        .unwrap()
    })
}

fn open_to_all(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
}

#[test]
fn folders_locked_by_task_code_are_made_writable_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    open_to_all(tmp.path());
    let ws = tmp.path().join("ws");
    unprivileged(|| {
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("a/b/f"), "x").unwrap();
        for d in [ws.join("a/b"), ws.join("a"), ws.clone()] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        remove_workspace(&ws, false);
    });
    assert!(!ws.exists(), "the locked workspace is removed");
    assert!(!unremoved().iter().any(|u| u.dir == ws));
}

#[test]
fn a_workspace_that_cannot_be_removed_is_counted_and_tried_again() {
    let tmp = tempfile::tempdir().unwrap();
    open_to_all(tmp.path());
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    open_to_all(&ws);
    // A folder the unprivileged user may neither change nor empty.
    std::fs::create_dir(ws.join("theirs")).unwrap();
    std::fs::write(ws.join("theirs/f"), "x").unwrap();
    if unsafe { libc::geteuid() } != 0 {
        return; // not root: no second user to own the folder
    }
    unprivileged(|| remove_workspace(&ws, false));
    assert!(ws.exists());
    assert!(unremoved().iter().any(|u| u.dir == ws), "remembered");
    assert!(unremoved_gauge().get() >= 1, "counted");
    // As taskgate's own user again (the folder's owner), the retry removes it.
    retry_unremoved();
    assert!(!ws.exists());
    assert!(
        !unremoved().iter().any(|u| u.dir == ws),
        "forgotten once removed"
    );
}

#[test]
fn a_run_disk_that_could_not_be_mounted_is_said() {
    let why = RunDisk::Uncapped {
        why: "mounting a tmpfs of 4096 MiB failed: Operation not permitted (os error 1)".into(),
    };
    insta::assert_snapshot!(why.warning().unwrap(), @"the run's disk was not capped (TASKGATE_RUN_DISK_MIB): mounting a tmpfs of 4096 MiB failed: Operation not permitted (os error 1)");
    assert_eq!(RunDisk::Capped { bytes: 1 << 20 }.warning(), None);
}
