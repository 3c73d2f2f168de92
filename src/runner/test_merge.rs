//! The commit a task's gates test (SPEC §3): its head merged with the
//! story branch, as CI on a pull request tests GitHub's merge of the two
//! (`refs/pull/<n>/merge`) rather than the head alone.
//!
//! Owns: [`Mirror::test_merge`], which makes that merge commit in the
//! mirror (libgit2, nothing pushed, no ref moved), and
//! [`merge_into_checkout`], the same in the Actions job's checkout
//! (`taskgate run --base`). Must not: decide what the report says about it
//! (`core::story::start`), or fetch (the caller fetched the commits first).

use std::path::Path;

use git2::{build::CheckoutBuilder, Commit, Oid, Repository, Signature};

use taskgate_core::report::Tested;

use super::mirror::{parse_sha, GitError, Mirror};

/// What to check out for a head and its story branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestMerge {
    /// The head holds the story branch's head (or the story branch is not
    /// in the mirror): the head itself.
    Head,
    /// A merge commit of the head and the story head, made in the mirror.
    Merged { commit: String, base: String },
    /// The two conflict: the head is tested alone.
    Conflict { base: String },
}

impl TestMerge {
    /// The commit to check out.
    pub fn commit<'a>(&'a self, head: &'a str) -> &'a str {
        match self {
            TestMerge::Merged { commit, .. } => commit,
            TestMerge::Head | TestMerge::Conflict { .. } => head,
        }
    }
}

impl Mirror {
    /// `head` merged with branch `base` as the mirror last fetched it. The
    /// merge commit is deterministic (author, committer and time are the
    /// head's), so the same pair always gives the same commit.
    pub fn test_merge(&self, head: &str, base: &str) -> Result<TestMerge, GitError> {
        let repo = self.repo()?;
        let head_oid = parse_sha(head)?;
        let Ok(base_oid) = repo.refname_to_id(&format!("refs/heads/{base}")) else {
            return Ok(TestMerge::Head);
        };
        if base_oid == head_oid || repo.graph_descendant_of(head_oid, base_oid)? {
            return Ok(TestMerge::Head);
        }
        let find = |oid: Oid, sha: &str| {
            repo.find_commit(oid)
                .map_err(|_| GitError::CommitNotFound(sha.to_string()))
        };
        let base_sha = base_oid.to_string();
        let (h, b) = (find(head_oid, head)?, find(base_oid, &base_sha)?);
        let message = format!("Merge {base} ({base_sha}) into {head}\n");
        Ok(match merge_commit(&repo, &h, &b, &message)? {
            Some(merge) => TestMerge::Merged {
                commit: merge.to_string(),
                base: base_sha,
            },
            None => TestMerge::Conflict { base: base_sha },
        })
    }

    /// Fetches every branch, then [`Mirror::test_merge`], on the blocking pool.
    pub async fn test_merge_async(
        &self,
        url: String,
        token: Option<String>,
        head: String,
        base: String,
    ) -> Result<TestMerge, GitError> {
        let mirror = self.clone();
        tokio::task::spawn_blocking(move || {
            mirror.fetch_heads(&url, token.as_deref())?;
            mirror.test_merge(&head, &base)
        })
        .await
        .map_err(|e| GitError::Join(e.to_string()))?
    }
}

/// The merge commit of `h` and `b` (deterministic: author, committer and
/// time are the head's), or `None` when they conflict. No ref moves.
fn merge_commit(
    repo: &Repository,
    h: &Commit<'_>,
    b: &Commit<'_>,
    message: &str,
) -> Result<Option<Oid>, GitError> {
    let mut index = repo.merge_commits(h, b, None)?;
    if index.has_conflicts() {
        return Ok(None);
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let who = Signature::new("taskgate", "taskgate@localhost", &h.time())?;
    Ok(Some(repo.commit(
        None,
        &who,
        &who,
        message,
        &tree,
        &[h, b],
    )?))
}

/// The checkout at `dir` (its `HEAD` the head under test) made ready to
/// test merged with commit `base`, the story branch's head, as CI on a
/// pull request tests it: when the head does not hold `base`, the work
/// tree and a detached `HEAD` move to their merge (nothing pushed); when
/// they conflict, nothing moves. `base` must be in the repository (the
/// Actions job checks out with the whole history).
pub fn merge_into_checkout(dir: &Path, base: &str) -> Result<Tested, GitError> {
    let repo = Repository::open(dir)?;
    let h = repo.head()?.peel_to_commit()?;
    let base_oid = parse_sha(base)?;
    let b = repo
        .find_commit(base_oid)
        .map_err(|_| GitError::CommitNotFound(base.to_owned()))?;
    let base = base_oid.to_string();
    if h.id() == base_oid || repo.graph_descendant_of(h.id(), base_oid)? {
        return Ok(Tested::Holds { base });
    }
    let message = format!("Merge {base} into {}\n", h.id());
    let Some(merge) = merge_commit(&repo, &h, &b, &message)? else {
        return Ok(Tested::Conflict { base });
    };
    let commit = repo.find_commit(merge)?;
    repo.checkout_tree(commit.as_object(), Some(CheckoutBuilder::new().force()))?;
    repo.set_head_detached(merge)?;
    Ok(Tested::Merged {
        base,
        merge: merge.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::mirror::tests::Origin;
    use crate::runner::{MirrorStore, Workspace};

    #[test]
    fn a_head_behind_its_story_branch_is_tested_merged_with_it() {
        let origin = Origin::new();
        origin.commit(&[("core.py", "")], "start");
        origin.git(&["branch", "story"]);
        origin.git(&["checkout", "-q", "-b", "task"]);
        let head = origin.commit(&[("cli.py", "import core")], "cli");
        origin.git(&["checkout", "-q", "story"]);
        let story = origin.commit(&[("core.py", "def run(): pass")], "core merged");
        let tmp = tempfile::tempdir().unwrap();
        let mirror = MirrorStore::new(tmp.path().join("m"))
            .mirror("o/r")
            .unwrap();
        mirror.fetch_heads(&origin.url(), None).unwrap();

        let merged = mirror.test_merge(&head, "story").unwrap();
        let TestMerge::Merged { commit, .. } = &merged else {
            panic!("{merged:?}");
        };
        let ws = Workspace::checkout(&mirror, commit, &tmp.path().join("ws")).unwrap();
        let read = |p: &str| std::fs::read_to_string(ws.path().join(p)).unwrap();
        assert_eq!(
            (read("cli.py"), read("core.py")),
            ("import core".into(), "def run(): pass".into())
        );
        assert_eq!(
            mirror.test_merge(&head, "story").unwrap(),
            merged,
            "deterministic"
        );

        // A head that holds the story head, or a story branch not there.
        assert_eq!(mirror.test_merge(&story, "story").unwrap(), TestMerge::Head);
        assert_eq!(
            mirror.test_merge(&head, "nowhere").unwrap(),
            TestMerge::Head
        );
    }
}
