//! The trees a train remembers as proven green, each with the stories
//! whose gates proved it: a tree is reused for a car only when the gates
//! it ran are every one the car's proof would run, as they are defined
//! now.
//!
//! Owns: [`ProvenTree`], remembering one (capped at `KEPT_TREES`),
//! reading the stored list, and forgetting what other gates proved
//! ([`Train::with_gates`]). Must not: decide when a car passes
//! (`verdict`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};

use super::{Train, KEPT_TREES};
use crate::ids::{CommitSha, StoryId};

impl Train {
    /// The train with its proofs keyed by what a proof runs.
    ///
    /// `gates` keys what runs beyond the stories' own gates (the
    /// repository's `ship_gates`): when it changes, every remembered tree
    /// is forgotten. `story_gates` gives a digest of each story's own
    /// gate definitions, for the stories the shell knows of now: the
    /// trees a story's gates proved under another definition are
    /// forgotten (a plan that tightened a gate is run again, even on a
    /// tree a looser one passed; a plan in a comment is not in any tree),
    /// and so are the failures, which other commands may not repeat. A
    /// tree proven by a story whose definition was not known before (a
    /// train stored before the digests were) is forgotten too.
    pub fn with_gates(mut self, gates: &str, story_gates: &BTreeMap<StoryId, String>) -> Train {
        if self.gates != gates {
            self.gates = gates.to_owned();
            self.forget_proofs();
        }
        let changed: BTreeSet<&StoryId> = (story_gates.iter())
            .filter(|(story, digest)| {
                self.story_gates
                    .get(*story)
                    .is_some_and(|was| was != *digest)
            })
            .map(|(story, _)| story)
            .collect();
        if !changed.is_empty() {
            self.proven
                .retain(|p| !p.gates_of.iter().any(|s| changed.contains(s)));
            self.failed.clear();
            self.failed_once.clear();
        }
        let known = &self.story_gates;
        self.proven
            .retain(|p| p.gates_of.iter().all(|s| known.contains_key(s)));
        self.story_gates
            .extend(story_gates.iter().map(|(s, d)| (s.clone(), d.clone())));
        // Kept for the stories a remembered tree or the shell names.
        let named: BTreeSet<StoryId> = (self.proven.iter())
            .flat_map(|p| p.gates_of.iter().cloned())
            .chain(story_gates.keys().cloned())
            .collect();
        self.story_gates.retain(|s, _| named.contains(s));
        self
    }

    fn forget_proofs(&mut self) {
        self.proven.clear();
        self.failed.clear();
        self.failed_once.clear();
    }
}

/// A tree proven green, and whose gates ran on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvenTree {
    pub tree: CommitSha,
    pub gates_of: BTreeSet<StoryId>,
}

impl ProvenTree {
    /// A proof of `tree` running the gates of `gates_of` would find
    /// nothing this one did not: the same tree, every story's gates ran.
    pub fn covers(&self, tree: &CommitSha, gates_of: &[StoryId]) -> bool {
        self.tree == *tree && gates_of.iter().all(|s| self.gates_of.contains(s))
    }
}

/// Keeps `proven`, newest last, without a duplicate tree: a tree proven
/// again with other gates keeps the union of the two.
pub(super) fn remember_proven(list: &mut Vec<ProvenTree>, mut proven: ProvenTree) {
    if let Some(at) = list.iter().position(|p| p.tree == proven.tree) {
        proven.gates_of.extend(list.remove(at).gates_of);
    }
    list.push(proven);
    let excess = list.len().saturating_sub(KEPT_TREES);
    list.drain(..excess);
}

/// The stored list. A train stored before the gates were remembered
/// holds bare trees: whose gates proved them is not known, so they are
/// forgotten and proven again.
pub(super) fn stored_proven<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ProvenTree>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Keyed(ProvenTree),
        Bare(#[allow(dead_code)] String),
    }
    let stored = Vec::<Stored>::deserialize(d)?;
    Ok(stored
        .into_iter()
        .filter_map(|s| match s {
            Stored::Keyed(p) => Some(p),
            Stored::Bare(_) => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proven(tree: &str, gates_of: &[&str]) -> ProvenTree {
        ProvenTree {
            tree: crate::ids::sha(tree),
            gates_of: gates_of.iter().map(|s| StoryId::from(*s)).collect(),
        }
    }

    #[test]
    fn a_tree_covers_a_proof_only_of_gates_that_ran_on_it() {
        let p = proven("t", &["a", "b"]);
        let t = crate::ids::sha("t");
        assert!(p.covers(&t, &["a".into()]));
        assert!(p.covers(&t, &["b".into(), "a".into()]));
        assert!(!p.covers(&t, &["a".into(), "c".into()]));
        assert!(!p.covers(&crate::ids::sha("u"), &["a".into()]));
    }

    #[test]
    fn a_tree_proven_twice_keeps_both_proofs_gates_once() {
        let mut list = vec![proven("t", &["a"]), proven("u", &["x"])];
        remember_proven(&mut list, proven("t", &["b"]));
        assert_eq!(list, vec![proven("u", &["x"]), proven("t", &["a", "b"])]);
    }

    #[test]
    fn bare_trees_of_an_older_train_are_forgotten() {
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "stored_proven")]
            proven: Vec<ProvenTree>,
        }
        let tree = crate::ids::sha("t");
        let stored =
            format!(r#"{{"proven": ["old", {{"tree": "{tree}", "gates_of": ["file:a"]}}]}}"#);
        let t: T = serde_json::from_str(&stored).unwrap();
        assert_eq!(t.proven, vec![proven("t", &["file:a"])]);
    }
}
