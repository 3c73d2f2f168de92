//! `POST /graphql`: GitHub's GraphQL endpoint, for the operations taskgate
//! sends: the mutations `markPullRequestReadyForReview` and
//! `enqueuePullRequest` (`graphql/enqueue.rs`, GitHub's merge queue).
//!
//! It owns *executing* a document: reading the request body, refusing what
//! the GraphQL contract (`graphql_contract`) rejects — recorded as a contract
//! violation and answered 200 with `errors`, as GitHub does — counting
//! mutations against the secondary limit, and resolving the selected fields
//! from the fake's state. It must not touch the REST OpenAPI contract (the
//! endpoint is not in it). A mutation echoes like the REST write it stands
//! for (`emit`): marking a draft ready sends `pull_request` ready_for_review.
//!
//! Authentication, fault injection and recording happen in the pipeline
//! (`routes::serve`) like for every route; the route key is `POST /graphql`.

use base64::Engine;
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::{AuthKind, HResult, Reply, Req, Route};
use crate::auth::Caller;
use crate::faults;
use crate::graphql_contract::{self as contract, Field, GqlError, OpKind, Operation};
use crate::render::{self, HTML};
use crate::state::{Pull, State};

pub const ROUTES: &[Route] = &[Route {
    method: "POST",
    template: "/graphql",
    auth: AuthKind::InstallationGraphQl,
    handler: graphql,
}];

mod enqueue;

const DOCS: &str = "https://docs.github.com/graphql";

/// The fields fakehub can answer, per type. The contract may allow more; a
/// selection outside this list is refused as a gap in the fake rather than
/// answered with made-up nulls.
const RENDERED: &[(&str, &[&str])] = &[
    (
        "Mutation",
        &["markPullRequestReadyForReview", "enqueuePullRequest"],
    ),
    (
        "EnqueuePullRequestPayload",
        &["clientMutationId", "mergeQueueEntry"],
    ),
    (
        "MergeQueueEntry",
        &["id", "position", "state", "enqueuedAt", "pullRequest"],
    ),
    (
        "MarkPullRequestReadyForReviewPayload",
        &["clientMutationId", "pullRequest"],
    ),
    (
        "PullRequest",
        &[
            "id",
            "databaseId",
            "number",
            "title",
            "body",
            "url",
            "permalink",
            "resourcePath",
            "isDraft",
            "state",
            "closed",
            "merged",
            "locked",
            "isCrossRepository",
            "headRefName",
            "baseRefName",
            "headRefOid",
            "baseRefOid",
            "createdAt",
            "updatedAt",
            "closedAt",
            "mergedAt",
        ],
    ),
];

/// GitHub's GraphQL 401s point at the GraphQL docs, and a missing token has
/// its own wording there.
pub(super) fn auth_error(reply: Reply) -> Reply {
    let missing =
        reply.body.as_ref().and_then(|b| b["message"].as_str()) == Some("Requires authentication");
    let (message, docs) = if missing {
        (
            "This endpoint requires you to be authenticated.",
            "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql",
        )
    } else {
        ("Bad credentials", DOCS)
    };
    Reply::json(
        reply.status,
        json!({"message": message, "documentation_url": docs, "status": reply.status.to_string()}),
    )
}

fn graphql(st: &mut State, req: &Req) -> HResult {
    let Some(Caller::Installation(inst)) = req.caller else {
        return Err(auth_error(Reply::error(401, "Requires authentication")));
    };
    let (op, variables) = match checked(&req.body) {
        Ok(ready) => ready,
        Err((op, errors)) => return Ok(refuse(st, op.as_ref(), errors)),
    };
    // GitHub counts mutations, not queries, as content-creating requests.
    if op.kind == OpKind::Mutation {
        if let Some(reply) = faults::secondary_limit(st, inst, "/graphql") {
            return Err(reply);
        }
    }
    Ok(Reply::ok(execute(st, req, inst, &op, &variables)))
}

/// The operation and its variables, once GitHub would run them; otherwise
/// the errors (with the operation when it could be read).
type Checked = Result<(Operation, Map<String, Value>), (Option<Operation>, Vec<GqlError>)>;

fn checked(body: &Value) -> Checked {
    let body = GraphQlBody::read(body).map_err(|e| (None, vec![e]))?;
    let op = contract::parse(body.query).map_err(|e| (None, vec![e]))?;
    let mut errors = Vec::new();
    if let Some(name) = body
        .operation_name
        .filter(|n| op.name.as_deref() != Some(*n))
    {
        errors.push(GqlError::new(
            format!("No operation named \"{name}\""),
            None,
        ));
    } else {
        errors = contract::validate(contract::schema(), &op, &body.variables);
    }
    if errors.is_empty() {
        // Only a valid document is worth checking against the fake's gaps.
        errors = unrendered(&op);
    }
    if errors.is_empty() {
        Ok((op, body.variables))
    } else {
        Err((Some(op), errors))
    }
}

/// A GraphQL request body: `{query, variables?, operationName?}`.
struct GraphQlBody<'a> {
    query: &'a str,
    variables: Map<String, Value>,
    operation_name: Option<&'a str>,
}

impl GraphQlBody<'_> {
    /// graphql-ruby also takes the variables as a JSON string.
    fn read(body: &Value) -> Result<GraphQlBody<'_>, GqlError> {
        let Some(query) = body.get("query").and_then(Value::as_str) else {
            return Err(GqlError::new(
                "A query attribute must be specified and must be a string.",
                None,
            ));
        };
        let variables = match body.get("variables") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(Value::String(s)) if s.trim().is_empty() => Map::new(),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(m)) => m,
                _ => return Err(GqlError::new("Variables are invalid JSON.", None)),
            },
            Some(_) => return Err(GqlError::new("Variables are invalid JSON.", None)),
        };
        let operation_name = body.get("operationName").and_then(Value::as_str);
        Ok(GraphQlBody {
            query,
            variables,
            operation_name,
        })
    }
}

/// Records each error as a violation and answers them as GitHub does:
/// HTTP 200, `errors` only.
fn refuse(st: &mut State, op: Option<&Operation>, errors: Vec<GqlError>) -> Reply {
    let context = op.map(|o| format!("{}: ", o.label())).unwrap_or_default();
    for e in &errors {
        let msg = if e.unsupported {
            format!(
                "graphql: not implemented by fakehub: {context}{}",
                e.message
            )
        } else {
            format!("graphql contract: {context}{}", e.message)
        };
        tracing::warn!("{msg}");
        st.violations.push(msg);
    }
    let list: Vec<Value> = errors.iter().map(GqlError::to_json).collect();
    Reply::ok(json!({"errors": list}))
}

/// Fields the contract allows but the fake cannot answer, as errors.
fn unrendered(op: &Operation) -> Vec<GqlError> {
    let mut gaps = Vec::new();
    walk_unrendered(contract::schema().root(op.kind), &op.selection, &mut gaps);
    gaps
}

fn walk_unrendered(ty: &str, fields: &[Field], gaps: &mut Vec<GqlError>) {
    let known = RENDERED
        .iter()
        .find(|(t, _)| *t == ty)
        .map_or(&[][..], |(_, fs)| *fs);
    for f in fields.iter().filter(|f| f.name != "__typename") {
        if !known.contains(&f.name.as_str()) {
            let msg = format!("fakehub does not answer {ty}.{}", f.name);
            gaps.push(GqlError::unsupported(msg, Some(f.pos)));
        } else if let Some(def) = contract::schema().field(ty, &f.name) {
            walk_unrendered(def.ty.named(), &f.selection, gaps);
        }
    }
}

/// Runs a validated operation's root fields in order; the answer is
/// `{data}` plus `errors` when a field failed (its value is then null).
fn execute(
    st: &mut State,
    req: &Req,
    inst: u64,
    op: &Operation,
    vars: &Map<String, Value>,
) -> Value {
    let mut data = Map::new();
    let mut errors = Vec::new();
    for f in &op.selection {
        let value = match f.name.as_str() {
            "__typename" => json!(contract::schema().root(op.kind)),
            "markPullRequestReadyForReview" => mark_ready(st, req, (inst, f, vars), &mut errors),
            "enqueuePullRequest" => enqueue::enqueue(st, req, (inst, f, vars), &mut errors),
            // `unrendered` refused everything else.
            _ => Value::Null,
        };
        data.insert(f.key().to_string(), value);
    }
    let mut body = json!({"data": data});
    if !errors.is_empty() {
        body["errors"] = Value::Array(errors);
    }
    body
}

/// `markPullRequestReadyForReview(input: {pullRequestId, clientMutationId})`:
/// a pull request that is not a draft is left as it is, as on GitHub.
fn mark_ready(
    st: &mut State,
    req: &Req,
    (inst, f, vars): (u64, &Field, &Map<String, Value>),
    errors: &mut Vec<Value>,
) -> Value {
    let Some((input, key, number)) = input_pull(st, (inst, f, vars), errors) else {
        return Value::Null;
    };
    let repo = st.repos.get_mut(&key).expect("found above");
    let now = st.clock.now();
    let pull = repo.pulls.get_mut(&number).expect("found above");
    let before = pull.clone();
    if pull.draft {
        pull.draft = false;
        pull.updated_at = now;
        if let Some(issue) = repo.issues.get_mut(&number) {
            issue.updated_at = now;
        }
    }
    let actor = req.actor(st);
    crate::emit::pull_changed(st, req.at(&key), number, &actor, &before);
    let repo = &st.repos[&key];
    let view = PullView::new(&repo.pulls[&number], repo);
    let mutation_id = input
        .get("clientMutationId")
        .cloned()
        .unwrap_or(Value::Null);
    select(
        f,
        "MarkPullRequestReadyForReviewPayload",
        &|sub: &Field| match sub.name.as_str() {
            "clientMutationId" => mutation_id.clone(),
            "pullRequest" => select(sub, "PullRequest", &|p: &Field| {
                view.field(&p.name).unwrap_or(Value::Null)
            }),
            _ => Value::Null,
        },
    )
}

/// GitHub's answer for an id that names nothing the token can see.
fn not_found(f: &Field, id: &str) -> Value {
    json!({
        "type": "NOT_FOUND",
        "path": [f.key()],
        "locations": [{"line": f.pos.line, "column": f.pos.column}],
        "message": format!("Could not resolve to a node with the global id of '{id}'"),
    })
}

/// The selected fields of one object, keyed by alias.
fn select(f: &Field, typename: &str, value: &dyn Fn(&Field) -> Value) -> Value {
    let map = f
        .selection
        .iter()
        .map(|sub| {
            let v = if sub.name == "__typename" {
                json!(typename)
            } else {
                value(sub)
            };
            (sub.key().to_string(), v)
        })
        .collect();
    Value::Object(map)
}

/// A pull request's node id, as `render::pull` writes `node_id`.
fn pull_node_id(id: u64) -> String {
    let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(format!("fake{id}"));
    format!("PR_{encoded}")
}

/// The repository key and number of the pull request with this node id,
/// among the installation's repositories only.
/// A mutation's `input` and the pull request its `pullRequestId` names,
/// visible to installation `inst`; `None` with GitHub's NOT_FOUND error
/// pushed when there is none.
fn input_pull(
    st: &State,
    (inst, f, vars): (u64, &Field, &Map<String, Value>),
    errors: &mut Vec<Value>,
) -> Option<(Value, String, u64)> {
    let input = f.arg("input").map(|l| l.resolve(vars)).unwrap_or_default();
    let id = match &input["pullRequestId"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let Some((key, number)) = find_pull(st, inst, &id) else {
        errors.push(not_found(f, &id));
        return None;
    };
    Some((input, key, number))
}

fn find_pull(st: &State, inst: u64, node_id: &str) -> Option<(String, u64)> {
    let installed = &st.installations.get(&inst)?.repos;
    installed.iter().find_map(|key| {
        let repo = st.repos.get(key)?;
        let pull = repo
            .pulls
            .values()
            .find(|p| pull_node_id(p.id) == node_id)?;
        Some((key.clone(), pull.number))
    })
}

/// What a pull request's GraphQL fields are computed from.
struct PullView {
    pull: Pull,
    full_name: String,
    head_oid: Option<String>,
    base_oid: Option<String>,
}

impl PullView {
    fn new(pull: &Pull, repo: &crate::state::Repo) -> PullView {
        PullView {
            pull: pull.clone(),
            full_name: repo.full_name(),
            head_oid: repo.branches.get(&pull.head).cloned(),
            base_oid: repo.branches.get(&pull.base).cloned(),
        }
    }

    /// One field of `RENDERED`'s PullRequest list; `None` for the others.
    fn field(&self, name: &str) -> Option<Value> {
        let p = &self.pull;
        let path = format!("/{}/pull/{}", self.full_name, p.number);
        let ts = |t: Option<chrono::DateTime<Utc>>| t.map(render::ts);
        Some(match name {
            "id" => json!(pull_node_id(p.id)),
            "databaseId" => json!(p.id),
            "number" => json!(p.number),
            "title" => json!(p.title),
            "body" => json!(p.body.clone().unwrap_or_default()),
            "url" | "permalink" => json!(format!("{HTML}{path}")),
            "resourcePath" => json!(path),
            "isDraft" => json!(p.draft),
            "state" => json!(self.state()),
            "closed" => json!(p.state == "closed"),
            "merged" => json!(p.merged),
            "locked" | "isCrossRepository" => json!(false),
            "headRefName" => json!(p.head),
            "baseRefName" => json!(p.base),
            "headRefOid" => json!(self.head_oid),
            "baseRefOid" => json!(self.base_oid),
            "createdAt" => json!(render::ts(p.created_at)),
            "updatedAt" => json!(render::ts(p.updated_at)),
            "closedAt" => json!(ts(p.closed_at)),
            "mergedAt" => json!(ts(p.merged_at)),
            _ => return None,
        })
    }

    /// `PullRequestState`: MERGED wins over CLOSED.
    fn state(&self) -> &'static str {
        match (self.pull.merged, self.pull.state.as_str()) {
            (true, _) => "MERGED",
            (false, "closed") => "CLOSED",
            _ => "OPEN",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::graphql_contract::MARK_READY;
    use crate::state::Installation;

    /// A state with `acme/widgets` installed as 7, `acme/other` not
    /// installed, and a draft pull request #n in each; returns their node ids.
    fn setup() -> (State, String, String) {
        let mut st = State::new();
        let node = |st: &mut State, name: &str| {
            let key = st.ensure_repo(name);
            let (repo, ids) = st.repo_ids(&key).unwrap();
            repo.commit_file("feature", "a.txt", "a", "a");
            let number = repo.next_number;
            repo.next_number += 1;
            let now = repo.clock.now();
            let pull = Pull {
                id: ids.next(),
                number,
                title: "Feature".into(),
                body: None,
                head: "feature".into(),
                base: "main".into(),
                state: "open".into(),
                draft: true,
                merged: false,
                mergeable: true,
                merged_by: None,
                merge_commit_sha: None,
                author: "alice".into(),
                created_at: now,
                updated_at: now,
                closed_at: None,
                merged_at: None,
            };
            let id = pull.id;
            repo.pulls.insert(number, pull);
            (key, pull_node_id(id))
        };
        let (key, mine) = node(&mut st, "acme/widgets");
        let (_, theirs) = node(&mut st, "acme/other");
        st.installations.insert(
            7,
            Installation {
                id: 7,
                account: "acme".into(),
                repos: [key].into_iter().collect(),
                ..Installation::default()
            },
        );
        (st, mine, theirs)
    }

    /// `POST /graphql` as installation 7, past the pipeline's auth.
    fn request(body: Value) -> Req {
        Req {
            method: "POST".into(),
            path: "/graphql".into(),
            query: BTreeMap::new(),
            params: HashMap::new(),
            body,
            caller: Some(Caller::Installation(7)),
            base: "http://fake".into(),
            storage: "http://storage".into(),
        }
    }

    fn call(st: &mut State, body: Value) -> Value {
        let reply = graphql(st, &request(body)).unwrap_or_else(|e| e);
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        reply.body.unwrap()
    }

    fn draft(st: &State) -> bool {
        st.repos["acme/widgets"].pulls[&1].draft
    }

    #[test]
    fn marks_a_draft_ready_and_answers_the_selection() {
        let (mut st, id, _) = setup();
        let body = call(
            &mut st,
            json!({"query": MARK_READY, "variables": {"id": id}}),
        );
        assert_eq!(
            body,
            json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"number": 1, "isDraft": false}}}})
        );
        assert!(!draft(&st));
        assert!(st.violations.is_empty(), "{:?}", st.violations);
        // Again: already ready, still a success.
        let body = call(
            &mut st,
            json!({"query": MARK_READY, "variables": {"id": id}}),
        );
        assert_eq!(
            body["data"]["markPullRequestReadyForReview"]["pullRequest"]["isDraft"],
            false
        );
    }

    #[test]
    fn renders_aliases_typename_and_urls() {
        let (mut st, id, _) = setup();
        let q = "mutation($id: ID!) { r: markPullRequestReadyForReview(input: {pullRequestId: $id, clientMutationId: \"c1\"}) { __typename clientMutationId pullRequest { id url state n: number } } }";
        let body = call(&mut st, json!({"query": q, "variables": {"id": id}}));
        assert_eq!(
            body["data"]["r"],
            json!({"__typename": "MarkPullRequestReadyForReviewPayload", "clientMutationId": "c1",
                   "pullRequest": {"id": id, "url": "https://github.com/acme/widgets/pull/1", "state": "OPEN", "n": 1}})
        );
    }

    #[test]
    fn node_ids_agree_with_the_rest_rendering() {
        let (st, id, _) = setup();
        let repo = &st.repos["acme/widgets"];
        let rest = render::pull(&st, "http://fake", repo, &repo.pulls[&1]);
        assert_eq!(rest["node_id"], json!(id));
        assert_eq!(rest["html_url"], "https://github.com/acme/widgets/pull/1");
    }

    #[test]
    fn unknown_or_foreign_node_ids_are_not_found() {
        let (mut st, _, theirs) = setup();
        for id in ["PR_nope", theirs.as_str()] {
            let body = call(
                &mut st,
                json!({"query": MARK_READY, "variables": {"id": id}}),
            );
            assert_eq!(
                body,
                json!({"data": {"markPullRequestReadyForReview": null}, "errors": [{
                    "type": "NOT_FOUND", "path": ["markPullRequestReadyForReview"],
                    "locations": [{"line": 1, "column": 32}],
                    "message": format!("Could not resolve to a node with the global id of '{id}'")}]})
            );
        }
        assert!(st.repos["acme/other"].pulls[&1].draft);
        assert!(st.violations.is_empty());
    }

    #[test]
    fn contract_mismatches_are_violations_and_graphql_errors() {
        let cases = [
            MARK_READY.replace("pullRequestId:", "pullRequestNumber:"),
            MARK_READY.replace("ID!", "Int!"),
            MARK_READY.replace("isDraft", "draft"),
            MARK_READY.replace("pullRequestId: $id", "pullRequestId: $pr"),
        ];
        for q in &cases {
            let (mut st, id, _) = setup();
            let body = call(&mut st, json!({"query": q, "variables": {"id": id}}));
            assert!(body.get("data").is_none(), "{q}: {body}");
            assert!(!body["errors"].as_array().unwrap().is_empty(), "{q}");
            assert!(!st.violations.is_empty(), "{q}");
            assert!(
                st.violations
                    .iter()
                    .all(|v| v.starts_with("graphql contract: ")),
                "{:?}",
                st.violations
            );
            assert!(draft(&st), "{q}: nothing ran");
        }
    }

    #[test]
    fn missing_variable_is_a_violation() {
        let (mut st, _, _) = setup();
        let body = call(&mut st, json!({"query": MARK_READY}));
        assert_eq!(
            body["errors"][0]["message"],
            "Variable $id of type ID! was provided invalid value"
        );
        assert_eq!(
            st.violations,
            ["graphql contract: MarkReady: Variable $id of type ID! was provided invalid value"]
        );
    }

    #[test]
    fn gaps_of_the_fake_are_reported_apart() {
        let (mut st, id, _) = setup();
        let q = MARK_READY.replace("number isDraft", "number reviewDecision");
        let body = call(&mut st, json!({"query": q, "variables": {"id": id}}));
        assert_eq!(
            body["errors"][0]["message"],
            "fakehub does not answer PullRequest.reviewDecision"
        );
        assert!(st.violations[0].starts_with("graphql: not implemented by fakehub: "));
        assert!(draft(&st));
    }

    #[test]
    fn malformed_requests() {
        let (mut st, id, _) = setup();
        let body = call(&mut st, json!({"variables": {"id": id}}));
        assert_eq!(
            body["errors"][0]["message"],
            "A query attribute must be specified and must be a string."
        );
        let body = call(&mut st, json!({"query": "mutation {"}));
        assert!(body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error"));
        let body = call(
            &mut st,
            json!({"query": MARK_READY, "variables": {"id": id}, "operationName": "Other"}),
        );
        assert_eq!(body["errors"][0]["message"], "No operation named \"Other\"");
        // Variables as a JSON string, as graphql-ruby also accepts.
        let vars = json!({"id": id}).to_string();
        let body = call(
            &mut st,
            json!({"query": MARK_READY, "variables": vars, "operationName": "MarkReady"}),
        );
        assert_eq!(
            body["data"]["markPullRequestReadyForReview"]["pullRequest"]["isDraft"],
            false
        );
        assert_eq!(st.violations.len(), 3, "{:?}", st.violations);
    }

    #[test]
    fn every_rendered_field_is_in_the_contract_and_answered() {
        let (st, _, _) = setup();
        let repo = &st.repos["acme/widgets"];
        let view = PullView::new(&repo.pulls[&1], repo);
        for (ty, fields) in RENDERED {
            for f in *fields {
                assert!(
                    contract::schema().field(ty, f).is_some(),
                    "{ty}.{f} not in the subset"
                );
                if *ty == "PullRequest" {
                    assert!(view.field(f).is_some(), "{f} not rendered");
                }
            }
        }
    }

    #[test]
    fn mutations_count_against_the_secondary_limit() {
        let (mut st, id, _) = setup();
        st.secondary.per_minute = 1;
        call(
            &mut st,
            json!({"query": MARK_READY, "variables": {"id": id}}),
        );
        let body = json!({"query": MARK_READY, "variables": {"id": id}});
        let reply = graphql(&mut st, &request(body)).unwrap_err();
        assert_eq!(reply.status, 403);
    }
}
