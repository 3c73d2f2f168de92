//! One command line → one [`Command`].

use super::table::{self, command_names, CommandSpec};
use super::Syntax;
use crate::ship::Priority;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Plan,
    Retry {
        gate: Option<String>,
    },
    Approve {
        override_reason: Option<String>,
    },
    ApproveBranch,
    Revise {
        feedback: String,
    },
    Reject {
        reason: String,
    },
    Pause,
    Resume,
    /// `ship [--priority normal|high|hotfix]`: where the story goes in the
    /// ship queue (a priority other than normal needs `maintain`).
    Ship {
        priority: Priority,
    },
    /// `accept-commits <commit>`: commits on a story branch that no task
    /// PR made, up to `<commit>`, accepted as the story's (recorded).
    AcceptCommits {
        commit: String,
    },
    /// `freeze <reason>`: nothing lands in the repository until `unfreeze`.
    Freeze {
        reason: String,
    },
    Unfreeze,
    /// `rollback [--now <reason>]`: revert a shipped story; `--now` skips
    /// the revert's proof (the reason is recorded).
    Rollback {
        now: Option<String>,
    },
    /// `unquarantine <test id>`: lifts a flaky test's quarantine.
    Unquarantine {
        test: String,
    },
    Status,
    Explain,
    /// What the repository needs for taskgate (`core::doctor`).
    Doctor,
    Help,
}

impl Command {
    /// The command's row of the table: its name, permission, family and
    /// whether it changes state. A match on every variant, so a new
    /// command does not compile until it has its row.
    pub fn spec(&self) -> &'static CommandSpec {
        match self {
            Command::Plan => &table::PLAN,
            Command::Retry { .. } => &table::RETRY,
            Command::Approve { .. } => &table::APPROVE,
            Command::ApproveBranch => &table::APPROVE_BRANCH,
            Command::Revise { .. } => &table::REVISE,
            Command::Reject { .. } => &table::REJECT,
            Command::Pause => &table::PAUSE,
            Command::Resume => &table::RESUME,
            Command::Ship { .. } => &table::SHIP,
            Command::AcceptCommits { .. } => &table::ACCEPT_COMMITS,
            Command::Freeze { .. } => &table::FREEZE,
            Command::Unfreeze => &table::UNFREEZE,
            Command::Rollback { .. } => &table::ROLLBACK,
            Command::Unquarantine { .. } => &table::UNQUARANTINE,
            Command::Status => &table::STATUS,
            Command::Explain => &table::EXPLAIN,
            Command::Doctor => &table::DOCTOR,
            Command::Help => &table::HELP,
        }
    }

    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// Whether it changes a task, story or repository (at most one such
    /// command runs per comment).
    pub fn changes_state(&self) -> bool {
        self.spec().changes_state
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("unknown command `{name}`")]
    Unknown {
        name: String,
        /// The nearest known command by edit distance; always named, as
        /// SPEC §5 asks, so a typo is one click from the right command.
        closest: &'static str,
    },
    #[error("`{command}`: {problem}")]
    BadArguments {
        command: &'static str,
        problem: String,
    },
}

/// Parses one line; `None` when the line is not addressed to taskgate.
pub fn parse_line(line: &str, syntax: &Syntax) -> Option<Result<Command, CommandError>> {
    let rest = line.strip_prefix('/')?;
    let (head, tail) = split_word(rest);
    if head == syntax.prefix {
        let (name, args) = split_word(tail);
        if name.is_empty() {
            return Some(Ok(Command::Help));
        }
        return Some(parse_named(name, args));
    }
    if syntax.short_form && command_names().any(|n| n == head) {
        return Some(parse_named(head, tail));
    }
    None
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    }
}

fn parse_named(name: &str, args: &str) -> Result<Command, CommandError> {
    let command = match name.to_ascii_lowercase().as_str() {
        "plan" => no_args("plan", args, Command::Plan)?,
        "retry" => {
            let words = words(args);
            match words.as_slice() {
                [] => Command::Retry { gate: None },
                [gate] => Command::Retry {
                    gate: Some(gate.clone()),
                },
                _ => return Err(bad("retry", "takes at most one gate name")),
            }
        }
        "approve" => parse_approve(args)?,
        "approve-branch" => no_args("approve-branch", args, Command::ApproveBranch)?,
        "revise" => Command::Revise {
            feedback: required_text("revise", "feedback", args)?,
        },
        "reject" => Command::Reject {
            reason: required_text("reject", "a reason", args)?,
        },
        "pause" => no_args("pause", args, Command::Pause)?,
        "resume" => no_args("resume", args, Command::Resume)?,
        "ship" => parse_ship(args)?,
        "accept-commits" => parse_accept_commits(args)?,
        "freeze" => Command::Freeze {
            reason: required_text("freeze", "a reason", args)?,
        },
        "unfreeze" => no_args("unfreeze", args, Command::Unfreeze)?,
        "rollback" => parse_rollback(args)?,
        "unquarantine" => Command::Unquarantine {
            test: required_text("unquarantine", "a test id", args)?,
        },
        "status" => no_args("status", args, Command::Status)?,
        "explain" => no_args("explain", args, Command::Explain)?,
        "doctor" => no_args("doctor", args, Command::Doctor)?,
        "help" => Command::Help,
        _ => {
            return Err(CommandError::Unknown {
                name: name.to_owned(),
                closest: closest(name),
            })
        }
    };
    Ok(command)
}

fn parse_approve(args: &str) -> Result<Command, CommandError> {
    if args.is_empty() {
        return Ok(Command::Approve {
            override_reason: None,
        });
    }
    let (flag, reason) = split_word(args);
    if flag != "--override" {
        return Err(bad(
            "approve",
            &format!("unknown argument `{flag}` (use `--override <reason>`)"),
        ));
    }
    Ok(Command::Approve {
        override_reason: Some(required_text("approve --override", "a reason", reason)?),
    })
}

/// One commit, by its full 40-digit sha: a short prefix can be made to
/// collide (a writer pushes a harmless commit, a maintainer reads it, she
/// force-pushes another with the same prefix).
fn parse_accept_commits(args: &str) -> Result<Command, CommandError> {
    const NAME: &str = "accept-commits";
    match words(args).as_slice() {
        [commit] if commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()) => {
            Ok(Command::AcceptCommits {
                commit: commit.to_ascii_lowercase(),
            })
        }
        [] => Err(bad(NAME, "needs the commit to accept up to (its sha)")),
        [other] => Err(bad(
            NAME,
            &format!("`{other}` is not a full sha (all 40 hex digits)"),
        )),
        _ => Err(bad(NAME, "takes one commit: the newest to accept")),
    }
}

/// `ship`, or `ship --priority normal|high|hotfix`.
fn parse_ship(args: &str) -> Result<Command, CommandError> {
    const ONE_OF: &str = "`high`, `hotfix` or `normal`";
    let priority = match words(args).as_slice() {
        [] => Priority::Normal,
        [flag, value] if flag == "--priority" => match value.to_ascii_lowercase().as_str() {
            "normal" => Priority::Normal,
            "high" => Priority::High,
            "hotfix" => Priority::Hotfix,
            _ => {
                return Err(bad(
                    "ship",
                    &format!("`{value}` is not a priority ({ONE_OF})"),
                ))
            }
        },
        [flag] if flag == "--priority" => {
            return Err(bad("ship", &format!("`--priority` needs {ONE_OF}")))
        }
        [first, ..] if first == "--priority" => {
            return Err(bad("ship", "takes one priority"));
        }
        [first, ..] => {
            return Err(bad(
                "ship",
                &format!("unknown argument `{first}` (use `--priority high`)"),
            ))
        }
    };
    Ok(Command::Ship { priority })
}

fn parse_rollback(args: &str) -> Result<Command, CommandError> {
    if args.is_empty() {
        return Ok(Command::Rollback { now: None });
    }
    let (flag, reason) = split_word(args);
    if flag != "--now" {
        return Err(bad(
            "rollback",
            &format!("unknown argument `{flag}` (use `--now <reason>`)"),
        ));
    }
    Ok(Command::Rollback {
        now: Some(required_text("rollback --now", "a reason", reason)?),
    })
}

fn no_args(name: &'static str, args: &str, command: Command) -> Result<Command, CommandError> {
    if args.is_empty() {
        Ok(command)
    } else {
        Err(bad(name, &format!("takes no arguments, got `{args}`")))
    }
}

fn required_text(name: &'static str, what: &str, args: &str) -> Result<String, CommandError> {
    let text = unquote(args.trim());
    if text.is_empty() {
        Err(bad(name, &format!("needs {what}")))
    } else {
        Ok(text.to_owned())
    }
}

fn bad(command: &'static str, problem: &str) -> CommandError {
    CommandError::BadArguments {
        command,
        problem: problem.to_owned(),
    }
}

/// Whitespace-separated words; a word may be quoted with `"` or `'`.
fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            for ch in chars.by_ref() {
                if ch == c {
                    break;
                }
                word.push(ch);
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                word.push(ch);
                chars.next();
            }
        }
        out.push(word);
    }
    out
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// The known command nearest to `name` (the first on a tie).
fn closest(name: &str) -> &'static str {
    let name = name.to_ascii_lowercase();
    command_names()
        .min_by_key(|c| strsim::damerau_levenshtein(&name, c))
        .unwrap_or("help")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<Command, CommandError> {
        parse_line(line, &Syntax::default()).expect("addressed to taskgate")
    }

    #[test]
    fn every_row_of_the_table_parses_to_the_command_whose_row_it_is() {
        let sha = "a".repeat(40);
        for row in super::super::COMMANDS {
            let args = match row.name {
                "revise" | "reject" | "freeze" => "because",
                "unquarantine" => "tests::flaky",
                "accept-commits" => &sha,
                _ => "",
            };
            let command = one(&format!("/taskgate {} {args}", row.name)).unwrap();
            assert_eq!(command.spec(), row, "{}", row.name);
        }
    }

    #[test]
    fn only_the_views_doctor_and_help_leave_state_alone() {
        let readers: Vec<_> = super::super::COMMANDS
            .iter()
            .filter(|row| !row.changes_state)
            .map(|row| row.name)
            .collect();
        assert_eq!(readers, ["status", "explain", "doctor", "help"]);
    }

    #[test]
    fn arguments_are_parsed() {
        assert_eq!(
            one("/taskgate retry unit"),
            Ok(Command::Retry {
                gate: Some("unit".into())
            })
        );
        assert_eq!(
            one("/taskgate retry \"unit\""),
            Ok(Command::Retry {
                gate: Some("unit".into())
            })
        );
        assert_eq!(
            one("/approve --override \"flaky upstream\""),
            Ok(Command::Approve {
                override_reason: Some("flaky upstream".into())
            })
        );
        assert_eq!(
            one("/taskgate revise please handle empty frames"),
            Ok(Command::Revise {
                feedback: "please handle empty frames".into()
            })
        );
        assert_eq!(one("/taskgate"), Ok(Command::Help));
        assert_eq!(
            one("/taskgate freeze release 2.0 in progress"),
            Ok(Command::Freeze {
                reason: "release 2.0 in progress".into()
            })
        );
        assert_eq!(one("/unfreeze"), Ok(Command::Unfreeze));
        assert_eq!(
            one("/taskgate rollback"),
            Ok(Command::Rollback { now: None })
        );
        assert_eq!(
            one("/taskgate rollback --now \"prod is down\""),
            Ok(Command::Rollback {
                now: Some("prod is down".into())
            })
        );
    }

    #[test]
    fn unquarantine_takes_the_whole_test_id_spaces_included() {
        assert_eq!(
            one("/taskgate unquarantine tests/test_x.py::test_net"),
            Ok(Command::Unquarantine {
                test: "tests/test_x.py::test_net".into()
            })
        );
        assert_eq!(
            one("/unquarantine strings > splits"),
            Ok(Command::Unquarantine {
                test: "strings > splits".into()
            })
        );
        assert_eq!(
            one("/taskgate unquarantine").unwrap_err().to_string(),
            "`unquarantine`: needs a test id"
        );
    }

    #[test]
    fn freeze_and_rollback_arguments_are_explained() {
        assert_eq!(
            one("/taskgate freeze").unwrap_err().to_string(),
            "`freeze`: needs a reason"
        );
        assert_eq!(
            one("/taskgate freeze \"\"").unwrap_err().to_string(),
            "`freeze`: needs a reason"
        );
        assert_eq!(
            one("/taskgate unfreeze please").unwrap_err().to_string(),
            "`unfreeze`: takes no arguments, got `please`"
        );
        assert_eq!(
            one("/taskgate rollback --now").unwrap_err().to_string(),
            "`rollback --now`: needs a reason"
        );
        assert_eq!(
            one("/taskgate rollback now").unwrap_err().to_string(),
            "`rollback`: unknown argument `now` (use `--now <reason>`)"
        );
    }

    #[test]
    fn bad_arguments_are_explained() {
        assert_eq!(
            one("/taskgate ship now").unwrap_err().to_string(),
            "`ship`: unknown argument `now` (use `--priority high`)"
        );
        assert_eq!(
            one("/taskgate reject").unwrap_err().to_string(),
            "`reject`: needs a reason"
        );
        assert_eq!(
            one("/approve --force").unwrap_err().to_string(),
            "`approve`: unknown argument `--force` (use `--override <reason>`)"
        );
        assert_eq!(
            one("/taskgate approve --override").unwrap_err().to_string(),
            "`approve --override`: needs a reason"
        );
    }

    #[test]
    fn ship_takes_a_priority() {
        let ship = |p| Ok(Command::Ship { priority: p });
        assert_eq!(one("/taskgate ship"), ship(Priority::Normal));
        assert_eq!(one("/ship --priority high"), ship(Priority::High));
        assert_eq!(
            one("/taskgate ship --priority HOTFIX"),
            ship(Priority::Hotfix)
        );
        assert_eq!(
            one("/taskgate ship --priority normal"),
            ship(Priority::Normal)
        );
        let refused = |line: &str| one(line).unwrap_err().to_string();
        insta::assert_snapshot!(
            [
                refused("/taskgate ship --priority urgent"),
                refused("/taskgate ship --priority"),
                refused("/taskgate ship --priority high hotfix"),
                refused("/taskgate ship --high"),
            ]
            .join("\n"),
            @r"
            `ship`: `urgent` is not a priority (`high`, `hotfix` or `normal`)
            `ship`: `--priority` needs `high`, `hotfix` or `normal`
            `ship`: takes one priority
            `ship`: unknown argument `--high` (use `--priority high`)
            "
        );
    }

    #[test]
    fn the_closest_command_is_found_by_edit_distance() {
        assert_eq!(closest("hlep"), "help");
        assert_eq!(closest("aprove"), "approve");
        assert_eq!(closest("approve-brnch"), "approve-branch");
        assert_eq!(closest("STAUTS"), "status");
    }
}
