//! A run's dependencies from other repositories (issue 49, step 6): each
//! one's proven commit fetched into its repository's mirror by taskgate,
//! with the installation token, before anything of the run starts, and
//! checked out read-only at `deps/<id>` in the workspace. The task's code
//! never fetches them (it has no token) and cannot write there: the
//! sandbox mounts each `deps/<id>` read-only over the workspace's
//! writable mount, and on the host its files lose their write bits.
//!
//! Owns: [`DepSource`] (which commit, from where), [`fetch_all`],
//! [`check_out_all`] and the gates' variables ([`dep_env`]).
//! Must not: choose the dependencies (the core's `task::run_deps` does),
//! or run a command.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use taskgate_core::task::RunDep;

use super::mirror::{parse_sha, GitError, Mirror};

/// One dependency and where its commit comes from.
#[derive(Debug, Clone)]
pub struct DepSource {
    pub dep: RunDep,
    /// The dependency's repository's mirror (`MirrorStore::mirror`).
    pub mirror: Mirror,
    /// Its clone URL, and the token to fetch it with.
    pub url: String,
    pub token: Option<String>,
}

/// A dependency that could not be fetched or checked out: the run fails
/// as `tooling_error` with this sentence, naming the repository and sha.
#[derive(Debug, thiserror::Error)]
pub enum DepError {
    #[error("dependency `{task}`: {repo} at {sha} could not be fetched: {source}")]
    Fetch {
        task: String,
        repo: String,
        sha: String,
        #[source]
        source: GitError,
    },
    #[error("dependency `{task}`: {repo} at {sha} could not be checked out: {source}")]
    CheckOut {
        task: String,
        repo: String,
        sha: String,
        #[source]
        source: GitError,
    },
    #[error("checking out the dependencies: {0}")]
    Join(String),
}

impl DepError {
    fn fetch(dep: &RunDep, source: GitError) -> DepError {
        DepError::Fetch {
            task: dep.task.as_str().to_owned(),
            repo: dep.repo.as_str().to_owned(),
            sha: dep.sha.as_str().to_owned(),
            source,
        }
    }

    fn check_out(dep: &RunDep, source: GitError) -> DepError {
        DepError::CheckOut {
            task: dep.task.as_str().to_owned(),
            repo: dep.repo.as_str().to_owned(),
            sha: dep.sha.as_str().to_owned(),
            source,
        }
    }
}

/// Fetches every dependency's commit into its mirror, in order; the first
/// that cannot be fetched is the error (nothing is checked out).
pub async fn fetch_all(deps: &[DepSource]) -> Result<(), DepError> {
    for d in deps {
        d.mirror
            .fetch_commit_async(
                d.url.clone(),
                d.token.clone(),
                d.dep.sha.as_str().to_owned(),
            )
            .await
            .map_err(|e| DepError::fetch(&d.dep, e))?;
    }
    Ok(())
}

/// Checks every dependency out at `workdir/deps/<id>` (files only, no
/// `.git`), read-only, and keeps `deps/` out of the workspace's `git
/// status`. The commits must be fetched already ([`fetch_all`]).
pub async fn check_out_all(deps: &[DepSource], workdir: &Path) -> Result<(), DepError> {
    let (deps, workdir) = (deps.to_vec(), workdir.to_owned());
    tokio::task::spawn_blocking(move || {
        for d in &deps {
            check_out(d, &workdir).map_err(|e| DepError::check_out(&d.dep, e))?;
        }
        if !deps.is_empty() {
            exclude_deps(&workdir).map_err(|e| DepError::check_out(&deps[0].dep, e))?;
        }
        Ok(())
    })
    .await
    .map_err(|e| DepError::Join(e.to_string()))?
}

fn check_out(d: &DepSource, workdir: &Path) -> Result<(), GitError> {
    let dir = workdir.join(d.dep.dir());
    std::fs::create_dir_all(&dir).map_err(GitError::io(format!("creating {}", dir.display())))?;
    let repo = d.mirror.repo()?;
    let oid = parse_sha(d.dep.sha.as_str())?;
    let commit = repo
        .find_commit(oid)
        .map_err(|_| GitError::CommitNotFound(d.dep.sha.as_str().to_owned()))?;
    let mut how = CheckoutBuilder::new();
    // The mirror is bare and shared: write the files elsewhere, and never
    // its index.
    how.target_dir(&dir).update_index(false).force();
    repo.checkout_tree(commit.as_object(), Some(&mut how))?;
    read_only(&dir)
}

/// Every file and folder under `dir` without its write bits.
fn read_only(dir: &Path) -> Result<(), GitError> {
    let mut stack: Vec<PathBuf> = vec![dir.to_owned()];
    let mut folders: Vec<PathBuf> = Vec::new();
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p)
            .map_err(GitError::io(format!("reading {}", p.display())))?;
        if meta.is_dir() {
            for entry in
                std::fs::read_dir(&p).map_err(GitError::io(format!("listing {}", p.display())))?
            {
                let entry = entry.map_err(GitError::io(format!("listing {}", p.display())))?;
                stack.push(entry.path());
            }
            folders.push(p);
        } else if meta.is_file() {
            no_write(&p, meta.permissions().mode())?;
        }
    }
    // Folders last, deepest first: their files are changed already.
    for f in folders.iter().rev() {
        no_write(f, 0o755)?;
    }
    Ok(())
}

fn no_write(p: &Path, mode: u32) -> Result<(), GitError> {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode & 0o555))
        .map_err(GitError::io(format!("making {} read-only", p.display())))
}

/// `deps/` in the workspace's `.git/info/exclude`.
fn exclude_deps(workdir: &Path) -> Result<(), GitError> {
    let file = workdir.join(".git/info/exclude");
    if !workdir.join(".git").is_dir() {
        return Ok(());
    }
    let parent = file.parent().unwrap_or(workdir);
    std::fs::create_dir_all(parent)
        .map_err(GitError::io(format!("creating {}", parent.display())))?;
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    text.push_str("/deps/\n");
    std::fs::write(&file, text).map_err(GitError::io(format!("writing {}", file.display())))
}

/// The gates' variables: `TASKGATE_DEP_<ID>_SHA` = the proven commit.
pub fn dep_env(deps: &[RunDep]) -> Vec<(String, String)> {
    deps.iter()
        .map(|d| (d.env_name(), d.sha.as_str().to_owned()))
        .collect()
}

/// The folders the sandbox mounts read-only, relative to the workspace.
pub fn dep_dirs(deps: &[RunDep]) -> Vec<PathBuf> {
    deps.iter().map(|d| PathBuf::from(d.dir())).collect()
}

#[cfg(test)]
mod tests;
