//! Organisation teams and who is in them, as far as code owners need:
//! GitHub counts an approval by an active member of a team `CODEOWNERS`
//! names (`@org/team-slug`) as the team's, and answers
//! `GET /orgs/{org}/teams/{team_slug}/memberships/{username}` with the
//! membership's `state` (`active`, or `pending` until an invitation is
//! accepted) or 404 (docs: "Get team membership for a user").
//!
//! Owns: the memberships a test set ([`crate::FakeGitHub::add_team_member`]).
//! Must not: decide a merge (`state::approvals` asks it), or answer HTTP.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

/// Team memberships; clones share them (the state and each repository
/// hold one, as they do GitHub's clock).
#[derive(Clone, Debug, Default)]
pub struct Teams {
    /// Lower-cased `org/team-slug` → lower-cased login → `active` or
    /// `pending`.
    by_team: Arc<RwLock<HashMap<String, BTreeMap<String, String>>>>,
}

impl Teams {
    pub(crate) fn set(&self, org: &str, team_slug: &str, login: &str, state: &str) {
        let key = format!("{org}/{team_slug}").to_lowercase();
        let mut teams = self.by_team.write().expect("teams lock");
        teams
            .entry(key)
            .or_default()
            .insert(login.to_lowercase(), state.to_owned());
    }

    /// `login`'s membership of `org/team_slug`: `active`, `pending`, or
    /// none.
    pub(crate) fn state(&self, org: &str, team_slug: &str, login: &str) -> Option<String> {
        let key = format!("{org}/{team_slug}").to_lowercase();
        let teams = self.by_team.read().expect("teams lock");
        teams.get(&key)?.get(&login.to_lowercase()).cloned()
    }

    /// Whether `login` is an active member of team `team` (`org/slug`).
    pub(crate) fn active_member(&self, team: &str, login: &str) -> bool {
        team.split_once('/')
            .and_then(|(org, slug)| self.state(org, slug, login))
            .is_some_and(|s| s == "active")
    }
}
