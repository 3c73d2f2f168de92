//! `RepoHandle`'s branch rules: a test puts a ruleset or classic branch
//! protection on the repository, as its administrator would in GitHub's
//! settings. Seeding: no webhook. The rules then hold for every API
//! call that moves a branch (`state::rules`); a person's push through
//! the handle is an administrator's and is not checked, but a merge by
//! [`RepoHandle::merge_pull_as`] (a collaborator with write access, or an
//! agent's account, merging with its own token) is, as GitHub checks it.

use crate::state::{Actor, Change, Ruleset};
use crate::RepoHandle;

impl RepoHandle {
    /// Adds `ruleset` (a repository ruleset, or classic protection made
    /// with [`Ruleset::classic`]); returns its id.
    pub fn with_ruleset(&self, mut ruleset: Ruleset) -> u64 {
        let mut st = self.shared().lock();
        ruleset.id = st.next_id();
        let id = ruleset.id;
        st.repos
            .get_mut(self.key())
            .expect("repository exists")
            .rulesets
            .push(ruleset);
        id
    }

    /// Removes ruleset `id`, as an administrator deleting it.
    pub fn without_ruleset(&self, id: u64) {
        let mut st = self.shared().lock();
        let repo = st.repos.get_mut(self.key()).expect("repository exists");
        repo.rulesets.retain(|r| r.id != id);
    }
}

impl RepoHandle {
    /// `login`, with write access but no bypass (an agent's bot or a
    /// collaborator), merges pull request `number` with its own token, as
    /// `PUT .../pulls/{n}/merge` does for it: refused as GitHub refuses
    /// it (405: a draft, "Pull Request is still a draft"; the base's rules
    /// for that user, e.g. a required check not passed on the head, in the
    /// rules' words), else merged as [`RepoHandle::merge_pull`]. `Err` is
    /// GitHub's message.
    pub fn merge_pull_as(&self, number: u64, login: &str) -> Result<String, String> {
        self.shared().lock().user(login);
        self.act(|st, at| {
            let r = &st.repos[at.key];
            let p = r.pulls.get(&number).cloned().ok_or("Not Found")?;
            if p.merged || p.state != "open" {
                return Err("Pull Request is not mergeable".to_owned());
            }
            if p.draft {
                return Err("Pull Request is still a draft".to_owned());
            }
            let head = r.branches.get(&p.head).cloned().ok_or("Not Found")?;
            let change = Change::MergePull {
                pull: number,
                head: &head,
                method: "merge",
            };
            if let Some(v) = r.violations(&p.base, &Actor::User(login.to_owned()), &change) {
                return Err(v.message());
            }
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let (sha, base_before) = crate::routes::pulls::merge(r, number, ("merge", None), login)
                .map_err(|e| format!("Pull Request is not mergeable: {e:?}"))?;
            crate::emit::pull_merged(st, at, number, login, &base_before);
            Ok(sha)
        })
    }

    /// `login` (write access) adds pull request `number` to the merge
    /// queue of its base, as GraphQL's `enqueuePullRequest` does for it:
    /// its position, or GitHub's refusal (a required check that has not
    /// passed on its head among them).
    pub fn enqueue_as(&self, number: u64, login: &str) -> Result<usize, String> {
        self.shared().lock().user(login);
        self.act(|st, at| crate::merge_queue::enqueue(st, at, number, None, login))
            .map(|(_, position)| position)
    }

    /// Another CI (a GitHub App of its own, `ci-app`) reports check
    /// `name` on `sha` completed with `conclusion`, as its
    /// `POST /check-runs` would: the merge queue and auto-merge move on
    /// it. No webhook reaches taskgate (it is not taskgate's check run).
    pub fn other_ci_check(&self, sha: &str, name: &str, conclusion: &str) {
        self.act(|st, at| {
            let now = st.clock.now();
            let id = st.next_id();
            let r = st.repos.get_mut(at.key).expect("repository exists");
            r.check_runs.push(crate::state::CheckRun {
                id,
                name: name.into(),
                head_sha: sha.into(),
                status: "completed".into(),
                conclusion: Some(conclusion.into()),
                details_url: None,
                external_id: None,
                title: None,
                summary: None,
                text: None,
                annotations: Vec::new(),
                actions: Vec::new(),
                started_at: Some(now),
                completed_at: Some(now),
                other_app: Some((15_368, "ci-app".into())),
            });
            crate::merge_queue::on_check(st, at, sha);
            crate::auto_merge::on_check(st, at, sha);
        });
    }

    /// The merge queue's entries, in order (`merge_queue`).
    pub fn merge_queue(&self) -> Vec<crate::QueueEntry> {
        let st = self.shared().lock();
        st.repos[self.key()].merge_queue.clone()
    }
}

impl RepoHandle {
    /// `login` (write access, no bypass) turns on auto-merge for pull
    /// request `number` with its own token, as GraphQL's
    /// `enablePullRequestAutoMerge` does for it (`auto_merge`): refused,
    /// with GitHub's message, when the pull request could merge now or is
    /// a draft; otherwise GitHub merges it as `login` once the base's
    /// rules are met on its head.
    pub fn enable_auto_merge_as(&self, number: u64, login: &str) -> Result<(), String> {
        self.shared().lock().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            if let Some(refused) = crate::auto_merge::refusal(r, number, login) {
                return Err(refused);
            }
            r.auto_merge.insert(number, login.to_owned());
            Ok(())
        })
    }
}
