//! `GET /api/queue?repo=owner/name`: the repository's ship queue in the
//! order it lands (`core::ship::queue_order`: the story proving or landing
//! first, then hotfix, high and normal stories, each in arrival order).
//!
//! Owns: reading the queue's stories and their proof's check runs from the
//! store, and the JSON rows, with `train_off` when GitHub refused a ship
//! batch lately and the stories ship one at a time (`Train::off`). Must not: decide the order (the core does) or
//! change anything.

use axum::extract::{Query, State};
use axum::Json;
use serde_json::{json, Value};

use super::{repo_of, ApiError, ApiState, RepoQuery};
use crate::store::AttemptSummary;
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::ship::{
    car_of, priority_name, queue_order, shown_record, CarId, ShipState, StoryRecord, Train,
    TrainOff,
};

/// One story of the queue, as read from the store.
#[derive(Debug, Clone)]
pub struct QueueEntry {
    pub issue: IssueNumber,
    pub title: String,
    pub record: StoryRecord,
    /// The check runs of the proof's commit, gate and id.
    pub checks: Vec<(String, u64)>,
    /// The ship train's car it rides in, with its stories' issues.
    pub batch: Option<(CarId, Vec<IssueNumber>)>,
}

pub(super) async fn queue(
    State(state): State<ApiState>,
    Query(q): Query<RepoQuery>,
) -> Result<Json<Value>, ApiError> {
    let Some(repo) = repo_of(&q)? else {
        return Err(ApiError::BadRequest(
            "`?repo=owner/name` is required: the queue is a repository's".into(),
        ));
    };
    let (entries, train) = queue_entries(&state.store, &repo).await?;
    let now_ms = state.store.clock().now_ms();
    let mut json = queue_json(&repo, &entries, now_ms, &state.web_base);
    json["train_off"] = train_off_json(train.off_at(now_ms));
    Ok(Json(json))
}

/// The queue of `repo`, in order, with the repository's ship train it was
/// read with; 404 for a repository taskgate has no story in.
pub async fn queue_entries(
    store: &crate::store::Store,
    repo: &RepoName,
) -> Result<(Vec<QueueEntry>, Train), ApiError> {
    let rows = store.stories().await?;
    if !rows.iter().any(|r| &r.repo == repo) {
        return Err(ApiError::NotFound(
            "taskgate has no story in this repository",
        ));
    }
    // A train story is shown `proving` while its car proves
    // (`core::ship::shown_record`; stored, it stays queued).
    let train = store.ship_train(repo).await?;
    let records: Vec<(StoryId, StoryRecord)> = (store.story_records(repo).await?)
        .into_iter()
        .map(|(story, record)| {
            let shown = shown_record(&train, &story, &record);
            (story, shown)
        })
        .collect();
    let mut entries = Vec::new();
    for (story, record) in queue_order(&records) {
        let Some(row) = rows.iter().find(|r| &r.repo == repo && &r.story == story) else {
            continue;
        };
        let title = store
            .story(repo, story)
            .await?
            .and_then(|p| store.plans().parse(&p.plan))
            .map_or_else(|| story.to_string(), |p| p.story.clone());
        let checks = match record.proof.as_ref().and_then(|p| p.commit.as_ref()) {
            Some(commit) => proof_checks(store, repo, story, commit).await?,
            None => Vec::new(),
        };
        let batch = car_of(&train, story).map(|car| {
            let issues = (car.stories.iter())
                .filter_map(|e| rows.iter().find(|r| &r.repo == repo && r.story == e.story))
                .map(|r| r.issue)
                .collect();
            (car.id, issues)
        });
        entries.push(QueueEntry {
            issue: row.issue,
            title,
            record: record.clone(),
            checks,
            batch,
        });
    }
    Ok((entries, train))
}

/// The check runs of the `@ship` attempt on the proof's commit.
async fn proof_checks(
    store: &crate::store::Store,
    repo: &RepoName,
    story: &StoryId,
    commit: &taskgate_core::ids::CommitSha,
) -> Result<Vec<(String, u64)>, ApiError> {
    let ship = taskgate_core::task::RunSubject::ShipProof.to_string();
    let attempts: Vec<AttemptSummary> = store.recent_attempts(repo, story, 1).await?;
    Ok(attempts
        .into_iter()
        .find(|a| a.task == ship && &a.sha == commit)
        .map(|a| a.checks)
        .unwrap_or_default())
}

/// What the queue says in a row's `state`: `queued`, `proving`, `landing`.
pub fn queue_state(state: ShipState) -> &'static str {
    match state {
        ShipState::Proving => "proving",
        ShipState::Shipping => "landing",
        _ => "queued",
    }
}

/// The JSON of the queue at `now_ms`.
pub fn queue_json(repo: &RepoName, entries: &[QueueEntry], now_ms: i64, web_base: &str) -> Value {
    let rows: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let r = &e.record;
            let queued_at = r.queued_at_ms.and_then(chrono::DateTime::from_timestamp_millis);
            let proof = r.proof.as_ref().map(|p| {
                json!({
                    "round": p.round,
                    "base": p.base.as_str(),
                    "commit": p.commit.as_ref().map(|c| c.as_str().to_owned()),
                    "check_runs": e.checks.iter().map(|(gate, id)| json!({
                        "gate": gate,
                        "url": format!("{web_base}/{repo}/runs/{id}"),
                    })).collect::<Vec<_>>(),
                })
            });
            let mut row = json!({
                "position": i + 1,
                "issue": e.issue.get(),
                "title": e.title,
                "pr": r.pr.map(|p| p.get()),
                "state": queue_state(r.state),
                "priority": priority_name(r.shipped_by.as_ref().map(|b| b.priority).unwrap_or_default()),
                "shipped_by": r.shipped_by.as_ref().map(|b| b.login.clone()),
                "queued_at": queued_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                "waiting_seconds": r.queued_at_ms.map(|at| (now_ms - at).max(0) / 1000),
                "proof": proof,
                "batch": e.batch.as_ref().map(|(car, issues)| json!({
                    "car": car.0,
                    "issues": issues.iter().map(|i| i.get()).collect::<Vec<_>>(),
                })),
            });
            // Asked for the ship train, shipped one at a time: why.
            if let Some(why) = &r.serial_because {
                row["ships_serially_because"] = json!(why);
            }
            row
        })
        .collect();
    json!({ "repo": repo.to_string(), "queue": rows })
}

/// Why the ship train stepped aside and until when, or `null`.
fn train_off_json(off: Option<&TrainOff>) -> Value {
    let Some(off) = off else {
        return Value::Null;
    };
    let until = chrono::DateTime::from_timestamp_millis(off.until_ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    json!({ "branch": off.branch, "why": off.why, "until": until })
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::ship::{Priority, ShipProof, ShipVia, Shipper};

    fn entry(issue: u64, state: ShipState, at: i64, priority: Priority) -> QueueEntry {
        QueueEntry {
            issue: IssueNumber::new(issue),
            title: format!("Story {issue}"),
            record: StoryRecord {
                state,
                pr: Some(IssueNumber::new(issue + 1)),
                queued_at_ms: Some(at),
                shipped_by: Some(Shipper {
                    user: None,
                    login: "octocat".into(),
                    via: ShipVia::Command,
                    priority,
                }),
                ..StoryRecord::default()
            },
            checks: vec![],
            batch: None,
        }
    }

    #[test]
    fn the_queue_is_its_rows_in_order_with_the_proofs_check_runs() {
        let repo = RepoName::parse("acme/strategies").unwrap();
        let mut proving = entry(3, ShipState::Proving, 1_795_000_000_000, Priority::Normal);
        // A ship train story: shown proving in its batch.
        proving.batch = Some((CarId(2), vec![IssueNumber::new(3), IssueNumber::new(5)]));
        proving.record.proof = Some(ShipProof {
            round: 1,
            base: crate::testing::sha(&"b".repeat(40)),
            head: crate::testing::sha(&"e".repeat(40)),
            commit: Some(crate::testing::sha(&"f".repeat(40))),
            landing: Default::default(),
            ahead: vec![],
        });
        proving.checks = vec![("ship/check/test".into(), 702)];
        let entries = [
            proving,
            entry(9, ShipState::Queued, 1_795_000_090_000, Priority::High),
            entry(5, ShipState::Queued, 1_795_000_030_000, Priority::Normal),
        ];
        let json = queue_json(&repo, &entries, 1_795_000_120_500, "https://github.com");
        insta::assert_snapshot!(serde_json::to_string_pretty(&json).unwrap(), @r#"
        {
          "queue": [
            {
              "batch": {
                "car": 2,
                "issues": [
                  3,
                  5
                ]
              },
              "issue": 3,
              "position": 1,
              "pr": 4,
              "priority": "normal",
              "proof": {
                "base": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                "check_runs": [
                  {
                    "gate": "ship/check/test",
                    "url": "https://github.com/acme/strategies/runs/702"
                  }
                ],
                "commit": "ffffffffffffffffffffffffffffffffffffffff",
                "round": 1
              },
              "queued_at": "2026-11-18T11:06:40Z",
              "shipped_by": "octocat",
              "state": "proving",
              "title": "Story 3",
              "waiting_seconds": 120
            },
            {
              "batch": null,
              "issue": 9,
              "position": 2,
              "pr": 10,
              "priority": "high",
              "proof": null,
              "queued_at": "2026-11-18T11:08:10Z",
              "shipped_by": "octocat",
              "state": "queued",
              "title": "Story 9",
              "waiting_seconds": 30
            },
            {
              "batch": null,
              "issue": 5,
              "position": 3,
              "pr": 6,
              "priority": "normal",
              "proof": null,
              "queued_at": "2026-11-18T11:07:10Z",
              "shipped_by": "octocat",
              "state": "queued",
              "title": "Story 5",
              "waiting_seconds": 90
            }
          ],
          "repo": "acme/strategies"
        }
        "#);
    }

    #[test]
    fn a_train_off_says_the_branch_github_refused_why_and_until_when() {
        assert_eq!(train_off_json(None), Value::Null);
        let off = TrainOff {
            branch: "taskgate/ship-batch-3".into(),
            why: "GitHub answered 422: Cannot create ref due to creations being restricted.".into(),
            until_ms: 1_795_086_400_000,
        };
        insta::assert_snapshot!(serde_json::to_string_pretty(&train_off_json(Some(&off))).unwrap(), @r#"
        {
          "branch": "taskgate/ship-batch-3",
          "until": "2026-11-19T11:06:40Z",
          "why": "GitHub answered 422: Cannot create ref due to creations being restricted."
        }
        "#);
    }
}
