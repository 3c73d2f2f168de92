//! What the failure loop has done, summed over tasks, for `/metrics`
//! (SPEC §9): branch todos opened by kind and role, how long fixed ones
//! took, the share fixed without a human, and blocked tasks.

use std::collections::BTreeMap;

use super::LoopState;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopStats {
    /// Todos ever opened (open and closed), by (kind, role).
    pub todos_opened: BTreeMap<(String, String), u64>,
    /// Todos closed by a green run, and their total lifetime.
    pub todos_fixed: u64,
    pub fixed_seconds_total: u64,
    pub fixed_without_human: u64,
    pub fixed_with_human: u64,
    /// Tasks escalated to a person (blocked, `needs-human`).
    pub escalated_tasks: u64,
}

impl LoopStats {
    pub fn add(&mut self, s: &LoopState) {
        for (kind_role, n) in &s.totals.opened {
            let (kind, role) = kind_role.split_once('/').unwrap_or((kind_role, ""));
            *self
                .todos_opened
                .entry((kind.to_owned(), role.to_owned()))
                .or_default() += n;
        }
        self.todos_fixed += s.totals.fixed;
        self.fixed_seconds_total += s.totals.fixed_seconds;
        self.fixed_without_human += u64::from(s.fixed_without_human);
        self.fixed_with_human += u64::from(s.fixed_with_human);
        self.escalated_tasks += u64::from(s.escalation.is_some());
    }

    /// The share of fixed branch todos no person touched; `None` before
    /// any was fixed. Seed 000 flags a rate below 50 % for review.
    pub fn autonomous_fix_rate(&self) -> Option<f64> {
        let all = self.fixed_without_human + self.fixed_with_human;
        (all > 0).then(|| self.fixed_without_human as f64 / all as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::LoopTotals;

    #[test]
    fn sums_todos_fixes_and_the_autonomous_share() {
        let a = LoopState {
            totals: LoopTotals {
                opened: BTreeMap::from([("test_failure/coder".to_owned(), 2)]),
                fixed: 1,
                fixed_seconds: 60,
            },
            fixed_without_human: 1,
            ..LoopState::default()
        };
        let b = LoopState {
            totals: LoopTotals {
                opened: BTreeMap::from([("timeout/tester".to_owned(), 1)]),
                ..LoopTotals::default()
            },
            fixed_with_human: 1,
            ..LoopState::default()
        };
        let mut stats = LoopStats::default();
        stats.add(&a);
        stats.add(&b);
        assert_eq!(
            stats.todos_opened[&("test_failure".into(), "coder".into())],
            2
        );
        assert_eq!(stats.todos_opened[&("timeout".into(), "tester".into())], 1);
        assert_eq!((stats.todos_fixed, stats.fixed_seconds_total), (1, 60));
        assert_eq!(stats.autonomous_fix_rate(), Some(0.5));
        assert_eq!(LoopStats::default().autonomous_fix_rate(), None);
    }
}
