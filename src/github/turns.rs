//! Turns: the order in which installations' effects reach GitHub.
//!
//! Owns: the rotation of installations from one turn to the next, and
//! what performing an effect took of its installation's turn ([`Turn`]).
//! Must not: read the outbox or call GitHub (`github::executor` does both).
//!
//! The idea a reader needs: a turn gives every installation with effects
//! due (and not paused by its write budget or a rate limit) one call, and
//! the installation that goes first moves on by one each turn. An
//! installation with 40,000 writes queued therefore delays another's
//! write by one call at most, where the outbox taken in id order made it
//! wait for all 40,000. Within an installation effects keep their queued
//! order (`github::lag::put_off` relies on it: a reconcile pass waits for
//! the writes queued before it).

use std::collections::HashMap;

use taskgate_core::ids::InstallationId;

/// What performing one effect took of its installation's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// No call (put off, or another replica claimed it): the installation's
    /// next due effect may go in this turn.
    Passed,
    /// GitHub was called: the installation's turn is over.
    Used,
    /// The installation waits until then (its write budget has no slot
    /// yet, or GitHub rate limited it); the others go on.
    Pause(i64),
}

/// Which installation goes first in the next turn.
#[derive(Debug, Default)]
pub(super) struct Rotation {
    /// The installation that went first in the last turn.
    last_first: Option<InstallationId>,
}

impl Rotation {
    /// One turn: the installations of `due` (in id order, each with its due
    /// effects) that are not paused, starting with the first after the one
    /// that went first last time, and wrapping around.
    pub fn turn<T>(
        &mut self,
        due: Vec<(InstallationId, T)>,
        paused: &HashMap<InstallationId, i64>,
    ) -> Vec<(InstallationId, T)> {
        let mut turn: Vec<_> = due
            .into_iter()
            .filter(|(installation, _)| !paused.contains_key(installation))
            .collect();
        turn.sort_by_key(|(installation, _)| *installation);
        let start = match self.last_first {
            Some(last) => turn.iter().position(|(i, _)| *i > last).unwrap_or(0),
            None => 0,
        };
        turn.rotate_left(start);
        self.last_first = turn.first().map(|(installation, _)| *installation);
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(turn: &[(InstallationId, ())]) -> Vec<u64> {
        turn.iter().map(|(i, _)| i.get()).collect()
    }

    fn due(ids: &[u64]) -> Vec<(InstallationId, ())> {
        ids.iter().map(|i| (InstallationId::new(*i), ())).collect()
    }

    #[test]
    fn the_installation_going_first_moves_on_by_one_each_turn() {
        let mut rotation = Rotation::default();
        let none = HashMap::new();
        assert_eq!(order(&rotation.turn(due(&[3, 1, 2]), &none)), [1, 2, 3]);
        assert_eq!(order(&rotation.turn(due(&[1, 2, 3]), &none)), [2, 3, 1]);
        assert_eq!(order(&rotation.turn(due(&[1, 2, 3]), &none)), [3, 1, 2]);
        // One with nothing due any more is left out; the rotation goes on.
        assert_eq!(order(&rotation.turn(due(&[1, 2]), &none)), [1, 2]);
        assert_eq!(order(&rotation.turn(due(&[1, 2, 7]), &none)), [2, 7, 1]);
    }

    #[test]
    fn a_paused_installation_sits_its_turns_out() {
        let mut rotation = Rotation::default();
        let paused = HashMap::from([(InstallationId::new(1), 5_000)]);
        assert_eq!(order(&rotation.turn(due(&[1, 2]), &paused)), [2]);
        assert_eq!(order(&rotation.turn(due(&[1, 2]), &paused)), [2]);
        assert_eq!(order(&rotation.turn(due(&[1, 2]), &HashMap::new())), [1, 2]);
    }
}
