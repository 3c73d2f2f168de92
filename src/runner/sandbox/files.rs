//! What the sandbox shows in place of the host's own files: a minimal `/etc/passwd` and `/etc/group`, the `resolv.conf` of
//! a run allowed the network, and the credentials hidden under any
//! read-only path.
//!
//! Owns: the generated files of one run ([`EtcFiles`], a private directory
//! on the host removed with the run) and the list of credential files and
//! folders to cover ([`credential_masks`]). Must not: run anything, or
//! decide what is mounted besides these (`super::sandbox` does).
//!
//! Credentials are found by where tools keep them in a home folder
//! (`~/.ssh`, `~/.aws`, `~/.config/gcloud`, `~/.docker/config.json`,
//! `~/.netrc`, `~/.config/gh`, `~/.config/hub`, `~/.git-credentials`,
//! `~/.npmrc`, `~/.pypirc`, `~/.kube`, `~/.cargo/credentials*`) and in a
//! cargo home. The homes
//! looked at are every read-only path itself, its parents, its children
//! (so `/home` covers each user's), the host's users' homes, `$HOME`,
//! `$CARGO_HOME` and `/usr/local/cargo`; whatever of them lies under a
//! mounted path is covered: a folder by an empty read-only tmpfs, a file by
//! `/dev/null`.

use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Where credentials live in a home folder.
const IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".docker/config.json",
    ".netrc",
    // GitHub's CLI and hub keep tokens here; git's store helper keeps
    // passwords in the clear; npm, PyPI and Kubernetes keep their tokens.
    ".config/gh",
    ".config/hub",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".kube",
];

/// A credential path to cover inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mask {
    /// Covered by an empty read-only tmpfs.
    Dir(PathBuf),
    /// Covered by `/dev/null`.
    File(PathBuf),
}

/// The credential files and folders under any of `mounted` (the paths bound
/// into the sandbox), in a stable order.
pub fn credential_masks(mounted: &[PathBuf]) -> Vec<Mask> {
    let under_mount = |p: &Path| mounted.iter().any(|m| p.starts_with(m));
    let mut homes: Vec<PathBuf> = Vec::new();
    for m in mounted {
        homes.extend(
            m.ancestors()
                .filter(|a| *a != Path::new("/"))
                .map(Path::to_owned),
        );
        if let Ok(entries) = std::fs::read_dir(m) {
            homes.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
        }
    }
    homes.extend(passwd_homes());
    homes.extend(std::env::var_os("HOME").map(PathBuf::from));
    let mut cargo_homes: Vec<PathBuf> = homes.iter().map(|h| h.join(".cargo")).collect();
    cargo_homes.extend(std::env::var_os("CARGO_HOME").map(PathBuf::from));
    cargo_homes.push("/usr/local/cargo".into());
    let mut found: Vec<PathBuf> = homes
        .iter()
        .flat_map(|h| IN_HOME.iter().map(move |c| h.join(c)))
        .collect();
    for cargo in &cargo_homes {
        if let Ok(entries) = std::fs::read_dir(cargo) {
            found.extend(
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().starts_with("credentials"))
                    .map(|e| e.path()),
            );
        }
    }
    let mut masks: Vec<Mask> = found
        .into_iter()
        .filter(|p| p.is_absolute() && under_mount(p))
        .filter_map(|p| match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => Some(Mask::Dir(p)),
            Ok(_) => Some(Mask::File(p)),
            Err(_) => None,
        })
        .collect();
    masks.sort_by(|a, b| mask_path(a).cmp(mask_path(b)));
    masks.dedup();
    masks
}

fn mask_path(m: &Mask) -> &Path {
    match m {
        Mask::Dir(p) | Mask::File(p) => p,
    }
}

/// The home folders of the host's users.
fn passwd_homes() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split(':').nth(5))
        .filter(|h| h.len() > 1 && h.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

/// `/etc/passwd` and `/etc/group` inside: the sandbox's one user (taskgate's
/// uid and gid, which bubblewrap keeps), with the sandbox's HOME, and
/// `nobody`; nothing of the host's accounts.
pub fn minimal_accounts(uid: u32, gid: u32) -> (String, String) {
    let name = if uid == 0 { "root" } else { "runner" };
    let group = if gid == 0 { "root" } else { "runner" };
    let passwd = format!(
        "{name}:x:{uid}:{gid}:{name}:{home}:/bin/sh\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        home = super::HOME
    );
    let groups = format!("{group}:x:{gid}:\nnogroup:x:65534:\n");
    (passwd, groups)
}

/// The nameservers of the host's `resolv.conf` that a run allowed the
/// network may use: public addresses only (a resolver on the loopback or a
/// private or link-local address is the host's, and often more: GCP's
/// metadata server answers DNS at 169.254.169.254).
pub fn public_nameservers(resolv_conf: &str) -> Vec<IpAddr> {
    resolv_conf
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .filter(|a| matches!(a, IpAddr::V4(v4) if super::net::is_public(*v4)))
        .collect()
}

/// The files one run's sandbox shows in `/etc`, in a directory only
/// taskgate's user can enter, removed when the run's last command is done.
#[derive(Debug)]
pub struct EtcFiles {
    dir: PathBuf,
}

impl EtcFiles {
    /// The accounts, and for a run allowed the network its `resolv.conf`.
    pub fn new(network: bool) -> std::io::Result<EtcFiles> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "taskgate-sandbox-{}-{n}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let files = EtcFiles { dir };
        // SAFETY: getuid(2) and getgid(2) cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let (passwd, group) = minimal_accounts(uid, gid);
        std::fs::write(files.passwd(), passwd)?;
        std::fs::write(files.group(), group)?;
        if network {
            let host = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
            let text: String = public_nameservers(&host)
                .iter()
                .map(|a| format!("nameserver {a}\n"))
                .collect();
            std::fs::write(files.resolv_conf(), text)?;
        }
        Ok(files)
    }

    pub fn passwd(&self) -> PathBuf {
        self.dir.join("passwd")
    }

    pub fn group(&self) -> PathBuf {
        self.dir.join("group")
    }

    pub fn resolv_conf(&self) -> PathBuf {
        self.dir.join("resolv.conf")
    }
}

impl Drop for EtcFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests;
