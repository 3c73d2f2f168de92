//! A run's disk (docs/decisions/sandbox-disk.md): the size-limited
//! filesystem its workspace lives on, the removal of a workspace whatever
//! task code did to its folders, and the host's free space.
//!
//! Owns: mounting a tmpfs of `TASKGATE_RUN_DISK_MIB` at a run's workspace
//! ([`mount_capped`]), telling that it is full ([`is_full`]), removing a
//! workspace ([`remove_workspace`]: unmounted, or every folder made
//! writable first), the workspaces that could not be removed (retried by
//! [`retry_unremoved`], counted by [`unremoved_gauge`]) and reading free
//! space ([`free_bytes`], [`DiskFloor`]). Must not: decide whether a run
//! starts (`core::host_disk` compares the reading with the floor) or run
//! task code.
//!
//! The idea a reader needs: the tmpfs is mounted by taskgate on the host,
//! so it outlives each command's sandbox and holds the workspace for the
//! whole run; the sandbox binds it at `/workspace` like any folder. A
//! write past its size is `ENOSPC` inside the tmpfs and touches nothing
//! else; its pages are memory, charged to the memory cgroup of whoever
//! wrote them. Mounting needs `CAP_SYS_ADMIN` (taskgate as root): without
//! it the workspace is a plain folder and every gate says its disk was not
//! capped.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use prometheus_client::metrics::gauge::Gauge;
use taskgate_core::host_disk::LowDisk;

/// Where the host's free space is read: the disk of a folder, or (tests)
/// a reading set by hand.
#[derive(Debug, Clone)]
pub enum FreeSpace {
    Disk(PathBuf),
    Set(Arc<AtomicU64>),
}

impl FreeSpace {
    pub fn read(&self) -> io::Result<u64> {
        match self {
            FreeSpace::Disk(dir) => free_bytes(dir),
            FreeSpace::Set(bytes) => Ok(bytes.load(Ordering::SeqCst)),
        }
    }
}

/// The operator's free-space floor (`TASKGATE_MIN_FREE_MIB`) and where it
/// is read.
#[derive(Debug, Clone)]
pub struct DiskFloor {
    pub min_free_mib: u64,
    pub free: FreeSpace,
}

impl DiskFloor {
    /// The host is below the floor now (`core::host_disk` decides); a
    /// reading that fails holds nothing and is logged.
    pub fn low(&self) -> Option<LowDisk> {
        if self.min_free_mib == 0 {
            return None;
        }
        match self.free.read() {
            Ok(free) => LowDisk::below_floor(free, self.min_free_mib),
            Err(e) => {
                tracing::warn!(error = %e, "reading the runner's free disk space failed");
                None
            }
        }
    }
}

/// The default of `TASKGATE_RUN_DISK_MIB`.
pub const DEFAULT_RUN_DISK_MIB: u64 = 4096;

/// Free space below which a capped workspace counts as full: a write
/// that failed for room leaves less than this (tmpfs pages are 4 KiB).
const FULL_BELOW_BYTES: u64 = 64 << 10;

/// What a run's workspace got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunDisk {
    /// Not the bot's run (`taskgate run`): a folder of the person's own.
    Host,
    /// A tmpfs of `bytes` of its own.
    Capped { bytes: u64 },
    /// A capped disk was asked for, and the host could not mount one.
    Uncapped { why: String },
}

impl RunDisk {
    /// Said on every gate of a run whose disk could not be capped.
    pub fn warning(&self) -> Option<String> {
        match self {
            RunDisk::Host | RunDisk::Capped { .. } => None,
            RunDisk::Uncapped { why } => Some(format!(
                "the run's disk was not capped (TASKGATE_RUN_DISK_MIB): {why}"
            )),
        }
    }

    /// What a command that failed on a full capped disk is said to have
    /// done.
    pub fn full_message(bytes: u64) -> String {
        format!(
            "the run used its {} MiB of disk (TASKGATE_RUN_DISK_MIB); nothing outside its workspace was written",
            bytes >> 20
        )
    }
}

/// Mounts a tmpfs of `bytes` at the empty folder `dir`, for taskgate's
/// user only. Fails without `CAP_SYS_ADMIN`.
pub fn mount_capped(dir: &Path, bytes: u64) -> io::Result<()> {
    let target = c_path(dir)?;
    let options = CString::new(format!("size={bytes},mode=0700")).expect("no NUL");
    // SAFETY: every pointer is a valid NUL-terminated string that lives
    // for the call.
    let rc = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the capped workspace at `dir` has no room left.
pub fn is_full(dir: &Path) -> bool {
    free_bytes(dir).is_ok_and(|free| free < FULL_BELOW_BYTES)
}

/// The bytes an unprivileged writer may still write on the filesystem of
/// `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let c = c_path(path)?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path, `s` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}

/// Removes a workspace: a capped one is unmounted (its files go with the
/// tmpfs, whatever their modes), then its folder removed. What is left
/// is remembered, retried by [`retry_unremoved`] and counted.
pub fn remove_workspace(dir: &Path, mounted: bool) {
    match remove_now(dir, mounted) {
        Ok(()) => {}
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove a workspace: retried later");
            let mut left = unremoved();
            left.insert(Unremoved {
                dir: dir.to_owned(),
                mounted,
            });
            UNREMOVED_GAUGE.set(left.len() as i64);
        }
    }
}

/// Tries again to remove the workspaces that could not be removed; those
/// still there stay counted.
pub fn retry_unremoved() {
    let mut left = unremoved();
    left.retain(|u| remove_now(&u.dir, u.mounted).is_err());
    UNREMOVED_GAUGE.set(left.len() as i64);
}

/// Workspaces that could not be removed and wait for a retry, as
/// `taskgate_workspaces_unremoved` shows them.
pub fn unremoved_gauge() -> Gauge {
    UNREMOVED_GAUGE.clone()
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Unremoved {
    dir: PathBuf,
    mounted: bool,
}

static UNREMOVED: Mutex<BTreeSet<Unremoved>> = Mutex::new(BTreeSet::new());
static UNREMOVED_GAUGE: LazyLock<Gauge> = LazyLock::new(Gauge::default);

fn unremoved() -> std::sync::MutexGuard<'static, BTreeSet<Unremoved>> {
    UNREMOVED.lock().unwrap_or_else(PoisonError::into_inner)
}

fn remove_now(dir: &Path, mounted: bool) -> io::Result<()> {
    if mounted {
        unmount(dir)?;
    }
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    make_writable(dir);
    std::fs::remove_dir_all(dir)
}

/// Unmounts the tmpfs at `dir`, lazily (a process still holding a file
/// in it keeps the memory until it lets go, never the folder). Already
/// unmounted is fine.
fn unmount(dir: &Path) -> io::Result<()> {
    let target = c_path(dir)?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // Not a mount point (any more), or gone.
        Some(libc::EINVAL | libc::ENOENT) => Ok(()),
        _ => Err(e),
    }
}

/// Gives taskgate's user back write and search on every folder under
/// `dir` (task code may have taken them away: `chmod -R a-w`), never
/// following a link. What cannot be changed is left to the removal to
/// report.
fn make_writable(dir: &Path) {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&d) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let mode = meta.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode | 0o700));
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            stack.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

#[cfg(test)]
mod tests;
