//! Tree ids for the fake's file model (`path → content`).
//!
//! Owns: the id of a tree of files, computed as git computes it (each file
//! a blob of mode 100644, each directory a nested tree, entries in git's
//! order), without a repository. So a virtual commit's `tree.sha` is the id
//! the same files get in a real repository, two commits with the same
//! files share one, and a backed repository's real trees (written the same
//! way by `git_backing`) agree with it. Must not: read or write a
//! repository (`git_backing` does), or keep state (`Repo::trees` does).

use std::collections::BTreeMap;

use git2::{ObjectType, Oid};

use crate::git_backing::Files;

/// Git's id of the tree holding `files`.
pub(crate) fn tree_id(files: &Files) -> String {
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_bytes()))
        .collect();
    hash_tree(&entries).to_string()
}

fn hash(kind: ObjectType, bytes: &[u8]) -> Oid {
    Oid::hash_object(kind, bytes).expect("hashing bytes in memory does not fail")
}

/// The tree of `(path, content)` pairs, subdirectories hashed recursively.
fn hash_tree(entries: &[(&str, &[u8])]) -> Oid {
    let mut dirs: BTreeMap<&str, Vec<(&str, &[u8])>> = BTreeMap::new();
    // (sort key, mode, name, id): git orders a directory as if its name
    // ended in '/'.
    let mut items: Vec<(String, &str, &str, Oid)> = Vec::new();
    for (path, content) in entries {
        match path.split_once('/') {
            Some((dir, rest)) => dirs.entry(dir).or_default().push((rest, content)),
            None => items.push((
                (*path).to_string(),
                "100644",
                path,
                hash(ObjectType::Blob, content),
            )),
        }
    }
    for (dir, entries) in dirs {
        items.push((format!("{dir}/"), "40000", dir, hash_tree(&entries)));
    }
    items.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut bytes = Vec::new();
    for (_, mode, name, id) in items {
        bytes.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        bytes.extend_from_slice(id.as_bytes());
    }
    hash(ObjectType::Tree, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git_backing::GitBacking;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn no_files_is_gits_empty_tree() {
        assert_eq!(
            tree_id(&Files::new()),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn the_id_is_the_one_git_gives_the_same_files() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init_bare(dir.path()).unwrap();
        let git = GitBacking::open_at(dir.path()).unwrap();
        // `a.txt` sorts before the directory `a` in git's order, `a-b`
        // after `a` as a file would but before it as a directory.
        let all = files(&[
            ("README.md", "# r\n"),
            ("a.txt", "1"),
            ("a/b/c.txt", "deep"),
            ("a/z", ""),
            ("a-b", "x"),
            ("ab", "y"),
        ]);
        let written = git.write_tree(&all).unwrap();
        assert_eq!(tree_id(&all), written);
        assert_ne!(tree_id(&files(&[("a.txt", "2")])), tree_id(&all));
    }
}
