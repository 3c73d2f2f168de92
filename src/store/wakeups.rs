//! Wake-ups across replicas: a commit on one replica wakes the loops of
//! the others that wait on what it wrote (PostgreSQL's `LISTEN`/`NOTIFY`).
//!
//! Owns: the channel and its payload ([`Mark`], [`notify_sql`]), the
//! `NOTIFY` the writer adds to a group commit, and the listening
//! connection that turns what it hears into in-process wakes
//! ([`WakeTargets`]).
//! Must not: decide what a loop does when woken, or be needed for
//! correctness: every loop still polls, and a wake-up lost (a dropped
//! connection, a replica that starts late) costs latency, never work.
//!
//! Ideas a reader needs:
//! - **One `NOTIFY` per group commit**, not one per delivery: the jobs of a
//!   batch mark what they wrote (`Db::wake`), the writer sends the union
//!   in the same round trip as its `COMMIT`. PostgreSQL delivers it only
//!   if that commit succeeds, and only after it, so a woken replica reads
//!   the rows. A job undone (its savepoint rolled back) takes its marks
//!   back.
//! - **The payload names the loops** (`e` effects, `r` runs), and for
//!   deliveries their installations (`d31`; `d` alone past 32 of them):
//!   a replica's processor is woken only for the installations whose
//!   deliveries it decides (`WakeTargets::decides`), so replicas holding
//!   none of a busy installation do not read the inbox again after every
//!   commit. The executors and run queues take work of any installation.
//!   A word a replica does not know, or an empty payload, wakes all its
//!   loops (a newer replica beside an older).
//! - **One listening connection per replica**, on a thread of its own (the
//!   synchronous client must not run on tokio's). What arrives together is
//!   folded into one wake per loop; a replica's own notifications are
//!   skipped (its loops were woken in process). When the connection drops
//!   it reconnects with a doubling wait, says so once, and wakes every loop
//!   when it is back (what was sent meanwhile was not heard). It stops when
//!   the loops it wakes are gone.
//! - SQLite has one process: nothing is sent, nothing listens.

use std::sync::{Arc, Weak};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use tokio::sync::Notify;
use tracing::{info, warn};

use taskgate_core::ids::InstallationId;

/// The channel every replica of a database listens on.
const CHANNEL: &str = "taskgate_wake";

/// How the listening connection names itself (`pg_stat_activity`), so an
/// operator can tell it from the writer's and the reader's.
pub const LISTENER_NAME: &str = "taskgate wake-ups";

/// How often a listener with nothing to hear looks whether its loops are
/// gone (a server stopped in a test process).
const CHECK_EVERY: Duration = Duration::from_millis(500);

/// The first wait before connecting again after the connection dropped,
/// and the longest (the loops poll meanwhile).
const FIRST_RETRY: Duration = Duration::from_millis(100);
const LONGEST_RETRY: Duration = Duration::from_secs(10);

/// What a write concerns, marked by the statement that writes it
/// ([`super::db::Db::wake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A delivery left to the processor: the processor of the replica
    /// deciding this installation's deliveries.
    Delivery(Option<InstallationId>),
    /// Effects stored, or a rate-limit pause learned: the executors.
    Effects,
    /// An attempt queued or moved on (cancelled, started, ended): the run
    /// queues.
    Runs,
}

/// Installations named one by one in a payload; past these, a commit says
/// "deliveries of any installation" (a payload holds 8,000 bytes).
const MOST_NAMED: usize = 32;

/// The `NOTIFY` that tells the other replicas what a commit's `marks`
/// concern, with its `;`, to run before `COMMIT`; empty when there is
/// nothing to tell. The payload is words: `e` (effects), `r` (runs), and
/// `d<installation>` for each installation with deliveries (`d-`
/// without one, `d` alone for any).
pub(super) fn notify_sql(marks: &[Mark]) -> String {
    if marks.is_empty() {
        return String::new();
    }
    let mut installations: Vec<Option<InstallationId>> = marks
        .iter()
        .filter_map(|m| match m {
            Mark::Delivery(i) => Some(*i),
            _ => None,
        })
        .collect();
    installations.sort_unstable();
    installations.dedup();
    let mut words: Vec<String> = if installations.len() > MOST_NAMED {
        vec!["d".into()]
    } else {
        installations
            .iter()
            .map(|i| i.map_or("d-".into(), |i| format!("d{}", i.get())))
            .collect()
    };
    for (mark, word) in [(Mark::Effects, "e"), (Mark::Runs, "r")] {
        if marks.contains(&mark) {
            words.push(word.into());
        }
    }
    format!("NOTIFY {CHANNEL}, '{}'; ", words.join(" "))
}

/// What the notifications heard since the last wake ask.
#[derive(Debug, Default, PartialEq, Eq)]
struct Heard {
    /// Deliveries of any installation (or a payload this replica cannot
    /// read: a newer replica beside an older one).
    any_delivery: bool,
    installations: Vec<Option<InstallationId>>,
    effects: bool,
    runs: bool,
}

impl Heard {
    /// Adds what `payload` asks; an empty payload or a word this replica
    /// does not know wakes every loop.
    fn add(&mut self, payload: &str) {
        let everything = |heard: &mut Heard| {
            (heard.any_delivery, heard.effects, heard.runs) = (true, true, true);
        };
        if payload.trim().is_empty() {
            return everything(self);
        }
        for word in payload.split(' ') {
            match word {
                "e" => self.effects = true,
                "r" => self.runs = true,
                "d" => self.any_delivery = true,
                "d-" => self.installations.push(None),
                _ => match word.strip_prefix('d').and_then(|n| n.parse().ok()) {
                    Some(id) => self.installations.push(Some(InstallationId::new(id))),
                    None => return everything(self),
                },
            }
        }
    }
}

/// The in-process wakes of this replica's loops. Held weakly: the loops
/// own them, and the listener stops once they are all gone.
pub struct WakeTargets {
    /// The processor's.
    pub deliveries: Weak<Notify>,
    /// Whether this replica decides an installation's deliveries (it holds
    /// its lease, or may): the processor is woken only for those, so a
    /// replica holding none of a busy cluster's installations does not
    /// read the inbox again after every other replica's commit.
    pub decides: Box<dyn Fn(Option<InstallationId>) -> bool + Send>,
    /// The executor's.
    pub effects: Weak<Notify>,
    /// The run queue's.
    pub runs: Weak<Notify>,
}

impl WakeTargets {
    fn gone(&self) -> bool {
        [&self.deliveries, &self.effects, &self.runs]
            .iter()
            .all(|n| n.strong_count() == 0)
    }

    /// One wake for each loop `heard` concerns: a loop woken while it
    /// works looks again once when it is done, however many commits it
    /// missed.
    fn wake(&self, heard: &Heard) {
        let deliveries =
            heard.any_delivery || heard.installations.iter().any(|i| (self.decides)(*i));
        for (wake, notify) in [
            (deliveries, &self.deliveries),
            (heard.effects, &self.effects),
            (heard.runs, &self.runs),
        ] {
            if let Some(notify) = notify.upgrade().filter(|_| wake) {
                notify.notify_one();
            }
        }
    }
}

/// Where a PostgreSQL store's listener connects, and whose notifications
/// are its own.
pub(super) struct ListenTo {
    pub url: String,
    /// The backend process of this store's writer connection, which sends
    /// this replica's notifications.
    pub writer_pid: i32,
}

/// Starts the listener thread of `to`, waking `targets`.
pub(super) fn spawn_listener(to: Arc<ListenTo>, targets: WakeTargets) {
    std::thread::Builder::new()
        .name("taskgate-wakeups".into())
        .spawn(move || listen(&to, &targets))
        .expect("spawn the wake-up listener thread");
}

/// Listens until the targets are gone, connecting again whenever the
/// connection is lost.
fn listen(to: &ListenTo, targets: &WakeTargets) {
    let (mut lost, mut wait) = (false, FIRST_RETRY);
    while !targets.gone() {
        let why = match connect(&to.url) {
            Ok(mut client) => {
                if lost {
                    info!("hearing other replicas' wake-ups again");
                    // Whatever was sent while this replica was deaf.
                    let mut all = Heard::default();
                    all.add("");
                    targets.wake(&all);
                    (lost, wait) = (false, FIRST_RETRY);
                }
                match relay(&mut client, to.writer_pid, targets) {
                    Ok(()) => return,
                    Err(why) => why,
                }
            }
            Err(why) => why,
        };
        if !lost {
            warn!(error = %why, "lost the connection that hears other replicas' wake-ups; polling until it is back");
            lost = true;
        }
        pause(wait, targets);
        wait = (wait * 2).min(LONGEST_RETRY);
    }
}

fn connect(url: &str) -> Result<postgres::Client, String> {
    let target = super::pg_tls::PgTarget::parse(url).map_err(|e| e.to_string())?;
    let mut config = target.config.clone();
    config.application_name(LISTENER_NAME);
    config
        .connect(target.tls.clone())
        .map_err(|e| target.explain(&e))
}

/// Turns the notifications `client` hears into wakes until the targets are
/// gone (`Ok`) or the connection fails (`Err`, why).
fn relay(client: &mut postgres::Client, own: i32, targets: &WakeTargets) -> Result<(), String> {
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .map_err(|e| e.to_string())?;
    while !targets.gone() {
        let heard = next_heard(&mut client.notifications(), own)?;
        targets.wake(&heard);
        if client.is_closed() {
            return Err("the server closed the connection".into());
        }
    }
    Ok(())
}

/// What the next notification asks, with everything already here besides
/// (a burst is one wake); nothing when none came within [`CHECK_EVERY`].
/// The notifications of this replica's own writer (`own`) are skipped.
fn next_heard(notes: &mut postgres::Notifications<'_>, own: i32) -> Result<Heard, String> {
    let mut heard = Heard::default();
    let mut add = |n: postgres::Notification| {
        if n.process_id() != own {
            heard.add(n.payload());
        }
    };
    match notes.timeout_iter(CHECK_EVERY).next() {
        Ok(first) => first.into_iter().for_each(&mut add),
        Err(e) => return Err(e.to_string()),
    }
    let mut pending = notes.iter();
    loop {
        match pending.next() {
            Ok(Some(n)) => add(n),
            Ok(None) => return Ok(heard),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Waits `wait`, returning early once the targets are gone.
fn pause(wait: Duration, targets: &WakeTargets) {
    let mut left = wait;
    while !left.is_zero() && !targets.gone() {
        let step = left.min(CHECK_EVERY);
        std::thread::sleep(step);
        left -= step;
    }
}

#[cfg(test)]
mod tests {
    use super::{notify_sql, Heard, Mark, CHANNEL, MOST_NAMED};
    use crate::store::{Disposition, NewDelivery, StoreError};
    use taskgate_core::ids::{DeliveryId, InstallationId};

    /// The payloads another replica hears on the channel while `writes`
    /// runs, until none came for a second after it.
    async fn heard_during(url: &str, writes: impl std::future::Future<Output = ()>) -> Vec<String> {
        use postgres::fallible_iterator::FallibleIterator;
        let (ready, listening) = std::sync::mpsc::channel();
        let url = url.to_owned();
        let listener = std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            client.batch_execute(&format!("LISTEN {CHANNEL}")).unwrap();
            ready.send(()).unwrap();
            let mut notes = client.notifications();
            let mut heard = notes.timeout_iter(std::time::Duration::from_secs(1));
            let mut payloads = Vec::new();
            while let Some(n) = heard.next().unwrap() {
                payloads.push(n.payload().to_owned());
            }
            payloads
        });
        listening.recv().unwrap();
        writes.await;
        listener.join().unwrap()
    }

    /// A replica's processor is woken for the deliveries of installations
    /// it decides, or of any; its executor and run queue for theirs.
    #[test]
    fn only_the_loops_concerned_are_woken_and_the_processor_for_its_installations() {
        use futures::FutureExt;
        use std::sync::Arc;
        use tokio::sync::Notify;
        let loops = [(); 3].map(|_| Arc::new(Notify::new()));
        let targets = super::WakeTargets {
            deliveries: Arc::downgrade(&loops[0]),
            decides: Box::new(|i| i == Some(InstallationId::new(31))),
            effects: Arc::downgrade(&loops[1]),
            runs: Arc::downgrade(&loops[2]),
        };
        let woken = || {
            loops
                .each_ref()
                .map(|n| n.notified().now_or_never().is_some())
        };
        for (payload, want) in [
            ("d7 d- r", [false, false, true]),
            ("d7 d31", [true, false, false]),
            ("d e", [true, true, false]),
        ] {
            let mut heard = Heard::default();
            heard.add(payload);
            targets.wake(&heard);
            assert_eq!(woken(), want, "{payload}");
        }
        drop(loops);
        assert!(targets.gone());
    }

    fn delivery(id: &str, disposition: Disposition) -> NewDelivery {
        NewDelivery {
            body_digest: None,
            delivery_id: DeliveryId::new(id.to_owned()),
            event: "push".into(),
            action: None,
            installation: Some(InstallationId::new(7)),
            payload: bytes::Bytes::from_static(b"{}"),
            disposition,
        }
    }

    /// One notification per commit, naming what its kept jobs wrote; none
    /// for a job undone, nor for a delivery the intake settled (no
    /// processor needs it).
    #[tokio::test]
    async fn a_commit_tells_the_other_replicas_once_what_its_kept_jobs_wrote() {
        let held = crate::store::testing::postgres();
        let store = held.store.clone();
        let url = store.listen.as_ref().unwrap().url.clone();
        let heard = heard_during(&url, async {
            let marks = |db: &crate::store::db::Db| {
                db.wake(Mark::Delivery(Some(InstallationId::new(7))));
                db.wake(Mark::Effects);
                db.wake(Mark::Delivery(Some(InstallationId::new(7))));
                Ok::<_, StoreError>(())
            };
            store.write(marks).await.unwrap();
            let undone = store
                .write(|db| -> Result<(), StoreError> {
                    db.wake(Mark::Runs);
                    Err(StoreError::Corrupt("this job fails".into()))
                })
                .await;
            assert!(undone.is_err());
            let settled = Disposition::Settled {
                outcome: "nothing to do".into(),
            };
            store
                .record_delivery(delivery("settled", settled))
                .await
                .unwrap();
            store
                .record_delivery(delivery("pending", Disposition::Pending))
                .await
                .unwrap();
        })
        .await;
        assert_eq!(heard, ["d7 e", "d7"]);
    }

    #[test]
    fn a_commit_names_its_installations_and_an_unknown_payload_wakes_all() {
        let (one, two) = (Some(InstallationId::new(31)), Some(InstallationId::new(7)));
        assert_eq!(notify_sql(&[]), "");
        let marks = [
            Mark::Delivery(one),
            Mark::Runs,
            Mark::Delivery(two),
            Mark::Delivery(one),
            Mark::Delivery(None),
        ];
        assert_eq!(notify_sql(&marks), "NOTIFY taskgate_wake, 'd- d7 d31 r'; ");
        let many: Vec<Mark> = (0..=MOST_NAMED as u64)
            .map(|i| Mark::Delivery(Some(InstallationId::new(i))))
            .chain([Mark::Effects])
            .collect();
        assert_eq!(notify_sql(&many), "NOTIFY taskgate_wake, 'd e'; ");

        let mut heard = Heard::default();
        heard.add("d- d7 d31 r");
        heard.add("e");
        let want = Heard {
            any_delivery: false,
            installations: vec![None, two, one],
            effects: true,
            runs: true,
        };
        assert_eq!(heard, want);
        for unreadable in ["", "d7 x", "dz"] {
            let mut heard = Heard::default();
            heard.add(unreadable);
            assert!(
                heard.any_delivery && heard.effects && heard.runs,
                "{unreadable:?}"
            );
        }
    }
}
