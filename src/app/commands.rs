//! The comment-command dispatcher (SPEC §5): one path from a comment to its
//! commands' effects and answer.
//!
//! Owns: reading a comment with the repository's command syntax, checking
//! each command's permission, handing it to the part that acts (the plan
//! sync, the runs, the pure review transitions) and answering.
//! Must not: decide what a command does to a task (`core::task` does) or
//! skip the permission check for anything that changes state or reads a
//! task (only `help` and unparseable commands are answered unchecked).
//!
//! Ideas a reader needs:
//! - **Every command is answered, once per comment.** Commands that did
//!   what was asked add up to one +1 reaction; everything else (refusals,
//!   errors, `status`, `help`) goes into one reply marked by the comment.
//! - **Edits run only what is new.** An edited comment's commands are
//!   compared with the text before the edit (`changes.body.from`); a
//!   command already there was answered when it was first written. The
//!   new ones run as the editor (the payload's `sender`), with the
//!   editor's permission, never the author's.
//! - **Permission is never assumed.** A user is known by id; when GitHub
//!   cannot say what they may do, the command is refused with a reply.

use crate::commands::{self, Command, CommandError, Syntax};
use crate::core::config::RepoConfig;
use crate::core::task::{ReviewCommand, Reviewer};
use crate::core::{self, render, Actor, Decision, Effect, Reaction};
use crate::ids::{InstallationId, RepoName};
use crate::intake::payload::IssueCommentPayload;

use super::processor::{DecideError, Processor};

/// How one command went.
enum Answer {
    /// Did what was asked: a +1.
    Done,
    /// A text for the reply.
    Reply(String),
    /// Answered by the part that ran it (the plan sync replies itself).
    Silent,
}

/// The command syntax of a repository's configuration.
pub fn syntax_of(config: &RepoConfig) -> Syntax {
    let prefix = config.commands.prefix.trim_start_matches('/');
    Syntax {
        prefix: if prefix.is_empty() {
            Syntax::default().prefix
        } else {
            prefix.to_owned()
        },
        short_form: config.commands.short_form,
    }
}

/// The commands an edit added: those of `after` not already in `before`
/// (as many times as they were there).
fn added_commands(
    before: Vec<Result<Command, CommandError>>,
    after: Vec<Result<Command, CommandError>>,
) -> Vec<Result<Command, CommandError>> {
    let mut before = before;
    after
        .into_iter()
        .filter(|c| match before.iter().position(|b| b == c) {
            Some(i) => {
                let _ = before.remove(i);
                false
            }
            None => true,
        })
        .collect()
}

/// `ship` outside a story: where it works.
pub fn command_ship(syntax: &Syntax) -> String {
    format!(
        "`/{} ship` works on a story's issue or its pull request; this is neither.",
        syntax.prefix
    )
}

impl Processor {
    /// A comment created or edited on an issue or pull request.
    pub(super) async fn on_comment(
        &self,
        installation: InstallationId,
        p: &IssueCommentPayload,
    ) -> Result<Decision, DecideError> {
        if !matches!(p.action.as_str(), "created" | "edited") {
            return Ok(Decision::nothing(format!("issue_comment.{}", p.action)));
        }
        let repo = RepoName::parse(&p.repository.full_name).map_err(DecideError::Permanent)?;
        let author = Actor {
            id: p.comment.user.id,
            login: p.comment.user.login.clone(),
            is_bot: p.comment.user.kind.as_deref() == Some("Bot"),
            via_app: p.comment.performed_via_github_app.as_ref().map(|a| a.id),
        };
        let body = p.comment.body.as_deref().unwrap_or_default();
        if core::is_own(&author, body, &self.context) {
            return Ok(Decision::nothing("own comment"));
        }
        // The commands an edit added are the editor's, with the editor's
        // permission: the author may have far more than the person who
        // changed their words.
        let author = match (p.action.as_str(), p.sender.as_ref()) {
            ("edited", Some(editor)) if editor.id != author.id => Actor {
                id: editor.id,
                login: editor.login.clone(),
                is_bot: editor.kind.as_deref() == Some("Bot"),
                via_app: None,
            },
            _ => author,
        };
        if core::is_own(&author, "", &self.context) {
            return Ok(Decision::nothing("edited by taskgate itself"));
        }
        let config = self.runs.command_config(&repo, p.issue.number).await?;
        let syntax = syntax_of(&config);
        let mut parsed = commands::parse_comment(body, &syntax);
        let edit = match (
            &p.action[..],
            p.changes.as_ref().and_then(|c| c.body.as_ref()),
        ) {
            ("edited", Some(change)) => {
                parsed = added_commands(commands::parse_comment(&change.from, &syntax), parsed);
                Some(fingerprint(body))
            }
            // An edit of something else (the title of a PR, …) is not a new command.
            ("edited", None) => return Ok(Decision::nothing("edit without a body change")),
            _ => None,
        };
        if parsed.is_empty() {
            return Ok(Decision::nothing("no commands"));
        }

        let mut decision = Decision::default();
        let mut outcomes = Vec::new();
        let mut replies = Vec::new();
        let mut done = false;
        let mut changed_state = false;
        for command in &parsed {
            // Each command decides from the stored records; a second state
            // change in the same comment would start from stale ones and
            // could undo the first, so it is refused with a reply instead.
            let changes_state = matches!(
                command,
                Ok(c) if !matches!(c, Command::Help | Command::Status | Command::Explain)
            );
            if changes_state && changed_state {
                let name = command.as_ref().map(Command::name).unwrap_or("?");
                outcomes.push(format!("{name}: not run (one state change per comment)"));
                replies.push(render::one_change_per_comment(name, &syntax));
                continue;
            }
            let answer = self
                .run_command(installation, &repo, p, &author, &config, &syntax, command)
                .await?;
            changed_state |= changes_state && !answer.1.changes.is_empty();
            let (answer, ran) = answer;
            outcomes.push(format!(
                "{}: {}",
                command.as_ref().map(Command::name).unwrap_or("?"),
                if ran.outcome.is_empty() {
                    "answered"
                } else {
                    &ran.outcome
                }
            ));
            decision.changes.extend(ran.changes);
            decision.effects.extend(ran.effects);
            match answer {
                Answer::Done => done = true,
                Answer::Reply(text) => replies.push(text),
                Answer::Silent => {}
            }
        }
        if done {
            decision.effects.push(Effect::ReactToComment {
                repo: repo.clone(),
                comment: p.comment.id,
                reaction: Reaction::PlusOne,
            });
        }
        if !replies.is_empty() {
            let marker = match edit {
                Some(hash) => format!("reply-to={} edit={hash:016x}", p.comment.id),
                None => format!("reply-to={}", p.comment.id),
            };
            decision.effects.push(Effect::PostComment {
                repo: repo.clone(),
                issue: p.issue.number,
                body: render::reply(&author.login, &replies),
                marker,
            });
        }
        decision.outcome = outcomes.join("; ");
        Ok(decision)
    }

    /// Checks permission, runs one command, and says how it went.
    #[allow(clippy::too_many_arguments)]
    async fn run_command(
        &self,
        installation: InstallationId,
        repo: &RepoName,
        p: &IssueCommentPayload,
        author: &Actor,
        config: &RepoConfig,
        syntax: &Syntax,
        command: &Result<Command, CommandError>,
    ) -> Result<(Answer, Decision), DecideError> {
        let reply = |text: String| Ok((Answer::Reply(text), Decision::default()));
        let command = match command {
            Ok(Command::Help) => return reply(render::help(syntax)),
            Ok(command) => command,
            Err(CommandError::Unknown { name, closest }) => {
                return reply(render::unknown_command(name, closest, syntax))
            }
            Err(err @ CommandError::BadArguments { .. }) => {
                return reply(render::bad_arguments(err, syntax))
            }
        };
        let name = command.name();
        let needs = match command {
            Command::Approve {
                override_reason: Some(_),
            } => config.required_permission("override"),
            _ => config.required_permission(name),
        };
        let shown = match command {
            Command::Approve {
                override_reason: Some(_),
            } => "approve --override",
            _ => name,
        };
        match self
            .permissions
            .level(installation, repo, author.id, &author.login)
            .await
        {
            Ok(has) if has >= Some(needs) => {}
            Ok(has) => {
                return reply(render::permission_refused(
                    shown,
                    needs,
                    &author.login,
                    has,
                    syntax,
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, user = %author.id, "reading a permission failed");
                return reply(render::permission_unchecked(shown, syntax));
            }
        }
        let issue = p.issue.number;
        let found = match command {
            Command::Plan => {
                let d = self.syncer.on_plan_comment(installation, p).await?;
                return Ok((Answer::Silent, d));
            }
            Command::Ship => {
                match self
                    .ship
                    .on_ship_command(repo, issue, author.id, &author.login)
                    .await?
                {
                    Some(d) => {
                        // Accepted means the merge was asked for.
                        let accepted = d
                            .effects
                            .iter()
                            .any(|e| matches!(e, Effect::MergePullRequest { .. }));
                        Some((d, accepted))
                    }
                    None => return reply(command_ship(syntax)),
                }
            }
            Command::Status | Command::Explain => {
                let explain = matches!(command, Command::Explain);
                return match self.runs.command_view(repo, issue, explain).await? {
                    Some(text) => reply(text),
                    None if explain => reply(render::not_on_a_task(name, syntax)),
                    None => reply(format!(
                        "`/{} status` works on a story's or task's issue or pull request; this is neither.",
                        syntax.prefix
                    )),
                };
            }
            Command::Help => unreachable!("answered above"),
            Command::Retry { gate } => {
                self.runs
                    .on_retry_command(repo, issue, gate.clone())
                    .await?
            }
            Command::ApproveBranch => self.runs.on_approve_branch(repo, issue).await?,
            Command::Approve { override_reason } => {
                let review = ReviewCommand::Approve {
                    override_reason: override_reason.clone(),
                };
                self.review(repo, issue, &review, author).await?
            }
            Command::Revise { feedback } => {
                let review = ReviewCommand::Revise {
                    feedback: feedback.clone(),
                };
                self.review(repo, issue, &review, author).await?
            }
            Command::Reject { reason } => {
                let review = ReviewCommand::Reject {
                    reason: reason.clone(),
                };
                self.review(repo, issue, &review, author).await?
            }
            Command::Pause => {
                self.review(repo, issue, &ReviewCommand::Pause, author)
                    .await?
            }
            Command::Resume => {
                self.review(repo, issue, &ReviewCommand::Resume, author)
                    .await?
            }
        };
        Ok(match found {
            Some((decision, true)) => (Answer::Done, decision),
            Some((decision, false)) => {
                let why = decision
                    .outcome
                    .split_once(": ")
                    .map(|(_, why)| why.to_owned())
                    .unwrap_or_else(|| decision.outcome.clone());
                (
                    Answer::Reply(render::did_nothing(name, &why, syntax)),
                    Decision::nothing(decision.outcome),
                )
            }
            None => (
                Answer::Reply(render::not_on_a_task(name, syntax)),
                Decision::nothing(format!("{name} outside a task")),
            ),
        })
    }

    async fn review(
        &self,
        repo: &RepoName,
        issue: crate::ids::IssueNumber,
        command: &ReviewCommand,
        author: &Actor,
    ) -> Result<Option<(Decision, bool)>, DecideError> {
        let by = Reviewer {
            id: author.id,
            login: &author.login,
        };
        Ok(self
            .runs
            .on_review_command(repo, issue, command, by)
            .await?)
    }
}

/// A short stable hash of an edited body: replies to different edits of
/// one comment get different markers, a redelivered edit the same one.
fn fingerprint(body: &str) -> u64 {
    // FNV-1a: stable across builds, unlike `DefaultHasher`.
    body.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Vec<Result<Command, CommandError>> {
        commands::parse_comment(body, &Syntax::default())
    }

    #[test]
    fn an_edit_runs_only_the_commands_it_added() {
        let before = parse("/taskgate status\n/taskgate pause");
        let after = parse("/taskgate status\n/taskgate pause\n/taskgate resume\n/taskgate status");
        assert_eq!(
            added_commands(before, after),
            vec![Ok(Command::Resume), Ok(Command::Status)]
        );
    }

    #[test]
    fn the_configured_prefix_may_carry_its_slash() {
        let mut config = RepoConfig::default();
        assert_eq!(syntax_of(&config), Syntax::default());
        config.commands.prefix = "/tg".into();
        config.commands.short_form = false;
        assert_eq!(
            syntax_of(&config),
            Syntax {
                prefix: "tg".into(),
                short_form: false
            }
        );
    }

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fingerprint(""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fingerprint("/pause"), fingerprint("/resume"));
    }
}
