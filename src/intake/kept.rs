//! Webhooks parsed at intake, kept in memory for the processor: a pending
//! delivery is then parsed once, not again from its stored body (issue 46
//! item 5; JSON parsing was ~5 % of a comment's CPU, half of it twice).
//!
//! Owns: [`KeptWebhooks`], a bounded map from a delivery's `seq` to its
//! typed webhook, filled by the intake once the delivery is recorded and
//! emptied by the processor as it decides. Nothing here is needed: a
//! delivery not found (another replica recorded it, a restart, or the map
//! was full) is parsed from the store as before.
//! Must not: hold anything the store does not (it is a cache of parses of
//! recorded bodies), or grow past its bound.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::event::Webhook;

/// How many parsed webhooks are kept at most: beyond, the oldest goes (a
/// comment's parse is a few KB; a burst beyond this is parsed again).
pub const KEPT: usize = 256;

/// Parsed webhooks by their delivery's `seq`, for the processor.
pub struct KeptWebhooks {
    by_seq: Mutex<BTreeMap<i64, Box<Webhook>>>,
    most: usize,
}

impl Default for KeptWebhooks {
    fn default() -> Self {
        KeptWebhooks::new(KEPT)
    }
}

impl KeptWebhooks {
    pub fn new(most: usize) -> KeptWebhooks {
        KeptWebhooks {
            by_seq: Mutex::new(BTreeMap::new()),
            most,
        }
    }

    /// Keeps the webhook of the delivery recorded as `seq`, dropping the
    /// oldest kept when full.
    pub fn keep(&self, seq: i64, webhook: Webhook) {
        let mut by_seq = self.by_seq.lock().unwrap_or_else(|p| p.into_inner());
        if self.most == 0 {
            return;
        }
        while by_seq.len() >= self.most {
            by_seq.pop_first();
        }
        by_seq.insert(seq, Box::new(webhook));
    }

    /// The webhook of the delivery `seq`, if it is still kept; it is not
    /// kept after.
    pub fn take(&self, seq: i64) -> Option<Box<Webhook>> {
        let mut by_seq = self.by_seq.lock().unwrap_or_else(|p| p.into_inner());
        by_seq.remove(&seq)
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.by_seq.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> Webhook {
        let parsed =
            super::super::event::parse("ping", br#"{"zen": "Keep it logically awesome."}"#);
        parsed.unwrap().webhook
    }

    #[test]
    fn a_webhook_is_taken_once_and_the_oldest_go_past_the_bound() {
        let kept = KeptWebhooks::new(2);
        for seq in 1..=3 {
            kept.keep(seq, ping());
        }
        assert_eq!(kept.len(), 2);
        assert!(kept.take(1).is_none(), "the oldest went");
        assert!(kept.take(2).is_some());
        assert!(kept.take(2).is_none(), "taken once");
        assert!(kept.take(3).is_some());
        assert!(kept.is_empty());
    }
}
