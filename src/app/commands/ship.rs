//! `/taskgate ship` and `/taskgate accept-commits <commit>` on a story's
//! issue or its pull request.
//!
//! Owns: handing the request to `app::ship` as the commenter and turning
//! the core's answer into the reply. Must not: decide whether the story
//! ships (`core::ship::on_ship_request` does, with the same rule as the
//! label and the API) or which commits are accepted (`core::ship::vet`).

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use taskgate_core::render;
use taskgate_core::ship::{Priority, ShipVia, Shipper};

impl Processor {
    pub(super) async fn command_ship(
        &self,
        inv: &Invocation<'_>,
        priority: Priority,
    ) -> Result<Answer, DecideError> {
        let by = Shipper {
            user: Some(inv.author.id),
            login: inv.author.login.clone(),
            via: ShipVia::Command,
            priority,
        };
        let result = self.ship.on_ship_command(inv.repo, inv.issue(), by).await?;
        Ok(Answer::of("ship", inv.syntax, result, || {
            Answer::reply(render::ship_elsewhere(inv.syntax))
        }))
    }

    pub(super) async fn command_accept_commits(
        &self,
        inv: &Invocation<'_>,
        commit: &str,
    ) -> Result<Answer, DecideError> {
        let by = Shipper {
            user: Some(inv.author.id),
            login: inv.author.login.clone(),
            via: ShipVia::Command,
            priority: Priority::Normal,
        };
        let result = (self.ship)
            .on_accept_commits(inv.repo, inv.issue(), by, commit)
            .await?;
        const NAME: &str = "accept-commits";
        Ok(Answer::of(NAME, inv.syntax, result, || {
            Answer::reply(render::not_on_a_story(NAME, inv.syntax))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Handled;
    use taskgate_core::commands::Syntax;
    use taskgate_core::refusal::{Refusal, Refused};
    use taskgate_core::ship::ShipRefusal;
    use taskgate_core::Decision;

    #[test]
    fn a_refused_ship_is_answered_with_the_core_reason() {
        let refused = Refused {
            refusal: Refusal::Ship(ShipRefusal::NotShippable {
                missing: vec!["task `check` (Check) is not started".into()],
            }),
            decision: Decision::nothing("story s: ship refused: …"),
        };
        let Answer::Reply(text, d) = Answer::of(
            "ship",
            &Syntax::default(),
            Handled::Refused(refused),
            || unreachable!(),
        ) else {
            panic!("a refusal is a reply");
        };
        insta::assert_snapshot!(text, @"`/taskgate ship` did nothing: ship refused: task `check` (Check) is not started.");
        assert!(d.effects.is_empty() && d.changes.is_empty());
    }

    #[test]
    fn outside_a_story_the_reply_says_where_ship_works() {
        insta::assert_snapshot!(
            render::ship_elsewhere(&Syntax::default()),
            @"`/taskgate ship` works on a story's issue or its pull request; this is neither."
        );
    }
}
