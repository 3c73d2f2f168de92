//! `on_event`: the one entry point from an event to a decision.

use super::effect::Effect;
use super::event::{Actor, Change, Event};
use super::render;
use crate::commands::{self, Command, CommandError, Syntax};
use crate::ids::{CommentId, IssueNumber, RepoName};

/// What the core needs to know about the world beyond the event.
#[derive(Debug, Clone)]
pub struct Context {
    /// This app's id: comments made through it are taskgate's own.
    pub app_id: u64,
    /// `<slug>[bot]`, when known.
    pub bot_login: Option<String>,
    pub syntax: Syntax,
}

/// What to do about an event: state changes and effects, stored together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub changes: Vec<Change>,
    pub effects: Vec<Effect>,
    /// One line for the delivery's record ("replied to 1 command", …).
    pub outcome: String,
}

impl Decision {
    pub fn nothing(why: impl Into<String>) -> Decision {
        Decision {
            outcome: why.into(),
            ..Decision::default()
        }
    }

    /// Adds `other`'s changes and effects after this one's, to be stored
    /// as one; the outcomes are joined with `; `, an empty one left out.
    pub fn merge(&mut self, other: Decision) {
        self.changes.extend(other.changes);
        self.effects.extend(other.effects);
        self.outcome = match (self.outcome.is_empty(), other.outcome.is_empty()) {
            (_, true) => std::mem::take(&mut self.outcome),
            (true, false) => other.outcome,
            (false, false) => format!("{}; {}", self.outcome, other.outcome),
        };
    }
}

pub fn on_event(event: &Event, ctx: &Context) -> Decision {
    match event {
        Event::Ping => Decision::nothing("pong"),
        Event::InstallationChanged {
            installation,
            account,
            added,
            removed,
        } => Decision {
            changes: vec![Change::InstallationUpdated {
                installation: *installation,
                account: account.clone(),
                added: added.clone(),
                removed: removed.clone(),
            }],
            effects: vec![],
            outcome: format!(
                "installation {installation}: {} repositories added, {} removed",
                added.len(),
                removed.len()
            ),
        },
        Event::InstallationDeleted { installation } => Decision {
            changes: vec![Change::InstallationRemoved {
                installation: *installation,
            }],
            effects: vec![],
            outcome: format!("installation {installation} removed"),
        },
        Event::CommentCreated {
            repo,
            issue,
            comment,
            author,
            body,
            ..
        } => handle_comment(repo, *issue, *comment, author, body, ctx),
        Event::Unused { event, action } => on_unused(event, action.as_deref()),
    }
}

/// The decision for an event nothing acts on with this action. It needs
/// neither the payload nor the context, so intake can take it before the
/// delivery is stored.
pub fn on_unused(event: &str, action: Option<&str>) -> Decision {
    Decision::nothing(match action {
        Some(action) => format!("nothing to do for {event}.{action}"),
        None => format!("nothing to do for {event}"),
    })
}

/// The comment a reply answers: its edit too, when the commands came from
/// an edit (a second edit then gets its own reply).
pub struct CommentRef<'a> {
    pub repo: &'a RepoName,
    pub issue: IssueNumber,
    pub comment: CommentId,
    /// A fingerprint of the edited body.
    pub edit: Option<u64>,
}

/// The GitHub side of answering a comment's commands: a 👍 on it when one
/// was carried out, and every answer in one reply marked by the comment
/// (one comment in, at most one reply out).
pub fn answer_comment(
    to: &CommentRef,
    login: &str,
    answers: &[String],
    acted: bool,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    if acted {
        effects.push(Effect::ReactToComment {
            repo: to.repo.clone(),
            comment: to.comment,
            reaction: crate::Reaction::PlusOne,
        });
    }
    if !answers.is_empty() {
        let marker = match to.edit {
            Some(hash) => format!("reply-to={} edit={hash:016x}", to.comment),
            None => format!("reply-to={}", to.comment),
        };
        effects.push(Effect::PostComment {
            repo: to.repo.clone(),
            issue: to.issue,
            body: render::reply(login, answers),
            marker,
        });
    }
    effects
}

/// Whether taskgate wrote this comment itself: its own comments are never
/// commands.
pub fn is_own(author: &Actor, body: &str, ctx: &Context) -> bool {
    author.via_app == Some(ctx.app_id)
        || ctx.bot_login.as_deref() == Some(author.login.as_str())
        // Every comment taskgate writes carries a marker; a human's does not.
        || (author.is_bot && body.contains("<!-- taskgate:"))
}

fn handle_comment(
    repo: &RepoName,
    issue: IssueNumber,
    comment: CommentId,
    author: &Actor,
    body: &str,
    ctx: &Context,
) -> Decision {
    if is_own(author, body, ctx) {
        return Decision::nothing("own comment");
    }
    // With an installation every command goes through `app::commands`;
    // this answers what can be answered without one (nothing is performed
    // for such a delivery, see the processor), leaving out the commands
    // that act on a task or a plan.
    let parsed: Vec<_> = commands::parse_comment(body, &ctx.syntax)
        .into_iter()
        .filter(|c| {
            !matches!(
                c,
                Ok(Command::Plan | Command::Retry { .. } | Command::ApproveBranch)
            )
        })
        .collect();
    if parsed.is_empty() {
        return Decision::nothing("no commands");
    }
    let answers: Vec<String> = parsed
        .iter()
        .map(|command| answer(command, &ctx.syntax))
        .collect();
    let to = CommentRef {
        repo,
        issue,
        comment,
        edit: None,
    };
    Decision {
        changes: vec![],
        effects: answer_comment(&to, &author.login, &answers, false),
        outcome: format!("answered {} command(s)", parsed.len()),
    }
}

fn answer(command: &Result<Command, CommandError>, syntax: &Syntax) -> String {
    match command {
        Ok(Command::Help) => render::help(syntax),
        Ok(other) => render::not_yet_available(other.name(), syntax),
        Err(CommandError::Unknown { name, closest }) => {
            render::unknown_command(name, closest, syntax)
        }
        Err(err @ CommandError::BadArguments { .. }) => render::bad_arguments(err, syntax),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;

    #[test]
    fn merged_decisions_keep_both_in_order_and_join_only_outcomes_that_say_something() {
        let pong = |outcome: &str| Decision {
            effects: vec![Effect::AdvanceShipQueue {
                repo: crate::ids::RepoName::parse("o/r").unwrap(),
            }],
            ..Decision::nothing(outcome)
        };
        let mut d = pong("a");
        d.merge(pong(""));
        assert_eq!((d.outcome.as_str(), d.effects.len()), ("a", 2));
        d.merge(pong("b"));
        assert_eq!(d.outcome, "a; b");
        let mut empty = Decision::nothing("");
        empty.merge(pong("c"));
        assert_eq!(empty.outcome, "c");
    }

    fn ctx() -> Context {
        Context {
            app_id: 7,
            bot_login: Some("taskgate[bot]".into()),
            syntax: Syntax::default(),
        }
    }

    fn human() -> Actor {
        Actor {
            id: UserId::new(1),
            login: "octocat".into(),
            is_bot: false,
            via_app: None,
        }
    }

    fn comment(author: Actor, body: &str) -> Event {
        Event::CommentCreated {
            repo: RepoName::parse("o/r").unwrap(),
            issue: IssueNumber::new(3),
            is_pull_request: false,
            comment: CommentId::new(99),
            author,
            body: body.into(),
        }
    }

    #[test]
    fn help_gets_exactly_one_reply_marked_by_the_comment() {
        let d = on_event(&comment(human(), "/taskgate help\n/help"), &ctx());
        assert_eq!(d.effects.len(), 1);
        let Effect::PostComment { marker, issue, .. } = &d.effects[0] else {
            panic!("expected a comment")
        };
        assert_eq!(marker, "reply-to=99");
        assert_eq!(*issue, IssueNumber::new(3));
    }

    #[test]
    fn own_comments_are_ignored_by_app_login_or_marker() {
        let via_app = Actor {
            via_app: Some(7),
            ..human()
        };
        let by_login = Actor {
            login: "taskgate[bot]".into(),
            is_bot: true,
            ..human()
        };
        let marked = Actor {
            login: "other[bot]".into(),
            is_bot: true,
            ..human()
        };
        for author in [via_app, by_login] {
            assert!(on_event(&comment(author, "/taskgate help"), &ctx())
                .effects
                .is_empty());
        }
        let body = "/taskgate help\n<!-- taskgate:reply-to=1 -->";
        assert!(on_event(&comment(marked, body), &ctx()).effects.is_empty());
    }

    #[test]
    fn other_bots_may_run_commands() {
        let agent = Actor {
            login: "coder-agent[bot]".into(),
            is_bot: true,
            ..human()
        };
        assert_eq!(
            on_event(&comment(agent, "/taskgate help"), &ctx())
                .effects
                .len(),
            1
        );
    }

    #[test]
    fn comments_without_commands_change_nothing() {
        let d = on_event(
            &comment(human(), "LGTM, `/taskgate ship` when ready"),
            &ctx(),
        );
        assert_eq!(d, Decision::nothing("no commands"));
    }
}
