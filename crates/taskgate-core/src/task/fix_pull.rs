//! An agent's own pull request for a branch todo (issue 50 item 4):
//! Copilot's coding agent, assigned a todo, works on a branch of its own
//! (`copilot/<slug>`) and opens its own pull request into the base branch
//! the person picked, linking the todo with a closing keyword ("Fixes
//! #N"). This module says what such a pull request is to taskgate.
//!
//! Owns: the decision [`decide_fix_pull`] (adopted as the agent's fix,
//! tested only, pointed at the right base, or not taskgate's), the closing
//! references GitHub reads off a pull request body ([`closing_references`])
//! and the texts said on such a pull request.
//! Must not: look anything up (the shell finds the task its base or its
//! linked todo belongs to), run or merge anything (the shell's effects do,
//! with the head sha the gates proved).

use crate::config::{AgentRoute, ReviewMode};
use crate::failure::COPILOT_LOGIN;
use crate::ids::IssueNumber;
use crate::plan::TaskState;
use crate::report::code_span;
use crate::story::BranchName;

use super::decide::{note_pusher, Pusher, TaskDecision};
use super::TaskRecord;

/// What the shell read of a pull request that may be an agent's fix.
#[derive(Debug, Clone, Copy)]
pub struct FixPullFacts<'a> {
    /// Its head branch, in this repository or a fork's.
    pub head: &'a str,
    pub base: &'a str,
    pub from_fork: bool,
    /// Who opened it (GitHub's `pull_request.user.login`).
    pub author: &'a str,
    /// The issues its body closes ([`closing_references`]).
    pub closes: &'a [IssueNumber],
}

/// The task a pull request's base, or the todo it links, belongs to.
#[derive(Debug, Clone, Copy)]
pub struct TodoTask<'a> {
    /// The task branch.
    pub branch: &'a str,
    pub state: Option<TaskState>,
    /// Its open branch todo's issue, if one is open.
    pub open_todo: Option<IssueNumber>,
    /// The agent of that todo's role (`roles.<name>.agent`).
    pub agent: Option<&'a AgentRoute>,
    pub review: ReviewMode,
}

/// Why a pull request is not adopted as an agent's fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAFix {
    /// Its code comes from a fork: it never runs (`task::fork`).
    Fork,
    /// Its head is one of taskgate's branches: a task's (or story's) own.
    OurBranch,
    /// Neither its base is a task branch nor does it link an open todo.
    NotForATask,
    /// Its base is a task branch whose task is done (completed, rejected).
    TaskDone,
}

/// What a pull request is to the runs of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixPull {
    /// The agent's fix PR: its head is tested with the task's gates and,
    /// when `merge` (`review: auto`), merged into the task branch once
    /// every gate passed at that head; otherwise a person merges it.
    Fix { todo: IssueNumber, merge: bool },
    /// Into a task branch, but not the agent's fix for its open todo (a
    /// person's, another bot's, or a fix linking no open todo): neither
    /// run nor merged by taskgate. Whoever merges it pushes the task
    /// branch, and that push is tested as any push is: its code is proven
    /// where it lands, and a person's pull request is never merged by an
    /// automaton on the strength of a run.
    LeftToPeople,
    /// The todo's agent opened it for the open todo `todo`, but into
    /// another branch: taskgate says once which base to choose, and
    /// neither tests nor merges it.
    WrongBase { todo: IssueNumber, want: String },
    /// Not taskgate's.
    NotAFix(NotAFix),
}

/// Whether `login` is the agent `route` names, as GitHub writes its
/// pull requests: only Copilot opens pull requests of its own (the
/// mentioned, labelled and dispatched agents push to the task branch).
fn is_the_agent(route: Option<&AgentRoute>, login: &str) -> bool {
    matches!(route, Some(AgentRoute::Copilot)) && login.eq_ignore_ascii_case(COPILOT_LOGIN)
}

/// What the pull request `pr` is: `base_task` is the task whose branch is
/// its base (none when the base is not a task branch), `linked` the task
/// whose open todo it closes (none when it links none).
pub fn decide_fix_pull(
    pr: &FixPullFacts,
    base_task: Option<&TodoTask>,
    linked: Option<&TodoTask>,
) -> FixPull {
    if pr.from_fork {
        return FixPull::NotAFix(NotAFix::Fork);
    }
    if !matches!(BranchName::parse(pr.head), BranchName::NotOurs(_)) {
        return FixPull::NotAFix(NotAFix::OurBranch);
    }
    let links = |t: &TodoTask| t.open_todo.filter(|n| pr.closes.contains(n));
    let Some(task) = base_task else {
        return match linked {
            Some(t) if is_the_agent(t.agent, pr.author) && links(t).is_some() => {
                FixPull::WrongBase {
                    todo: links(t).expect("checked"),
                    want: t.branch.to_owned(),
                }
            }
            _ => FixPull::NotAFix(NotAFix::NotForATask),
        };
    };
    if matches!(task.state, Some(TaskState::Completed | TaskState::Rejected)) {
        return FixPull::NotAFix(NotAFix::TaskDone);
    }
    match links(task) {
        Some(todo) if is_the_agent(task.agent, pr.author) => FixPull::Fix {
            todo,
            merge: task.review == ReviewMode::Auto,
        },
        _ => FixPull::LeftToPeople,
    }
}

/// Someone pushed to the agent's fix pull request for `record`'s task
/// (its `synchronize`). Merged, that push lands on the task branch under
/// the merge's name, so it counts as a push to the task now: the pusher
/// may not approve the task, and a person's push counts against the fix
/// rate ("fixed without a person" is the agent's work alone).
pub fn on_fix_pushed(record: &TaskRecord, pusher: &Pusher) -> TaskDecision {
    let mut next = record.clone();
    note_pusher(&mut next, pusher);
    let outcome = if next == *record {
        "a push to the agent's fix: already counted"
    } else {
        "a push to the agent's fix counts as a push to the task"
    };
    TaskDecision::unchanged(&next, outcome)
}

/// The issue numbers a pull request body closes, as GitHub reads them:
/// `#N` after one of its keywords (close, closes, closed, fix, fixes,
/// fixed, resolve, resolves, resolved; any case, an optional colon), in
/// order, each once. fakehub reads bodies with its own copy
/// (`emit::closing_references`) on purpose: the fake models GitHub apart
/// from the product, so a misreading here is not mirrored by the fake.
pub fn closing_references(body: &str) -> Vec<IssueNumber> {
    const KEYWORDS: [&str; 9] = [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let mut out = Vec::new();
    for (i, _) in body.match_indices('#') {
        let rest = &body[i + 1..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let ends_word = !rest[digits..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let Ok(number) = rest[..digits].parse::<u64>() else {
            continue;
        };
        let lead = &body[..i];
        let separated = lead.ends_with(|c: char| c.is_whitespace() || c == ':');
        let lead = lead.trim_end();
        let lead = lead.strip_suffix(':').unwrap_or(lead);
        let start = lead
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(0, |(p, c)| p + c.len_utf8());
        let keyword = KEYWORDS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&lead[start..]));
        let number = IssueNumber::new(number);
        if keyword && separated && ends_word && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

/// Said once on an agent's pull request for todo `todo` opened into
/// another branch than the task's, `want`.
pub fn render_wrong_base(todo: IssueNumber, base: &str, want: &str) -> String {
    format!(
        "This pull request fixes branch todo #{todo}, whose task's work is on {want}, but it \
         merges into {base}: taskgate does not test or merge it. Change its base branch to \
         {want} (Edit, next to the title), or assign #{todo} to Copilot again choosing {want} \
         as the base branch: taskgate then tests it with the task's gates.",
        todo = todo.get(),
        base = code_span(base),
        want = code_span(want),
    )
}

/// Said on the agent's fix pull request when GitHub refused to merge it
/// into the task branch `branch` (a conflict: its base was changed after
/// it branched off another one; a rule; or its head moved, 409).
pub fn render_fix_merge_refused(branch: &str, status: u16, message: &str) -> String {
    let why = match status {
        409 => "its head moved after the run that proved it; the new head is tested by itself",
        _ => "GitHub cannot merge it as it is (most often a conflict with the task branch, as when it was branched off another branch)",
    };
    format!(
        "This pull request passed the task's gates, but merging it into {} was refused: {why}. \
         GitHub said: \"{}\". Resolve the conflict on this branch (or assign the todo to \
         Copilot again choosing {} as the base branch): its next head is tested and merged.",
        code_span(branch),
        crate::report::plain_text(message),
        code_span(branch),
    )
}

/// Said once on the agent's fix pull request under `review: human`:
/// taskgate tests it and leaves the merge to a person.
pub fn render_left_to_a_person(branch: &str) -> String {
    format!(
        "taskgate tests this pull request with the task's gates (its check runs, on each \
         new head), and does not merge it into {}: this repository reviews tasks by hand \
         (`review: human`). A person merges it once they are green; the task branch's own \
         run then closes the todo.",
        code_span(branch),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: &str = "taskgate/task-3-rows";

    fn facts<'a>(
        head: &'a str,
        base: &'a str,
        author: &'a str,
        closes: &'a [IssueNumber],
    ) -> FixPullFacts<'a> {
        FixPullFacts {
            head,
            base,
            from_fork: false,
            author,
            closes,
        }
    }

    fn task(agent: &AgentRoute, review: ReviewMode) -> TodoTask<'_> {
        TodoTask {
            branch: TASK,
            state: Some(TaskState::TestFailed),
            open_todo: Some(IssueNumber::new(9)),
            agent: Some(agent),
            review,
        }
    }

    const TODO: &[IssueNumber] = &[IssueNumber::new(9)];

    #[test]
    fn copilots_pull_request_into_the_task_branch_linking_its_todo_is_its_fix() {
        let pr = facts("copilot/fix-rows", TASK, COPILOT_LOGIN, TODO);
        let auto = task(&AgentRoute::Copilot, ReviewMode::Auto);
        assert_eq!(
            decide_fix_pull(&pr, Some(&auto), None),
            FixPull::Fix {
                todo: IssueNumber::new(9),
                merge: true
            }
        );
        let human = task(&AgentRoute::Copilot, ReviewMode::Human);
        assert_eq!(
            decide_fix_pull(&pr, Some(&human), None),
            FixPull::Fix {
                todo: IssueNumber::new(9),
                merge: false
            },
            "review: human: a person merges"
        );
    }

    #[test]
    fn a_person_another_bot_or_no_link_is_left_to_people() {
        let copilot = task(&AgentRoute::Copilot, ReviewMode::Auto);
        let by_alice = facts("fix-rows", TASK, "alice", TODO);
        assert_eq!(
            decide_fix_pull(&by_alice, Some(&copilot), None),
            FixPull::LeftToPeople
        );
        let by_bot = facts("fix-rows", TASK, "claude[bot]", TODO);
        assert_eq!(
            decide_fix_pull(&by_bot, Some(&copilot), None),
            FixPull::LeftToPeople
        );
        let unlinked = facts(
            "copilot/x",
            TASK,
            COPILOT_LOGIN,
            &[const { IssueNumber::new(4) }],
        );
        assert_eq!(
            decide_fix_pull(&unlinked, Some(&copilot), None),
            FixPull::LeftToPeople
        );
        let claude = AgentRoute::Mention("@claude".into());
        let other_route = task(&claude, ReviewMode::Auto);
        let pr = facts("copilot/x", TASK, COPILOT_LOGIN, TODO);
        assert_eq!(
            decide_fix_pull(&pr, Some(&other_route), None),
            FixPull::LeftToPeople,
            "Copilot is not this role's agent"
        );
    }

    #[test]
    fn copilots_fix_into_another_branch_is_pointed_at_the_task_branch() {
        let pr = facts("copilot/fix-rows", "main", COPILOT_LOGIN, TODO);
        let copilot = task(&AgentRoute::Copilot, ReviewMode::Auto);
        assert_eq!(
            decide_fix_pull(&pr, None, Some(&copilot)),
            FixPull::WrongBase {
                todo: IssueNumber::new(9),
                want: TASK.into()
            }
        );
        let by_alice = facts("fix", "main", "alice", TODO);
        assert_eq!(
            decide_fix_pull(&by_alice, None, Some(&copilot)),
            FixPull::NotAFix(NotAFix::NotForATask)
        );
        assert_eq!(
            decide_fix_pull(&pr, None, None),
            FixPull::NotAFix(NotAFix::NotForATask)
        );
    }

    #[test]
    fn forks_taskgates_own_branches_and_done_tasks_are_not_fixes() {
        let copilot = task(&AgentRoute::Copilot, ReviewMode::Auto);
        let mut fork = facts("copilot/x", TASK, COPILOT_LOGIN, TODO);
        fork.from_fork = true;
        assert_eq!(
            decide_fix_pull(&fork, Some(&copilot), None),
            FixPull::NotAFix(NotAFix::Fork)
        );
        let own = facts(
            "taskgate/task-3-rows",
            "taskgate/story-1",
            "taskgate[bot]",
            &[],
        );
        assert_eq!(
            decide_fix_pull(&own, Some(&copilot), None),
            FixPull::NotAFix(NotAFix::OurBranch)
        );
        let mut done = copilot;
        done.state = Some(TaskState::Completed);
        let pr = facts("copilot/x", TASK, COPILOT_LOGIN, TODO);
        assert_eq!(
            decide_fix_pull(&pr, Some(&done), None),
            FixPull::NotAFix(NotAFix::TaskDone)
        );
    }

    #[test]
    fn closing_references_are_githubs_keywords_before_an_issue_number() {
        let body = "Closes #1, fixes: #2 and RESOLVED #3.\nresolve #2 again";
        let n = |v: &[u64]| v.iter().map(|n| IssueNumber::new(*n)).collect::<Vec<_>>();
        assert_eq!(closing_references(body), n(&[1, 2, 3]));
        let body = "See #4. Unfixes #5, closes#6, fixes #7abc, closes the #8";
        assert_eq!(closing_references(body), n(&[]));
    }

    #[test]
    fn the_texts_on_a_fix_pull_request() {
        insta::assert_snapshot!(render_wrong_base(IssueNumber::new(9), "main", TASK), @r#"This pull request fixes branch todo #9, whose task's work is on `taskgate/task-3-rows`, but it merges into `main`: taskgate does not test or merge it. Change its base branch to `taskgate/task-3-rows` (Edit, next to the title), or assign #9 to Copilot again choosing `taskgate/task-3-rows` as the base branch: taskgate then tests it with the task's gates."#);
        insta::assert_snapshot!(render_fix_merge_refused(TASK, 405, "Pull Request is not mergeable"), @r#"This pull request passed the task's gates, but merging it into `taskgate/task-3-rows` was refused: GitHub cannot merge it as it is (most often a conflict with the task branch, as when it was branched off another branch). GitHub said: "Pull Request is not mergeable". Resolve the conflict on this branch (or assign the todo to Copilot again choosing `taskgate/task-3-rows` as the base branch): its next head is tested and merged."#);
        insta::assert_snapshot!(render_left_to_a_person(TASK), @r#"taskgate tests this pull request with the task's gates (its check runs, on each new head), and does not merge it into `taskgate/task-3-rows`: this repository reviews tasks by hand (`review: human`). A person merges it once they are green; the task branch's own run then closes the todo."#);
    }
}
