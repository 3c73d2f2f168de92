//! The request pipeline and the route table.
//!
//! Every request goes through one function, in GitHub's order as far as it
//! matters to a client: match a route template → check the template is in the
//! OpenAPI contract subset → consume an injected fault → authenticate (and
//! scope to the installation's repositories) → validate the body against the
//! contract → count it against the secondary rate limit → run the handler →
//! record it (then send any redelivery the handler accepted, in the
//! background, and hand the write's echoes to the echo task: `echo`, `emit`).
//! Handlers are plain functions over `&mut State`; one file per
//! area of the API. `POST /graphql` skips the OpenAPI checks: its handler
//! holds it to the GraphQL contract instead (`graphql_contract`).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use serde_json::{json, Value};

use crate::auth::{self, Caller};
use crate::faults::{self, FaultAction};
use crate::state::State;
use crate::{RecordedRequest, Shared};

pub mod actions;
pub mod apps;
pub mod checks;
pub mod collaborators;
pub mod contents;
pub mod git;
pub mod git_commits;
pub mod graphql;
pub mod hook_deliveries;
pub mod issues;
pub mod labels;
pub mod manifests;
pub mod merges;
pub mod orgs;
pub mod pulls;
pub mod reviews;
pub mod rules;
pub mod sub_issues;
mod url;

pub(crate) use url::parse_query;
pub use url::{link, match_template, paginate, percent_decode};

pub const DOCS_URL: &str = "https://docs.github.com/rest";

/// An answer: status, JSON (or raw bytes) and extra headers.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    pub raw: Option<(Vec<u8>, &'static str)>,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body: Some(body),
            raw: None,
            headers: Vec::new(),
        }
    }
    pub fn ok(body: Value) -> Reply {
        Reply::json(200, body)
    }
    pub fn created(body: Value) -> Reply {
        Reply::json(201, body)
    }
    pub fn no_content() -> Reply {
        Reply {
            status: 204,
            body: None,
            raw: None,
            headers: Vec::new(),
        }
    }
    /// GitHub's error shape: `{message, documentation_url, status}`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::json(
            status,
            json!({"message": message, "documentation_url": DOCS_URL, "status": status.to_string()}),
        )
    }
    pub fn not_found() -> Reply {
        Reply::error(404, "Not Found")
    }
    /// 422 "Validation Failed" with one `errors` entry.
    pub fn invalid(error: Value) -> Reply {
        Reply::json(
            422,
            json!({"message": "Validation Failed", "errors": [error], "documentation_url": DOCS_URL, "status": "422"}),
        )
    }
    /// 422 with a top-level message (GitHub uses this for business rules).
    pub fn unprocessable(message: &str) -> Reply {
        Reply::error(422, message)
    }
}

pub type HResult = Result<Reply, Reply>;
pub type Handler = fn(&mut State, &Req) -> HResult;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AuthKind {
    Jwt,
    Installation,
    /// `POST /graphql` with an installation token: outside the REST OpenAPI
    /// contract, checked against the GraphQL one by its handler, which also
    /// decides what counts against the secondary limit (mutations only).
    InstallationGraphQl,
    /// Fake-internal URLs (artifact blobs); not part of the contract.
    Public,
    /// In the contract but unauthenticated on GitHub (the manifest
    /// conversion): no token is required or checked, nothing is counted
    /// against the secondary limit.
    Anonymous,
}

impl AuthKind {
    /// Whether the route is checked against the REST OpenAPI subset.
    fn in_openapi(self) -> bool {
        matches!(
            self,
            AuthKind::Jwt | AuthKind::Installation | AuthKind::Anonymous
        )
    }
}

pub struct Route {
    pub method: &'static str,
    pub template: &'static str,
    pub auth: AuthKind,
    pub handler: Handler,
}

/// An app-level route, authenticated with the app's JWT.
pub const fn jwt(method: &'static str, template: &'static str, handler: Handler) -> Route {
    Route {
        method,
        template,
        auth: AuthKind::Jwt,
        handler,
    }
}

pub const fn inst(method: &'static str, template: &'static str, handler: Handler) -> Route {
    Route {
        method,
        template,
        auth: AuthKind::Installation,
        handler,
    }
}

/// A parsed request as handlers see it.
pub struct Req {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub params: HashMap<String, String>,
    pub body: Value,
    pub caller: Option<Caller>,
    /// The fake's base URL, for `url` fields.
    pub base: String,
    /// The artifact storage origin's base URL.
    pub storage: String,
}

impl Req {
    pub fn param(&self, name: &str) -> &str {
        self.params.get(name).map(String::as_str).unwrap_or("")
    }
    pub fn num(&self, name: &str) -> Result<u64, Reply> {
        self.param(name).parse().map_err(|_| Reply::not_found())
    }
    pub fn repo_key(&self) -> String {
        format!("{}/{}", self.param("owner"), self.param("repo")).to_lowercase()
    }
    /// Login of the acting user: the app's bot for installation tokens.
    pub fn actor(&self, st: &State) -> String {
        st.bot_login()
    }
    /// Where this request writes, for the echoes (`emit`).
    pub(crate) fn at<'a>(&'a self, key: &'a str) -> crate::emit::At<'a> {
        crate::emit::At {
            key,
            base: &self.base,
        }
    }
    pub fn str_field(&self, name: &str) -> Option<&str> {
        self.body.get(name).and_then(Value::as_str)
    }
}

fn all_routes() -> impl Iterator<Item = &'static Route> {
    [
        apps::ROUTES,
        hook_deliveries::ROUTES,
        issues::ROUTES,
        labels::ROUTES,
        sub_issues::ROUTES,
        git::ROUTES,
        git_commits::ROUTES,
        merges::ROUTES,
        pulls::ROUTES,
        reviews::ROUTES,
        rules::ROUTES,
        checks::ROUTES,
        contents::ROUTES,
        actions::ROUTES,
        collaborators::ROUTES,
        orgs::ROUTES,
        graphql::ROUTES,
    ]
    .into_iter()
    .flatten()
}

fn find_route(method: &str, path: &str) -> Option<(&'static Route, HashMap<String, String>)> {
    all_routes()
        .filter(|r| r.method == method)
        .filter_map(|r| match_template(r.template, path).map(|(p, lits)| (r, p, lits)))
        .max_by_key(|(_, _, lits)| *lits)
        .map(|(r, p, _)| (r, p))
}

/// Runs one request through the pipeline (see the module header).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<axum::body::Body> {
    let mut incoming = Incoming::read(&shared, &method, &uri, &headers, &body);
    // `Break` is an answer given before the handler runs.
    let route = match incoming.route(&shared) {
        ControlFlow::Continue(route) => route,
        ControlFlow::Break(response) => return response,
    };
    let after = match incoming.take_fault(&shared, route.template).await {
        ControlFlow::Continue(after) => after,
        ControlFlow::Break(response) => return response,
    };
    let (response, outbox) = incoming.answer(&shared, route, after.replace);
    crate::agents::react(&shared);
    crate::races::run(&shared);
    crate::webhooks::redeliver_later(&shared, outbox);
    if let Some(d) = after.delay {
        tokio::time::sleep(d).await;
    }
    if let Some(hold) = after.hold {
        hold.wait().await;
    }
    response
}

/// One request on its way through the pipeline.
struct Incoming {
    req: Req,
    /// The credential of the `Authorization` header, if any.
    token: Option<String>,
    /// A body was sent but is not JSON (answered 400 after authentication).
    parse_error: bool,
    /// The installation the token belongs to, for the record and the
    /// rate-limit bucket.
    installation: Option<u64>,
}

/// What an injected fault leaves for after the handler has run.
#[derive(Default)]
struct AfterFault {
    /// Wait this long before answering.
    delay: Option<std::time::Duration>,
    /// Wait until the test releases this before answering.
    hold: Option<faults::Hold>,
    /// Answer this instead of what the handler answered.
    replace: Option<Reply>,
}

impl Incoming {
    /// The request as handlers see it, with its credential and the
    /// installation that credential belongs to.
    fn read(
        shared: &Shared,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Incoming {
        let body_json: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body).unwrap_or(Value::Null)
        };
        let parse_error = !body.is_empty() && body_json.is_null();
        let authz = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let token = auth::credential(authz.as_deref()).map(str::to_string);
        let req = Req {
            method: method.as_str().to_string(),
            path: uri.path().to_string(),
            query: parse_query(uri.query()),
            params: HashMap::new(),
            body: body_json,
            caller: None,
            base: shared.base_url.clone(),
            storage: shared.storage_url.clone(),
        };
        let installation = shared
            .lock()
            .tokens
            .get(token.as_deref().unwrap_or(""))
            .map(|t| t.installation);
        Incoming {
            req,
            token,
            parse_error,
            installation,
        }
    }

    /// Adds the request to [`State::requests`], as answered with `status`.
    fn record(&self, st: &mut State, route: Option<&str>, status: u16) {
        st.requests.push(RecordedRequest {
            method: self.req.method.clone(),
            path: self.req.path.clone(),
            route: route.map(str::to_string),
            status,
            body: self.req.body.clone(),
            installation: self.installation,
        });
    }

    /// Records the request with the status it is answered, and answers.
    fn answer_now(
        &self,
        shared: &Shared,
        st: &mut State,
        route: Option<&str>,
        reply: Reply,
    ) -> Response<axum::body::Body> {
        self.record(st, route, reply.status);
        respond(shared, st, reply, self.installation)
    }

    /// The route the request is for, with its path parameters taken; a
    /// 404 and a contract violation when fakehub has no such route or
    /// the contract subset does not list it.
    fn route(
        &mut self,
        shared: &Shared,
    ) -> ControlFlow<Response<axum::body::Body>, &'static Route> {
        let (method, path) = (&self.req.method, &self.req.path);
        let Some((route, params)) = find_route(method, path) else {
            let msg = match shared.openapi.find_template(method, path) {
                Some(t) => format!("route not implemented by fakehub: {method} {t}"),
                None => format!("route not in the contract subset: {method} {path}"),
            };
            tracing::warn!("{msg}");
            let mut st = shared.lock();
            st.violations.push(msg);
            return ControlFlow::Break(self.answer_now(shared, &mut st, None, Reply::not_found()));
        };
        let template = route.template;
        if route.auth.in_openapi() && !shared.openapi.has(method, template) {
            let mut st = shared.lock();
            st.violations.push(format!(
                "route not in the contract subset: {method} {path} ({template})"
            ));
            return ControlFlow::Break(self.answer_now(
                shared,
                &mut st,
                Some(template),
                Reply::not_found(),
            ));
        }
        self.req.params = params;
        ControlFlow::Continue(route)
    }

    /// Consumes the fault injected for this route, if any: answered in its
    /// place, delayed, or dropped before the handler runs, or what is left
    /// for after it.
    async fn take_fault(
        &self,
        shared: &Shared,
        template: &'static str,
    ) -> ControlFlow<Response<axum::body::Body>, AfterFault> {
        let route_key = format!("{} {template}", self.req.method);
        let fault = faults::take(&mut shared.lock(), &route_key);
        let mut after = AfterFault::default();
        match fault {
            Some(FaultAction::Answer(reply)) => {
                let mut st = shared.lock();
                return ControlFlow::Break(self.answer_now(shared, &mut st, Some(template), reply));
            }
            Some(FaultAction::Delay(d)) => tokio::time::sleep(d).await,
            Some(FaultAction::DelayAfter(d)) => after.delay = Some(d),
            Some(FaultAction::HoldAfter(hold)) => after.hold = Some(hold),
            Some(FaultAction::ReplaceAfter(reply)) => after.replace = Some(reply),
            Some(FaultAction::PushFirst {
                branch,
                files,
                pusher,
            }) => {
                let key = self.req.repo_key();
                let at = self.req.at(&key);
                faults::push_first(&mut shared.lock(), at, (&branch, &files, &pusher));
            }
            Some(FaultAction::Drop) => {
                self.record(&mut shared.lock(), Some(template), 0);
                // Unwinding out of the connection task closes the socket unanswered.
                std::panic::resume_unwind(Box::new("fakehub: injected DropConnection"));
            }
            None => {}
        }
        ControlFlow::Continue(after)
    }

    /// Runs the checks and the handler under one lock, and sends the
    /// write's echoes; also hands back the redeliveries it accepted.
    fn answer(
        mut self,
        shared: &Shared,
        route: &Route,
        replace: Option<Reply>,
    ) -> (
        Response<axum::body::Body>,
        Vec<crate::state::PendingDelivery>,
    ) {
        let mut st = shared.lock();
        let reply = run(
            shared,
            &mut st,
            route,
            &mut self.req,
            self.token.as_deref(),
            self.parse_error,
        );
        let applied = reply.unwrap_or_else(|e| e);
        // A refused write sends nothing; an applied one its echoes, in order.
        if applied.status >= 400 {
            crate::echo::discard(&mut st);
        }
        crate::echo::flush(shared, &mut st);
        // The work is done; the caller may still be told otherwise.
        let reply = replace.unwrap_or(applied);
        self.record(&mut st, Some(route.template), reply.status);
        let outbox = std::mem::take(&mut st.outbox);
        (respond(shared, &mut st, reply, self.installation), outbox)
    }
}

fn run(
    shared: &Shared,
    st: &mut State,
    route: &Route,
    req: &mut Req,
    token: Option<&str>,
    parse_error: bool,
) -> HResult {
    match route.auth {
        // Storage behind a signed URL refuses a second credential, as S3
        // and Azure do: a client must drop GitHub's token on the redirect.
        AuthKind::Public if token.is_some() => {
            st.violations.push(format!(
                "{} {}: GitHub credentials sent to artifact storage",
                req.method, req.path
            ));
            return Err(Reply::error(
                400,
                "Only one auth mechanism allowed; the URL is already signed",
            ));
        }
        AuthKind::Public | AuthKind::Anonymous => {}
        AuthKind::Jwt => {
            let Some(jwt) = token else {
                return Err(Reply::error(401, "A JSON web token could not be decoded"));
            };
            auth::verify_jwt(st.app_id, jwt)?;
            req.caller = Some(Caller::App);
        }
        AuthKind::Installation => {
            let inst = auth::installation_for_token(st, token)?;
            if req.params.contains_key("owner") {
                let key = req.repo_key();
                let allowed = st
                    .installations
                    .get(&inst)
                    .is_some_and(|i| i.repos.contains(&key));
                if !allowed || !st.repos.contains_key(&key) {
                    return Err(Reply::not_found());
                }
            }
            req.caller = Some(Caller::Installation(inst));
        }
        AuthKind::InstallationGraphQl => {
            let inst = auth::installation_for_token(st, token).map_err(graphql::auth_error)?;
            req.caller = Some(Caller::Installation(inst));
        }
    }
    if parse_error {
        return Err(Reply::error(400, "Problems parsing JSON"));
    }
    if route.auth.in_openapi() {
        if let Err(errors) = shared
            .openapi
            .validate_body(&req.method, route.template, &req.body)
        {
            let msg = format!("{} {}: {}", req.method, route.template, errors.join("; "));
            tracing::warn!("contract violation: {msg}");
            st.violations.push(msg);
            return Err(Reply::invalid(validation_error(route.template, &errors[0])));
        }
    }
    let counted = route.auth == AuthKind::Installation && req.method != "GET";
    if let (Some(Caller::Installation(inst)), true) = (&req.caller, counted) {
        if let Some(reply) = faults::secondary_limit(st, *inst, route.template) {
            return Err(reply);
        }
    }
    (route.handler)(st, req)
}

/// GitHub's `errors[]` entry for the first schema problem: `missing_field`
/// for an absent required top-level field, `invalid` otherwise.
fn validation_error(template: &str, error: &str) -> Value {
    let resource = [
        ("/reactions", "Reaction"),
        ("/comments", "IssueComment"),
        ("/labels", "Label"),
        ("/sub_issue", "SubIssue"),
        ("/blocked_by", "IssueDependency"),
        ("/pulls", "PullRequest"),
        ("/check-runs", "CheckRun"),
        ("/git/refs", "Reference"),
        ("/git/commits", "Commit"),
        ("/merges", "Merge"),
        ("/dispatches", "WorkflowDispatch"),
        ("/issues", "Issue"),
    ]
    .iter()
    .find(|(part, _)| template.contains(part))
    .map_or("Request", |(_, r)| r);
    let (path, problem) = error.split_once(": ").unwrap_or(("body", error));
    let field = path
        .strip_prefix("body.")
        .unwrap_or("")
        .split(['.', '['])
        .next()
        .unwrap_or("");
    if problem == "required property is missing"
        && !field.is_empty()
        && !path[5..].contains(['.', '['])
    {
        json!({"resource": resource, "code": "missing_field", "field": field})
    } else {
        json!({"resource": resource, "code": "invalid", "field": field, "message": error})
    }
}

fn respond(
    shared: &Shared,
    st: &mut State,
    reply: Reply,
    installation: Option<u64>,
) -> Response<axum::body::Body> {
    let _ = shared;
    let now = chrono::Utc::now().timestamp();
    if st.rate_reset <= now {
        st.rate_reset = now + 3600;
        st.rate_used.clear();
    }
    let bucket = installation
        .map(|i| i.to_string())
        .unwrap_or_else(|| "app".into());
    let used = st.rate_used.entry(bucket).or_insert(0);
    *used += 1;
    let mut headers: Vec<(String, String)> = vec![
        ("x-ratelimit-limit".into(), "5000".into()),
        (
            "x-ratelimit-remaining".into(),
            5000u64.saturating_sub(*used).to_string(),
        ),
        ("x-ratelimit-reset".into(), st.rate_reset.to_string()),
        ("x-ratelimit-used".into(), used.to_string()),
        ("x-ratelimit-resource".into(), "core".into()),
        (
            "x-github-request-id".into(),
            format!(
                "{:04X}:{:06X}:{:08X}",
                fastrand::u16(..),
                fastrand::u32(..0xFFFFFF),
                fastrand::u32(..)
            ),
        ),
        ("x-github-api-version-selected".into(), "2022-11-28".into()),
    ];
    for (k, v) in reply.headers {
        headers.retain(|(h, _)| *h != k);
        headers.push((k, v));
    }
    let mut b = Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    for (k, v) in &headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = match (reply.raw, reply.body) {
        (Some((bytes, ct)), _) => {
            b = b.header("content-type", ct);
            axum::body::Body::from(bytes)
        }
        (None, Some(v)) => {
            b = b.header("content-type", "application/json; charset=utf-8");
            axum::body::Body::from(serde_json::to_vec(&v).unwrap())
        }
        (None, None) => axum::body::Body::empty(),
    };
    b.body(body).expect("valid response")
}
