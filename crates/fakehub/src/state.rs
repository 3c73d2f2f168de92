//! The in-memory GitHub: installations, tokens, repositories and everything in
//! them. Plain data and small helpers only; HTTP lives in `routes`, rendering
//! to GitHub's JSON shapes in `render`.
//!
//! Ids (issues, comments, labels, check runs, ...) come from one global counter,
//! as GitHub's database ids are unique per kind; issue and pull-request numbers
//! share one counter per repository, as on GitHub.
//!
//! Time is GitHub's clock ([`GitHubClock`]): the real time, moved on by
//! `FakeGitHub::advance`. It stamps what GitHub stamps, ends read lag and
//! moves the secondary limits' windows on; authentication (JWTs, token
//! lifetimes) and the primary rate limit keep the real clock, so moving it
//! on never logs taskgate out.
//!
//! A repository and what it holds (issues, pulls, commits, ...) are in
//! `state::repo`, re-exported here.

mod approvals;
mod repo;
mod rules;

pub use repo::{
    Artifact, Authorship, CheckRun, CheckSuite, Comment, Commit, GitActor, Issue, Label, Pull,
    Reaction, Repo, Review, WorkflowDispatch, WorkflowRun,
};
pub use rules::{Actor, BypassActor, Change, Rule, Ruleset};

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::faults::Fault;

/// GitHub's clock: the real time, moved on by `FakeGitHub::advance`.
/// Clones share one time (the state and each repository hold one).
#[derive(Clone, Debug, Default)]
pub struct GitHubClock {
    /// Milliseconds this clock is ahead of the real one.
    ahead_ms: Arc<AtomicU64>,
}

impl GitHubClock {
    pub(crate) fn ahead(&self) -> Duration {
        Duration::from_millis(self.ahead_ms.load(Ordering::SeqCst))
    }
    /// What GitHub would stamp now.
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::from_std(self.ahead()).expect("a duration chrono holds")
    }
    /// The same time as an `Instant`, for waits measured in it (read lag).
    pub fn instant(&self) -> Instant {
        Instant::now() + self.ahead()
    }
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.ahead_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

/// A GitHub account known to the fake.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    pub login: String,
    pub id: u64,
    /// "User", "Bot" or "Organization".
    pub kind: String,
}

pub struct TokenInfo {
    pub installation: u64,
    pub expires_at: DateTime<Utc>,
}

/// A one-time code from the App-manifest flow, waiting for its conversion.
pub struct ManifestCode {
    pub manifest: Value,
    /// The organisation the form was posted under, if any.
    pub org: Option<String>,
    /// Codes are single-use: a converted one answers 404.
    pub converted: bool,
}

/// What the last manifest conversion registered: the fake's own app, as
/// `GET /app` and the conversion now describe it.
#[derive(Clone, Debug, Default)]
pub struct RegisteredApp {
    pub name: String,
    pub description: Option<String>,
    pub external_url: Option<String>,
    /// Login of the owner (an organisation), or `None` for the default.
    pub owner: Option<String>,
    pub permissions: Value,
    pub events: Value,
    pub webhook_secret: String,
}

/// One attempt in the App webhook's delivery log (`GET /app/hook/deliveries`),
/// with what is needed to send it again.
#[derive(Clone, Debug)]
pub struct HookDelivery {
    /// Unique per attempt; higher is newer.
    pub id: u64,
    /// The `X-GitHub-Delivery` value, shared by a delivery and its redeliveries.
    pub guid: String,
    pub delivered_at: DateTime<Utc>,
    pub redelivery: bool,
    /// Seconds the attempt took.
    pub duration: f64,
    /// "OK", "Invalid HTTP Response: <code>" or "failed to connect to host".
    pub status: String,
    /// The receiver's HTTP status; 0 when no HTTP answer came.
    pub status_code: u16,
    pub event: String,
    pub action: Option<String>,
    pub installation_id: Option<u64>,
    pub repository_id: Option<u64>,
    /// Where it was posted, and the secret it was signed with.
    pub url: String,
    pub secret: String,
    pub payload: Value,
    /// The receiver's answer body, or the error text when there was none.
    pub response: String,
}

/// A redelivery accepted by `POST /app/hook/deliveries/{id}/attempts`,
/// waiting for the pipeline to send it once the handler has answered.
#[derive(Clone, Debug)]
pub struct PendingDelivery {
    pub url: String,
    pub secret: String,
    pub event: String,
    pub guid: String,
    pub payload: Value,
}

#[derive(Default)]
pub struct Installation {
    pub id: u64,
    pub account: String,
    /// Lower-cased full names of the repositories it may touch.
    pub repos: BTreeSet<String>,
    /// What the installation granted (`{"issues": "write", ...}`); `None`:
    /// everything taskgate's `app-manifest.yml` asks for
    /// ([`crate::render::permissions`]).
    pub permissions: Option<Value>,
    /// The events it is subscribed to; `None`: the manifest's.
    pub events: Option<Vec<String>>,
    /// When it was suspended (`suspended_at`), if it is.
    pub suspended_at: Option<DateTime<Utc>>,
}

/// Everything the fake knows. Held behind one mutex, never across an await.
pub struct State {
    pub app_id: u64,
    pub slug: String,
    pub ids: IdGen,
    pub users: HashMap<String, User>,
    /// Repository permission per login (applies to every repository).
    pub permissions: HashMap<String, String>,
    pub installations: BTreeMap<u64, Installation>,
    pub tokens: HashMap<String, TokenInfo>,
    pub token_ttl: Duration,
    pub repos: BTreeMap<String, Repo>,
    pub faults: HashMap<String, VecDeque<Fault>>,
    /// GitHub's secondary limits on content-creating requests.
    pub secondary: crate::faults::SecondaryLimits,
    /// Whether a dispatch asked for `return_run_details` gets them (false:
    /// a GitHub Enterprise Server older than the parameter, which answers
    /// 204 whatever it is asked).
    pub dispatch_run_details: bool,
    pub rate_used: HashMap<String, u64>,
    pub rate_reset: i64,
    pub requests: Vec<crate::RecordedRequest>,
    pub violations: Vec<String>,
    /// Manifests posted to the web form, in order (valid ones only).
    pub app_manifests: Vec<Value>,
    /// One-time codes of the manifest flow, by code.
    pub manifest_codes: HashMap<String, ManifestCode>,
    /// Set by the last manifest conversion.
    pub registered: Option<RegisteredApp>,
    /// The App webhook's delivery log, oldest first.
    pub hook_deliveries: Vec<HookDelivery>,
    /// Ids of delivery attempts: a sequence of their own, so that logging
    /// a webhook does not shift the ids of issues and comments.
    pub hook_delivery_ids: IdGen,
    /// Ids of check suites: their own sequence too, so that pushes do not
    /// shift the ids of issues and comments.
    pub suite_ids: IdGen,
    /// The App's webhook URL and secret, where redeliveries go.
    pub app_webhook: Option<(String, String)>,
    /// Delivery ids whose redelivery was accepted, in order.
    pub redeliveries: Vec<u64>,
    /// Redeliveries accepted by a handler, sent by the pipeline after it.
    pub outbox: Vec<PendingDelivery>,
    /// The webhooks writes send (see `echo`).
    pub echo: crate::echo::Echoes,
    /// How long after a write reads still see the state before it (zero:
    /// never), as GitHub's replicas lag.
    pub read_lag: Duration,
    /// GitHub's clock; every repository holds a clone.
    pub clock: GitHubClock,
    /// The GitHub plan of an account (lower-cased login → `free`, `team`,
    /// `enterprise`, ...), where a test set one; `GET /orgs/{org}` shows an
    /// organisation's to an installation granted `organization_plan`.
    pub plans: HashMap<String, String>,
    /// Organisation teams' members; every repository holds a clone.
    pub teams: crate::teams::Teams,
    /// The coding agents a test registered, and what reached them.
    pub agents: crate::agents::Agents,
    /// The writers' pushes a test armed to land between the App's calls.
    pub races: crate::races::Races,
}

pub const BOT_USER_ID: u64 = 41_898_282_000;

impl State {
    pub fn new() -> State {
        let mut st = State {
            app_id: 4242,
            slug: "taskgate-test".into(),
            ids: IdGen(1000),
            users: HashMap::new(),
            permissions: HashMap::new(),
            installations: BTreeMap::new(),
            tokens: HashMap::new(),
            token_ttl: Duration::from_secs(3600),
            repos: BTreeMap::new(),
            faults: HashMap::new(),
            secondary: Default::default(),
            dispatch_run_details: true,
            rate_used: HashMap::new(),
            rate_reset: Utc::now().timestamp() + 3600,
            requests: Vec::new(),
            violations: Vec::new(),
            app_manifests: Vec::new(),
            manifest_codes: HashMap::new(),
            registered: None,
            hook_deliveries: Vec::new(),
            hook_delivery_ids: IdGen(7_000_000),
            suite_ids: IdGen(5_000_000),
            app_webhook: None,
            redeliveries: Vec::new(),
            outbox: Vec::new(),
            agents: Default::default(),
            races: Default::default(),
            echo: Default::default(),
            read_lag: Duration::ZERO,
            clock: GitHubClock::default(),
            plans: HashMap::new(),
            teams: crate::teams::Teams::default(),
        };
        let bot = st.bot_login();
        st.users.insert(
            bot.to_lowercase(),
            User {
                login: bot,
                id: BOT_USER_ID,
                kind: "Bot".into(),
            },
        );
        st
    }

    /// The key of the repository issue `id` lives in (ids are unique
    /// across repositories, as GitHub's database ids are).
    pub fn issue_home(&self, id: u64) -> Option<&str> {
        self.repos
            .iter()
            .find(|(_, r)| r.issue_by_id(id).is_some())
            .map(|(key, _)| key.as_str())
    }

    /// Issue `id`, in whichever repository it lives.
    pub fn issue_anywhere(&self, id: u64) -> Option<&Issue> {
        self.issue_home(id)
            .and_then(|key| self.repos[key].issue_by_id(id))
    }

    pub fn next_id(&mut self) -> u64 {
        self.ids.next()
    }

    /// A repository and the id generator, borrowed together.
    pub fn repo_ids(&mut self, key: &str) -> Option<(&mut Repo, &mut IdGen)> {
        let repo = self.repos.get_mut(key)?;
        Some((repo, &mut self.ids))
    }

    /// Hides `object` of repository `key` from reads for the read lag.
    pub fn written(&mut self, key: &str, object: String) {
        if self.read_lag.is_zero() {
            return;
        }
        let at = self.clock.instant() + self.read_lag;
        if let Some(r) = self.repos.get_mut(key) {
            r.visible_at.insert(object, at);
        }
    }

    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }

    /// The user with this login, created if unknown: kind "Bot" for a
    /// `<slug>[bot]` login (a GitHub App's bot account, as GitHub names
    /// them), "User" otherwise.
    pub fn user(&mut self, login: &str) -> User {
        if let Some(u) = self.users.get(&login.to_lowercase()) {
            return u.clone();
        }
        let u = User {
            login: login.into(),
            id: self.next_id(),
            kind: if login.ends_with("[bot]") {
                "Bot"
            } else {
                "User"
            }
            .into(),
        };
        self.users.insert(login.to_lowercase(), u.clone());
        u
    }

    pub fn known_user(&self, login: &str) -> Option<User> {
        self.users.get(&login.to_lowercase()).cloned()
    }

    /// Permission of `login` on a repository: the owner is admin, the bot
    /// writes, added users have what `add_user` gave them, others read.
    pub fn permission(&self, repo: &Repo, login: &str) -> String {
        if login.eq_ignore_ascii_case(&repo.owner) {
            return "admin".into();
        }
        if let Some(p) = self.permissions.get(&login.to_lowercase()) {
            return p.clone();
        }
        "read".into()
    }

    /// Whether `login` can be assigned to issues of `repo`, as GitHub's
    /// `GET /repos/{owner}/{repo}/assignees/{assignee}` answers: the owner,
    /// anyone with write access or more, and, in an organisation's
    /// repository, its members with read or triage access. Someone GitHub
    /// has never seen, or with no access, cannot be.
    pub fn assignable(&self, repo: &Repo, login: &str) -> bool {
        if login.eq_ignore_ascii_case(&repo.owner) {
            return true;
        }
        let org_repo = self
            .known_user(&repo.owner)
            .is_some_and(|o| o.kind == "Organization");
        match self
            .permissions
            .get(&login.to_lowercase())
            .map(String::as_str)
        {
            Some("admin" | "maintain" | "write") => self.known_user(login).is_some(),
            Some("triage" | "read") => org_repo && self.known_user(login).is_some(),
            _ => false,
        }
    }

    /// Whether `login` can be assigned issues of repository `key` when an
    /// issue is created: its collaborators with triage access or more (the
    /// owner included), as `GET /repos/{owner}/{repo}/assignees` lists
    /// them.
    pub fn assignable_in(&self, key: &str, login: &str) -> bool {
        let Some(repo) = self.repos.get(key) else {
            return false;
        };
        matches!(
            self.permission(repo, login).as_str(),
            "triage" | "write" | "maintain" | "admin"
        )
    }

    pub fn ensure_repo(&mut self, full_name: &str) -> String {
        let key = full_name.to_lowercase();
        if !self.repos.contains_key(&key) {
            let (owner, name) = full_name
                .split_once('/')
                .expect("repository names look like owner/name");
            self.user(owner);
            let mut repo = Repo {
                id: self.next_id(),
                owner: owner.into(),
                name: name.into(),
                default_branch: "main".into(),
                next_number: 1,
                clock: self.clock.clone(),
                teams: self.teams.clone(),
                ..Repo::default()
            };
            repo.commit_file(
                "main",
                "README.md",
                &format!("# {name}\n"),
                "Initial commit",
            );
            self.repos.insert(key.clone(), repo);
        }
        key
    }
}

/// Database ids: one counter for every kind of object, unique per fake.
pub struct IdGen(pub u64);

impl IdGen {
    pub fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

pub fn new_sha() -> String {
    random_hex(40)
}

/// `len` random lowercase hex digits.
pub fn random_hex(len: usize) -> String {
    (0..len)
        .map(|_| char::from_digit(fastrand::u32(0..16), 16).unwrap())
        .collect()
}
