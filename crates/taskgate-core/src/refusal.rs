//! Why a comment command did nothing: a typed reason, made by the pure
//! decision that refused and rendered once here (triagebot's `UserError`
//! idea). The dispatcher never reads a reason back out of an outcome text.
//!
//! Owns: [`Refusal`] and its words.
//! Must not: decide (each family's transition does) or do IO.

use super::ship::ShipRefusal;
use super::task::ReviewRefusal;
use super::Decision;
use crate::commands::Syntax;

/// Why a command that changes a task or story did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `ship` on a story that cannot ship now.
    Ship(ShipRefusal),
    /// `approve`, `revise`, `reject`, `pause` or `resume` the task's state
    /// does not allow.
    Review(ReviewRefusal),
    /// `retry` that started no run: the task decision's reason.
    Retry(String),
    /// `approve-branch` with no branch todo waiting.
    NoBranchTodo,
    /// `unfreeze` on a repository no command froze.
    Freeze(super::freeze::FreezeRefusal),
    /// `rollback` of a story taskgate cannot roll back now.
    Rollback(super::ship::RollbackRefusal),
    /// `accept-commits` naming no commit that waits.
    AcceptCommits(super::ship::AcceptRefusal),
}

impl Refusal {
    /// The reason in the commenter's words (it completes "did nothing: …").
    pub fn reason(&self) -> String {
        match self {
            Refusal::Ship(r) => r.outcome(),
            Refusal::Review(r) => r.to_string(),
            Refusal::Retry(why) => why.clone(),
            Refusal::NoBranchTodo => "no branch todo is waiting for approval".into(),
            Refusal::Freeze(r) => r.to_string(),
            Refusal::Rollback(why) => why.to_string(),
            Refusal::AcceptCommits(why) => why.to_string(),
        }
    }

    /// The reply to `command`: what it did not do, and why.
    pub fn render(&self, command: &str, syntax: &Syntax) -> String {
        super::render::did_nothing(command, &self.reason(), syntax)
    }
}

/// A refused command: the reason, and the decision to store in its place
/// (no changes, no effects; its outcome is the log line).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub refusal: Refusal,
    pub decision: Decision,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_rendered_once_with_its_reason() {
        let refusal = Refusal::Ship(ShipRefusal::PrNotOpen);
        insta::assert_snapshot!(
            refusal.render("ship", &Syntax::default()),
            @"`/taskgate ship` did nothing: ship refused: the story pull request is not open yet."
        );
        insta::assert_snapshot!(
            Refusal::NoBranchTodo.render("approve-branch", &Syntax::default()),
            @"`/taskgate approve-branch` did nothing: no branch todo is waiting for approval."
        );
    }
}
