use rusqlite::Connection;

use super::*;
use crate::store::testing::on_both_backends;

fn every_payload(_: &str, _: Option<&str>) -> bool {
    true
}

fn no_payload(_: &str, _: Option<&str>) -> bool {
    false
}

fn delivery(id: &str, payload: &[u8]) -> NewDelivery {
    NewDelivery {
        body_digest: None,
        delivery_id: DeliveryId::new(id),
        event: "issues".into(),
        action: Some("opened".into()),
        installation: Some(InstallationId::new(7)),
        payload: bytes::Bytes::copy_from_slice(payload),
        disposition: Disposition::Pending,
    }
}

fn real_payload() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/webhooks/issues/opened.1.json"
    );
    std::fs::read(path).expect("fixture")
}

/// The codec of each stored payload, in delivery order.
async fn codecs(store: &Store) -> Vec<String> {
    store
        .read(|db| {
            db.query_map(
                "SELECT codec FROM delivery_payloads ORDER BY seq",
                params![],
                |r| r.get(0),
            )
        })
        .await
        .unwrap()
}

/// The seq a delivery is recorded under, which must be new.
async fn record(store: &Store, d: NewDelivery) -> i64 {
    match store.record_delivery(d).await.unwrap() {
        Recorded::New { seq } => seq,
        Recorded::Duplicate => panic!("recorded as a duplicate"),
    }
}

fn of(id: &str, installation: Option<u64>) -> NewDelivery {
    NewDelivery {
        installation: installation.map(InstallationId::new),
        ..delivery(id, b"{}")
    }
}

async fn pending_ids(store: &Store) -> Vec<String> {
    let pending = store.pending_deliveries(10, no_payload).await.unwrap();
    pending
        .into_iter()
        .map(|d| d.delivery_id.into_string())
        .collect()
}

/// A webhook as intake records it: with its body's digest.
fn signed(id: &str, body: &[u8]) -> NewDelivery {
    NewDelivery {
        body_digest: Some(BodyDigest::of(body)),
        ..delivery(id, body)
    }
}

on_both_backends! {
    async fn a_webhook_body_recorded_under_one_delivery_id_is_a_duplicate_under_another(store: Store) {
        let raw = real_payload();
        record(&store, signed("first", &raw)).await;
        let replayed = store.record_delivery(signed("replayed", &raw)).await.unwrap();
        assert_eq!(replayed, Recorded::Duplicate, "the same signed body, a new id");
        assert!(store.delivery("replayed").await.unwrap().is_none(), "nothing recorded");
        // Two copies at once (one writer batch on PostgreSQL): one is recorded.
        let other = br#"{"action":"opened","n":2}"#;
        let (a, b) = tokio::join!(
            store.record_delivery(signed("x", other)),
            store.record_delivery(signed("y", other))
        );
        let mut answers = [a.unwrap(), b.unwrap()].map(|r| matches!(r, Recorded::New { .. }));
        answers.sort();
        assert_eq!(answers, [false, true]);
        // taskgate's own events carry no digest: one payload, two events.
        record(&store, delivery("own-1", b"{}")).await;
        record(&store, delivery("own-2", b"{}")).await;
        assert_eq!(pending_ids(&store).await.len(), 4);
    }

    async fn a_recorded_payload_reads_back_byte_for_byte_and_is_stored_compressed(store: Store) {
        let raw = real_payload();
        store.record_delivery(delivery("a", &raw)).await.unwrap();
        store.record_delivery(delivery("b", b"{}")).await.unwrap();

        let pending = store.pending_deliveries(10, every_payload).await.unwrap();
        assert_eq!(pending.len(), 2);
        assert_eq!(pending[0].payload, raw);
        assert_eq!(pending[1].payload, b"{}");
        assert_eq!(codecs(&store).await, ["lz4-dict1", "none"]);

        let without = store.pending_deliveries(10, no_payload).await.unwrap();
        assert!(without.iter().all(|d| d.payload.is_empty()));
        assert_eq!(without[0].delivery_id, DeliveryId::new("a"));
    }

    async fn a_settled_delivery_is_stored_processed_with_its_payload_and_never_pending(store: Store) {
        let raw = real_payload();
        let settled = NewDelivery {
            disposition: Disposition::Settled {
                outcome: "nothing to do for issues.opened".into(),
            },
            ..delivery("settled", &raw)
        };
        store.record_delivery(settled).await.unwrap();
        store
            .record_delivery(delivery("pending", b"{}"))
            .await
            .unwrap();

        let record = store.delivery("settled").await.unwrap().unwrap();
        assert_eq!(record.status, "processed");
        assert_eq!(
            record.outcome.as_deref(),
            Some("nothing to do for issues.opened")
        );
        let pending = store.pending_deliveries(10, every_payload).await.unwrap();
        let ids: Vec<_> = pending.iter().map(|d| d.delivery_id.as_str()).collect();
        assert_eq!(ids, ["pending"]);
        // Recorded like any other: the payload is kept for the record.
        assert_eq!(codecs(&store).await, ["lz4-dict1", "none"]);
    }

    async fn a_damaged_or_missing_payload_comes_back_empty_and_the_rest_still_read(store: Store) {
        let raw = real_payload();
        let mut seqs = Vec::new();
        for id in ["damaged", "missing", "fine"] {
            seqs.push(record(&store, delivery(id, &raw)).await);
        }
        let (damaged, missing) = (seqs[0], seqs[1]);
        store
            .write(move |db| {
                db.execute(
                    "UPDATE delivery_payloads SET payload = ?2 WHERE seq = ?1",
                    params![damaged, &[1u8, 2, 3, 4][..]],
                )?;
                db.execute("DELETE FROM delivery_payloads WHERE seq = ?1", params![missing])
            })
            .await
            .unwrap();
        let pending = store.pending_deliveries(10, every_payload).await.unwrap();
        let payloads: Vec<_> = pending.iter().map(|d| d.payload.len()).collect();
        assert_eq!(payloads, [0, 0, raw.len()]);
    }

    async fn a_duplicate_delivery_stores_no_second_payload(store: Store) {
        let first = store.record_delivery(delivery("a", b"{\"n\":1}")).await;
        let again = store.record_delivery(delivery("a", b"{\"n\":2}")).await;
        assert!(matches!(first, Ok(Recorded::New { .. })));
        assert_eq!(again.unwrap(), Recorded::Duplicate);
        let pending = store.pending_deliveries(10, every_payload).await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].payload, b"{\"n\":1}");
        assert_eq!(codecs(&store).await.len(), 1);
    }

    async fn deliveries_recorded_in_one_commit_each_get_their_own_seq_and_payload(store: Store) {
        // The writer is held inside a job until every delivery below has
        // reached it, so they are recorded in one commit: on PostgreSQL,
        // by one statement (`inbox::batched`), the second copy of "b" in
        // the same statement included.
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let held = store.clone();
        let hold = tokio::spawn(async move {
            held.write(move |_| {
                entered_tx.send(()).unwrap();
                released.recv().unwrap();
                Ok(())
            })
            .await
        });
        tokio::task::spawn_blocking(move || entered.recv().unwrap()).await.unwrap();

        let copies = [("b", "1"), ("c", "2"), ("b", "3"), ("d", "4")];
        let recorded = futures::future::join_all(copies.iter().map(|(id, n)| {
            store.record_delivery(delivery(id, format!("{{\"n\":{n}}}").as_bytes()))
        }));
        let released = async {
            release.send(()).unwrap();
        };
        let (recorded, ()) = futures::join!(recorded, released);
        hold.await.unwrap().unwrap();

        let recorded: Vec<Recorded> = recorded.into_iter().map(Result::unwrap).collect();
        assert!(matches!(recorded[2], Recorded::Duplicate), "{recorded:?}");
        let seqs: Vec<i64> = [0, 1, 3]
            .iter()
            .map(|&i| match recorded[i] {
                Recorded::New { seq } => seq,
                Recorded::Duplicate => panic!("{recorded:?}"),
            })
            .collect();
        assert!(seqs[0] != seqs[1] && seqs[1] != seqs[2] && seqs[0] != seqs[2]);
        let pending = store.pending_deliveries(10, every_payload).await.unwrap();
        let read: Vec<(&str, &[u8])> = pending
            .iter()
            .map(|d| (d.delivery_id.as_str(), &d.payload[..]))
            .collect();
        assert_eq!(
            read,
            [("b", &b"{\"n\":1}"[..]), ("c", b"{\"n\":2}"), ("d", b"{\"n\":4}")]
        );
        assert_eq!(codecs(&store).await.len(), 3);
    }

    async fn a_put_off_delivery_holds_back_its_installation_until_it_is_due(store: Store) {
        for (id, installation) in [("a", Some(1)), ("b", Some(2)), ("c", Some(1)), ("d", None)] {
            store.record_delivery(of(id, installation)).await.unwrap();
        }
        let pending = store.pending_deliveries(10, no_payload).await.unwrap();
        assert_eq!(pending[0].tries, 0);
        let a = pending[0].seq;

        let later = store.clock().now_ms() + 60_000;
        store
            .defer_delivery(a, 1, later, "GitHub answered 502".into())
            .await
            .unwrap();
        // c waits behind a (same installation); b and d do not.
        assert_eq!(pending_ids(&store).await, ["b", "d"]);
        assert_eq!(store.next_retry_at_ms().await.unwrap(), Some(later));
        let record = store.delivery("a").await.unwrap().unwrap();
        assert_eq!(record.status, "received");
        assert_eq!(record.outcome.as_deref(), Some("GitHub answered 502"));

        // Due: a comes back first, with its tries, and c after it.
        store
            .defer_delivery(a, 2, store.clock().now_ms() - 1, "again".into())
            .await
            .unwrap();
        let pending = store.pending_deliveries(10, no_payload).await.unwrap();
        let ids: Vec<_> = pending.iter().map(|d| d.delivery_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        assert_eq!(pending[0].tries, 2);
    }

    async fn a_delivery_processed_meanwhile_is_not_put_off(store: Store) {
        store.record_delivery(of("a", Some(1))).await.unwrap();
        let seq = store.pending_deliveries(1, no_payload).await.unwrap()[0].seq;
        store
            .complete_delivery(seq, "processed", "done".into(), None, vec![], vec![])
            .await
            .unwrap();
        store
            .defer_delivery(seq, 1, store.clock().now_ms() + 60_000, "late".into())
            .await
            .unwrap();
        let record = store.delivery("a").await.unwrap().unwrap();
        assert_eq!(
            (record.status.as_str(), record.outcome.as_deref()),
            ("processed", Some("done"))
        );
        assert_eq!(store.next_retry_at_ms().await.unwrap(), None);
    }

    async fn pruning_forgets_old_decided_deliveries_and_keeps_the_rest(store: Store) {
        let mut seen = Vec::new();
        for id in ["a", "b", "c", "d", "e"] {
            seen.push(record(&store, of(id, Some(1))).await);
        }
        let pending = store.pending_deliveries(10, no_payload).await.unwrap();
        // a, b, c and e decided; d still waiting.
        for d in pending.iter().filter(|d| d.delivery_id.as_str() != "d") {
            store
                .complete_delivery(d.seq, "processed", "done".into(), None, vec![], vec![])
                .await
                .unwrap();
        }
        let an_hour_ago = store.clock().now_ms() - 3_600_000;
        assert_eq!(
            store.prune_deliveries(an_hour_ago, 100).await.unwrap(),
            0,
            "all young"
        );

        let later = store.clock().now_ms() + 1;
        assert_eq!(
            store.prune_deliveries(later, 2).await.unwrap(),
            2,
            "a batch at most"
        );
        assert_eq!(store.prune_deliveries(later, 100).await.unwrap(), 1);
        let mut kept = Vec::new();
        for id in ["a", "b", "c", "d", "e"] {
            if store.delivery(id).await.unwrap().is_some() {
                kept.push(id);
            }
        }
        // d is undecided; e is the newest, so its seq is never given out again.
        assert_eq!(kept, ["d", "e"]);
        assert_eq!(codecs(&store).await.len(), 2, "the payloads went with their deliveries");
        // The next delivery gets a new seq past every one seen.
        let f = record(&store, of("f", Some(1))).await;
        assert!(seen.iter().all(|&seq| seq < f), "{f} after {seen:?}");
    }

    async fn deliveries_completed_together_are_marked_once(store: Store) {
        for id in ["a", "b", "c"] {
            store.record_delivery(delivery(id, b"{}")).await.unwrap();
        }
        let pending = store.pending_deliveries(10, no_payload).await.unwrap();
        let outcomes = pending[..2]
            .iter()
            .map(|d| (d.seq, "nothing to do".to_owned()))
            .collect::<Vec<_>>();
        assert_eq!(store.complete_unchanged(outcomes.clone()).await.unwrap(), 2);
        // A second pass (e.g. after a restart) changes nothing.
        assert_eq!(store.complete_unchanged(outcomes).await.unwrap(), 0);
        let left = store.pending_deliveries(10, no_payload).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].delivery_id, DeliveryId::new("c"));
        let record = store.delivery("a").await.unwrap().unwrap();
        assert_eq!(record.status, "processed");
        assert_eq!(record.outcome.as_deref(), Some("nothing to do"));
    }
}

// SQLite only: upgrades of files older releases left (user_version, sqlite_sequence).

/// A database file left at schema `version`, as that release made it.
fn database_at_version(version: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let conn = Connection::open(&db).unwrap();
    for (i, sql) in super::super::schema::MIGRATIONS[..version]
        .iter()
        .enumerate()
    {
        conn.execute_batch(&format!("{sql}; PRAGMA user_version = {};", i + 1))
            .unwrap();
    }
    (dir, db)
}

#[tokio::test]
async fn payloads_recorded_before_they_had_their_own_table_survive_the_upgrade() {
    // A database as an older release left it: schema version 4,
    // payloads inside the delivery rows.
    let (_dir, db) = database_at_version(4);
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO deliveries (delivery_id, event, action, installation_id, received_at_ms, payload, status)
             VALUES ('old', 'issues', 'opened', 7, 1, X'7B7D', 'received')",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&db).unwrap();
    let pending = store.pending_deliveries(10, every_payload).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].payload, b"{}");
    assert_eq!(codecs(&store).await, ["none"]);
    store.record_delivery(delivery("new", b"{}")).await.unwrap();
    assert_eq!(store.delivery_count().await.unwrap(), 2);
}

#[tokio::test]
async fn deliveries_keep_their_seq_when_the_table_loses_autoincrement() {
    // Schema version 8: `seq` still AUTOINCREMENT.
    let (_dir, db) = database_at_version(8);
    {
        let conn = Connection::open(&db).unwrap();
        for (seq, id, status) in [(3, "a", "processed"), (7, "b", "received")] {
            conn.execute(
                "INSERT INTO deliveries (seq, delivery_id, event, action, installation_id,
                                         received_at_ms, status, tries, retry_at_ms)
                 VALUES (?1, ?2, 'issues', 'opened', 7, 1, ?3, 2, 99)",
                params![seq, id, status],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO delivery_payloads (seq, codec, payload) VALUES (?1, 'none', X'7B7D')",
                [seq],
            )
            .unwrap();
        }
    }
    let store = Store::open(&db).unwrap();
    let record = store.delivery("b").await.unwrap().unwrap();
    assert_eq!(record.status, "received");
    let pending = store.pending_deliveries(10, every_payload).await.unwrap();
    assert_eq!(
        (
            pending[0].seq,
            pending[0].tries,
            pending[0].payload.as_slice()
        ),
        (7, 2, &b"{}"[..])
    );
    // The next delivery follows the highest seq; the AUTOINCREMENT
    // bookkeeping is gone.
    let Recorded::New { seq } = store.record_delivery(delivery("c", b"{}")).await.unwrap() else {
        panic!("recorded as new");
    };
    assert_eq!(seq, 8);
    let conn = Connection::open(&db).unwrap();
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'deliveries'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!sql.contains("AUTOINCREMENT"), "{sql}");
    let left: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'deliveries'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}
