//! The comment-command dispatcher (SPEC §5): one path from a comment to its
//! commands' effects and answer.
//!
//! Owns: reading a comment with the repository's command syntax, checking
//! each command's permission, handing it to its family's handler and
//! answering: [`ship`] (`ship`), [`task`] (`retry`, `approve-branch`,
//! `approve`, `revise`, `reject`, `pause`, `resume`), [`freeze`]
//! (`freeze`, `unfreeze`), [`rollback`], [`quarantine`] (`unquarantine`),
//! [`view`] (`status`, `explain`), [`doctor`];
//! `plan` goes to the plan sync, `help` is answered here.
//! Must not: decide what a command does to a task or story (`core::task`
//! and `core::ship` do, and say why when they refuse, as a typed
//! [`Refusal`](taskgate_core::refusal::Refusal)), or skip the permission check for anything that changes
//! state or reads a task (only `help` and unparseable commands are
//! answered unchecked).
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

mod doctor;
mod freeze;
mod github_review;
mod quarantine;
mod rollback;
mod ship;
mod store;
mod task;
mod view;

pub(crate) use store::CommandsStore;

use crate::intake::payload::{IssueCommentAction, IssueCommentPayload};
use crate::intake::translate;
use taskgate_core::commands::{self, Command, CommandError, Family, Syntax};
use taskgate_core::config::{Permission, RepoConfig};
use taskgate_core::ids::{InstallationId, IssueNumber, RepoName};
use taskgate_core::refusal::Refused;
use taskgate_core::ship::Priority;
use taskgate_core::task::ReviewCommand;
use taskgate_core::{render, Actor, CommentRef, Decision};

use super::processor::{DecideError, Processor};
use super::sync::ConfigSeen;
use super::Handled;
use task::TaskCommand;

type Parsed = Result<Command, CommandError>;

/// How one command went.
enum Answer {
    /// Did what was asked: a +1.
    Done(Decision),
    /// A text for the reply, and the decision to store.
    Reply(String, Decision),
    /// Answered by the part that ran it (the plan sync replies itself).
    Silent(Decision),
}

impl Answer {
    fn reply(text: String) -> Answer {
        Answer::Reply(text, Decision::default())
    }

    /// A task or story command's result: done, refused with the core's
    /// reason, or on an issue where it does not apply (`elsewhere`).
    fn of(
        name: &str,
        syntax: &Syntax,
        handled: Handled,
        elsewhere: impl FnOnce() -> Answer,
    ) -> Answer {
        match handled {
            Handled::Decided(decision) => Answer::Done(decision),
            Handled::Refused(Refused { refusal, decision }) => {
                Answer::Reply(refusal.render(name, syntax), decision)
            }
            Handled::NotMine => elsewhere(),
        }
    }

    /// A command's result where it always applies (anywhere in the
    /// repository): done, or refused with the core's reason.
    fn of_result(name: &str, syntax: &Syntax, result: Result<Decision, Refused>) -> Answer {
        match result {
            Ok(decision) => Answer::Done(decision),
            Err(Refused { refusal, decision }) => {
                Answer::Reply(refusal.render(name, syntax), decision)
            }
        }
    }

    fn decision(&self) -> &Decision {
        match self {
            Answer::Done(d) | Answer::Reply(_, d) | Answer::Silent(d) => d,
        }
    }
}

/// One command being run: where, by whom, with which configuration.
struct Invocation<'a> {
    installation: InstallationId,
    repo: &'a RepoName,
    payload: &'a IssueCommentPayload,
    author: &'a Actor,
    config: &'a RepoConfig,
    syntax: &'a Syntax,
}

impl Invocation<'_> {
    fn issue(&self) -> IssueNumber {
        self.payload.issue.number
    }
}

/// A comment's new commands, ready to run.
struct Comment {
    repo: RepoName,
    author: Actor,
    config: RepoConfig,
    syntax: Syntax,
    commands: Vec<Parsed>,
    /// The edited body's fingerprint, for an edit.
    edit: Option<u64>,
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
fn added_commands(before: Vec<Parsed>, after: Vec<Parsed>) -> Vec<Parsed> {
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

/// The permission `command` needs here, and the name a refusal shows.
fn needed(command: &Command, config: &RepoConfig) -> (Permission, &'static str) {
    match command {
        Command::Approve {
            override_reason: Some(_),
        } => (
            config.required_permission(commands::OVERRIDE),
            "approve --override",
        ),
        // A place ahead of the queue is the maintainers' to give, whatever
        // `ship` itself needs in this repository.
        Command::Ship { priority } if *priority != Priority::Normal => (
            config.required_permission("ship").max(Permission::Maintain),
            "ship --priority",
        ),
        _ => (config.required_permission(command.name()), command.name()),
    }
}

/// Whether a command changes a task or story (at most one per comment):
/// the table's word for it; a command that did not parse changes nothing.
fn changes_state(command: &Parsed) -> bool {
    command.as_ref().is_ok_and(Command::changes_state)
}

impl Processor {
    /// A comment created or edited on an issue or pull request.
    pub(super) async fn on_comment(
        &self,
        installation: InstallationId,
        p: &IssueCommentPayload,
        seen: ConfigSeen,
    ) -> Result<Decision, DecideError> {
        match self.read_comment(p, seen).await? {
            Ok(comment) => self.answer(installation, p, comment).await,
            Err(nothing) => Ok(nothing),
        }
    }

    /// The comment's new commands, or why there are none to run.
    async fn read_comment(
        &self,
        p: &IssueCommentPayload,
        seen: ConfigSeen,
    ) -> Result<Result<Comment, Decision>, DecideError> {
        let nothing = |why: &str| Ok(Err(Decision::nothing(why)));
        let edited = match &p.action {
            IssueCommentAction::Created => false,
            IssueCommentAction::Edited => true,
            IssueCommentAction::Other(action) => {
                return Ok(Err(Decision::nothing(format!("issue_comment.{action}"))))
            }
        };
        let repo = RepoName::parse(&p.repository.full_name)
            .map_err(|e| DecideError::Permanent(e.to_string()))?;
        let via_app = p.comment.performed_via_github_app.as_ref().map(|a| a.id);
        let author = translate::actor(&p.comment.user, via_app);
        let body = p.comment.body.as_deref().unwrap_or_default();
        if taskgate_core::is_own(&author, body, &self.context) {
            return nothing("own comment");
        }
        // The commands an edit added are the editor's, with the editor's
        // permission: the author may have far more than the person who
        // changed their words.
        let author = match (edited, p.sender.as_ref()) {
            (true, Some(editor)) if editor.id != author.id => translate::actor(editor, None),
            _ => author,
        };
        if taskgate_core::is_own(&author, "", &self.context) {
            return nothing("edited by taskgate itself");
        }
        // The repository's config, wherever the comment is: a task PR, a
        // story PR, a plan issue or a plain issue.
        let config = self.syncer.repo_config_seen(&repo, seen).await?;
        let syntax = syntax_of(&config);
        let mut parsed = commands::parse_comment(body, &syntax);
        let edit = match (edited, p.changes.as_ref().and_then(|c| c.body.as_ref())) {
            (true, Some(change)) => {
                parsed = added_commands(commands::parse_comment(&change.from, &syntax), parsed);
                Some(fingerprint(body))
            }
            // An edit of something else (the title of a PR, …) is not a new command.
            (true, None) => return nothing("edit without a body change"),
            (false, _) => None,
        };
        if parsed.is_empty() {
            return nothing("no commands");
        }
        Ok(Ok(Comment {
            repo,
            author,
            config,
            syntax,
            commands: parsed,
            edit,
        }))
    }

    /// Runs a comment's commands and answers them: one +1, one reply.
    async fn answer(
        &self,
        installation: InstallationId,
        p: &IssueCommentPayload,
        c: Comment,
    ) -> Result<Decision, DecideError> {
        let inv = Invocation {
            installation,
            repo: &c.repo,
            payload: p,
            author: &c.author,
            config: &c.config,
            syntax: &c.syntax,
        };
        let mut decision = Decision::default();
        let (mut outcomes, mut replies) = (Vec::new(), Vec::new());
        let (mut done, mut changed_state) = (false, false);
        for command in &c.commands {
            let name = command.as_ref().map(Command::name).unwrap_or("?");
            // Each command decides from the stored records; a second state
            // change in the same comment would start from stale ones and
            // could undo the first, so it is refused with a reply instead.
            if changes_state(command) && changed_state {
                outcomes.push(format!("{name}: not run (one state change per comment)"));
                replies.push(render::one_change_per_comment(name, &c.syntax));
                continue;
            }
            let answer = self.run_command(&inv, command).await?;
            let ran = answer.decision();
            changed_state |= changes_state(command) && !ran.changes.is_empty();
            let outcome = if ran.outcome.is_empty() {
                "answered"
            } else {
                &ran.outcome
            };
            outcomes.push(format!("{name}: {outcome}"));
            let (text, ran) = match answer {
                Answer::Done(d) => {
                    done = true;
                    (None, d)
                }
                Answer::Reply(text, d) => (Some(text), d),
                Answer::Silent(d) => (None, d),
            };
            replies.extend(text);
            decision.changes.extend(ran.changes);
            decision.effects.extend(ran.effects);
        }
        let to = CommentRef {
            repo: &c.repo,
            issue: p.issue.number,
            comment: p.comment.id,
            edit: c.edit,
        };
        let answered = taskgate_core::answer_comment(&to, &c.author.login, &replies, done);
        decision.effects.extend(answered);
        decision.outcome = outcomes.join("; ");
        Ok(decision)
    }

    /// Checks permission, hands one command to its family, and says how
    /// it went.
    async fn run_command(
        &self,
        inv: &Invocation<'_>,
        command: &Parsed,
    ) -> Result<Answer, DecideError> {
        let command = match command {
            Ok(command) => command,
            Err(CommandError::Unknown { name, closest }) => {
                return Ok(Answer::reply(render::unknown_command(
                    name, closest, inv.syntax,
                )))
            }
            Err(err @ CommandError::BadArguments { .. }) => {
                return Ok(Answer::reply(render::bad_arguments(err, inv.syntax)))
            }
        };
        // `help` is anyone's: no permission read for the list itself.
        if command.spec().family != Family::Help {
            if let Some(refused) = self.permission_refused(inv, command).await {
                return Ok(Answer::reply(refused));
            }
        }
        // Every variant by name: a new command does not compile until it
        // has its handler here.
        match command {
            Command::Help => Ok(Answer::reply(render::help(inv.syntax))),
            Command::Plan => {
                let d = self
                    .syncer
                    .on_plan_comment(inv.installation, inv.payload)
                    .await?;
                Ok(Answer::Silent(d))
            }
            Command::Retry { gate } => {
                let gate = gate.clone();
                self.command_task(inv, TaskCommand::Retry { gate }).await
            }
            Command::ApproveBranch => self.command_task(inv, TaskCommand::ApproveBranch).await,
            Command::Approve { override_reason } => {
                let override_reason = override_reason.clone();
                let review = ReviewCommand::Approve { override_reason };
                self.command_task(inv, TaskCommand::Review(review)).await
            }
            Command::Revise { feedback } => {
                let review = ReviewCommand::Revise {
                    feedback: feedback.clone(),
                };
                self.command_task(inv, TaskCommand::Review(review)).await
            }
            Command::Reject { reason } => {
                let review = ReviewCommand::Reject {
                    reason: reason.clone(),
                };
                self.command_task(inv, TaskCommand::Review(review)).await
            }
            Command::Pause => {
                let review = TaskCommand::Review(ReviewCommand::Pause);
                self.command_task(inv, review).await
            }
            Command::Resume => {
                let review = TaskCommand::Review(ReviewCommand::Resume);
                self.command_task(inv, review).await
            }
            Command::Ship { priority } => self.command_ship(inv, *priority).await,
            Command::AcceptCommits { commit } => self.command_accept_commits(inv, commit).await,
            Command::Freeze { .. } | Command::Unfreeze => self.command_freeze(inv, command).await,
            Command::Rollback { now } => self.command_rollback(inv, now.as_deref()).await,
            Command::Unquarantine { test } => self.command_unquarantine(inv, test).await,
            Command::Status | Command::Explain => self.command_view(inv, command).await,
            Command::Doctor => Ok(self.command_doctor(inv).await),
        }
    }

    /// The reply refusing `command` for lack of permission; `None` when
    /// the author may run it.
    async fn permission_refused(&self, inv: &Invocation<'_>, command: &Command) -> Option<String> {
        let (needs, shown) = needed(command, inv.config);
        let author = inv.author;
        match self
            .permissions
            .level(inv.installation, inv.repo, author.id, &author.login)
            .await
        {
            Ok(has) if has >= Some(needs) => None,
            Ok(has) => Some(render::permission_refused(
                shown,
                needs,
                &author.login,
                has,
                inv.syntax,
            )),
            Err(e) => {
                tracing::warn!(error = %e, user = %author.id, "reading a permission failed");
                Some(render::permission_unchecked(shown, inv.syntax))
            }
        }
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

    fn parse(body: &str) -> Vec<Parsed> {
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
    fn an_override_needs_the_override_permission() {
        let config = RepoConfig::default();
        let approve = |r: Option<&str>| Command::Approve {
            override_reason: r.map(str::to_owned),
        };
        assert_eq!(
            needed(&approve(None), &config),
            (Permission::Write, "approve")
        );
        assert_eq!(
            needed(&approve(Some("flaky")), &config),
            (Permission::Maintain, "approve --override")
        );
        assert_eq!(
            needed(&Command::Status, &config),
            (Permission::Read, "status")
        );
    }

    #[test]
    fn freeze_unfreeze_and_rollback_need_maintain_unless_configured() {
        let mut config = RepoConfig::default();
        let freeze = Command::Freeze {
            reason: "release".into(),
        };
        assert_eq!(needed(&freeze, &config), (Permission::Maintain, "freeze"));
        assert_eq!(
            needed(&Command::Unfreeze, &config),
            (Permission::Maintain, "unfreeze")
        );
        let rollback = Command::Rollback {
            now: Some("prod is down".into()),
        };
        assert_eq!(
            needed(&rollback, &config),
            (Permission::Maintain, "rollback")
        );
        config
            .commands
            .permissions
            .insert("freeze".into(), Permission::Admin);
        assert_eq!(needed(&freeze, &config), (Permission::Admin, "freeze"));
        assert!(changes_state(&Ok(Command::Unfreeze)));
    }

    #[test]
    fn only_state_changes_count_against_one_per_comment() {
        assert!(changes_state(&Ok(Command::Pause)));
        assert!(!changes_state(&Ok(Command::Status)));
        assert!(!changes_state(&parse("/taskgate nope")[0]));
    }

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fingerprint(""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fingerprint("/pause"), fingerprint("/resume"));
    }
}
