//! The echo engine: the webhooks GitHub sends for every write, queued while
//! the write happens and delivered in order by one background task.
//!
//! It owns the *queue* and its observation, not the payloads (`payloads`)
//! nor the choice of webhooks per write (`emit`). A write calls
//! [`queue`] under the state lock with a payload built from the state right
//! after it, as GitHub snapshots it; the pipeline (and every `RepoHandle`
//! action) then calls [`flush`], still under the lock, which checks each
//! payload against GitHub's webhook schemas (a mismatch is a contract
//! violation, `webhook <event>.<action>: ...`) and feeds the channel. The
//! task drains it one delivery at a time with `webhooks::deliver_logged`,
//! so every echo is also in the App's delivery log, then counts it.
//!
//! Echoes are on once the App's webhook is set (`FakeGitHub::set_app_webhook`)
//! and not silenced, only for repositories with an installation, and
//! only the events that installation is subscribed to. In
//! the shuffle mode (`shuffle`, `FakeGitHub::shuffle_deliveries`) the task
//! sends them by a due time drawn within a window, not in queue order, and
//! sends some twice.

use std::sync::{Arc, OnceLock, Weak};

use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::openapi;
use crate::shuffle::{Queued, Waiting};
use crate::state::{PendingDelivery, State};
use crate::Shared;

const WEBHOOK_SUBSET: &str = include_str!("../fixtures/openapi/webhooks-subset.json");

/// Counters of the echo engine: the fake is quiet when `queued == delivered`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoStats {
    /// Echoes queued so far; grows only when a write happens.
    pub queued: u64,
    /// Echoes delivered and answered (or failed to connect).
    pub delivered: u64,
    /// Queued echoes whose sender is the App's bot.
    pub from_app: u64,
    /// Queued echoes whose sender is a person.
    pub from_people: u64,
    /// Second copies sent by the shuffle mode (counted in `queued` too).
    pub duplicated: u64,
}

/// One delivered echo, in delivery order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoRecord {
    pub event: String,
    pub action: Option<String>,
    /// The `sender.login` of the payload.
    pub sender: String,
    /// The receiver's HTTP status; 0 when no answer came.
    pub status: u16,
    /// A second copy the shuffle mode sent (same delivery id, as GitHub
    /// redelivers): a test counting the writes leaves these out.
    pub redelivery: bool,
}

/// The engine's part of the state.
#[derive(Default)]
pub struct Echoes {
    /// Set by `FakeGitHub::silence_echoes`: nothing is queued any more.
    pub silenced: bool,
    /// Built by the current write, not yet handed to the task.
    pub pending: Vec<(String, Value)>,
    pub stats: EchoStats,
    pub log: Vec<EchoRecord>,
    /// Out of order and twice (`FakeGitHub::shuffle_deliveries`).
    pub shuffle: Option<crate::shuffle::Shuffle>,
}

/// Whether a write to repository `key` is echoed now.
pub fn on(st: &State, key: &str) -> bool {
    st.app_webhook.is_some()
        && !st.echo.silenced
        && st.installations.values().any(|i| i.repos.contains(key))
}

/// Whether the installation of repository `key` is subscribed to `event`
/// (the manifest's events unless a test set others with
/// `FakeGitHub::subscribe`): GitHub sends an App only the events its
/// installation accepted.
///
/// Some events reach only an installation holding a permission: GitHub
/// sends `merge_group` only to an App with at least read access to
/// "Merge queues" (`merge_queues`), whatever it subscribed to.
pub fn subscribed(st: &State, key: &str, event: &str) -> bool {
    st.installations
        .values()
        .filter(|i| i.repos.contains(key))
        .any(|i| {
            let permitted = match (event, &i.permissions) {
                ("merge_group", Some(granted)) => granted["merge_queues"].is_string(),
                _ => true,
            };
            permitted
                && i.events
                    .as_ref()
                    .is_none_or(|e| e.iter().any(|x| x == event))
        })
}

/// Queues one webhook of the current write (call only when [`on`]).
pub fn queue(st: &mut State, event: &str, payload: Value) {
    st.echo.pending.push((event.to_string(), payload));
}

/// Drops what a write that failed may have queued.
pub fn discard(st: &mut State) {
    st.echo.pending.clear();
}

/// Validates and hands the current write's echoes to the delivery task.
pub(crate) fn flush(shared: &Shared, st: &mut State) {
    let pending = std::mem::take(&mut st.echo.pending);
    let Some((url, secret)) = st.app_webhook.clone() else {
        return;
    };
    let bot = st.bot_login();
    for (event, payload) in pending {
        let action = action_of(&payload);
        if let Err(errors) = validate(&event, action.as_deref(), &payload) {
            let name = format!("{event}.{}", action.as_deref().unwrap_or("-"));
            for e in errors.iter().take(5) {
                let msg = format!("webhook {name}: {e}");
                tracing::warn!("contract violation: {msg}");
                st.violations.push(msg);
            }
        }
        st.echo.stats.queued += 1;
        if sender_of(&payload) == bot {
            st.echo.stats.from_app += 1;
        } else {
            st.echo.stats.from_people += 1;
        }
        let attempt = PendingDelivery {
            url: url.clone(),
            secret: secret.clone(),
            event,
            guid: crate::state::random_hex(32),
            payload,
        };
        let now = clock(st);
        let copies = match st.echo.shuffle.as_mut() {
            Some(shuffle) => shuffle.copies(attempt, now),
            None => vec![Queued {
                attempt,
                due: None,
                duplicate: false,
            }],
        };
        for copy in copies {
            if copy.duplicate {
                st.echo.stats.queued += 1;
                st.echo.stats.duplicated += 1;
            }
            // The task lives as long as the fake: a send cannot fail before.
            let _ = shared.echo_tx.send(copy);
        }
    }
}

/// The clock due times are drawn and compared on: the shuffle mode's
/// compressed one, else GitHub's.
fn clock(st: &State) -> std::time::Instant {
    match st.echo.shuffle.as_ref() {
        Some(shuffle) => shuffle.now(st.clock.ahead()),
        None => st.clock.instant(),
    }
}

fn action_of(payload: &Value) -> Option<String> {
    payload["action"].as_str().map(str::to_string)
}

fn sender_of(payload: &Value) -> String {
    payload["sender"]["login"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The channel the task drains; the sender goes into `Shared`.
pub(crate) fn channel() -> (UnboundedSender<Queued>, UnboundedReceiver<Queued>) {
    tokio::sync::mpsc::unbounded_channel()
}

/// Starts the delivery task: one echo at a time, in queue order, or by
/// due time in the shuffle mode. It holds the fake weakly and ends with it
/// (the channel closes).
pub(crate) fn spawn(shared: Weak<Shared>, mut rx: UnboundedReceiver<Queued>) {
    tokio::spawn(async move {
        let mut waiting = Waiting::default();
        loop {
            let next = match next_due(&shared, &mut waiting, &mut rx).await {
                Some(next) => next,
                None => return,
            };
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let Queued {
                attempt, duplicate, ..
            } = next;
            let event = attempt.event.clone();
            let action = action_of(&attempt.payload);
            let sender = sender_of(&attempt.payload);
            // A second copy is logged as GitHub logs a redelivery.
            let (status, _) = crate::webhooks::deliver_logged(&shared, attempt, duplicate).await;
            {
                let mut st = shared.lock();
                st.echo.stats.delivered += 1;
                st.echo.log.push(EchoRecord {
                    event,
                    action,
                    sender,
                    status,
                    redelivery: duplicate,
                });
            }
            shared.echo_done.notify_waiters();
        }
    });
}

/// The next echo to send: the first queued, or in the shuffle mode the
/// first due (waiting, compressed, while newer ones may overtake it).
/// `None` once the fake is gone.
async fn next_due(
    shared: &Weak<Shared>,
    waiting: &mut Waiting,
    rx: &mut UnboundedReceiver<Queued>,
) -> Option<Queued> {
    loop {
        while let Ok(queued) = rx.try_recv() {
            let now = clock(&shared.upgrade()?.lock());
            waiting.push(queued, now);
        }
        if waiting.is_empty() {
            let queued = rx.recv().await?;
            let now = clock(&shared.upgrade()?.lock());
            waiting.push(queued, now);
            continue;
        }
        let now = clock(&shared.upgrade()?.lock());
        match waiting.pop_due(now) {
            Ok(next) => return Some(next),
            Err(wait) => {
                tokio::select! {
                    queued = rx.recv() => {
                        let now = clock(&shared.upgrade()?.lock());
                        waiting.push(queued?, now);
                    }
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Waits until every queued echo was delivered and answered.
///
/// # Panics
/// After 30 seconds, with the counters.
pub(crate) async fn settled(shared: &Arc<Shared>) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let notified = shared.echo_done.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let stats = shared.lock().echo.stats;
        if stats.queued == stats.delivered {
            return;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            let stats = shared.lock().echo.stats;
            panic!("fakehub: echoes not settled after 30 s: {stats:?}");
        }
    }
}

/// GitHub's webhook schemas (`fixtures/openapi/webhooks-subset.json`).
fn schemas() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(WEBHOOK_SUBSET).expect("webhooks-subset.json is JSON"))
}

/// Checks a payload against the schema of `<event>-<action>`; an event the
/// subset lacks is a violation too (fakehub must not send what it cannot
/// check).
pub fn validate(event: &str, action: Option<&str>, payload: &Value) -> Result<(), Vec<String>> {
    let key = match action {
        Some(a) => format!("{event}-{a}"),
        None => event.to_string(),
    }
    .replace('_', "-");
    let doc = schemas();
    let Some(schema) = doc.pointer(&format!(
        "/webhooks/{key}/post/requestBody/content/application~1json/schema"
    )) else {
        return Err(vec![format!("no schema for webhook {key} in the subset")]);
    };
    let mut errors = Vec::new();
    openapi::validate_in(doc, schema, payload, "payload", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{payloads, FakeGitHub};

    /// The payloads tests and `taskgate demo` build and deliver themselves
    /// share the echoes' builders: they keep GitHub's schemas too.
    #[tokio::test]
    async fn the_public_payload_builders_satisfy_githubs_schemas() {
        let gh = FakeGitHub::start().await;
        let repo = gh.install(7, "acme/widgets");
        let n = repo.create_issue("Bug", "b", "alice");
        let c = repo.add_comment(n, "hi", "bob");
        repo.with_file("feature", "a.txt", "a");
        let pr = repo.create_pull("feature", "main", "F", "alice");
        repo.add_labels(pr, &["ship"], "octocat");
        let run = repo.add_workflow_run("ci.yml", "main", None);
        let built = [
            ("issues", payloads::issues_opened(&repo, n)),
            (
                "issue_comment",
                payloads::issue_comment_created(&repo, n, &c),
            ),
            ("push", payloads::push(&repo, "feature", None, "alice")),
            (
                "pull_request",
                payloads::pull_request("synchronize", &repo, pr),
            ),
            (
                "pull_request",
                payloads::pull_request_labeled(&repo, pr, "ship", "bob"),
            ),
            (
                "workflow_run",
                payloads::workflow_run("in_progress", &repo, run),
            ),
        ];
        for (event, payload) in built {
            let action = payload["action"].as_str();
            assert_eq!(super::validate(event, action, &payload), Ok(()), "{event}");
        }
        let wrong = json!({"action": "opened"});
        let errors = super::validate("issues", Some("opened"), &wrong).unwrap_err();
        assert!(errors.contains(&"payload.issue: required property is missing".to_string()));
        let unknown = super::validate("star", Some("created"), &wrong).unwrap_err();
        assert_eq!(
            unknown,
            ["no schema for webhook star-created in the subset"]
        );
    }
}
