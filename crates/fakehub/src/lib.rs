//! fakehub: a stateful fake of GitHub's REST API, for taskgate's tests and
//! `taskgate demo`.
//!
//! It owns *emulating GitHub's REST contract*: App authentication (RS256 JWT,
//! installation tokens and their expiry), the objects taskgate touches (issues,
//! comments, reactions, labels, sub-issues, dependencies, refs, pulls, check
//! runs, contents, workflow dispatches and artifacts, permissions), GitHub's
//! error shapes and limits, rate-limit headers, injected faults, and webhook
//! delivery with the App's delivery log and redelivery. It must not depend
//! on taskgate: it describes GitHub, not the bot.
//!
//! Two ideas carry it. First, every request is checked against GitHub's own
//! OpenAPI description (`fixtures/openapi/github-subset.json`): a body that
//! GitHub would reject is answered 422 *and* recorded in
//! [`FakeGitHub::contract_violations`], and a route outside the subset is 404
//! plus a violation, so the bot cannot silently rely on an unlisted endpoint.
//! `POST /graphql` is held to GitHub's GraphQL schema the same way
//! (`fixtures/graphql/github-subset.json`), answered as GitHub answers a
//! GraphQL error: 200 with `errors`.
//! Second, tests observe state, not mocks: [`FakeGitHub::requests`],
//! [`FakeGitHub::writes`] and the [`RepoHandle`] accessors read what GitHub
//! would now hold.
//!
//! Third, every write echoes. Once the App's webhook is set
//! ([`FakeGitHub::set_app_webhook`]), each accepted write to an installed
//! repository — through the REST API with an installation token (sender:
//! the App's bot) or by a person through [`RepoHandle`] (sender: that
//! person) — sends the webhooks GitHub sends for it (`issues` opened then
//! `labeled`, `create` then `push` then `check_suite` requested, ...),
//! built at write time from the state right after it, checked against
//! GitHub's webhook schemas (`fixtures/openapi/webhooks-subset.json`; a
//! mismatch is a contract violation), and delivered in order, one at a
//! time, by a background task, each logged in [`FakeGitHub::hook_deliveries`].
//! [`FakeGitHub::echo_stats`], [`FakeGitHub::echo_log`] and
//! [`FakeGitHub::echoes_settled`] observe them; [`FakeGitHub::set_read_lag`]
//! injects GitHub's replica lag (reads see the state before a write), and
//! [`FakeGitHub::advance`] moves GitHub's clock on instead of sleeping.
//! [`FakeGitHub::shuffle_deliveries`] turns on what GitHub does not
//! promise either: echoes sent out of order within a window of GitHub's
//! clock (the wait compressed, so tests stay fast) and about a share of
//! them sent twice with the same `X-GitHub-Delivery` (logged as
//! redeliveries), from a seeded generator whose seed it prints (`shuffle`).
//!
//! The coding agents people run (Copilot, Claude Code's action, the
//! OpenHands resolver, a dispatched workflow) are played as bot users that
//! react to their documented trigger and push their fix (`agents`,
//! [`FakeGitHub::add_agent`]). A writer racing the App is played too: a
//! push armed to land right after the App's next write to a branch, before
//! its next call (`races`, [`RepoHandle::on_next_write_to`]).
//!
//! Commits are virtual (a random sha, the tree as a `path → content` map)
//! unless a repository is backed by a real bare git repository
//! ([`RepoHandle::back_with_git`]): then the commits the fake makes are
//! real ones there, fetchable by sha, and merges are git's own (`merge`,
//! `git_backing`). Either way a commit's `tree.sha` is git's id of its
//! tree (`trees`), and the git data API (`GET`/`POST /git/commits`) makes
//! commits on an existing tree, as a revert does.
//!
//! ```no_run
//! # async fn demo() {
//! let gh = fakehub::FakeGitHub::start().await;
//! let repo = gh.install(7, "acme/widgets");
//! repo.with_file("main", ".github/taskgate.yml", "roles: {}\n");
//! let n = repo.create_issue("Story", "body", "alice");
//! gh.inject("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", fakehub::Fault::Status { status: 502, times: 2 });
//! # let _ = n; }
//! ```

#![recursion_limit = "256"]
// No function over 100 lines outside tests (clippy.toml sets the bound).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// No unsafe code: a fake of an HTTP API needs none.
#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::http::{HeaderMap, Method, Uri};
use serde_json::Value;

mod accounts;
mod agents;
mod auth;
mod auto_merge;
mod copilot;
mod echo;
mod emit;
mod faults;
mod git_backing;
mod git_http;
mod graphql_contract;
mod merge;
mod merge_queue;
mod openapi;
pub mod payloads;
mod races;
mod render;
mod repo_handle;
mod routes;
mod shuffle;
mod state;
mod teams;
mod trees;
mod webhooks;
mod workflows_permission;

pub use agents::{AgentCall, AgentPush, AgentReaction, AgentTrigger, COPILOT};
pub use echo::{EchoRecord, EchoStats};
pub use faults::{Fault, Hold, SecondaryAnswer, NOT_ACCESSIBLE};
pub use merge_queue::{QueueEntry, QUEUE_BOT};
pub use repo_handle::RepoHandle;
pub use routes::sub_issues::SAME_OWNER as SUB_ISSUE_SAME_OWNER;
pub use state::{
    Artifact, BypassActor, CheckRun, Comment, Commit, Issue, Label, Pull, Reaction, Review, Rule,
    Ruleset, User, WorkflowDispatch, WorkflowRun,
};
pub use webhooks::signature;

/// One request as the fake saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// The concrete path, without the query string.
    pub path: String,
    /// The OpenAPI template it matched, e.g. `/repos/{owner}/{repo}/issues`.
    pub route: Option<String>,
    /// 0 when the connection was dropped by an injected fault.
    pub status: u16,
    /// The JSON body, or `Null`.
    pub body: Value,
    /// The installation whose token was used, if any.
    pub installation: Option<u64>,
}

pub(crate) struct Shared {
    state: Mutex<state::State>,
    base_url: String,
    /// Another origin, standing for the blob storage GitHub redirects
    /// artifact downloads to: it refuses GitHub credentials.
    storage_url: String,
    openapi: openapi::OpenApi,
    /// Feeds the echo delivery task (see `echo`).
    echo_tx: tokio::sync::mpsc::UnboundedSender<shuffle::Queued>,
    /// Signalled after each echo is delivered.
    echo_done: tokio::sync::Notify,
    /// Signalled after each attempt is added to the delivery log.
    logged: tokio::sync::Notify,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, state::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running fake GitHub. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct FakeGitHub {
    inner: Arc<Shared>,
}

async fn handle(
    AxState(shared): AxState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    routes::serve(shared, method, uri, headers, body).await
}

/// The storage origin serves only the fake-internal blob URLs.
async fn handle_storage(
    AxState(shared): AxState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    if !uri.path().starts_with(routes::actions::BLOB_PREFIX) {
        return axum::response::IntoResponse::into_response(axum::http::StatusCode::NOT_FOUND);
    }
    routes::serve(shared, method, uri, headers, body).await
}

async fn bind_local() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    (listener, format!("http://{addr}"))
}

fn spawn_server(listener: tokio::net::TcpListener, app: axum::Router) {
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("fakehub server stopped: {e}");
        }
    });
}

impl FakeGitHub {
    /// Binds 127.0.0.1 on a random port and serves on the current runtime;
    /// artifact storage gets a second port, so it is another origin.
    pub async fn start() -> FakeGitHub {
        let (listener, base_url) = bind_local().await;
        let (storage, storage_url) = bind_local().await;
        let (echo_tx, echo_rx) = echo::channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(state::State::new()),
            base_url,
            storage_url,
            openapi: openapi::OpenApi::load(),
            echo_tx,
            echo_done: tokio::sync::Notify::new(),
            logged: tokio::sync::Notify::new(),
        });
        echo::spawn(Arc::downgrade(&shared), echo_rx);
        // The manifest flow's web form is github.com, not the REST API: its
        // own routes, outside the JSON pipeline; other methods fall through.
        use axum::routing::post;
        let app = axum::Router::new()
            .route(
                routes::manifests::USER_FORM,
                post(routes::manifests::user_form).fallback(handle),
            )
            .route(
                routes::manifests::ORG_FORM,
                post(routes::manifests::org_form).fallback(handle),
            )
            .merge(git_http::router())
            .fallback(handle)
            .with_state(shared.clone());
        spawn_server(listener, app);
        let storage_app = axum::Router::new()
            .fallback(handle_storage)
            .with_state(shared.clone());
        spawn_server(storage, storage_app);
        FakeGitHub { inner: shared }
    }

    /// The API base URL, e.g. `http://127.0.0.1:41234` (no trailing slash).
    pub fn url(&self) -> String {
        self.inner.base_url.clone()
    }

    pub fn app_id(&self) -> u64 {
        self.inner.lock().app_id
    }

    /// The app's private key (PKCS#1 PEM), for the client under test.
    pub fn private_key_pem() -> &'static str {
        include_str!("../fixtures/keys/test-app.pem")
    }

    /// The app's slug; its bot user is `<slug>[bot]`.
    pub fn app_slug(&self) -> &str {
        "taskgate-test"
    }

    /// Installs the app on a repository (created with a `main` branch and
    /// one commit if needed) under `installation_id`.
    pub fn install(&self, installation_id: u64, repo_full_name: &str) -> RepoHandle {
        let mut st = self.inner.lock();
        let key = st.ensure_repo(repo_full_name);
        let owner = repo_full_name
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        st.installations
            .entry(installation_id)
            .or_insert_with(|| state::Installation {
                id: installation_id,
                account: owner,
                ..Default::default()
            })
            .repos
            .insert(key.clone());
        RepoHandle::new(self.inner.clone(), key)
    }

    /// A repository (created if needed, not installed).
    pub fn repo(&self, full_name: &str) -> RepoHandle {
        let key = self.inner.lock().ensure_repo(full_name);
        RepoHandle::new(self.inner.clone(), key)
    }

    /// Adds a user with a permission (admin|maintain|write|triage|read|none)
    /// on every repository of the fake (owners are always admin).
    pub fn add_user(&self, login: &str, id: u64, permission: &str) {
        let mut st = self.inner.lock();
        st.users.insert(
            login.to_lowercase(),
            User {
                login: login.into(),
                id,
                kind: "User".into(),
            },
        );
        st.permissions
            .insert(login.to_lowercase(), permission.into());
    }

    /// Sets a login's permission (admin|maintain|write|triage|read|none)
    /// without creating the user: the user appears, with the next id, when
    /// they first act, as when they were not configured at all.
    pub fn set_permission(&self, login: &str, permission: &str) {
        let mut st = self.inner.lock();
        // A user GitHub has never seen has no permission to read.
        st.user(login);
        st.permissions
            .insert(login.to_lowercase(), permission.into());
    }

    /// Every installation token issued so far now answers 401 Bad credentials.
    pub fn expire_tokens(&self) {
        let past = chrono::Utc::now() - chrono::Duration::seconds(1);
        for t in self.inner.lock().tokens.values_mut() {
            t.expires_at = past;
        }
    }

    /// Lifetime of tokens issued from now on (default one hour).
    pub fn set_token_ttl(&self, ttl: Duration) {
        self.inner.lock().token_ttl = ttl;
    }

    /// Queues a fault on a route, e.g. `"POST /repos/{owner}/{repo}/issues"`.
    pub fn inject(&self, route: &str, fault: Fault) {
        let key = normalise_route(route);
        self.inner
            .lock()
            .faults
            .entry(key)
            .or_default()
            .push_back(fault);
    }

    /// Shrinks the secondary limit's minute (one on GitHub) so a test can
    /// prove pacing in seconds: `limit` writes per `window`.
    pub fn set_secondary_window(&self, limit: u32, window: Duration) {
        let mut st = self.inner.lock();
        st.secondary.per_minute = limit;
        st.secondary.minute = window;
        st.secondary.writes.clear();
    }

    /// Faults queued on `route` and not consumed yet: a test waits for 0 to
    /// know a request has met its fault (and, for `Latency`, is being held).
    pub fn faults_pending(&self, route: &str) -> usize {
        let key = normalise_route(route);
        self.inner.lock().faults.get(&key).map_or(0, |q| q.len())
    }

    /// Drops every fault not yet consumed.
    pub fn clear_faults(&self) {
        self.inner.lock().faults.clear();
    }

    /// Answer dispatches 204 even when asked for `return_run_details`, as a
    /// GitHub Enterprise Server older than that parameter does.
    pub fn withhold_dispatch_run_details(&self) {
        self.inner.lock().dispatch_run_details = false;
    }

    /// Content-creating requests allowed per installation per sliding minute
    /// (default 80, GitHub's documented figure); 0 turns off both limits,
    /// the minute's and the hour's. An hourly limit below the new minute
    /// limit is raised to it, so a test that lifts the minute's limit to
    /// make many writes is not stopped by the hour's.
    pub fn set_secondary_limit(&self, writes_per_minute: u32) {
        let mut st = self.inner.lock();
        st.secondary.per_minute = writes_per_minute;
        st.secondary.per_hour = st.secondary.per_hour.max(writes_per_minute);
        st.secondary.writes.clear();
    }

    /// Content-creating requests allowed per installation per sliding hour
    /// (default 500, GitHub's documented figure); 0 turns it off.
    pub fn set_secondary_hourly_limit(&self, writes_per_hour: u32) {
        let mut st = self.inner.lock();
        st.secondary.per_hour = writes_per_hour;
        st.secondary.writes.clear();
    }

    /// How a write over a secondary limit is answered (default: 403 with
    /// `retry-after`).
    pub fn set_secondary_answer(&self, answer: SecondaryAnswer) {
        self.inner.lock().secondary.answer = answer;
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.lock().requests.clone()
    }

    /// How many requests have been answered so far: a cheap way to see
    /// whether any came, without copying them ([`FakeGitHub::requests`]).
    pub fn request_count(&self) -> usize {
        self.inner.lock().requests.len()
    }

    /// Non-GET requests answered 2xx: what changed GitHub.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != "GET" && (200..300).contains(&r.status))
            .collect()
    }

    /// Manifests posted to the App-manifest web form
    /// (`POST [/organizations/{org}]/settings/apps/new`) and accepted, in
    /// the order posted.
    pub fn app_manifests(&self) -> Vec<Value> {
        self.inner.lock().app_manifests.clone()
    }

    /// Mints a one-time code for `manifest`, as the web form does, for
    /// tests that skip the browser: `POST /app-manifests/{code}/conversions`
    /// then registers it (owned by the default owner). Not validated, not
    /// added to [`FakeGitHub::app_manifests`].
    pub fn manifest_code(&self, manifest: Value) -> String {
        routes::manifests::mint_code(&mut self.inner.lock(), manifest, None)
    }

    /// The `webhook_secret` answered by the last manifest conversion, if any.
    pub fn converted_webhook_secret(&self) -> Option<String> {
        self.inner
            .lock()
            .registered
            .as_ref()
            .map(|r| r.webhook_secret.clone())
    }

    /// Panics, listing them, when any request broke GitHub's contract: the
    /// one-line check every test of a client ends with.
    pub fn assert_contract_kept(&self) {
        let violations = self.contract_violations();
        assert!(violations.is_empty(), "{violations:#?}");
    }

    /// Requests GitHub's contract would reject (each was answered 422), and
    /// routes outside the contract subset (answered 404).
    pub fn contract_violations(&self) -> Vec<String> {
        self.inner.lock().violations.clone()
    }

    /// Delivers a signed webhook to `target_url`; returns status and body
    /// (status 0 and the error text when no HTTP answer came: refused,
    /// dropped, timed out). Every attempt is appended to the App webhook's
    /// delivery log ([`FakeGitHub::hook_deliveries`]), failed ones included.
    pub async fn deliver(
        &self,
        target_url: &str,
        secret: &str,
        event: &str,
        delivery_id: &str,
        payload: &Value,
    ) -> (u16, String) {
        let attempt = state::PendingDelivery {
            url: target_url.to_string(),
            secret: secret.to_string(),
            event: event.to_string(),
            guid: delivery_id.to_string(),
            payload: payload.clone(),
        };
        webhooks::deliver_logged(&self.inner, attempt, false).await
    }

    /// Configures the App's webhook: from now on every accepted write to an
    /// installed repository echoes the webhooks GitHub sends for it to this
    /// URL, signed with this secret (see the crate header), and
    /// redeliveries (`POST /app/hook/deliveries/{delivery_id}/attempts`) go
    /// there too, whatever the original attempt used, as GitHub redelivers
    /// to the App's current configuration. Until it is called, nothing
    /// echoes and redelivery answers 422 "Webhook is not configured".
    pub fn set_app_webhook(&self, url: &str, secret: &str) {
        self.inner.lock().app_webhook = Some((url.to_string(), secret.to_string()));
    }

    /// Stops echoing writes (the App webhook still takes redeliveries).
    /// Only for fakehub's own unit tests of redelivery, where echoes would
    /// crowd the delivery log; a test of a client wants the echoes.
    pub fn silence_echoes(&self) {
        self.inner.lock().echo.silenced = true;
    }

    /// Runs `act` (a person's writes through [`RepoHandle`]) without
    /// sending their webhooks: for a test that delivers its own version of
    /// them instead (a chosen delivery id, a forged or doctored payload,
    /// a delivery to a server that is down). Echoes are on again after.
    pub fn without_echoes<T>(&self, act: impl FnOnce() -> T) -> T {
        let was = std::mem::replace(&mut self.inner.lock().echo.silenced, true);
        let out = act();
        self.inner.lock().echo.silenced = was;
        out
    }

    /// From now on, echoes are sent out of order and some twice, as
    /// GitHub may: each is due at a time drawn within `window` of GitHub's
    /// clock after its write and sent when due (the wait compressed 50×,
    /// or at once when [`FakeGitHub::advance`] passes it), and about
    /// `duplicate_share` of them (0.05: one in twenty) are sent again with
    /// the same delivery id, logged as a redelivery. Draws come from
    /// `seed`, which is printed so a failure can be repeated.
    pub fn shuffle_deliveries(&self, window: Duration, duplicate_share: f64, seed: u64) {
        eprintln!(
            "fakehub: webhooks shuffled within {window:?}, {:.0} % sent twice, seed {seed} (FAKEHUB_SHUFFLE_SEED={seed} repeats it)",
            duplicate_share * 100.0
        );
        let mut st = self.inner.lock();
        let shuffle = shuffle::Shuffle::new(window, duplicate_share, seed)
            .continuing(st.echo.shuffle.as_ref());
        st.echo.shuffle = Some(shuffle);
    }

    /// The echo counters: the fake is quiet when `queued == delivered`.
    pub fn echo_stats(&self) -> EchoStats {
        self.inner.lock().echo.stats
    }

    /// Every echo delivered so far, in delivery order.
    pub fn echo_log(&self) -> Vec<EchoRecord> {
        self.inner.lock().echo.log.clone()
    }

    /// Returns once every queued echo has been delivered and answered.
    ///
    /// # Panics
    /// When that takes more than 30 seconds.
    pub async fn echoes_settled(&self) {
        echo::settled(&self.inner).await
    }

    /// Replica lag (default zero): for `lag` after an object is written,
    /// reads see the state before the write, as GitHub's replicas may. A
    /// `GET` of a just-created ref, branch, issue or pull request answers
    /// 404; `POST .../sub_issues` naming a just-created issue answers 404,
    /// as for an issue that does not exist; a `GET` of a just-merged pull
    /// request answers it open and not merged; lists leave out what is
    /// new: a just-created issue from `GET .../issues`, a just-created
    /// comment from its issue's comments, a just-dispatched workflow run
    /// from its workflow's runs. Writes apply at once.
    pub fn set_read_lag(&self, lag: Duration) {
        self.inner.lock().read_lag = lag;
    }

    /// Moves GitHub's clock on by `by`, at once: a read lag runs out, and
    /// what GitHub stamps from now on (issues, comments, pull requests,
    /// commits, check runs, workflow runs, artifacts, the delivery log) is
    /// stamped that much later, and the secondary limits' windows move on.
    /// Authentication (JWTs, token lifetimes) and the primary rate limit
    /// keep the real clock: tests that want a token to expire say so
    /// ([`FakeGitHub::expire_tokens`]).
    pub fn advance(&self, by: Duration) {
        self.inner.lock().clock.advance(by);
    }

    /// The App webhook's delivery log as `GET /app/hook/deliveries` shows
    /// it, newest first: `id`, `guid`, `delivered_at`, `redelivery`,
    /// `duration`, `status`, `status_code`, `event`, `action`,
    /// `installation_id`, `repository_id`, `throttled_at`. A redelivery is
    /// logged when its attempt ends, a moment after the receiver got it.
    pub fn hook_deliveries(&self) -> Vec<Value> {
        let st = self.inner.lock();
        let mut log: Vec<&state::HookDelivery> = st.hook_deliveries.iter().collect();
        log.sort_by_key(|d| std::cmp::Reverse(d.id));
        log.into_iter().map(render::hook_delivery).collect()
    }

    /// One logged attempt as `GET /app/hook/deliveries/{delivery_id}` shows
    /// it: the list fields plus `url` (where it was posted), `request`
    /// (`headers` as sent, signature included, and `payload`) and
    /// `response` (`payload`: the answer body, or the error text when none
    /// came; `headers` empty). The route itself is not served.
    pub fn hook_delivery(&self, id: u64) -> Option<Value> {
        let st = self.inner.lock();
        let d = st.hook_deliveries.iter().find(|d| d.id == id)?;
        Some(render::hook_delivery_detail(st.app_id, d))
    }

    /// Ids of the deliveries whose redelivery was requested and accepted
    /// (answered 202), in the order asked; refused requests (404, 422) are
    /// only in [`FakeGitHub::requests`].
    pub fn redeliveries(&self) -> Vec<u64> {
        self.inner.lock().redeliveries.clone()
    }

    /// Returns once every redelivery accepted so far has been sent and its
    /// attempt logged in [`FakeGitHub::hook_deliveries`] (an attempt is
    /// logged when it ends, a moment after the 202).
    ///
    /// # Panics
    /// When that takes more than 30 seconds.
    pub async fn redeliveries_settled(&self) {
        webhooks::redeliveries_settled(&self.inner).await
    }

    /// Moves the logged attempt `id` back in time by `by`, e.g. past the
    /// three days after which GitHub refuses to redeliver it.
    ///
    /// # Panics
    /// When no logged attempt has this id.
    pub fn age_hook_delivery(&self, id: u64, by: Duration) {
        let mut st = self.inner.lock();
        let entry = st
            .hook_deliveries
            .iter_mut()
            .find(|d| d.id == id)
            .unwrap_or_else(|| panic!("fakehub: no hook delivery with id {id}"));
        let by = chrono::Duration::from_std(by).expect("a duration chrono can hold");
        entry.delivered_at -= by;
    }
}

/// `post  /repos/x` → `POST /repos/x`.
fn normalise_route(route: &str) -> String {
    let (method, path) = route
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or(("GET", route));
    format!("{} {}", method.to_uppercase(), path.trim())
}
