//! The one shape every handler the processor routes to answers in: the
//! event was not its own, it decided, or the core refused.
//!
//! Owns: [`Handled`]. Must not: decide, store or render anything (the
//! processor stores, `app::commands` renders a refusal as a reply).
//!
//! Why this shape (docs/decisions/handled.md): a route asks handlers in
//! turn (a pull request is the ship's, else the runs'; a push is the
//! runs', else the plan sync's), so "not mine" is an answer of its own,
//! not an empty decision; a command's refusal carries the core's typed
//! reason beside the decision to store, so the dispatcher can reply with
//! it. Failures are the `Err` beside it, judged by
//! [`crate::transient::Transient`].

use taskgate_core::refusal::Refused;
use taskgate_core::Decision;

/// What a handler made of an event or a command.
#[must_use]
#[derive(Debug)]
pub enum Handled {
    /// Not this handler's (the issue is no task's, the pull request no
    /// story's): the route asks the next one, or answers that nothing
    /// acts on it.
    NotMine,
    /// The decision to store.
    Decided(Decision),
    /// The core said no: why (a command answers with it), and the
    /// decision to store all the same.
    Refused(Refused),
}

impl Handled {
    /// The decision to store, when the handler took the event (a
    /// refusal's own, its reason dropped: for a caller that only records).
    pub fn taken(self) -> Option<Decision> {
        match self {
            Handled::NotMine => None,
            Handled::Decided(decision) | Handled::Refused(Refused { decision, .. }) => {
                Some(decision)
            }
        }
    }
}

impl From<Decision> for Handled {
    fn from(decision: Decision) -> Self {
        Handled::Decided(decision)
    }
}

impl From<Result<Decision, Refused>> for Handled {
    fn from(result: Result<Decision, Refused>) -> Self {
        match result {
            Ok(decision) => Handled::Decided(decision),
            Err(refused) => Handled::Refused(refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::refusal::Refusal;
    use taskgate_core::task::ReviewRefusal;

    #[test]
    fn a_refusal_is_taken_with_its_own_decision_and_not_mine_is_not_taken() {
        let refused = Handled::Refused(Refused {
            refusal: Refusal::Review(ReviewRefusal::NotPaused { state: "review" }),
            decision: Decision::nothing("task t: refused"),
        });
        assert_eq!(refused.taken().unwrap().outcome, "task t: refused");
        assert!(Handled::NotMine.taken().is_none());
        let done = Handled::from(Ok(Decision::nothing("done")));
        assert!(matches!(done, Handled::Decided(d) if d.outcome == "done"));
    }
}
