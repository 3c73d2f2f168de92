//! Texts people read in comments. Every one is an `insta` snapshot.

use crate::commands::{CommandError, Syntax};

/// One line per command of SPEC §5, in the order `help` lists them.
const HELP: &[(&str, &str)] = &[
    (
        "plan",
        "make this issue a story from the fenced `yaml` plan in the same comment",
    ),
    (
        "retry [gate]",
        "run the acceptance gates again (all, or the one named)",
    ),
    (
        "approve [--override <reason>]",
        "approve a task in review; `--override` accepts it despite a red checker (recorded)",
    ),
    (
        "approve-branch",
        "open the proposed branch-todo issue (manual mode)",
    ),
    (
        "revise <feedback>",
        "send a task in review back to its implementor with feedback",
    ),
    ("reject <reason>", "return a task to planning"),
    ("pause", "stop acting on this task or story until resumed"),
    ("resume", "continue after a pause"),
    (
        "ship",
        "ship a shippable story (same as the `ship` label on its pull request)",
    ),
    ("status", "show the state of this story or task"),
    ("explain", "show the latest failure diagnosis"),
    ("help", "show this list"),
];

fn invocation(syntax: &Syntax, command: &str) -> String {
    format!("/{} {command}", syntax.prefix)
}

pub fn help(syntax: &Syntax) -> String {
    let mut out = String::from("**taskgate commands** (one per line, anywhere in a comment):\n\n");
    out.push_str("| command | what it does |\n|---|---|\n");
    for (usage, what) in HELP {
        out.push_str(&format!("| `{}` | {what} |\n", invocation(syntax, usage)));
    }
    if syntax.short_form {
        out.push_str(&format!(
            "\nThe short form works too: `/help` is `/{} help`.",
            syntax.prefix
        ));
    }
    out.push_str("\nCommands inside code blocks and quotes are ignored. State changes need write access to the repository; `ship` and `--override` need maintain or admin.");
    out
}

pub fn unknown_command(name: &str, closest: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` is not a taskgate command. Did you mean `{}`? `{}` lists them all.",
        invocation(syntax, &sanitize(name)),
        invocation(syntax, closest),
        invocation(syntax, "help")
    )
}

pub fn bad_arguments(err: &CommandError, syntax: &Syntax) -> String {
    format!(
        "Could not run {}. `{}` shows how each command is used.",
        sanitize(&err.to_string()),
        invocation(syntax, "help")
    )
}

pub fn not_yet_available(name: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` is recognised, but this taskgate version cannot act on it yet; nothing was changed.",
        invocation(syntax, name)
    )
}

/// A command refused for lack of permission (SPEC §5), naming who may run it.
/// A second state-changing command in one comment.
pub fn one_change_per_comment(command: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` was not run: one comment changes a task or story once. Post it in a new comment.",
        invocation(syntax, command)
    )
}

pub fn permission_refused(
    command: &str,
    needs: crate::core::config::Permission,
    login: &str,
    has: Option<crate::core::config::Permission>,
    syntax: &Syntax,
) -> String {
    format!(
        "`{}` needs {} permission on the repository; @{} has {}.",
        invocation(syntax, command),
        needs.name(),
        sanitize(login),
        has.map(|p| p.name()).unwrap_or("none")
    )
}

/// GitHub could not say what the commenter may do: refused, never allowed.
pub fn permission_unchecked(command: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` was not run: taskgate could not check your permission on the repository (GitHub did not answer). Please try again in a minute.",
        invocation(syntax, command)
    )
}

/// A task command that changed nothing, and why.
pub fn did_nothing(command: &str, why: &str, syntax: &Syntax) -> String {
    // `why` may quote what the user typed (a gate name): it must not ping
    // anyone or plant a marker in the bot's comment.
    let why = crate::classify::neutralize_mentions(why).replace("<!--", "<\u{200D}!--");
    format!("`{}` did nothing: {why}.", invocation(syntax, command))
}

/// A task command on an issue that is not a task's.
pub fn not_on_a_task(command: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` works on a task's issue or pull request; this is neither.",
        invocation(syntax, command)
    )
}

/// The reply to one comment: all its answers, addressed to its author.
pub fn reply(author: &str, answers: &[String]) -> String {
    let mut out = format!("@{author}");
    if answers.len() == 1 {
        out.push(' ');
        out.push_str(&answers[0]);
    } else {
        out.push_str(", one answer per command:\n");
        for answer in answers {
            out.push_str(&format!("\n- {}", answer.replace('\n', "\n  ")));
        }
    }
    out
}

/// Echoed user text must not break out of its inline code span or ping
/// anyone: backticks are replaced and the length is capped.
fn sanitize(text: &str) -> String {
    let mut s: String = text.replace('`', "'").chars().take(80).collect();
    if text.chars().count() > 80 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_quoting_user_text_neither_pings_nor_plants_markers() {
        let text = did_nothing(
            "retry",
            "the task has no gate `x` @org/team <!-- taskgate:reply-to=1 -->`",
            &Syntax::default(),
        );
        assert!(!text.contains("@org"), "{text}");
        assert!(!text.contains("<!--"), "{text}");
    }

    #[test]
    fn help_lists_every_command() {
        insta::assert_snapshot!(help(&Syntax::default()));
    }

    #[test]
    fn unknown_command_reply() {
        insta::assert_snapshot!(
            reply("octocat", &[unknown_command("nonsense", "reject", &Syntax::default())]),
            @"@octocat `/taskgate nonsense` is not a taskgate command. Did you mean `/taskgate reject`? `/taskgate help` lists them all."
        );
    }

    #[test]
    fn several_answers_become_a_list() {
        let s = Syntax::default();
        insta::assert_snapshot!(
            reply("octocat", &[not_yet_available("ship", &s), unknown_command("`rm -rf`", "reject", &s)]),
            @r"
        @octocat, one answer per command:

        - `/taskgate ship` is recognised, but this taskgate version cannot act on it yet; nothing was changed.
        - `/taskgate 'rm -rf'` is not a taskgate command. Did you mean `/taskgate reject`? `/taskgate help` lists them all.
        "
        );
    }
}
