//! Wake-ups across replicas: a commit on one replica wakes the loops of
//! the others that wait on what it wrote (PostgreSQL's `LISTEN`/`NOTIFY`).
//!
//! Owns: the channel and its payload ([`Wakes`]), the `NOTIFY` the writer
//! adds to a group commit, and the listening connection that turns what it
//! hears into in-process wakes ([`WakeTargets`]).
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
//! - **The payload names the loops**, one letter each (`d` deliveries,
//!   `e` effects, `r` runs), not rows or installations: each loop reads
//!   its queue again anyway, and a letter a replica does not know, or an
//!   empty payload, wakes all its loops (a newer replica beside an older).
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

/// Which loops a commit concerns: a set of one bit per loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wakes(u8);

impl Wakes {
    pub const NONE: Wakes = Wakes(0);
    /// A delivery recorded: the processors.
    pub const DELIVERIES: Wakes = Wakes(1);
    /// Effects stored, or a rate-limit pause learned: the executors.
    pub const EFFECTS: Wakes = Wakes(2);
    /// An attempt queued or moved on (cancelled, started, ended): the run
    /// queues.
    pub const RUNS: Wakes = Wakes(4);
    const ALL: Wakes = Wakes(7);
    const LETTERS: [(Wakes, char); 3] = [
        (Wakes::DELIVERIES, 'd'),
        (Wakes::EFFECTS, 'e'),
        (Wakes::RUNS, 'r'),
    ];

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn with(self, other: Wakes) -> Wakes {
        Wakes(self.0 | other.0)
    }

    fn contains(self, other: Wakes) -> bool {
        self.0 & other.0 == other.0
    }

    /// The `NOTIFY` that tells the other replicas, with its `;`, to run
    /// before `COMMIT`; empty when there is nothing to tell.
    pub(super) fn notify_sql(self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let letters: String = Wakes::LETTERS
            .iter()
            .filter(|(w, _)| self.contains(*w))
            .map(|(_, c)| c)
            .collect();
        format!("NOTIFY {CHANNEL}, '{letters}'; ")
    }

    /// What a payload asks to wake; all loops for one this replica cannot
    /// read (empty, or from a newer replica).
    fn parse(payload: &str) -> Wakes {
        let mut wakes = Wakes::NONE;
        for c in payload.chars() {
            match Wakes::LETTERS.iter().find(|(_, l)| *l == c) {
                Some((w, _)) => wakes = wakes.with(*w),
                None => return Wakes::ALL,
            }
        }
        if wakes.is_empty() {
            Wakes::ALL
        } else {
            wakes
        }
    }
}

/// The in-process wakes of this replica's loops. Held weakly: the loops
/// own them, and the listener stops once they are all gone.
pub struct WakeTargets {
    /// The processor's.
    pub deliveries: Weak<Notify>,
    /// The executor's.
    pub effects: Weak<Notify>,
    /// The run queue's.
    pub runs: Weak<Notify>,
}

impl WakeTargets {
    fn each(&self) -> [(Wakes, &Weak<Notify>); 3] {
        [
            (Wakes::DELIVERIES, &self.deliveries),
            (Wakes::EFFECTS, &self.effects),
            (Wakes::RUNS, &self.runs),
        ]
    }

    fn gone(&self) -> bool {
        self.each().iter().all(|(_, n)| n.strong_count() == 0)
    }

    /// One wake for each loop `wakes` names: a loop woken while it works
    /// looks again once when it is done, however many commits it missed.
    fn wake(&self, wakes: Wakes) {
        for (wake, notify) in self.each() {
            if wakes.contains(wake) {
                if let Some(notify) = notify.upgrade() {
                    notify.notify_one();
                }
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
                    targets.wake(Wakes::ALL);
                    (lost, wait) = (false, FIRST_RETRY);
                }
                match relay(&mut client, to.writer_pid, targets) {
                    Ok(()) => return,
                    Err(why) => why,
                }
            }
            Err(e) => e.to_string(),
        };
        if !lost {
            warn!(error = %why, "lost the connection that hears other replicas' wake-ups; polling until it is back");
            lost = true;
        }
        pause(wait, targets);
        wait = (wait * 2).min(LONGEST_RETRY);
    }
}

fn connect(url: &str) -> Result<postgres::Client, postgres::Error> {
    let mut config: postgres::Config = url.parse()?;
    config.application_name(LISTENER_NAME);
    config.connect(postgres::NoTls)
}

/// Turns the notifications `client` hears into wakes until the targets are
/// gone (`Ok`) or the connection fails (`Err`, why).
fn relay(client: &mut postgres::Client, own: i32, targets: &WakeTargets) -> Result<(), String> {
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .map_err(|e| e.to_string())?;
    let heard = |n: postgres::Notification| {
        if n.process_id() == own {
            Wakes::NONE
        } else {
            Wakes::parse(n.payload())
        }
    };
    while !targets.gone() {
        targets.wake(next_wakes(&mut client.notifications(), &heard)?);
        if client.is_closed() {
            return Err("the server closed the connection".into());
        }
    }
    Ok(())
}

/// What the next notification asks, with everything already here besides
/// (a burst is one wake); nothing when none came within [`CHECK_EVERY`].
fn next_wakes(
    notes: &mut postgres::Notifications<'_>,
    heard: &impl Fn(postgres::Notification) -> Wakes,
) -> Result<Wakes, String> {
    let mut wakes = match notes.timeout_iter(CHECK_EVERY).next() {
        Ok(first) => first.map_or(Wakes::NONE, heard),
        Err(e) => return Err(e.to_string()),
    };
    let mut pending = notes.iter();
    loop {
        match pending.next() {
            Ok(Some(n)) => wakes = wakes.with(heard(n)),
            Ok(None) => return Ok(wakes),
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
    use super::{Wakes, CHANNEL};
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

    fn delivery(id: &str, disposition: Disposition) -> NewDelivery {
        NewDelivery {
            delivery_id: DeliveryId(id.to_owned()),
            event: "push".into(),
            action: None,
            installation: Some(InstallationId(7)),
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
                db.wake(Wakes::DELIVERIES);
                db.wake(Wakes::EFFECTS);
                db.wake(Wakes::DELIVERIES);
                Ok::<_, StoreError>(())
            };
            store.write(marks).await.unwrap();
            let undone = store
                .write(|db| -> Result<(), StoreError> {
                    db.wake(Wakes::RUNS);
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
        assert_eq!(heard, ["de", "d"]);
    }

    #[test]
    fn a_commit_names_the_loops_it_concerns_and_an_unknown_payload_wakes_all() {
        assert_eq!(Wakes::NONE.notify_sql(), "");
        let both = Wakes::DELIVERIES.with(Wakes::RUNS);
        assert_eq!(both.notify_sql(), "NOTIFY taskgate_wake, 'dr'; ");
        assert_eq!(Wakes::parse("dr"), both);
        assert_eq!(Wakes::parse("e"), Wakes::EFFECTS);
        assert_eq!(Wakes::parse(""), Wakes::ALL);
        assert_eq!(Wakes::parse("dx"), Wakes::ALL);
    }
}
