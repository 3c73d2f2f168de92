//! The comment-command grammar (SPEC §5). Pure: text in, commands out.
//!
//! Owns: finding command lines in a Markdown comment and parsing them.
//! Must not: decide what a command does or who may run it (the core does),
//! or do any IO.
//!
//! A command is a line that starts with `/taskgate <name>` (or the short
//! `/<name>` for known names, when enabled). The comment is read as
//! Markdown, so lines inside code blocks, inline code and block quotes are
//! never commands: quoting someone's `/taskgate ship` must not ship.

mod grammar;
mod table;

pub use grammar::{parse_line, Command, CommandError};
pub use table::{
    command, command_names, default_permission, permission_keys, CommandSpec, Family, COMMANDS,
    OVERRIDE,
};

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// How commands are spelled in this repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Syntax {
    /// `taskgate` → `/taskgate help`.
    pub prefix: String,
    /// Whether `/help` works as well as `/taskgate help`.
    pub short_form: bool,
}

impl Default for Syntax {
    fn default() -> Self {
        Syntax {
            prefix: "taskgate".into(),
            short_form: true,
        }
    }
}

/// Every command in `body`, in order, each parsed or with its error.
pub fn parse_comment(body: &str, syntax: &Syntax) -> Vec<Result<Command, CommandError>> {
    command_lines(body)
        .iter()
        .filter_map(|line| parse_line(line, syntax))
        .collect()
}

/// The first fenced code block marked `yaml` or `yml`: the plan of a
/// `/taskgate plan` comment.
pub fn yaml_block(body: &str) -> Option<String> {
    let mut inside = false;
    let mut text = String::new();
    for event in Parser::new(body) {
        match event {
            Event::Start(Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(info))) => {
                let lang = info.split_whitespace().next().unwrap_or_default();
                inside = lang.eq_ignore_ascii_case("yaml") || lang.eq_ignore_ascii_case("yml");
            }
            Event::Text(t) if inside => text.push_str(&t),
            Event::End(TagEnd::CodeBlock) if inside => return Some(text),
            _ => {}
        }
    }
    None
}

/// The lines of `body` that are plain paragraph text: outside code blocks,
/// block quotes and HTML. Inline code is replaced by a placeholder so that
/// `` `/taskgate ship` `` cannot start a command line.
fn command_lines(body: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut quote_depth = 0usize;
    let mut in_code_block = false;
    let mut in_paragraph = false;
    for event in Parser::new(body) {
        match event {
            Event::Start(Tag::BlockQuote(_)) => quote_depth += 1,
            Event::End(TagEnd::BlockQuote(_)) => quote_depth = quote_depth.saturating_sub(1),
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Start(Tag::Paragraph) => in_paragraph = true,
            Event::End(TagEnd::Paragraph) => {
                in_paragraph = false;
                flush(&mut lines, &mut current);
            }
            _ if quote_depth > 0 || in_code_block || !in_paragraph => {}
            Event::Text(text) => current.push_str(&text),
            Event::Code(_) => current.push('\u{FFFC}'),
            Event::SoftBreak | Event::HardBreak => flush(&mut lines, &mut current),
            _ => {}
        }
    }
    flush(&mut lines, &mut current);
    lines
}

fn flush(lines: &mut Vec<String>, current: &mut String) {
    if !current.trim().is_empty() {
        lines.push(current.trim().to_owned());
    }
    current.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Vec<Result<Command, CommandError>> {
        parse_comment(body, &Syntax::default())
    }

    #[test]
    fn finds_long_and_short_commands_on_their_own_lines() {
        assert_eq!(
            parse("Thanks!\n/taskgate help\n\n/status\nnot /help mid-line"),
            vec![Ok(Command::Help), Ok(Command::Status)]
        );
    }

    #[test]
    fn ignores_code_blocks_quotes_and_inline_code() {
        let body = "```\n/taskgate ship\n```\n\n> /taskgate ship\n\n    /taskgate ship\n\n`/taskgate ship`\n\n<!-- /taskgate ship -->";
        assert_eq!(parse(body), vec![]);
    }

    #[test]
    fn short_form_can_be_turned_off_and_ignores_unknown_names() {
        let off = Syntax {
            short_form: false,
            ..Syntax::default()
        };
        assert_eq!(parse_comment("/help", &off), vec![]);
        assert_eq!(parse("/cc @someone"), vec![]);
    }

    #[test]
    fn unknown_long_commands_suggest_the_closest() {
        assert_eq!(
            parse("/taskgate stauts"),
            vec![Err(CommandError::Unknown {
                name: "stauts".into(),
                closest: "status"
            })]
        );
    }

    #[test]
    fn the_plan_is_the_first_yaml_fence() {
        let body = "/taskgate plan\n\n```sh\nls\n```\n\n```yaml\nstory: X\ntasks: []\n```\n";
        assert_eq!(yaml_block(body).as_deref(), Some("story: X\ntasks: []\n"));
        assert_eq!(yaml_block("/taskgate plan\n\n    story: X"), None);
    }

    #[test]
    fn a_custom_prefix_is_honoured() {
        let syntax = Syntax {
            prefix: "tg".into(),
            short_form: false,
        };
        assert_eq!(
            parse_comment("/tg help\n/taskgate help", &syntax),
            vec![Ok(Command::Help)]
        );
    }

    #[test]
    fn accept_commits_takes_one_full_forty_digit_sha() {
        let full = "ABCDEF1".repeat(5) + "01234";
        assert_eq!(
            parse(&format!("/taskgate accept-commits {full}")),
            vec![Ok(Command::AcceptCommits {
                commit: full.to_ascii_lowercase()
            })]
        );
        let refused = |line: &str| match parse(line).pop() {
            Some(Err(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        insta::assert_snapshot!(
            [
                refused("/taskgate accept-commits"),
                refused("/taskgate accept-commits abcdef1"),
                refused("/taskgate accept-commits main"),
                refused(&format!("/taskgate accept-commits {full}0")),
                refused("/taskgate accept-commits abcdef1 1234567"),
            ]
            .join("\n"),
            @r"
            `accept-commits`: needs the commit to accept up to (its sha)
            `accept-commits`: `abcdef1` is not a full sha (all 40 hex digits)
            `accept-commits`: `main` is not a full sha (all 40 hex digits)
            `accept-commits`: `ABCDEF1ABCDEF1ABCDEF1ABCDEF1ABCDEF1012340` is not a full sha (all 40 hex digits)
            `accept-commits`: takes one commit: the newest to accept
            "
        );
    }
}
