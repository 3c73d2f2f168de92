//! `enqueuePullRequest(input: {pullRequestId, expectedHeadOid, jump,
//! clientMutationId})`: adds a pull request to its base branch's merge
//! queue (GitHub has no REST call for it). The queue itself — the merge
//! group, its checks, the landing — is `merge_queue`'s.
//!
//! Owns: reading the input and answering the selection
//! (`EnqueuePullRequestPayload`, `MergeQueueEntry`), or GitHub's
//! `UNPROCESSABLE` error when the queue refuses the pull request (not
//! mergeable, a required check not passed on its head, a head that is not
//! `expectedHeadOid`, no merge queue on the branch). Must not: decide
//! what the queue accepts (`merge_queue::enqueue` does).

use serde_json::{json, Map, Value};

use super::{input_pull, select, PullView};
use crate::graphql_contract::Field;
use crate::merge_queue::{self, QueueEntry};
use crate::render;
use crate::routes::Req;
use crate::state::State;

pub(super) fn enqueue(
    st: &mut State,
    req: &Req,
    (inst, f, vars): (u64, &Field, &Map<String, Value>),
    errors: &mut Vec<Value>,
) -> Value {
    let Some((input, key, number)) = input_pull(st, (inst, f, vars), errors) else {
        return Value::Null;
    };
    let expected = input["expectedHeadOid"].as_str();
    let actor = req.actor(st);
    let (entry, position) = match merge_queue::enqueue(st, req.at(&key), number, expected, &actor) {
        Ok(done) => done,
        Err(message) => {
            errors.push(unprocessable(f, &message));
            return Value::Null;
        }
    };
    let repo = &st.repos[&key];
    let view = PullView::new(&repo.pulls[&number], repo);
    let queued = repo.merge_queue.iter().any(|e| e.id == entry.id);
    let mutation_id = input
        .get("clientMutationId")
        .cloned()
        .unwrap_or(Value::Null);
    select(
        f,
        "EnqueuePullRequestPayload",
        &|sub: &Field| match sub.name.as_str() {
            "clientMutationId" => mutation_id.clone(),
            "mergeQueueEntry" => select(sub, "MergeQueueEntry", &|e: &Field| {
                entry_field(&entry, position, queued, &view, e)
            }),
            _ => Value::Null,
        },
    )
}

fn entry_field(
    entry: &QueueEntry,
    position: usize,
    queued: bool,
    view: &PullView,
    f: &Field,
) -> Value {
    match f.name.as_str() {
        "id" => json!(format!("MQE_fake{}", entry.id)),
        "position" => json!(position),
        // Its checks are requested on the merge group at once; an entry
        // that already left the queue (no check was required) merged.
        "state" => json!(if queued {
            "AWAITING_CHECKS"
        } else {
            "MERGEABLE"
        }),
        "enqueuedAt" => json!(render::ts(entry.enqueued_at)),
        "pullRequest" => select(f, "PullRequest", &|p: &Field| {
            view.field(&p.name).unwrap_or(Value::Null)
        }),
        _ => Value::Null,
    }
}

/// GitHub's error for a mutation it will not carry out.
fn unprocessable(f: &Field, message: &str) -> Value {
    json!({
        "type": "UNPROCESSABLE",
        "path": [f.key()],
        "locations": [{"line": f.pos.line, "column": f.pos.column}],
        "message": message,
    })
}
