//! Owns: what the ship train landed, as the fake GitHub holds it: the
//! trees every `taskgate/ship/…` check passed on, the default branch's
//! first-parent chain since a commit, and the check that each batch
//! commit the branch was fast-forwarded to has a proven tree.
//! Must not: drive taskgate or wait for it.

use std::collections::{BTreeMap, BTreeSet};

use fakehub::RepoHandle;

/// The trees of the commits every `taskgate/ship/…` check passed on.
pub fn proven_trees(repo: &RepoHandle) -> BTreeSet<String> {
    let mut by_commit: BTreeMap<String, bool> = BTreeMap::new();
    for c in repo.check_runs() {
        if c.name.starts_with("taskgate/ship/") {
            let green = c.conclusion.as_deref() == Some("success");
            *by_commit.entry(c.head_sha.clone()).or_insert(true) &= green;
        }
    }
    by_commit
        .into_iter()
        .filter(|(_, green)| *green)
        .filter_map(|(sha, _)| repo.commit(&sha).map(|c| c.tree))
        .collect()
}

/// The default branch's first-parent chain from `head` back to `since`
/// (not included), newest first: what landed.
pub fn landed_since(repo: &RepoHandle, head: String, since: &str) -> Vec<String> {
    let mut landed = Vec::new();
    let mut at = head;
    while at != since {
        let commit = repo.commit(&at).expect("a commit of main");
        landed.push(at);
        at = commit.parents.first().cloned().expect("since is on main");
    }
    landed
}

/// What the train landed since `since` (the chain up to `head`: each
/// batch's merges, the last of each being the batch's commit, which the
/// default branch was fast-forwarded to) is made of batches only, and
/// each batch's commit has a tree a proof passed on.
pub fn assert_landed_proven(repo: &RepoHandle, head: String, since: &str) {
    let landed = landed_since(repo, head, since);
    assert!(!landed.is_empty(), "something landed");
    let proven = proven_trees(repo);
    let batches: BTreeSet<String> = (1..=100)
        .filter_map(|car| repo.branch_sha(&format!("taskgate/ship-batch-{car}")))
        .collect();
    assert!(batches.contains(&landed[0]), "main is a batch's commit");
    for sha in &landed {
        let commit = repo.commit(sha).unwrap();
        assert!(
            commit.message.contains("into ship batch"),
            "{sha}: {}",
            commit.message
        );
        if batches.contains(sha) {
            assert!(
                proven.contains(&commit.tree),
                "{sha} landed unproven: {proven:?}"
            );
        }
    }
}
