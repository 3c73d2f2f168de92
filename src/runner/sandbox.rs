//! The sandbox every command of the local runner runs in (SPEC §6):
//! `bwrap … -- /bin/sh -c CMD` with bubblewrap (docs/decisions/sandbox.md).
//!
//! Owns: the operator's sandbox settings (environment variables, read once
//! at start: [`Isolation::from_env`]), the `bwrap` command line, the resource
//! limits set on it, and the check that the host can sandbox at all
//! ([`Sandbox::probe`]). Must not: run commands itself ([`super::process`]
//! does), or take any setting from the repository under test: even
//! [`SandboxRun::network`] is the operator's decision on the repository's
//! request (`core::network`), carried out by [`net`].
//!
//! What a command sees: the system's toolchain read-only (`/usr`, `/bin`,
//! `/sbin`, `/lib*`, the parts of `/etc` tools read), the operator's extra
//! read-only paths, the workspace read-write at [`WORKSPACE`], a private
//! `/tmp` and HOME ([`HOME`]), its own `/proc` and `/dev`; new user, mount,
//! pid, ipc, uts, cgroup and network namespaces (a run allowed the network
//! gets a way out of its own, [`net`]); no capabilities and
//! no further user namespaces. Nothing of taskgate's — work directory,
//! database, key, `.env`, other mirrors — is mounted, nor the host's
//! accounts or credentials ([`files`]).
//!
//! Two ideas a reader needs:
//! - bwrap's `--new-session` puts pid 1 of the sandbox and everything under it
//!   in a new session whose process group is that pid 1 (outside pid reported
//!   on `--info-fd`). A timeout sends SIGTERM to that group only — bwrap's
//!   own monitor outside would die of it and take the sandbox down at once —
//!   then SIGKILL to both; when pid 1 of a pid namespace dies, the kernel
//!   kills every process in it, so nothing outlives its command.
//! - The limits are rlimits, inherited by all inside. RLIMIT_NPROC is set
//!   *inside* the sandbox, by the fixed script just before it execs the
//!   command ([`started_script`]); the others are set on bwrap before it
//!   execs. Since Linux 5.14 the kernel counts a user's processes per user
//!   namespace, and the check on fork compares the count in the process's
//!   own namespace with its own limit, then the count in each parent with
//!   the limit its namespace was created under. bwrap creates the sandbox's
//!   namespace under taskgate's own limit, so for a non-root taskgate user
//!   the count is per run: one installation's fork bomb cannot starve
//!   another's runs, nor taskgate (verified on 6.x; on older kernels the
//!   count is the host user's, as a plain rlimit). The kernel never applies
//!   RLIMIT_NPROC to host root, even inside a user namespace (uid 0 maps to
//!   root); so where taskgate can make a `pids` cgroup (v1, or v2 with the
//!   controller enabled below taskgate's cgroup: typically as root) every
//!   command also gets one of its own ([`PidsCgroup`]). Where neither holds,
//!   each gate says its processes were not limited.

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod cgroup;
pub mod disk;
mod error;
pub mod files;
pub mod net;

pub use cgroup::{processes_limited, PidsCgroup};
pub use disk::{RunDisk, DEFAULT_RUN_DISK_MIB};
use files::{credential_masks, EtcFiles, Mask};

pub use error::{OwnFile, ProbeFailure, SandboxError, SettingError};

/// Where the workspace is mounted inside the sandbox (and the commands' cwd).
pub const WORKSPACE: &str = "/workspace";
/// The sandbox's private HOME, an empty tmpfs per command.
pub const HOME: &str = "/home/runner";

/// The first byte every sandboxed command prints, written by a fixed
/// script inside the sandbox just before it execs the command
/// ([`started_script`]): output that does not begin with it came from
/// bubblewrap failing to set the sandbox up, never from the command, and
/// task code cannot take back a byte printed before it ran. The runner
/// strips it from what it keeps.
pub const STARTED_MARK: u8 = 0x1e;

/// `sh -c SCRIPT sh CMD`: the sandbox's process limit set inside its own
/// user namespace (bash and busybox name it `ulimit -u`, dash `-p`; both
/// set the hard limit too, which nothing inside can raise), then the mark,
/// then CMD as `sh -c` ran it. A shell that can set neither ends there,
/// before the mark: the runner's fault, and no task code ran.
fn started_script(max_processes: u64) -> String {
    format!(
        "ulimit -u {max_processes} 2>/dev/null || ulimit -p {max_processes} 2>/dev/null || \
         {{ echo 'taskgate: the sandbox could not limit its processes' >&2; exit 126; }}; \
         printf '\\036'; exec /bin/sh -c \"$1\""
    )
}

/// Said on every gate of a run without the sandbox because the operator
/// opted out.
pub const UNSANDBOXED_WARNING: &str =
    "ran WITHOUT a sandbox (TASKGATE_UNSANDBOXED=1): task code had taskgate's access";
/// Said on every gate of a sandboxed run whose processes nothing could count.
pub const PROCESSES_WARNING: &str = "the sandbox could not limit the number of processes \
     (taskgate runs as root, where RLIMIT_NPROC does not apply, and no pids cgroup is writable)";

/// Defaults of the operator's limits (docs/configuration.md).
pub const DEFAULT_MAX_PROCESSES: u64 = 512;
pub const DEFAULT_MEMORY_MIB: u64 = 4096;
pub const DEFAULT_FILE_SIZE_MIB: u64 = 1024;
pub const DEFAULT_MAX_FILES: u64 = 1024;

/// The parts of `/etc` that tools read, mounted read-only where they exist:
/// the dynamic loader's cache, Debian's alternatives (`awk`, `python`…),
/// certificates, users and names, time zone.
const ETC: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
];
/// Top-level toolchain directories: bound, or recreated as the symlinks they
/// are on a merged-/usr system.
const ROOT_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

/// How the local runner isolates the commands of a run.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// Every command in the sandbox; a host that cannot sandbox refuses.
    Sandbox(Arc<Sandbox>),
    /// The operator opted out (`TASKGATE_UNSANDBOXED=1`): commands run as
    /// taskgate's user, and every gate says so.
    Unsandboxed,
    /// `taskgate run` without `--sandbox`: a person running tests on their
    /// own machine, as their own user. Nothing to say.
    Host,
    /// The operator's settings are wrong: nothing runs, every gate says why.
    Refused(SettingError),
}

impl Isolation {
    /// The bot's isolation, from taskgate's environment: the sandbox unless
    /// `TASKGATE_UNSANDBOXED=1`.
    pub fn from_env() -> Isolation {
        Isolation::from_vars(|k| std::env::var(k).ok())
    }

    /// The size of a run's own disk, for a sandboxed run; none for one
    /// that is not (its task code could write anywhere taskgate can).
    pub fn run_disk_bytes(&self) -> Option<u64> {
        match self {
            Isolation::Sandbox(s) => Some(s.limits.run_disk_bytes),
            Isolation::Unsandboxed | Isolation::Host | Isolation::Refused(_) => None,
        }
    }

    /// [`Isolation::from_env`] over any source of variables.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Isolation {
        match var("TASKGATE_UNSANDBOXED").as_deref().map(str::trim) {
            None | Some("" | "0" | "false") => {}
            Some("1" | "true") => return Isolation::Unsandboxed,
            Some(other) => return Isolation::Refused(SettingError::Unsandboxed(other.to_owned())),
        }
        match Sandbox::from_vars(var) {
            Ok(s) => Isolation::Sandbox(Arc::new(s)),
            Err(why) => Isolation::Refused(why),
        }
    }
}

/// The operator's resource limits for every sandboxed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_NPROC, set inside the sandbox's own user namespace (per run),
    /// and `pids.max` of its [`PidsCgroup`] where one is made.
    pub max_processes: u64,
    /// RLIMIT_AS, in bytes.
    pub memory_bytes: u64,
    /// RLIMIT_FSIZE, in bytes.
    pub file_size_bytes: u64,
    /// RLIMIT_NOFILE.
    pub max_files: u64,
    /// The size of a run's own disk, its workspace
    /// (`TASKGATE_RUN_DISK_MIB`, [`disk`]).
    pub run_disk_bytes: u64,
}

impl Limits {
    /// The size of `/tmp` and of HOME, each: a file's size limit, and at
    /// most a quarter of the memory limit, so both together hold at most
    /// half of it. (Memory the command's processes map is bounded by
    /// RLIMIT_AS, which never counts a tmpfs; where a memory cgroup is
    /// made, the kernel charges tmpfs pages to it as well.)
    pub fn tmpfs_bytes(&self) -> u64 {
        self.file_size_bytes.min(self.memory_bytes / 4).max(1 << 20)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_processes: DEFAULT_MAX_PROCESSES,
            memory_bytes: DEFAULT_MEMORY_MIB << 20,
            file_size_bytes: DEFAULT_FILE_SIZE_MIB << 20,
            max_files: DEFAULT_MAX_FILES,
            run_disk_bytes: DEFAULT_RUN_DISK_MIB << 20,
        }
    }
}

/// The operator's sandbox: which `bwrap`, which limits, which extra paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// `bwrap`, found on PATH unless `TASKGATE_BWRAP` names it.
    pub program: PathBuf,
    pub limits: Limits,
    /// Mounted read-only at the same path (`TASKGATE_SANDBOX_RO_PATHS`), for
    /// toolchains outside `/usr` such as rustup's `~/.cargo` and `~/.rustup`.
    pub ro_paths: Vec<PathBuf>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            program: "bwrap".into(),
            limits: Limits::default(),
            ro_paths: Vec::new(),
        }
    }
}

/// One run's sandbox: the operator's settings and what the run adds.
#[derive(Debug, Clone)]
pub struct SandboxRun {
    pub sandbox: Arc<Sandbox>,
    /// The operator allowed the repository's request for the network:
    /// egress to public addresses only ([`net`]).
    pub network: bool,
    /// Read-only at the same path: the object directories the workspace's
    /// git borrows from its mirror (read before any command ran).
    pub objects: Vec<PathBuf>,
    /// The run's own `/etc/passwd`, `/etc/group` and `resolv.conf`.
    pub etc: Arc<EtcFiles>,
    /// Folders of the workspace (relative to it) mounted read-only over
    /// its writable mount: the dependencies' `deps/<id>`.
    pub read_only: Vec<PathBuf>,
}

impl Sandbox {
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Sandbox, SettingError> {
        let number = |name: &str, default: u64, unit: u64| -> Result<u64, SettingError> {
            match var(name).as_deref().map(str::trim) {
                None | Some("") => Ok(default * unit),
                Some(v) => {
                    let (name, value) = (name.to_owned(), v.to_owned());
                    match v.parse::<u64>() {
                        Ok(n) if n > 0 => n
                            .checked_mul(unit)
                            .ok_or(SettingError::TooLarge { name, value }),
                        _ => Err(SettingError::NotANumber { name, value }),
                    }
                }
            }
        };
        let limits = Limits {
            max_processes: number("TASKGATE_SANDBOX_MAX_PROCESSES", DEFAULT_MAX_PROCESSES, 1)?,
            memory_bytes: number("TASKGATE_SANDBOX_MEMORY_MIB", DEFAULT_MEMORY_MIB, 1 << 20)?,
            file_size_bytes: number(
                "TASKGATE_SANDBOX_FILE_SIZE_MIB",
                DEFAULT_FILE_SIZE_MIB,
                1 << 20,
            )?,
            max_files: number("TASKGATE_SANDBOX_MAX_FILES", DEFAULT_MAX_FILES, 1)?,
            run_disk_bytes: number("TASKGATE_RUN_DISK_MIB", DEFAULT_RUN_DISK_MIB, 1 << 20)?,
        };
        let mut ro_paths = Vec::new();
        for p in var("TASKGATE_SANDBOX_RO_PATHS")
            .unwrap_or_default()
            .split(':')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let path = PathBuf::from(p);
            if !path.is_absolute() || path == Path::new("/") {
                return Err(SettingError::ReadOnlyPath(p.to_owned()));
            }
            ro_paths.push(path);
        }
        let program = var("TASKGATE_BWRAP")
            .filter(|p| !p.trim().is_empty())
            .map_or_else(|| PathBuf::from("bwrap"), PathBuf::from);
        Ok(Sandbox {
            program,
            limits,
            ro_paths,
        })
    }

    /// Refuses a read-only path that holds one of taskgate's `own` files
    /// (each compared as given and with links resolved), or that lies in
    /// its work directory (another repository's mirror): task code would
    /// read them, and its output carries what it read into public check
    /// runs. Checked once at start, where those paths are known.
    pub fn refuse_own_files(&self, own: &[(OwnFile, PathBuf)]) -> Result<(), SettingError> {
        let forms = |p: &Path| {
            let mut v = vec![p.to_owned()];
            v.extend(std::fs::canonicalize(p).ok().filter(|c| c != p));
            v
        };
        for listed in &self.ro_paths {
            for (what, path) in own {
                let exposed = forms(listed).iter().any(|l| {
                    forms(path).iter().any(|o| {
                        o.starts_with(l) || (*what == OwnFile::WorkDir && l.starts_with(o))
                    })
                });
                if exposed {
                    return Err(SettingError::ExposesOwnFile {
                        listed: listed.clone(),
                        own: path.clone(),
                        what: *what,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether this host can run commands in the sandbox: `true` in it, with
    /// every option a real command gets. Success is remembered per program;
    /// a failure is checked again on the next run (bubblewrap may have been
    /// installed meanwhile). The error says why and how to fix it.
    pub async fn probe(&self) -> Result<(), SandboxError> {
        static WORKS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
        if WORKS.lock().unwrap().contains(&self.program) {
            return Ok(());
        }
        let run = SandboxRun::new(Arc::new(self.clone()), false, Vec::new())
            .map_err(SandboxError::Files)?;
        let dir = std::env::temp_dir();
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(run.args(&dir, "true", None, None))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let outcome = tokio::time::timeout(Duration::from_secs(10), cmd.output()).await;
        let program = self.program.clone();
        let why = match outcome {
            Ok(Ok(out)) if out.status.success() => {
                WORKS.lock().unwrap().push(self.program.clone());
                return Ok(());
            }
            Ok(Ok(out)) => ProbeFailure::Failed {
                program,
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            },
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                ProbeFailure::NotInstalled { program }
            }
            Ok(Err(source)) => ProbeFailure::NoStart { program, source },
            Err(_) => ProbeFailure::NoAnswer { program },
        };
        Err(SandboxError::Unavailable(why))
    }
}

impl SandboxRun {
    /// One run's sandbox, with its generated files.
    pub fn new(
        sandbox: Arc<Sandbox>,
        network: bool,
        objects: Vec<PathBuf>,
    ) -> std::io::Result<SandboxRun> {
        Ok(SandboxRun {
            sandbox,
            network,
            objects,
            etc: Arc::new(EtcFiles::new(network)?),
            read_only: Vec::new(),
        })
    }

    /// The same run with `paths` of the workspace read-only inside.
    pub fn with_read_only(self, paths: Vec<PathBuf>) -> SandboxRun {
        SandboxRun {
            read_only: paths,
            ..self
        }
    }

    /// `bwrap`'s arguments for running `cmd` with `workdir` as the workspace.
    /// The pid-1 process group is written to `info_fd` when given; with
    /// `block_fd`, the command waits for a byte on it (a run allowed the
    /// network: until its namespace is attached).
    pub fn args(
        &self,
        workdir: &Path,
        cmd: &str,
        info_fd: Option<RawFd>,
        block_fd: Option<RawFd>,
    ) -> Vec<OsString> {
        let mut a = Args(Vec::new());
        a.flags(&[
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            // Always: a run allowed the network gets it through this
            // namespace (net), never the host's.
            "--unshare-net",
        ]);
        a.flags(&[
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            // As root, bwrap would keep every capability inside.
            "--cap-drop",
            "ALL",
            "--hostname",
            "taskgate",
        ]);
        if let Some(fd) = info_fd {
            a.flags(&["--info-fd"]);
            a.path(fd.to_string());
        }
        if let Some(fd) = block_fd {
            a.flags(&["--block-fd"]);
            a.path(fd.to_string());
        }
        a.bind("--ro-bind", "/usr", "/usr");
        for dir in ROOT_DIRS {
            match std::fs::read_link(dir) {
                Ok(target) => {
                    a.flags(&["--symlink"]);
                    a.path(target);
                    a.path(dir);
                }
                Err(_) if Path::new(dir).is_dir() => a.bind("--ro-bind", dir, dir),
                Err(_) => {}
            }
        }
        for etc in ETC.iter().map(PathBuf::from).chain(python_etc()) {
            a.bind("--ro-bind-try", &etc, &etc);
        }
        a.bind("--ro-bind", self.etc.passwd(), "/etc/passwd");
        a.bind("--ro-bind", self.etc.group(), "/etc/group");
        if self.network {
            a.bind("--ro-bind", self.etc.resolv_conf(), "/etc/resolv.conf");
        }
        let size = self.sandbox.limits.tmpfs_bytes().to_string();
        a.flags(&["--proc", "/proc", "--dev", "/dev"]);
        a.flags(&["--size", &size, "--tmpfs", "/tmp"]);
        a.flags(&["--size", &size, "--tmpfs", HOME]);
        a.bind("--bind", workdir, WORKSPACE);
        for p in &self.read_only {
            a.bind("--ro-bind", workdir.join(p), Path::new(WORKSPACE).join(p));
        }
        // Last: they may lie under /tmp (tests) and must not be hidden by it.
        for p in self.objects.iter().chain(&self.sandbox.ro_paths) {
            a.bind("--ro-bind-try", p, p);
        }
        // Over everything mounted: the credentials under it, however the
        // operator listed a parent folder.
        let mut mounted: Vec<PathBuf> = vec!["/usr".into()];
        mounted.extend(self.sandbox.ro_paths.iter().cloned());
        for mask in credential_masks(&mounted) {
            match mask {
                Mask::Dir(p) => {
                    a.flags(&["--tmpfs"]);
                    a.path(p.as_os_str().to_owned());
                    a.flags(&["--remount-ro"]);
                    a.path(p.into_os_string());
                }
                Mask::File(p) => a.bind("--ro-bind", "/dev/null", p),
            }
        }
        let script = started_script(self.sandbox.limits.max_processes);
        a.flags(&["--chdir", WORKSPACE, "--", "/bin/sh", "-c", &script]);
        a.flags(&["sh", cmd]);
        a.0
    }

    /// The rlimits set on bwrap for a command allowed `cpu` of CPU time:
    /// (resource, soft, hard). CPU time gets a second more before SIGKILL
    /// than SIGXCPU. Not RLIMIT_NPROC: set on bwrap, it would count every
    /// process of taskgate's user on the host ([`started_script`] sets it
    /// inside).
    pub fn rlimits(&self, cpu: Duration) -> [(libc::__rlimit_resource_t, u64, u64); 4] {
        let l = &self.sandbox.limits;
        let cpu = cpu.as_secs() + u64::from(cpu.subsec_nanos() > 0);
        [
            (libc::RLIMIT_AS, l.memory_bytes, l.memory_bytes),
            (libc::RLIMIT_CPU, cpu, cpu + 1),
            (libc::RLIMIT_FSIZE, l.file_size_bytes, l.file_size_bytes),
            (libc::RLIMIT_NOFILE, l.max_files, l.max_files),
        ]
    }

    /// The environment inside, from the scrubbed one: HOME and TMPDIR are
    /// the sandbox's own.
    pub fn env(&self, mut env: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        env.retain(|(k, _)| k != "HOME" && k != "TMPDIR" && k != "PWD");
        env.push(("HOME".into(), HOME.into()));
        env.push(("TMPDIR".into(), "/tmp".into()));
        env
    }
}

/// Where a git workspace borrows its objects from (`objects/info/alternates`),
/// existing directories only. Read before any command of the run, when the
/// file is still the one [`super::Workspace`] wrote (a tree cannot contain
/// `.git/`); what a command writes there later is never looked at.
pub fn borrowed_objects(workdir: &Path) -> Vec<PathBuf> {
    let file = workdir.join(".git/objects/info/alternates");
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.ends_with("objects") && p.is_dir())
        .collect()
}

/// `/etc/python3`, `/etc/python3.11`…: Debian's Python reads its
/// `sitecustomize` there.
fn python_etc() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc") else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn path(&mut self, p: impl Into<OsString>) {
        self.0.push(p.into());
    }

    fn bind(&mut self, how: &str, src: impl AsRef<Path>, dest: impl AsRef<Path>) {
        self.flags(&[how]);
        self.path(src.as_ref().as_os_str().to_owned());
        self.path(dest.as_ref().as_os_str().to_owned());
    }
}

#[cfg(test)]
mod processes_tests;
#[cfg(test)]
pub(crate) mod tests;
