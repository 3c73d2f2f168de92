//! What the failure loop has done, summed over tasks, for `/metrics`
//! (SPEC §9): branch todos opened by kind and role, how long fixed ones
//! took, the share fixed without a human, and blocked tasks.

use std::collections::BTreeMap;

use super::{LoopState, Resolution};

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
        let opened = s
            .history
            .iter()
            .map(|t| (t.kind, t.role.clone()))
            .chain(s.open.iter().map(|t| (t.kind, t.role.clone())));
        for (kind, role) in opened {
            *self
                .todos_opened
                .entry((kind.as_str().to_owned(), role))
                .or_default() += 1;
        }
        for t in s
            .history
            .iter()
            .filter(|t| t.resolution == Resolution::Fixed)
        {
            self.todos_fixed += 1;
            self.fixed_seconds_total += t.closed_at.saturating_sub(t.opened_at).max(0) as u64;
        }
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
    use crate::classify::FailureKind;
    use crate::core::failure::{ClosedTodo, OpenTodo};

    #[test]
    fn sums_todos_fixes_and_the_autonomous_share() {
        let closed = |resolution, seconds: i64| ClosedTodo {
            marker: "m".into(),
            depth: 1,
            kind: FailureKind::TestFailure,
            role: "coder".into(),
            opened_at: 100,
            closed_at: 100 + seconds,
            resolution,
            failed_runs: 1,
        };
        let a = LoopState {
            history: vec![
                closed(Resolution::Fixed, 60),
                closed(Resolution::Superseded, 5),
            ],
            fixed_without_human: 1,
            ..LoopState::default()
        };
        let b = LoopState {
            open: Some(OpenTodo {
                marker: "n".into(),
                depth: 1,
                failed_runs: 1,
                kind: FailureKind::Timeout,
                role: "tester".into(),
                opened_at: 0,
            }),
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
