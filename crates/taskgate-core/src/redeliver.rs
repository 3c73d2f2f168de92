//! Which failed webhook deliveries to ask GitHub to send again.
//!
//! GitHub does not retry a delivery that failed (taskgate down, a deploy, a
//! network fault): it records the attempt and moves on. Its App delivery
//! log can be read and any attempt of the last three days redelivered, with
//! the same `X-GitHub-Delivery`, so the inbox's dedupe makes a redelivery of
//! something already recorded harmless. This policy keeps the asking small:
//!
//! - one request per delivery (its newest attempt), not per attempt;
//! - none for a delivery that succeeded once, or that taskgate recorded
//!   (GitHub may mark an attempt failed that taskgate in fact stored);
//! - none for events taskgate does not use;
//! - none past GitHub's three days (it would refuse them), and at most
//!   [`MAX_REDELIVERIES`] for one delivery, so a payload taskgate keeps
//!   refusing is not sent forever.
//!
//! Pure: the shell (`app::loops::redeliver`) reads the log and the store.

use std::collections::{BTreeMap, HashSet};

/// GitHub redelivers attempts of the last three days only.
pub const REDELIVERY_WINDOW_SECONDS: i64 = 3 * 86_400;
/// Attempts this close to the window's end are left alone: the request
/// would race GitHub's own clock.
const WINDOW_MARGIN_SECONDS: i64 = 600;
/// Redeliveries asked for one delivery before giving up on it.
pub const MAX_REDELIVERIES: usize = 3;

/// One attempt in GitHub's App delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookDelivery {
    pub id: u64,
    /// `X-GitHub-Delivery`: the same for a delivery and its redeliveries.
    pub guid: String,
    pub event: String,
    /// Unix seconds.
    pub delivered_at: i64,
    /// GitHub's `status` was `OK`.
    pub ok: bool,
    pub redelivery: bool,
}

/// The attempt ids to redeliver, oldest delivery first. `recorded` holds
/// the guids taskgate has in its inbox; `handled` the events it uses.
pub fn to_redeliver(
    log: &[HookDelivery],
    now: i64,
    recorded: &HashSet<String>,
    handled: &[&str],
) -> Vec<u64> {
    let mut by_guid: BTreeMap<&str, Vec<&HookDelivery>> = BTreeMap::new();
    for d in log {
        by_guid.entry(d.guid.as_str()).or_default().push(d);
    }
    let oldest_allowed = now - REDELIVERY_WINDOW_SECONDS + WINDOW_MARGIN_SECONDS;
    let mut picked: Vec<(i64, u64)> = by_guid
        .into_iter()
        .filter(|(guid, _)| !recorded.contains(*guid))
        .filter_map(|(_, attempts)| {
            if attempts.iter().any(|a| a.ok) {
                return None;
            }
            if attempts.iter().filter(|a| a.redelivery).count() >= MAX_REDELIVERIES {
                return None;
            }
            let newest = attempts.iter().max_by_key(|a| (a.delivered_at, a.id))?;
            let first = attempts.iter().map(|a| a.delivered_at).min()?;
            (handled.contains(&newest.event.as_str()) && newest.delivered_at >= oldest_allowed)
                .then_some((first, newest.id))
        })
        .collect();
    picked.sort();
    picked.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;
    const HANDLED: &[&str] = &["issues", "issue_comment", "push"];

    fn attempt(id: u64, guid: &str, ago: i64, ok: bool, redelivery: bool) -> HookDelivery {
        HookDelivery {
            id,
            guid: guid.into(),
            event: "issue_comment".into(),
            delivered_at: NOW - ago,
            ok,
            redelivery,
        }
    }

    fn none() -> HashSet<String> {
        HashSet::new()
    }

    #[test]
    fn a_failed_delivery_is_redelivered_once_by_its_newest_attempt() {
        let log = [
            attempt(1, "a", 300, false, false),
            attempt(2, "a", 200, false, true),
            attempt(3, "b", 250, false, false),
        ];
        assert_eq!(to_redeliver(&log, NOW, &none(), HANDLED), vec![2, 3]);
    }

    #[test]
    fn a_delivery_that_succeeded_or_was_recorded_is_left_alone() {
        let log = [
            attempt(1, "a", 300, false, false),
            attempt(2, "a", 200, true, true),
            attempt(3, "b", 100, false, false),
        ];
        let recorded: HashSet<String> = ["b".to_owned()].into();
        assert!(to_redeliver(&log, NOW, &recorded, HANDLED).is_empty());
    }

    #[test]
    fn events_taskgate_does_not_use_are_not_asked_for() {
        let mut star = attempt(1, "a", 100, false, false);
        star.event = "star".into();
        assert!(to_redeliver(&[star], NOW, &none(), HANDLED).is_empty());
    }

    #[test]
    fn githubs_three_days_bound_the_asking() {
        let old = attempt(1, "a", REDELIVERY_WINDOW_SECONDS - 60, false, false);
        let young = attempt(2, "b", REDELIVERY_WINDOW_SECONDS - 3_600, false, false);
        assert_eq!(to_redeliver(&[old, young], NOW, &none(), HANDLED), vec![2]);
    }

    #[test]
    fn a_delivery_that_keeps_failing_is_given_up_after_three_redeliveries() {
        let mut log = vec![attempt(1, "a", 500, false, false)];
        for id in 2..=3 {
            log.push(attempt(id, "a", 500 - id as i64, false, true));
        }
        assert_eq!(to_redeliver(&log, NOW, &none(), HANDLED), vec![3]);
        log.push(attempt(4, "a", 100, false, true));
        assert!(to_redeliver(&log, NOW, &none(), HANDLED).is_empty());
    }
}
