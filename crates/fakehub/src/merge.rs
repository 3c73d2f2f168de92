//! Commits the fake makes itself, and merging.
//!
//! Owns: the merge base (nearest common ancestor), the 3-way merge of the
//! fake's file model (`Commit.files`) shared by pull request merges and
//! `POST /merges`, conflicts, and writing new commits — virtual (a random
//! sha) or, when the repository is backed by git
//! ([`crate::RepoHandle::back_with_git`]), real ones whose sha is the real
//! sha and whose tree is git's own merge — including commits on a tree
//! that already exists (the git data API's `POST /git/commits`). Must not:
//! move branches or send webhooks (the routes and `emit` do), or render
//! anything.
//!
//! Backed or not, a conflict is the same answer: [`MergeError::Conflict`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::git_backing::{Files, RealMergeError, Written};
use crate::state::{new_sha, Authorship, Commit, Repo};
use crate::trees::tree_id;

/// Why a merge produced no commit.
#[derive(Debug, PartialEq)]
pub(crate) enum MergeError {
    /// Both sides changed these paths differently.
    Conflict(Vec<String>),
    /// The git backing failed (a test setup problem, answered 500).
    Backing(String),
    /// A branch to merge does not exist.
    Missing(String),
}

impl From<RealMergeError> for MergeError {
    fn from(e: RealMergeError) -> MergeError {
        match e {
            RealMergeError::Conflict(paths) => MergeError::Conflict(paths),
            RealMergeError::Git(msg) => MergeError::Backing(msg),
        }
    }
}

/// Merges `theirs` into `ours`, both changed from `base`, path by path:
/// a path one side left as it was in `base` takes the other side's
/// version; the same version on both sides is kept; different versions
/// (a deletion against a change included) conflict.
pub(crate) fn three_way(base: &Files, ours: &Files, theirs: &Files) -> Result<Files, Vec<String>> {
    let paths: BTreeSet<&String> = base
        .keys()
        .chain(ours.keys())
        .chain(theirs.keys())
        .collect();
    let mut merged = Files::new();
    let mut conflicts = Vec::new();
    for path in paths {
        let (b, o, t) = (base.get(path), ours.get(path), theirs.get(path));
        let kept = if o == t || t == b {
            o
        } else if o == b {
            t
        } else {
            conflicts.push(path.clone());
            continue;
        };
        if let Some(content) = kept {
            merged.insert(path.clone(), content.clone());
        }
    }
    if conflicts.is_empty() {
        Ok(merged)
    } else {
        Err(conflicts)
    }
}

impl Repo {
    /// The nearest common ancestor of commits `a` and `b` (`None`: their
    /// histories are unrelated).
    pub fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        let of_a = self.ancestors(a);
        let mut queue = VecDeque::from([b.to_string()]);
        let mut seen = BTreeSet::new();
        while let Some(sha) = queue.pop_front() {
            if of_a.contains(&sha) {
                return Some(sha);
            }
            if seen.insert(sha.clone()) {
                if let Some(c) = self.commits.get(&sha) {
                    queue.extend(c.parents.iter().cloned());
                }
            }
        }
        None
    }

    /// `sha` and every commit reachable from it.
    pub fn ancestors(&self, sha: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut stack = vec![sha.to_string()];
        while let Some(sha) = stack.pop() {
            if let Some(c) = self.commits.get(&sha) {
                if out.insert(sha) {
                    stack.extend(c.parents.iter().cloned());
                }
            }
        }
        out
    }

    fn files_of(&self, sha: &str) -> Files {
        self.commits
            .get(sha)
            .map(|c| c.files.clone())
            .unwrap_or_default()
    }

    /// The paths that conflict when merging `theirs` into `ours` (empty:
    /// it merges cleanly), as git finds them when the repository is backed.
    pub(crate) fn merge_conflicts(&self, ours: &str, theirs: &str) -> Result<Vec<String>, String> {
        if let Some(git) = &self.git {
            return git.conflicts(ours, theirs);
        }
        let base = self
            .merge_base(ours, theirs)
            .map(|b| self.files_of(&b))
            .unwrap_or_default();
        Ok(
            three_way(&base, &self.files_of(ours), &self.files_of(theirs))
                .err()
                .unwrap_or_default(),
        )
    }

    /// Writes a commit on `parents` whose tree merges `theirs` into
    /// `ours`; returns its sha. Moves no branch.
    pub(crate) fn commit_merge(
        &mut self,
        (ours, theirs): (&str, &str),
        parents: Vec<String>,
        message: String,
    ) -> Result<String, MergeError> {
        let now = self.clock.now();
        let (written, files) = match &self.git {
            Some(git) => git.merge((ours, theirs), &parents, &message, now.timestamp())?,
            None => {
                let base = self
                    .merge_base(ours, theirs)
                    .map(|b| self.files_of(&b))
                    .unwrap_or_default();
                let files = three_way(&base, &self.files_of(ours), &self.files_of(theirs))
                    .map_err(MergeError::Conflict)?;
                let tree = tree_id(&files);
                (
                    Written {
                        sha: new_sha(),
                        tree,
                    },
                    files,
                )
            }
        };
        let sha = written.sha.clone();
        self.insert_commit(Commit {
            sha: written.sha,
            parents,
            message,
            files,
            tree: written.tree,
            date: now,
            authorship: None,
        });
        Ok(sha)
    }

    /// Writes a commit of `files` on `parents` (a real one when the
    /// repository is backed by git); returns its sha. Moves no branch.
    ///
    /// # Panics
    /// When the git backing cannot write it (a broken test setup).
    pub(crate) fn add_commit(
        &mut self,
        parents: Vec<String>,
        message: &str,
        files: Files,
    ) -> String {
        let now = self.clock.now();
        let written = match &self.git {
            Some(git) => git
                .write(&parents, message, &files, now.timestamp())
                .unwrap_or_else(|e| panic!("{e}")),
            None => Written {
                sha: new_sha(),
                tree: tree_id(&files),
            },
        };
        let sha = written.sha.clone();
        self.insert_commit(Commit {
            sha: written.sha,
            parents,
            message: message.into(),
            files,
            tree: written.tree,
            date: now,
            authorship: None,
        });
        sha
    }

    /// Makes commit `sha` of the git backing (and its ancestors the fake
    /// does not know yet) known to the fake, as git has them. False when
    /// the repository is not backed or the backing lacks `sha`.
    pub(crate) fn import_real(&mut self, sha: &str) -> bool {
        let Some(git) = self.git.clone() else {
            return false;
        };
        if !git.has(sha) {
            return false;
        }
        let mut stack = vec![sha.to_string()];
        while let Some(sha) = stack.pop() {
            if self.commits.contains_key(&sha) {
                continue;
            }
            let Ok(real) = git.read(&sha) else { continue };
            stack.extend(real.parents.iter().cloned());
            let date = chrono::DateTime::from_timestamp(real.time, 0).unwrap_or_default();
            self.insert_commit(Commit {
                sha,
                parents: real.parents,
                message: real.message.trim_end().to_string(),
                files: real.files,
                tree: real.tree,
                date,
                authorship: None,
            });
        }
        true
    }

    /// The files of tree `tree`: the tree of a commit the fake knows or,
    /// when the repository is backed, any tree the bare repository has.
    pub(crate) fn tree_files(&self, tree: &str) -> Option<Files> {
        match self.trees.get(tree).and_then(|sha| self.commits.get(sha)) {
            Some(c) => Some(c.files.clone()),
            None => self.git.as_ref()?.tree_files(tree),
        }
    }

    /// Writes a commit on the existing tree `tree` (see
    /// [`Repo::tree_files`]) and `parents`, by `people` (the git data
    /// API's): a real one when the repository is backed, whose tree is
    /// then git's, else a virtual one. Returns its sha. Moves no branch.
    pub(crate) fn commit_tree(
        &mut self,
        tree: &str,
        parents: Vec<String>,
        message: &str,
        people: Authorship,
    ) -> Result<String, MergeError> {
        let files = self
            .tree_files(tree)
            .ok_or_else(|| MergeError::Missing(format!("tree {tree}")))?;
        let sha = match &self.git {
            Some(git) => {
                if git.tree_files(tree).is_none() {
                    // A tree only a virtual commit had: the same files
                    // written give the same id (`trees`).
                    git.write_tree(&files).map_err(MergeError::Backing)?;
                }
                git.commit_tree(tree, &parents, message, &people)
                    .map_err(MergeError::Backing)?
            }
            None => new_sha(),
        };
        self.insert_commit(Commit {
            sha: sha.clone(),
            parents,
            message: message.into(),
            files,
            tree: tree.into(),
            date: people.committer.date,
            authorship: Some(people),
        });
        Ok(sha)
    }

    /// The commits reachable from `head` and not from `base`, oldest
    /// first (by date, then parents before children).
    pub fn commits_between(&self, base: &str, head: &str) -> Vec<String> {
        let exclude = self.ancestors(base);
        let mut shas: Vec<String> = self
            .ancestors(head)
            .into_iter()
            .filter(|s| !exclude.contains(s))
            .collect();
        let depth = self.generations(&shas);
        shas.sort_by_key(|s| (self.commits[s].date, depth[s]));
        shas
    }

    /// Each of `shas` (and its ancestors) with its generation: 0 for a
    /// root, else one more than its highest parent's, so a parent always
    /// sorts before its children. In one walk, not one per commit: a push
    /// of thousands of commits is compared in linear time.
    fn generations(&self, shas: &[String]) -> BTreeMap<String, usize> {
        let mut generation: BTreeMap<String, usize> = BTreeMap::new();
        for start in shas {
            let mut stack = vec![(start.clone(), false)];
            while let Some((sha, parents_done)) = stack.pop() {
                if generation.contains_key(&sha) {
                    continue;
                }
                let parents = self
                    .commits
                    .get(&sha)
                    .map(|c| c.parents.as_slice())
                    .unwrap_or_default();
                if parents_done {
                    let highest = parents.iter().filter_map(|p| generation.get(p)).max();
                    generation.insert(sha, highest.map_or(0, |g| g + 1));
                } else {
                    stack.push((sha, true));
                    let todo = parents.iter().filter(|p| !generation.contains_key(*p));
                    stack.extend(todo.map(|p| (p.clone(), false)));
                }
            }
        }
        generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn a_path_changed_on_one_side_only_takes_that_side() {
        let base = files(&[("a", "1"), ("b", "1")]);
        let ours = files(&[("a", "2"), ("b", "1")]);
        let theirs = files(&[("a", "1"), ("b", "3"), ("c", "new")]);
        let merged = three_way(&base, &ours, &theirs).unwrap();
        assert_eq!(merged, files(&[("a", "2"), ("b", "3"), ("c", "new")]));
    }

    #[test]
    fn a_deletion_on_one_side_is_kept_when_the_other_left_the_path() {
        let base = files(&[("a", "1"), ("b", "1")]);
        let ours = files(&[("b", "1")]);
        let theirs = files(&[("a", "1"), ("b", "1")]);
        assert_eq!(
            three_way(&base, &ours, &theirs).unwrap(),
            files(&[("b", "1")])
        );
    }

    #[test]
    fn the_same_change_on_both_sides_is_not_a_conflict() {
        let base = files(&[("a", "1")]);
        let both = files(&[("a", "2")]);
        assert_eq!(three_way(&base, &both, &both).unwrap(), both);
    }

    #[test]
    fn different_changes_and_delete_against_modify_conflict() {
        let base = files(&[("a", "1"), ("b", "1"), ("c", "1")]);
        let ours = files(&[("a", "2"), ("c", "2")]);
        let theirs = files(&[("a", "3"), ("b", "1")]);
        assert_eq!(
            three_way(&base, &ours, &theirs).unwrap_err(),
            vec!["a".to_string(), "c".to_string()]
        );
    }

    #[test]
    fn a_path_added_differently_on_both_sides_conflicts() {
        let base = Files::new();
        let err = three_way(&base, &files(&[("n", "x")]), &files(&[("n", "y")])).unwrap_err();
        assert_eq!(err, vec!["n".to_string()]);
    }
}
