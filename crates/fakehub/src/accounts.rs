//! What a test sets about accounts and installations: the permissions and
//! events an installation granted, a suspension, organisations and their
//! GitHub plan, private repositories and disabled workflows. Seeding only:
//! nothing here sends a webhook.

use chrono::Utc;
use serde_json::Value;

use crate::state::User;
use crate::{FakeGitHub, RepoHandle};

impl FakeGitHub {
    /// The permissions installation `id` granted, as GitHub shows them
    /// (`{"issues": "write", "metadata": "read"}`), instead of everything
    /// taskgate's manifest asks for. Its new tokens carry them too.
    ///
    /// # Panics
    /// When the App is not installed under `id`.
    pub fn grant(&self, id: u64, permissions: Value) {
        self.installation(id, |i| i.permissions = Some(permissions));
    }

    /// The events installation `id` is subscribed to, instead of the
    /// manifest's.
    ///
    /// # Panics
    /// When the App is not installed under `id`.
    pub fn subscribe(&self, id: u64, events: &[&str]) {
        let events = events.iter().map(|e| (*e).to_owned()).collect();
        self.installation(id, |i| i.events = Some(events));
    }

    /// Installation `id` is suspended (`suspended_at` set).
    ///
    /// # Panics
    /// When the App is not installed under `id`.
    pub fn suspend(&self, id: u64) {
        self.installation(id, |i| i.suspended_at = Some(Utc::now()));
    }

    /// Makes `login` a member of team `team_slug` of organisation `org`,
    /// in membership `state`: `active`, or `pending` (invited, not yet
    /// accepted: GitHub does not count a pending member's approval for a
    /// code-owning team).
    pub fn add_team_member(&self, org: &str, team_slug: &str, login: &str, state: &str) {
        let st = self.inner.lock();
        st.teams.set(org, team_slug, login, state);
    }

    /// Makes `login` an organisation on GitHub `plan` (`free`, `team`,
    /// `enterprise`): call it before installing on its repositories. Its
    /// members are the users added with a permission ([`FakeGitHub::add_user`]).
    pub fn add_org(&self, login: &str, plan: &str) {
        let mut st = self.inner.lock();
        let id = st.known_user(login).map_or_else(|| st.next_id(), |u| u.id);
        st.users.insert(
            login.to_lowercase(),
            User {
                login: login.into(),
                id,
                kind: "Organization".into(),
            },
        );
        st.plans.insert(login.to_lowercase(), plan.into());
    }

    fn installation(&self, id: u64, change: impl FnOnce(&mut crate::state::Installation)) {
        let mut st = self.inner.lock();
        let inst = st
            .installations
            .get_mut(&id)
            .unwrap_or_else(|| panic!("fakehub: no installation {id}"));
        change(inst);
    }
}

impl RepoHandle {
    /// Makes the repository private (`private: true`, `visibility: private`).
    pub fn make_private(&self) -> &Self {
        self.change(|r| r.private = true);
        self
    }

    /// A person disables workflow `file` (GitHub's "Disable workflow"):
    /// its `state` is `disabled_manually`.
    pub fn disable_workflow(&self, file: &str) -> &Self {
        self.change(|r| {
            r.disabled_workflows.insert(file.to_owned());
        });
        self
    }
}
