//! A fresh checkout of one exact commit, deleted when dropped (also when the
//! run fails or is abandoned half-way).
//!
//! The workspace is a real git repository (tools that call `git describe` or
//! `git diff` work) whose objects are borrowed from the mirror through
//! `.git/objects/info/alternates`, so nothing is copied but the files
//! themselves. Its HEAD is detached at the commit; submodules and LFS are not
//! fetched.
//!
//! A bot's run asks for a capped disk ([`Workspace::checkout_capped`]): the
//! directory is then a tmpfs of its own ([`super::sandbox::disk`]), made
//! before the checkout, so the files checked out count too. Removal makes
//! every folder writable first (or unmounts the tmpfs); what still cannot
//! be removed is retried and counted in `/metrics`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use git2::build::CheckoutBuilder;
use git2::Repository;

use super::mirror::{parse_sha, GitError, Mirror};
use super::sandbox::disk::{self, RunDisk};

static NEXT: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
pub struct Workspace {
    dir: PathBuf,
    sha: String,
    disk: RunDisk,
}

impl Workspace {
    /// Checks `sha` out of `mirror` into a new directory under `parent`.
    /// The commit must already be in the mirror (see
    /// [`Mirror::fetch_commit`]); otherwise [`GitError::CommitNotFound`].
    pub fn checkout(mirror: &Mirror, sha: &str, parent: &Path) -> Result<Workspace, GitError> {
        Workspace::checkout_on(mirror, sha, parent, None)
    }

    /// [`Workspace::checkout`] on a disk of its own of `cap` bytes, where
    /// the host lets taskgate mount one (else a plain folder, said by
    /// [`Workspace::disk`]).
    pub fn checkout_capped(
        mirror: &Mirror,
        sha: &str,
        parent: &Path,
        cap: u64,
    ) -> Result<Workspace, GitError> {
        Workspace::checkout_on(mirror, sha, parent, Some(cap))
    }

    fn checkout_on(
        mirror: &Mirror,
        sha: &str,
        parent: &Path,
        cap: Option<u64>,
    ) -> Result<Workspace, GitError> {
        let oid = parse_sha(sha)?;
        let source = mirror.repo()?;
        if source.find_commit(oid).is_err() {
            return Err(GitError::CommitNotFound(sha.to_string()));
        }
        std::fs::create_dir_all(parent)
            .map_err(GitError::io(format!("creating {}", parent.display())))?;
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = parent.join(format!("{}-{}-{n}", &sha[..12], std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(GitError::io(format!("creating {}", dir.display()))(e)),
            }
        };
        let disk = match cap {
            None => RunDisk::Host,
            Some(bytes) => match disk::mount_capped(&dir, bytes) {
                Ok(()) => RunDisk::Capped { bytes },
                Err(e) => RunDisk::Uncapped {
                    why: format!("mounting a tmpfs of {} MiB failed: {e}", bytes >> 20),
                },
            },
        };
        // From here on, dropping `ws` removes the directory.
        let ws = Workspace {
            dir,
            sha: sha.to_string(),
            disk,
        };
        Repository::init(&ws.dir)?;
        let objects = mirror
            .path()
            .canonicalize()
            .map_err(GitError::io(format!(
                "resolving {}",
                mirror.path().display()
            )))?
            .join("objects");
        let alternates = ws.dir.join(".git/objects/info/alternates");
        std::fs::write(&alternates, format!("{}\n", objects.display()))
            .map_err(GitError::io(format!("writing {}", alternates.display())))?;
        let repo = Repository::open(&ws.dir)?;
        repo.set_head_detached(oid)?;
        repo.checkout_head(Some(CheckoutBuilder::new().force()))?;
        Ok(ws)
    }

    /// [`Workspace::checkout`] on the blocking pool.
    pub async fn checkout_async(
        mirror: Mirror,
        sha: String,
        parent: PathBuf,
        cap: Option<u64>,
    ) -> Result<Workspace, GitError> {
        tokio::task::spawn_blocking(move || Workspace::checkout_on(&mirror, &sha, &parent, cap))
            .await
            .map_err(|e| GitError::Join(e.to_string()))?
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn sha(&self) -> &str {
        &self.sha
    }

    /// The disk the workspace is on.
    pub fn disk(&self) -> &RunDisk {
        &self.disk
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let mounted = matches!(self.disk, RunDisk::Capped { .. });
        disk::remove_workspace(&self.dir, mounted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::mirror::tests::Origin;
    use crate::runner::MirrorStore;

    #[test]
    fn checks_out_the_exact_commit_and_cleans_up() {
        let origin = Origin::new();
        let first = origin.commit(&[("src/a.txt", "one"), ("run.sh", "echo hi")], "first");
        origin.commit(&[("src/a.txt", "two")], "second");
        let tmp = tempfile::tempdir().unwrap();
        let mirror = MirrorStore::new(tmp.path().join("mirrors"))
            .mirror("o/r")
            .unwrap();
        mirror.fetch_commit(&origin.url(), None, &first).unwrap();
        let ws = Workspace::checkout(&mirror, &first, &tmp.path().join("ws")).unwrap();
        let dir = ws.path().to_owned();
        assert_eq!(
            std::fs::read_to_string(dir.join("src/a.txt")).unwrap(),
            "one"
        );
        // A real repository: git sees the commit through the alternates.
        let head = std::process::Command::new("git")
            .args(["log", "-1", "--format=%H %s"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&head.stdout).trim(),
            format!("{first} first")
        );
        let other = Workspace::checkout(&mirror, &first, &tmp.path().join("ws")).unwrap();
        assert_ne!(other.path(), ws.path());
        drop(ws);
        assert!(!dir.exists());
    }

    #[test]
    fn a_commit_missing_from_the_mirror_is_commit_not_found() {
        let tmp = tempfile::tempdir().unwrap();
        let mirror = Mirror::open(tmp.path().join("m.git")).unwrap();
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let err = Workspace::checkout(&mirror, sha, &tmp.path().join("ws")).unwrap_err();
        assert!(matches!(err, GitError::CommitNotFound(s) if s == sha));
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "no workspace left behind"
        );
    }
}
