//! Real git objects behind a repository's commits, opt-in
//! ([`crate::RepoHandle::back_with_git`]).
//!
//! Owns: reading commits from, and writing commits into, one bare
//! repository with libgit2: a commit's tree as the fake's `path → content`
//! map and back, the real merge of two commits' trees
//! (`Repository::merge_commits`), commits on a tree that already exists
//! (the git data API's), and a ref `refs/fakehub/<sha>` per commit
//! written, so that a `file://` fetch by sha finds it. Must not:
//! move the bare repository's branches (tests push to them), or decide
//! anything about GitHub's behaviour (the callers in `merge` do).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Time, TreeWalkMode, TreeWalkResult};

use crate::state::{Authorship, GitActor};

/// A commit's whole tree: path → content (blobs read as UTF-8, lossily).
pub(crate) type Files = BTreeMap<String, String>;

/// The bare repository a fake repository's commits are real in.
#[derive(Clone, Debug)]
pub struct GitBacking {
    path: PathBuf,
}

/// A commit read from the bare repository.
pub(crate) struct RealCommit {
    pub parents: Vec<String>,
    pub message: String,
    pub files: Files,
    pub tree: String,
    pub time: i64,
}

/// A commit written into the bare repository: its sha and its tree's.
pub(crate) struct Written {
    pub sha: String,
    pub tree: String,
}

/// Why a real merge did not produce a commit.
#[derive(Debug)]
pub(crate) enum RealMergeError {
    /// The trees conflict.
    Conflict(Vec<String>),
    /// libgit2 failed (or a commit is not in the bare repository).
    Git(String),
}

fn describe(path: &Path, e: &git2::Error) -> String {
    format!("fakehub: git backing {}: {}", path.display(), e.message())
}

impl GitBacking {
    /// Checks that `path` is a git repository libgit2 can open.
    pub(crate) fn open_at(path: &Path) -> Result<GitBacking, String> {
        let backing = GitBacking {
            path: path.to_path_buf(),
        };
        backing.open()?;
        Ok(backing)
    }

    /// The bare repository's directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the fake's branches (name, sha) under the git namespace `ns`
    /// (`refs/namespaces/<ns>/refs/heads/<name>`) and removes the others
    /// there, so that `git upload-pack` in that namespace advertises what
    /// GitHub would (`git_http`). A sha the bare repository lacks (a
    /// virtual commit made before it was backed) is left out.
    pub(crate) fn publish_namespace(
        &self,
        ns: &str,
        branches: &[(String, String)],
    ) -> Result<(), String> {
        let repo = self.open()?;
        let prefix = format!("refs/namespaces/{ns}/refs/heads/");
        let wanted: BTreeMap<String, Oid> = branches
            .iter()
            .filter_map(|(name, sha)| {
                let oid = Oid::from_str(sha).ok()?;
                repo.find_commit(oid).ok()?;
                Some((format!("{prefix}{name}"), oid))
            })
            .collect();
        let stale: Vec<String> = repo
            .references_glob(&format!("{prefix}*"))
            .map_err(|e| self.err(e))?
            .filter_map(|r| r.ok()?.name().map(str::to_owned))
            .filter(|name| !wanted.contains_key(name))
            .collect();
        for name in stale {
            if let Ok(mut r) = repo.find_reference(&name) {
                r.delete().map_err(|e| self.err(e))?;
            }
        }
        for (name, oid) in wanted {
            repo.reference(&name, oid, true, "fakehub: GitHub's branches")
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn open(&self) -> Result<Repository, String> {
        Repository::open(&self.path).map_err(|e| describe(&self.path, &e))
    }

    fn err(&self, e: git2::Error) -> String {
        describe(&self.path, &e)
    }

    /// Whether the bare repository has commit `sha`.
    pub(crate) fn has(&self, sha: &str) -> bool {
        let Ok(oid) = Oid::from_str(sha) else {
            return false;
        };
        sha.len() == 40 && self.open().is_ok_and(|r| r.find_commit(oid).is_ok())
    }

    /// The bare repository's branches: name → head sha.
    pub(crate) fn branches(&self) -> Result<Vec<(String, String)>, String> {
        let repo = self.open()?;
        let mut out = Vec::new();
        for b in repo
            .branches(Some(git2::BranchType::Local))
            .map_err(|e| self.err(e))?
        {
            let (b, _) = b.map_err(|e| self.err(e))?;
            let (Ok(Some(name)), Some(oid)) = (b.name(), b.get().target()) else {
                continue;
            };
            out.push((name.to_string(), oid.to_string()));
        }
        Ok(out)
    }

    /// Commit `sha`: its parents, message, files and commit time.
    pub(crate) fn read(&self, sha: &str) -> Result<RealCommit, String> {
        let repo = self.open()?;
        let oid = Oid::from_str(sha).map_err(|e| self.err(e))?;
        let c = repo.find_commit(oid).map_err(|e| self.err(e))?;
        let tree = c.tree().map_err(|e| self.err(e))?;
        Ok(RealCommit {
            parents: c.parent_ids().map(|p| p.to_string()).collect(),
            message: c.message().unwrap_or_default().to_string(),
            files: read_tree(&repo, &tree).map_err(|e| self.err(e))?,
            tree: tree.id().to_string(),
            time: c.time().seconds(),
        })
    }

    /// Writes a commit of `files` on `parents`, dated `time` (seconds),
    /// kept reachable.
    pub(crate) fn write(
        &self,
        parents: &[String],
        message: &str,
        files: &Files,
        time: i64,
    ) -> Result<Written, String> {
        let repo = self.open()?;
        let tree = write_files(&repo, files).map_err(|e| self.err(e))?;
        let who = github(time).map_err(|e| self.err(e))?;
        let oid = commit(&repo, tree, parents, message, (&who, &who)).map_err(|e| self.err(e))?;
        Ok(Written {
            sha: oid.to_string(),
            tree: tree.to_string(),
        })
    }

    /// Writes the tree of `files` (no commit); returns its id.
    pub(crate) fn write_tree(&self, files: &Files) -> Result<String, String> {
        let repo = self.open()?;
        let tree = write_files(&repo, files).map_err(|e| self.err(e))?;
        Ok(tree.to_string())
    }

    /// The files of tree `tree`; `None` when the bare repository has no
    /// such tree.
    pub(crate) fn tree_files(&self, tree: &str) -> Option<Files> {
        let repo = self.open().ok()?;
        let tree = repo.find_tree(Oid::from_str(tree).ok()?).ok()?;
        read_tree(&repo, &tree).ok()
    }

    /// Writes a commit on the existing tree `tree` and `parents`, by
    /// `people`, kept reachable; returns its sha.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parents: &[String],
        message: &str,
        people: &Authorship,
    ) -> Result<String, String> {
        let repo = self.open()?;
        let err = |e| self.err(e);
        let tree = Oid::from_str(tree).map_err(err)?;
        let author = signature(&people.author).map_err(err)?;
        let committer = signature(&people.committer).map_err(err)?;
        let oid = commit(&repo, tree, parents, message, (&author, &committer)).map_err(err)?;
        Ok(oid.to_string())
    }

    /// Merges commit `theirs` into `ours` as git does (`merge_commits`),
    /// and commits the result on `parents`; returns it and its files.
    pub(crate) fn merge(
        &self,
        (ours, theirs): (&str, &str),
        parents: &[String],
        message: &str,
        time: i64,
    ) -> Result<(Written, Files), RealMergeError> {
        let git = |e: git2::Error| RealMergeError::Git(self.err(e));
        let repo = self.open().map_err(RealMergeError::Git)?;
        let mut index = merged_index(&repo, ours, theirs).map_err(git)?;
        if index.has_conflicts() {
            return Err(RealMergeError::Conflict(conflicted_paths(&index)));
        }
        let tree = index.write_tree_to(&repo).map_err(git)?;
        let who = github(time).map_err(git)?;
        let oid = commit(&repo, tree, parents, message, (&who, &who)).map_err(git)?;
        let written = Written {
            sha: oid.to_string(),
            tree: tree.to_string(),
        };
        let tree = repo.find_tree(tree).map_err(git)?;
        let files = read_tree(&repo, &tree).map_err(git)?;
        Ok((written, files))
    }

    /// The paths that conflict when merging `theirs` into `ours` (empty:
    /// the merge is clean), without writing anything.
    pub(crate) fn conflicts(&self, ours: &str, theirs: &str) -> Result<Vec<String>, String> {
        let repo = self.open()?;
        let index = merged_index(&repo, ours, theirs).map_err(|e| self.err(e))?;
        Ok(conflicted_paths(&index))
    }
}

fn merged_index(repo: &Repository, ours: &str, theirs: &str) -> Result<git2::Index, git2::Error> {
    let ours = repo.find_commit(Oid::from_str(ours)?)?;
    let theirs = repo.find_commit(Oid::from_str(theirs)?)?;
    repo.merge_commits(&ours, &theirs, None)
}

fn conflicted_paths(index: &git2::Index) -> Vec<String> {
    let Ok(conflicts) = index.conflicts() else {
        return vec!["(unreadable conflicts)".into()];
    };
    conflicts
        .filter_map(Result::ok)
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect()
}

/// GitHub's own signature, dated `time` (seconds): the fake's commits'.
fn github(time: i64) -> Result<Signature<'static>, git2::Error> {
    Signature::new("GitHub", "noreply@github.com", &Time::new(time, 0))
}

fn signature(who: &GitActor) -> Result<Signature<'static>, git2::Error> {
    Signature::new(&who.name, &who.email, &Time::new(who.date.timestamp(), 0))
}

/// Writes the commit object and the ref that keeps it fetchable by sha.
fn commit(
    repo: &Repository,
    tree: Oid,
    parents: &[String],
    message: &str,
    (author, committer): (&Signature, &Signature),
) -> Result<Oid, git2::Error> {
    let tree = repo.find_tree(tree)?;
    let parents = parents
        .iter()
        .map(|p| repo.find_commit(Oid::from_str(p)?))
        .collect::<Result<Vec<_>, _>>()?;
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    let oid = repo.commit(None, author, committer, message, &tree, &parents)?;
    repo.reference(&format!("refs/fakehub/{oid}"), oid, true, "fakehub")?;
    Ok(oid)
}

fn write_files(repo: &Repository, files: &Files) -> Result<Oid, git2::Error> {
    let entries: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    write_tree(repo, &entries)
}

/// A tree from `(path, content)` pairs, subdirectories built recursively.
fn write_tree(repo: &Repository, entries: &[(&str, &str)]) -> Result<Oid, git2::Error> {
    let mut builder = repo.treebuilder(None)?;
    let mut dirs: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (path, content) in entries {
        match path.split_once('/') {
            Some((dir, rest)) => dirs.entry(dir).or_default().push((rest, content)),
            None => {
                let blob = repo.blob(content.as_bytes())?;
                builder.insert(path, blob, 0o100_644)?;
            }
        }
    }
    for (dir, entries) in dirs {
        let tree = write_tree(repo, &entries)?;
        builder.insert(dir, tree, 0o040_000)?;
    }
    builder.write()
}

fn read_tree(repo: &Repository, tree: &git2::Tree) -> Result<Files, git2::Error> {
    let mut files = Files::new();
    let mut failed = None;
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return TreeWalkResult::Ok;
        }
        match repo.find_blob(entry.id()) {
            Ok(blob) => {
                let path = format!("{dir}{}", entry.name().unwrap_or_default());
                files.insert(path, String::from_utf8_lossy(blob.content()).into_owned());
                TreeWalkResult::Ok
            }
            Err(e) => {
                failed = Some(e);
                TreeWalkResult::Abort
            }
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(files),
    }
}
