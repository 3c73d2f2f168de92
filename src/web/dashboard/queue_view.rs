//! The dashboard's ship queue, as plain data: per repository, the stories
//! shipped and not landed yet, in the order they land.
//!
//! Owns: what a person reads of the queue (position, story, who shipped
//! it, what it is doing), and the line saying a repository's ship train
//! stepped aside ([`train_off_lines`]). Must not: read the store, or decide the order
//! (`core::ship::queue_order`'s rule: proving or landing first, then by
//! priority and the time each was shipped).

use super::audit_view::FreezeLine;
use super::view::StoryInput;
use taskgate_core::ids::RepoName;
use taskgate_core::report::plain_text;
use taskgate_core::report::render_duration;
use taskgate_core::ship::{priority_name, ShipState, Train};

/// One story in a repository's ship queue.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueRow {
    pub repo: String,
    /// 1 for the story proving or landing (or next to).
    pub position: usize,
    pub issue: u64,
    pub title: String,
    /// `@octocat by label`.
    pub shipped_by: String,
    /// `proving (round 1) on base abc1234, at def5678`, `landing`, `waiting`.
    pub doing: String,
    /// The story PR, `#8`, or empty.
    pub pr: String,
    /// `normal`, `high`, `hotfix`.
    pub priority: &'static str,
    /// Since the ship request: `12 min 05 s`.
    pub waiting: String,
}

/// The queue rows of every repository shown, repository by repository;
/// `frozen` the repositories frozen now (a queued story there waits for
/// the freeze, not for its turn).
pub fn queue_rows(shown: &[StoryInput<'_>], frozen: &[FreezeLine], now_s: i64) -> Vec<QueueRow> {
    let mut queued: Vec<&StoryInput<'_>> = shown
        .iter()
        .filter(|s| {
            matches!(
                s.record.state,
                ShipState::Queued | ShipState::Proving | ShipState::Shipping
            )
        })
        .collect();
    // Under way first, then by priority and when each was shipped.
    queued.sort_by_key(|s| {
        (
            s.repo.as_str().to_owned(),
            s.record.state == ShipState::Queued,
            std::cmp::Reverse(s.record.shipped_by.as_ref().map(|b| b.priority)),
            s.record.queued_at_ms.unwrap_or(i64::MAX),
            s.issue.get(),
        )
    });
    let mut rows: Vec<QueueRow> = Vec::new();
    for s in queued {
        let position = rows.iter().filter(|r| r.repo == s.repo.as_str()).count() + 1;
        rows.push(QueueRow {
            repo: s.repo.to_string(),
            position,
            issue: s.issue.get(),
            title: s
                .plan
                .map_or_else(|| s.story.to_string(), |(p, _)| p.story.clone()),
            shipped_by: s.record.shipped_by.as_ref().map_or_else(
                || "someone".to_owned(),
                |b| format!("@{} by {}", b.login, b.via.name()),
            ),
            doing: doing(s, frozen.iter().any(|f| f.repo == s.repo.as_str())),
            pr: s.record.pr.map_or(String::new(), |p| format!("#{p}")),
            priority: priority_name(
                s.record
                    .shipped_by
                    .as_ref()
                    .map(|b| b.priority)
                    .unwrap_or_default(),
            ),
            waiting: s.record.queued_at_ms.map_or(String::new(), |at| {
                render_duration((now_s * 1000 - at).max(0) as u64)
            }),
        });
    }
    rows
}

/// A repository whose stories ship one at a time for now: GitHub refused
/// to build a ship batch (`Train::off`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOffLine {
    pub repo: String,
    /// What GitHub refused, and until when batches wait.
    pub why: String,
}

/// The repositories of `trains` whose train is off at `now_ms`.
pub fn train_off_lines<'t>(
    trains: impl IntoIterator<Item = (&'t RepoName, &'t Train)>,
    now_ms: i64,
) -> Vec<TrainOffLine> {
    (trains.into_iter())
        .filter_map(|(repo, train)| {
            let off = train.off_at(now_ms)?;
            let why = format!(
                "GitHub refused to build the ship batch branch `{}` ({}). Stories ship one at a time until {}, then batches are tried again",
                plain_text(&off.branch),
                plain_text(off.why.trim_end_matches('.')),
                taskgate_core::freeze::utc_minute(off.until_ms / 1000),
            );
            Some(TrainOffLine {
                repo: repo.to_string(),
                why,
            })
        })
        .collect()
}

fn doing(s: &StoryInput<'_>, frozen: bool) -> String {
    let proof = s.record.proof.as_ref();
    match (s.record.state, proof) {
        (ShipState::Proving, Some(p)) => {
            let at = p
                .commit
                .as_ref()
                .map_or("merging".to_owned(), |c| format!("testing {}", c.short()));
            format!(
                "proving (round {}) on base {}: {at}",
                p.round,
                p.base.short()
            )
        }
        (ShipState::Shipping, Some(p)) => format!(
            "landing {} on the default branch",
            p.commit.as_ref().map_or("?", |c| c.short())
        ),
        (ShipState::Shipping, None) => "landing".to_owned(),
        _ if frozen => "waiting for the freeze to lift".to_owned(),
        _ => "waiting its turn".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use taskgate_core::ids::{IssueNumber, RepoName};
    use taskgate_core::ship::{ShipProof, ShipVia, Shipper, StoryRecord};

    #[test]
    fn the_story_under_way_comes_first_then_the_order_they_were_shipped() {
        let repo = RepoName::parse("o/r").unwrap();
        let by = |login: &str| Shipper {
            user: None,
            login: login.into(),
            via: ShipVia::Label,
            priority: Default::default(),
        };
        let record = |state, at, who: &str, proof| StoryRecord {
            state,
            queued_at_ms: Some(at),
            shipped_by: Some(by(who)),
            proof,
            ..StoryRecord::default()
        };
        let proving = record(
            ShipState::Proving,
            30,
            "carol",
            Some(ShipProof {
                round: 2,
                base: crate::testing::sha(&"b".repeat(40)),
                head: crate::testing::sha(&"e".repeat(40)),
                commit: Some(crate::testing::sha(&"f".repeat(40))),
                landing: Default::default(),
                ahead: vec![],
            }),
        );
        let later = record(ShipState::Queued, 20, "bob", None);
        let first = record(ShipState::Queued, 10, "alice", None);
        let done = record(ShipState::Deployed, 5, "dan", None);
        let (tasks, issues) = (BTreeMap::new(), BTreeMap::new());
        let summary = Default::default();
        let records = [(4, later), (5, done), (3, first), (7, proving)];
        let story = taskgate_core::ids::StoryId::new("file:s");
        let shown: Vec<StoryInput<'_>> = records
            .iter()
            .map(|(issue, record)| StoryInput {
                repo: &repo,
                story: &story,
                issue: IssueNumber::new(*issue),
                record,
                plan: None,
                tasks: &tasks,
                summary: &summary,
                issues: &issues,
                attempts: &[],
            })
            .collect();
        let rows = |frozen: &[FreezeLine]| {
            queue_rows(&shown, frozen, 1)
                .iter()
                .map(|r| format!("{} #{} {} — {}", r.position, r.issue, r.shipped_by, r.doing))
                .collect::<Vec<String>>()
                .join("\n")
        };
        insta::assert_snapshot!(rows(&[]), @r"
        1 #7 @carol by label — proving (round 2) on base bbbbbbb: testing fffffff
        2 #3 @alice by label — waiting its turn
        3 #4 @bob by label — waiting its turn
        ");
        let frozen = FreezeLine {
            repo: "o/r".into(),
            why: "frozen by @alice: release".into(),
            manual: true,
        };
        insta::assert_snapshot!(rows(&[frozen]), @r"
        1 #7 @carol by label — proving (round 2) on base bbbbbbb: testing fffffff
        2 #3 @alice by label — waiting for the freeze to lift
        3 #4 @bob by label — waiting for the freeze to lift
        ");
    }

    #[test]
    fn a_train_off_says_what_github_refused_and_until_when() {
        let repo = RepoName::parse("acme/widgets").unwrap();
        let mut train = Train::default();
        let until_ms = 1_795_086_400_000;
        train.off = Some(taskgate_core::ship::TrainOff {
            branch: "taskgate/ship-batch-3".into(),
            why: "GitHub answered 422: Cannot create ref due to creations being restricted.".into(),
            until_ms,
        });
        let on = Train::default();
        let other = RepoName::parse("acme/other").unwrap();
        let lines = train_off_lines([(&repo, &train), (&other, &on)], until_ms - 1);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].repo, "acme/widgets");
        insta::assert_snapshot!(lines[0].why, @"GitHub refused to build the ship batch branch `taskgate/ship-batch-3` (GitHub answered 422: Cannot create ref due to creations being restricted). Stories ship one at a time until 2026-11-19 11:06 UTC, then batches are tried again");
        assert!(
            train_off_lines([(&repo, &train)], until_ms).is_empty(),
            "a day later"
        );
    }
}
