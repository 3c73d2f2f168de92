//! The `pids` (and, where delegated, memory) cgroup of one sandboxed
//! command, moved out of `super::sandbox` (the reasons are in its header).
//!
//! Owns: finding a cgroup taskgate may make children in, making one per
//! command with its limits, and removing it (and stale ones of dead
//! taskgate processes). Must not: start or signal processes.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Whether the process limit holds on this host: RLIMIT_NPROC for a
/// non-root user (set inside the sandbox's user namespace, so per run),
/// a [`PidsCgroup`] for root.
pub fn processes_limited() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    !root || pids_parent().is_some()
}

/// A `pids` cgroup of one command, removed after it (once empty). The
/// command's bwrap joins it between fork and exec ([`PidsCgroup::procs`]).
#[derive(Debug)]
pub struct PidsCgroup {
    pub(super) dir: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` processes; `None` where taskgate cannot
    /// make one. Where the cgroup is a v2 one with the memory controller
    /// enabled for it, `memory` bytes bound the command's processes
    /// together (`memory.max`, no swap), beside each one's `RLIMIT_AS`.
    pub fn create(max: u64, memory: u64) -> Option<PidsCgroup> {
        Self::create_in(&pids_parent()?, max, memory)
    }

    fn create_in(parent: &Path, max: u64, memory: u64) -> Option<PidsCgroup> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("taskgate-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cgroup = PidsCgroup { dir };
        cgroup.limit(max, memory)?;
        Some(cgroup)
    }

    pub(super) fn limit(&self, max: u64, memory: u64) -> Option<()> {
        std::fs::write(self.dir.join("pids.max"), max.to_string()).ok()?;
        // A v2 cgroup shows `memory.max` only when its parent delegates
        // the memory controller; v1's pids hierarchy never has it.
        if self.dir.join("memory.max").exists() {
            std::fs::write(self.dir.join("memory.max"), memory.to_string()).ok()?;
            let swap = self.dir.join("memory.swap.max");
            if swap.exists() {
                let _ = std::fs::write(swap, "0");
            }
        }
        Some(())
    }

    /// The file a process writes `0` to to join.
    pub fn procs(&self) -> CString {
        CString::new(self.dir.join("cgroup.procs").as_os_str().as_bytes())
            .expect("a path without NUL")
    }

    /// Removes the cgroup once its processes are gone (they were killed;
    /// their exit takes a moment).
    pub async fn remove(mut self) {
        let dir = std::mem::take(&mut self.dir);
        for _ in 0..200 {
            if std::fs::remove_dir(&dir).is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tracing::warn!(dir = %dir.display(), "could not remove a pids cgroup");
    }
}

impl Drop for PidsCgroup {
    /// A run abandoned mid-way: its processes were just killed; remove the
    /// cgroup when they are gone, off the async threads.
    fn drop(&mut self) {
        let dir = std::mem::take(&mut self.dir);
        if dir.as_os_str().is_empty() || std::fs::remove_dir(&dir).is_ok() {
            return;
        }
        std::thread::spawn(move || {
            for _ in 0..200 {
                std::thread::sleep(Duration::from_millis(10));
                if std::fs::remove_dir(&dir).is_ok() {
                    return;
                }
            }
        });
    }
}

/// The cgroup under which per-command `pids` cgroups are made: taskgate's
/// own in the v1 `pids` hierarchy, or in the v2 one when `pids` is enabled
/// for its children; checked once by making and removing one.
fn pids_parent() -> Option<PathBuf> {
    static PARENT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    PARENT
        .get_or_init(|| {
            let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            let root = Path::new("/sys/fs/cgroup");
            let candidates = own.lines().filter_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                let path = path.trim_start_matches('/');
                if controllers.split(',').any(|c| c == "pids") {
                    Some(root.join("pids").join(path))
                } else if controllers.is_empty() && root.join("cgroup.controllers").exists() {
                    let dir = root.join(path);
                    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                        .ok()?
                        .split_whitespace()
                        .any(|c| c == "pids");
                    enabled.then_some(dir)
                } else {
                    None
                }
            });
            for dir in candidates {
                remove_stale(&dir);
                let probe = dir.join(format!("taskgate-probe-{}", std::process::id()));
                if std::fs::create_dir(&probe).is_ok() {
                    let usable = probe.join("pids.max").exists();
                    let _ = std::fs::remove_dir(&probe);
                    if usable {
                        return Some(dir);
                    }
                }
            }
            None
        })
        .clone()
}

/// Removes the empty per-command cgroups of taskgate processes that are
/// gone (killed before they could clean up).
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("taskgate-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}
