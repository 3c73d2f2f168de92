//! The audit log (`core::audit`): every human decision that took effect,
//! written with the decision's other changes, read newest first.
//!
//! Owns: the `audit_log` table's statements. Must not: decide what is
//! recorded (the core puts a `Change::Audited` in the decision), or forget
//! entries: retention (`app::loops::retention`) prunes deliveries and effects,
//! never this log (docs/decisions/audit-and-freeze.md).

use super::sql::Sql;
use rusqlite::params;

use super::db::{Db, Row};
use super::{Store, StoreError};
use taskgate_core::audit::{AuditAction, AuditEntry, AuditVia};
use taskgate_core::ids::{RepoName, UserId};

/// The most entries one read returns (`GET /api/audit?limit=`).
pub const MAX_AUDIT_LIMIT: u32 = 1000;

/// Which entries to read: of one repository or all, from a time on, at
/// most `limit` (capped at [`MAX_AUDIT_LIMIT`]), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    pub repo: Option<RepoName>,
    /// Entries at or after this time (unix seconds).
    pub since_s: Option<i64>,
    pub limit: u32,
}

/// Applies [`Change::Audited`](taskgate_core::Change::Audited).
pub(super) fn insert(db: &Db, e: &AuditEntry) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO audit_log (repo, at_s, actor_id, actor_login, action, object, reason, via)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            e.repo.as_str(),
            e.at_s,
            e.actor_id.map(Sql),
            e.actor_login,
            e.action.name(),
            e.object,
            e.reason,
            e.via.name()
        ],
    )?;
    Ok(())
}

fn entry_of(r: &Row) -> Result<AuditEntry, StoreError> {
    let word = |i: usize| r.get::<String>(i);
    let action = word(4)?;
    let via = word(7)?;
    Ok(AuditEntry {
        repo: RepoName::parse(&word(0)?).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        at_s: r.get(1)?,
        actor_id: r.sql_opt::<UserId>(2)?,
        actor_login: word(3)?,
        action: AuditAction::from_name(&action)
            .ok_or_else(|| StoreError::Corrupt(format!("`{action}` is not an audit action")))?,
        object: word(5)?,
        reason: r.get(6)?,
        via: AuditVia::from_name(&via)
            .ok_or_else(|| StoreError::Corrupt(format!("`{via}` is not an audit via")))?,
    })
}

const COLUMNS: &str = "repo, at_s, actor_id, actor_login, action, object, reason, via";

impl Store {
    /// The entries `q` asks for, newest first (entries of one second in
    /// the reverse order they were written).
    pub async fn audit_entries(&self, q: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let q = q.clone();
        let limit = i64::from(q.limit.min(MAX_AUDIT_LIMIT));
        let since = q.since_s.unwrap_or(i64::MIN);
        self.read(move |db| match &q.repo {
            Some(repo) => db.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM audit_log WHERE repo = ?1 AND at_s >= ?2
                     ORDER BY at_s DESC, id DESC LIMIT ?3"
                ),
                params![repo.as_str(), since, limit],
                entry_of,
            ),
            None => db.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM audit_log WHERE at_s >= ?1
                     ORDER BY at_s DESC, id DESC LIMIT ?2"
                ),
                params![since, limit],
                entry_of,
            ),
        })
        .await
    }

    /// Every repository with an audit entry, by name.
    pub async fn audit_repos(&self) -> Result<Vec<RepoName>, StoreError> {
        self.read(|db| {
            let names = db.query_map(
                "SELECT DISTINCT repo FROM audit_log ORDER BY repo",
                params![],
                |r| r.get::<String>(0),
            )?;
            names
                .iter()
                .map(|n| RepoName::parse(n).map_err(|e| StoreError::Corrupt(e.to_string())))
                .collect()
        })
        .await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::testing::on_both_backends;
    use crate::store::{Disposition, NewDelivery, Recorded};
    use taskgate_core::audit::{task_object, AuditActor, REPOSITORY};
    use taskgate_core::ids::{DeliveryId, InstallationId, IssueNumber};
    use taskgate_core::Change;

    /// Stores `changes` as a decision is stored: with a delivery marked
    /// processed, in one transaction.
    pub(in crate::store) async fn apply(store: &Store, changes: Vec<Change>) {
        let id = format!("d-{:032x}", fastrand::u128(..));
        let recorded = store
            .record_delivery(NewDelivery {
                body_digest: None,
                delivery_id: DeliveryId::new(id),
                event: "issue_comment".into(),
                action: Some("created".into()),
                installation: Some(InstallationId::new(7)),
                payload: bytes::Bytes::from_static(b"{}"),
                disposition: Disposition::Pending,
            })
            .await
            .unwrap();
        let Recorded::New { seq } = recorded else {
            panic!("a new delivery");
        };
        store
            .complete_delivery(seq, "processed", "done".into(), None, changes, vec![])
            .await
            .unwrap();
    }

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    fn entry(repo_name: &str, at_s: i64, action: AuditAction) -> AuditEntry {
        AuditEntry::new(
            &repo(repo_name),
            at_s,
            AuditActor::user(UserId::new(7), "alice"),
            action,
            task_object(IssueNumber::new(12), "check"),
            AuditVia::Command,
        )
    }

    fn query(repo_name: Option<&str>, since_s: Option<i64>, limit: u32) -> AuditQuery {
        AuditQuery {
            repo: repo_name.map(repo),
            since_s,
            limit,
        }
    }

    fn actions(entries: &[AuditEntry]) -> Vec<(&str, i64, &'static str)> {
        entries
            .iter()
            .map(|e| (e.repo.as_str(), e.at_s, e.action.name()))
            .collect()
    }

    on_both_backends! {
        async fn entries_round_trip_and_read_newest_first(store: Store) {
            let api = AuditEntry::new(
                &repo("acme/a"),
                300,
                AuditActor { id: None, login: "the HTTP API" },
                AuditAction::ApiReject,
                task_object(IssueNumber::new(12), "check"),
                AuditVia::Api,
            )
            .because(Some("the plan was wrong"));
            let freeze = AuditEntry::new(
                &repo("acme/b"),
                200,
                AuditActor::user(UserId::new(u64::MAX >> 1), "bob"),
                AuditAction::Freeze,
                REPOSITORY,
                AuditVia::Command,
            )
            .because(Some("release"));
            let first = entry("acme/a", 100, AuditAction::Approve);
            let same_second = entry("acme/a", 300, AuditAction::Pause);
            apply(&store, vec![first.clone().change(), freeze.clone().change()]).await;
            apply(&store, vec![api.clone().change()]).await;
            apply(&store, vec![same_second.clone().change()]).await;
            let all = store.audit_entries(&query(None, None, 100)).await.unwrap();
            assert_eq!(all, vec![same_second, api, freeze, first]);
            assert_eq!(
                store.audit_repos().await.unwrap(),
                vec![repo("acme/a"), repo("acme/b")]
            );
        }

        async fn filters_by_repository_time_and_limit(store: Store) {
            let mut changes = Vec::new();
            for (i, name) in ["acme/a", "acme/b", "acme/a", "acme/a", "acme/b"].iter().enumerate() {
                changes.push(entry(name, 1000 + i as i64 * 10, AuditAction::Revise).change());
            }
            apply(&store, changes).await;
            let a = store.audit_entries(&query(Some("acme/a"), None, 100)).await.unwrap();
            assert_eq!(
                actions(&a),
                vec![("acme/a", 1030, "revise"), ("acme/a", 1020, "revise"), ("acme/a", 1000, "revise")]
            );
            // `since` includes its own second.
            let since = store.audit_entries(&query(None, Some(1020), 100)).await.unwrap();
            assert_eq!(
                since.iter().map(|e| e.at_s).collect::<Vec<_>>(),
                vec![1040, 1030, 1020]
            );
            let both = store.audit_entries(&query(Some("acme/b"), Some(1011), 100)).await.unwrap();
            assert_eq!(actions(&both), vec![("acme/b", 1040, "revise")]);
            let two = store.audit_entries(&query(None, None, 2)).await.unwrap();
            assert_eq!(two.iter().map(|e| e.at_s).collect::<Vec<_>>(), vec![1040, 1030]);
            let none = store.audit_entries(&query(Some("acme/c"), None, 100)).await.unwrap();
            assert!(none.is_empty());
        }

        async fn a_redelivered_decision_is_audited_once(store: Store) {
            let id = DeliveryId::new("once");
            let recorded = store
                .record_delivery(NewDelivery {
                    body_digest: None,
                    delivery_id: id,
                    event: "issue_comment".into(),
                    action: Some("created".into()),
                    installation: Some(InstallationId::new(7)),
                    payload: bytes::Bytes::from_static(b"{}"),
                    disposition: Disposition::Pending,
                })
                .await
                .unwrap();
            let Recorded::New { seq } = recorded else { panic!("new") };
            let change = entry("acme/a", 5, AuditAction::Approve).change();
            for _ in 0..2 {
                store
                    .complete_delivery(seq, "processed", "done".into(), None, vec![change.clone()], vec![])
                    .await
                    .unwrap();
            }
            assert_eq!(store.audit_entries(&query(None, None, 10)).await.unwrap().len(), 1);
        }
    }
}
