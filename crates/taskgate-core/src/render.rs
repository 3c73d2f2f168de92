//! Texts people read in comments. Every one is an `insta` snapshot.

use crate::commands::{CommandError, Syntax};

fn invocation(syntax: &Syntax, command: &str) -> String {
    format!("/{} {command}", syntax.prefix)
}

pub fn help(syntax: &Syntax) -> String {
    let mut out = String::from("**taskgate commands** (one per line, anywhere in a comment):\n\n");
    out.push_str("| command | what it does |\n|---|---|\n");
    for c in crate::commands::COMMANDS {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            invocation(syntax, c.usage),
            c.help
        ));
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
    needs: crate::config::Permission,
    login: &str,
    has: Option<crate::config::Permission>,
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

/// A click on one of taskgate's check runs ("Re-run", "Re-run all checks",
/// a button) whose sender lacks what its command needs.
pub struct ClickRefused<'a> {
    pub repo: &'a crate::ids::RepoName,
    /// Where the clicker looks: the task's pull request (else its issue),
    /// the story's issue for a milestone.
    pub issue: crate::ids::IssueNumber,
    /// The click as GitHub labels it.
    pub click: &'a str,
    pub command: &'a str,
    pub needs: crate::config::Permission,
    pub login: &'a str,
    pub has: Option<crate::config::Permission>,
    pub syntax: &'a Syntax,
    /// The commit clicked on: the reply is said once per sender, click
    /// and commit.
    pub at: &'a crate::ids::CommitSha,
}

/// The reply to a refused click: GitHub shows nothing where the click was
/// made, so it is said on the issue or pull request the check run is about,
/// in one comment however often the click is repeated.
pub fn click_refused(c: &ClickRefused<'_>) -> crate::Effect {
    crate::Effect::UpsertComment {
        repo: c.repo.clone(),
        issue: c.issue,
        body: format!(
            "{} was not acted on: {}",
            c.click,
            permission_refused(c.command, c.needs, c.login, c.has, c.syntax)
        ),
        marker: format!(
            "click-refused {} by={} at={}",
            c.command,
            c.login,
            c.at.as_str()
        ),
    }
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

/// `ship` on an issue that is not a story's or its pull request.
pub fn ship_elsewhere(syntax: &Syntax) -> String {
    not_on_a_story("ship", syntax)
}

/// A story's command on an issue that is not a story's or its pull request.
pub fn not_on_a_story(command: &str, syntax: &Syntax) -> String {
    format!(
        "`{}` works on a story's issue or its pull request; this is neither.",
        invocation(syntax, command)
    )
}

/// `rollback` on an issue that is neither a story's issue nor its PR.
pub fn rollback_elsewhere(syntax: &Syntax) -> String {
    format!(
        "`/{} rollback` works on a shipped story's issue or its pull request; this is neither.",
        syntax.prefix
    )
}

/// `status` on an issue that is neither a story's nor a task's.
pub fn status_elsewhere(syntax: &Syntax) -> String {
    format!(
        "`/{} status` works on a story's or task's issue or pull request; this is neither.",
        syntax.prefix
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

/// GitHub refuses issue, pull request and comment bodies longer than this
/// many characters (`body is too long (maximum is 65536 characters)`).
pub const GITHUB_BODY_LIMIT: usize = 65_536;

/// Room a cut body leaves for the hidden marker lines it keeps at its end;
/// a longer trailing run of markers is not kept whole.
const MARKER_TAIL_MAX: usize = 2_048;

/// `body` as GitHub takes it, within [`GITHUB_BODY_LIMIT`] characters. A
/// longer body keeps its start (cut at a line where one is near), closes a
/// code fence the cut left open, says that it was cut and how long the full
/// text was, and keeps its trailing hidden `<!-- taskgate:… -->` lines
/// intact, so finding it again by its marker still works. One pass over
/// the text; a body within the limit comes back unchanged.
pub fn fit_github_body(body: &str) -> String {
    let total = body.chars().count();
    if total <= GITHUB_BODY_LIMIT {
        return body.to_owned();
    }
    let tail_start = marker_tail_start(body);
    let (text, tail) = body.split_at(tail_start);
    let tail = tail.trim_start_matches('\n');
    let note = render_cut_note(total);
    const FENCE_CLOSE: &str = "\n```";
    let reserved = tail.chars().count() + note.chars().count() + FENCE_CLOSE.len() + 2;
    let room = GITHUB_BODY_LIMIT.saturating_sub(reserved);
    let mut head = match text.char_indices().nth(room) {
        Some((cut, _)) => &text[..cut],
        None => text,
    };
    // A cut within the last few lines' reach ends at a line break.
    if let Some(nl) = head.rfind('\n').filter(|nl| head.len() - nl < 2_000) {
        head = &head[..nl];
    }
    let open_fence = head
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count()
        % 2
        == 1;
    let mut out = String::with_capacity(head.len() + reserved * 4);
    out.push_str(head.trim_end());
    if open_fence {
        out.push_str(FENCE_CLOSE);
    }
    out.push_str(&note);
    if !tail.is_empty() {
        out.push_str("\n\n");
        out.push_str(tail);
    }
    out
}

/// Where the run of hidden-marker (and blank) lines that ends `body`
/// begins; `body.len()` when it ends with none or the run is too long.
fn marker_tail_start(body: &str) -> usize {
    let mut start = body.len();
    let mut rest = body;
    loop {
        let trimmed = rest.trim_end_matches(['\n', ' ', '\r']);
        let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        let line = trimmed[line_start..].trim();
        let is_marker = line.starts_with("<!-- taskgate:") && line.ends_with("-->");
        if !is_marker || body.len() - line_start > MARKER_TAIL_MAX {
            return start;
        }
        start = line_start;
        rest = &trimmed[..line_start];
    }
}

/// The line that ends a body cut to fit GitHub.
pub fn render_cut_note(total_chars: usize) -> String {
    format!(
        "\n\n… (cut: the full text was {total_chars} characters, over GitHub's limit of \
         {GITHUB_BODY_LIMIT}; the check run and the dashboard show the rest)"
    )
}

/// What an effect was trying to do, for a person: "label issue #12".
pub fn render_effect_purpose(effect: &crate::Effect) -> String {
    use crate::Effect as E;
    match effect {
        E::PostComment { issue, .. } | E::UpsertComment { issue, .. } => {
            format!("comment on #{issue}")
        }
        E::CreateIssue { title, .. } => format!("open the issue “{}”", sanitize(title)),
        E::CommentOnMarker { .. } => "comment on this issue".into(),
        E::LabelMarked { .. } | E::LabelIssue { .. } => "change the labels of this issue".into(),
        E::UnassignMarked { .. } => "take assignees off this issue".into(),
        E::UpdateIssue { .. } => "update this issue".into(),
        E::LinkSubIssue { .. } => "link this issue as a sub-issue".into(),
        E::AddBlockedBy { .. } | E::RemoveBlockedBy { .. } => {
            "record this issue's dependencies (blocked by)".into()
        }
        E::CreateBranch { name, .. } => format!("create the branch `{}`", sanitize(name)),
        E::StartTaskBranch { name, .. } => {
            format!(
                "start the branch `{}` from the story branch",
                sanitize(name)
            )
        }
        E::CreatePullRequest { head, .. } => {
            format!("open a pull request from `{}`", sanitize(head))
        }
        E::MergePullRequest { number, .. } => format!("merge pull request #{number}"),
        E::UpdatePullRequest { number, .. } => format!("update pull request #{number}"),
        E::MarkPullRequestReady { number, .. } => {
            format!("mark pull request #{number} ready for review")
        }
        E::DispatchWorkflow { workflow, .. } | E::DispatchRun { workflow, .. } => {
            format!("start the workflow `{}`", sanitize(workflow))
        }
        E::CreateCheckRun { check, .. } => {
            format!("create the check run `{}`", sanitize(&check.name))
        }
        E::OpenCheckRun { name, .. } => format!("create the check run `{}`", sanitize(name)),
        E::UpdateCheckRun { .. } => "update a check run".into(),
        E::AwaitCheckRun { .. } => "link a check run from this issue".into(),
        E::CancelWorkflowRun { .. } => "cancel a workflow run".into(),
        E::EnsureLabel { name, .. } => format!("create the label `{}`", sanitize(name)),
        E::ReactToComment { .. } => "react to a comment".into(),
        #[allow(unreachable_patterns)]
        _ => format!("perform `{}`", effect.name()),
    }
}

/// GitHub refused an effect with a 403 that is not a rate limit: what
/// taskgate could not do, GitHub's words, and what usually fixes it.
pub fn render_refused_by_github(effect: &crate::Effect, message: &str) -> String {
    let message: String = message.chars().take(300).collect();
    let message = crate::classify::neutralize_mentions(&message)
        .replace('`', "'")
        .replace("<!--", "<\u{200D}!--");
    format!(
        "taskgate could not {}: GitHub refused it (403: “{message}”). \
         The App is probably missing a permission on this repository: an owner can \
         check the App's permissions and accept any pending permission request in \
         the installation's settings. taskgate does not retry this on its own.",
        render_effect_purpose(effect)
    )
}

/// What an issue says when GitHub would not assign it to some of its
/// role's `assignees` (a login that is not a collaborator who can be
/// assigned here), so taskgate opened it without them. The role is read
/// from the issue's `role:<name>` label. Logins are quoted, not mentioned:
/// they cannot be assigned, and need not be pinged.
pub fn render_unassignable(logins: &[String], labels: &[String]) -> String {
    let who = logins
        .iter()
        .map(|l| format!("`{}`", sanitize(l)))
        .collect::<Vec<_>>()
        .join(", ");
    let role = labels
        .iter()
        .find_map(|l| l.strip_prefix("role:"))
        .map_or("the role".to_owned(), |r| {
            format!("the role `{}`", sanitize(r))
        });
    format!(
        "taskgate could not assign this issue to {who}: GitHub refused the assignee \
         (only collaborators with at least triage access can be assigned), so the issue was \
         opened without assignees. To fix it, give {who} access to the repository (triage or \
         more), or change the `assignees` of {role} in `.github/taskgate.yml`."
    )
}

/// Echoed user text must not break out of its inline code span or ping
/// anyone: backticks are replaced and the length is capped.
pub(crate) fn sanitize(text: &str) -> String {
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
    fn an_unassignable_login_is_named_with_the_two_ways_to_fix_it() {
        let labels = ["taskgate:branch-todo".to_owned(), "role:coder".to_owned()];
        insta::assert_snapshot!(render_unassignable(&["ghost".to_owned()], &labels), @"taskgate could not assign this issue to `ghost`: GitHub refused the assignee (only collaborators with at least triage access can be assigned), so the issue was opened without assignees. To fix it, give `ghost` access to the repository (triage or more), or change the `assignees` of the role `coder` in `.github/taskgate.yml`.");
    }

    #[test]
    fn a_body_within_githubs_limit_is_unchanged() {
        let body = format!("{}\n\n<!-- taskgate:reply-to=1 -->", "x".repeat(60_000));
        assert_eq!(fit_github_body(&body), body);
    }

    #[test]
    fn a_long_body_is_cut_with_a_note_keeping_its_marker_and_closing_its_fence() {
        let marker = "<!-- taskgate:story=file:a task=b -->";
        let body = format!(
            "## Log\n\n```text\n{}```\n\n{marker}\n",
            "é line of output\n".repeat(10_000)
        );
        let total = body.chars().count();
        let fitted = fit_github_body(&body);
        assert!(fitted.chars().count() <= GITHUB_BODY_LIMIT);
        assert!(fitted.starts_with("## Log\n\n```text\né line of output\n"));
        assert!(
            fitted.ends_with(&format!("\n\n{marker}\n")),
            "marker kept last"
        );
        let fences = fitted.lines().filter(|l| l.starts_with("```")).count();
        assert_eq!(fences, 2, "the cut closes the fence it left open");
        let note = fitted.lines().rev().find(|l| l.starts_with('…')).unwrap();
        insta::assert_snapshot!(note.replace(&total.to_string(), "N"), @"… (cut: the full text was N characters, over GitHub's limit of 65536; the check run and the dashboard show the rest)");
    }

    #[test]
    fn a_long_body_without_a_marker_is_cut_within_the_limit() {
        let body = "🎉".repeat(100_000);
        let fitted = fit_github_body(&body);
        assert!(fitted.chars().count() <= GITHUB_BODY_LIMIT);
        assert!(fitted.contains("the full text was 100000 characters"));
    }

    #[test]
    fn a_refusal_names_what_failed_and_githubs_words() {
        let effect = crate::Effect::LinkSubIssue {
            repo: crate::ids::RepoName::parse("o/r").unwrap(),
            parent: "story=a".into(),
            child: "story=a task=b".into(),
            replace_parent: false,
            child_repo: None,
        };
        insta::assert_snapshot!(
            render_refused_by_github(&effect, "Resource not accessible by integration"),
            @"taskgate could not link this issue as a sub-issue: GitHub refused it (403: “Resource not accessible by integration”). The App is probably missing a permission on this repository: an owner can check the App's permissions and accept any pending permission request in the installation's settings. taskgate does not retry this on its own."
        );
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
