//! The default branch's rules for the ship queue: read from GitHub before
//! each proof (`RepoClient::branch_rules`) and kept for [`RULES_TTL_MS`]
//! by the injected clock, so a busy queue does not read them for every
//! story. Where the branch has a merge queue, whether the installation
//! receives the `merge_group` event is read with them
//! (`doctor::installation`).
//!
//! A copy up to a minute old decides how a proof is made, never whether
//! it lands: the landing reads the rules again itself
//! (`github::perform::land`), and when they changed the story is told
//! (`ShipWhat::RulesChanged`), which empties this cache
//! ([`RulesCache::forget`]) so the proof made next follows them.
//!
//! Owns: the cache. Must not: decide how to land (`core::ship::landing_plan`).

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Ship, ShipError};
use crate::github::RepoClient;
use taskgate_core::ids::RepoName;
use taskgate_core::ship::{BranchRules, RuleKind};

/// How long rules read from GitHub are trusted.
pub const RULES_TTL_MS: i64 = 60_000;

/// Rules read per repository and branch, with when they were read.
#[derive(Default)]
pub struct RulesCache {
    entries: Mutex<HashMap<(RepoName, String), (i64, BranchRules)>>,
}

impl RulesCache {
    /// Forgets the rules kept for `repo`: they changed (the landing read
    /// them), and the next look reads them from GitHub.
    pub fn forget(&self, repo: &RepoName) {
        self.entries
            .lock()
            .expect("the rules cache is not poisoned")
            .retain(|(r, _), _| r != repo);
    }
}

impl Ship {
    /// The rules of `branch`, read again when older than [`RULES_TTL_MS`].
    pub(super) async fn branch_rules(
        &self,
        gh: &RepoClient<'_>,
        repo: &RepoName,
        branch: &str,
    ) -> Result<BranchRules, ShipError> {
        let now = self.store.clock().now_ms();
        let key = (repo.clone(), branch.to_owned());
        let cached = self
            .rules
            .entries
            .lock()
            .expect("the rules cache is not poisoned")
            .get(&key)
            .filter(|(at, _)| now - at < RULES_TTL_MS)
            .map(|(_, rules)| rules.clone());
        if let Some(rules) = cached {
            return Ok(rules);
        }
        let mut rules = gh.branch_rules(branch).await?;
        if rules.rules.iter().any(|r| r.rule == RuleKind::MergeQueue) {
            // Without `merge_group` webhooks no group would be proven.
            let inst = crate::app::doctor::installation(&self.github, repo).await?;
            rules.merge_group_unsubscribed =
                inst.is_some_and(|i| !i.events.iter().any(|e| e == "merge_group"));
        }
        self.rules
            .entries
            .lock()
            .expect("the rules cache is not poisoned")
            .insert(key, (now, rules.clone()));
        Ok(rules)
    }
}
