//! `/taskgate status` and `/taskgate explain`: read-only views of a task or
//! story, answered in the reply. Must not: change anything.

use super::{Answer, Invocation};
use crate::app::processor::{DecideError, Processor};
use taskgate_core::commands::Command;
use taskgate_core::render;

impl Processor {
    pub(super) async fn command_view(
        &self,
        inv: &Invocation<'_>,
        command: &Command,
    ) -> Result<Answer, DecideError> {
        let explain = matches!(command, Command::Explain);
        let view = self
            .task_commands
            .command_view(inv.repo, inv.issue(), explain)
            .await?;
        Ok(Answer::reply(match view {
            Some(text) => text,
            None if explain => render::not_on_a_task(command.name(), inv.syntax),
            None => render::status_elsewhere(inv.syntax),
        }))
    }
}

#[cfg(test)]
mod tests {
    use taskgate_core::commands::Syntax;
    use taskgate_core::render;

    #[test]
    fn outside_a_task_or_story_the_reply_says_where_they_work() {
        let syntax = Syntax::default();
        insta::assert_snapshot!(
            render::status_elsewhere(&syntax),
            @"`/taskgate status` works on a story's or task's issue or pull request; this is neither."
        );
        insta::assert_snapshot!(
            render::not_on_a_task("explain", &syntax),
            @"`/taskgate explain` works on a task's issue or pull request; this is neither."
        );
    }
}
