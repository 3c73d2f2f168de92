//! Where a task's branch starts (SPEC §3): when a task becomes `ready`,
//! its branch holds every dependency's merged work.
//!
//! Owns: [`BranchStart`] (what taskgate did to a task's branch when the
//! task became ready, kept on the task's record), the choice of how an
//! existing branch is brought up to date ([`catch_up`]), and the sentences
//! people read about it (the task issue's "Branch" line, the merge
//! commit's message, the note when the story branch does not merge, and
//! the gates' warning when a head was tested merged with the story branch),
//! and what an untrusted report may say it tested ([`check_tested`]: no
//! more than the story head that was dispatched).
//! Must not: call GitHub (the executor does, then reports the start
//! through the inbox) or read anything but its arguments.
//!
//! The one idea a reader needs: **a task branch is made when its task
//! becomes ready**, from the story branch's head, which then holds the
//! merged work of every dependency. A branch that exists already (a story
//! planned by an older taskgate, or a branch a person pushed) is brought
//! up to date instead: fast-forwarded when it has no commits of its own,
//! else the story branch is merged into it, as GitHub's "Update branch"
//! button does.

use serde::{Deserialize, Serialize};

use crate::ids::CommitSha;
use crate::report::Tested;

/// What taskgate did to a task's branch when the task became ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchStart {
    /// The story branch (`taskgate/story-<n>`).
    pub story_branch: String,
    /// The story branch's head the task branch was started from or
    /// brought up to.
    pub story_sha: CommitSha,
    pub how: StartHow,
}

/// How the task branch came to hold the story branch's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StartHow {
    /// Made at the story branch's head.
    Created,
    /// It existed and held the story branch's head already.
    UpToDate,
    /// It existed without commits of its own: moved to the story head.
    FastForwarded,
    /// It existed with commits of its own: the story branch was merged
    /// into it (GitHub's merges API), giving `merge`.
    Merged { merge: CommitSha },
    /// It existed with commits of its own that conflict with the story
    /// branch: left as it is, for a person to merge.
    Conflict,
}

/// What an existing task branch needs, from GitHub's comparison of the
/// story branch (base) with it (head).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// It holds the story head already (`behind_by` 0).
    UpToDate,
    /// No commits of its own (`ahead_by` 0): a fast-forward.
    FastForward,
    /// Commits of its own and the story moved on: a merge.
    Merge,
}

/// `ahead_by`: the task branch's own commits; `behind_by`: the story
/// branch's commits it lacks.
pub fn catch_up(ahead_by: u64, behind_by: u64) -> CatchUp {
    match (ahead_by, behind_by) {
        (_, 0) => CatchUp::UpToDate,
        (0, _) => CatchUp::FastForward,
        _ => CatchUp::Merge,
    }
}

/// The merge commit's message when the story branch is merged into a task
/// branch (as GitHub's "Update branch" writes it).
pub fn render_catch_up_message(story_branch: &str, task_branch: &str) -> String {
    format!(
        "Merge branch '{story_branch}' into {task_branch}\n\ntaskgate: the task is ready, so its branch takes its dependencies' merged work."
    )
}

/// Said once on the task issue when the story branch does not merge into
/// the task branch.
pub fn render_catch_up_conflict(story_branch: &str, task_branch: &str, why: &str) -> String {
    format!(
        "This task is ready, but its branch `{task_branch}` could not be brought up to date: the story branch `{story_branch}` does not merge into it cleanly ({}). Merge `{story_branch}` into `{task_branch}` and push; its tests need its dependencies' work.",
        why.trim().trim_end_matches('.')
    )
}

/// The issue body's line on the branch: what it was started from and the
/// dependencies that start holds (`deps`: their names, `#12`).
pub fn render_branch_line(task_branch: &str, start: &BranchStart, deps: &[String]) -> String {
    let story = format!("`{}`", start.story_branch);
    let at = format!("`{}`", short(&start.story_sha));
    let what = match &start.how {
        StartHow::Created => format!("`{task_branch}` was started from the story branch {story} at {at}"),
        StartHow::UpToDate => format!("`{task_branch}` already held the story branch {story} at {at}"),
        StartHow::FastForwarded => format!(
            "`{task_branch}` had no commits of its own and was fast-forwarded to the story branch {story} at {at}"
        ),
        StartHow::Merged { merge } => format!(
            "`{task_branch}` was brought up to date: the story branch {story} at {at} was merged into it (`{}`)",
            short(merge)
        ),
        StartHow::Conflict => {
            return format!(
                "`{task_branch}` could not be brought up to date: the story branch {story} at {at} conflicts with it. Merge it by hand."
            )
        }
    };
    match deps {
        [] => format!("{what}."),
        [one] => format!("{what}, with the merged work of {one}."),
        many => format!("{what}, with the merged work of {}.", many.join(", ")),
    }
}

/// A warning on each gate whose head lacked some of the story branch and
/// was tested merged with it.
pub fn render_tested_merged(story_branch: &str, story_sha: &CommitSha) -> String {
    format!(
        "tested merged with the story branch `{story_branch}` at `{}`, as CI on a pull request is: the branch lacks some of its commits",
        short(story_sha)
    )
}

/// A warning on each gate whose head conflicts with the story branch.
pub fn render_tested_alone(story_branch: &str, story_sha: &CommitSha) -> String {
    format!(
        "tested the head alone: it conflicts with the story branch `{story_branch}` at `{}`; merge the story branch into it",
        short(story_sha)
    )
}

/// A warning on each gate of a run asked to merge the story branch that
/// does not say it did (a workflow whose taskgate predates the merge): its
/// head was tested alone, and is trusted as no more.
pub fn render_not_merged(story_branch: &str, story_sha: &CommitSha) -> String {
    format!(
        "tested the head alone: the workflow run did not merge the story branch `{story_branch}` at `{}` into it (run `taskgate init --force` to update the workflow)",
        short(story_sha)
    )
}

/// Why a head that conflicts with its story branch was not run.
pub fn render_conflict_not_run(story_branch: &str, story_sha: &CommitSha) -> String {
    format!(
        "the head conflicts with the story branch `{story_branch}` at `{}`, so it cannot be tested merged with it as a pull request is; merge the story branch into the task branch and push",
        short(story_sha)
    )
}

/// What a run's report says it tested, as far as it is believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestedCheck {
    /// Nothing was asked to merge, and nothing was: the head as it is.
    AsIs,
    /// The head held the story head it was asked to merge.
    Holds,
    /// The head merged with the story head `base` was tested.
    Merged { base: CommitSha },
    /// Asked to merge `base`, the run does not say it did: the head alone.
    NotMerged { base: CommitSha },
    /// The head conflicts with `base`: no gate ran.
    Conflict { base: CommitSha },
}

/// A report that claims a merge other than the one dispatched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the report says the head was tested with the story branch at {claimed}, but {dispatched} was dispatched")]
pub struct TestedMismatch {
    pub claimed: String,
    pub dispatched: String,
}

/// The warning each gate carries for what was tested, if any; `None` also
/// for a conflict, whose run is reported as not run
/// ([`render_conflict_not_run`]).
pub fn tested_warning(check: &TestedCheck, story_branch: &str) -> Option<String> {
    match check {
        TestedCheck::Merged { base } => Some(render_tested_merged(story_branch, base)),
        TestedCheck::NotMerged { base } => Some(render_not_merged(story_branch, base)),
        TestedCheck::AsIs | TestedCheck::Holds | TestedCheck::Conflict { .. } => None,
    }
}

/// Checks what an untrusted report (an Actions artifact) says it tested
/// against the story head `dispatched` with the run: it may say less
/// (nothing merged: the head alone), never more (another story head, or
/// a merge that was not asked for).
pub fn check_tested(
    dispatched: Option<&CommitSha>,
    tested: Option<&Tested>,
) -> Result<TestedCheck, TestedMismatch> {
    let (Some(base), Some(tested)) = (dispatched, tested) else {
        return match (dispatched, tested) {
            (Some(base), None) => Ok(TestedCheck::NotMerged { base: base.clone() }),
            (None, Some(t)) => Err(TestedMismatch {
                claimed: t.base().to_owned(),
                dispatched: "no story branch".into(),
            }),
            _ => Ok(TestedCheck::AsIs),
        };
    };
    if tested.base() != base.as_str() {
        return Err(TestedMismatch {
            claimed: tested.base().to_owned(),
            dispatched: base.as_str().to_owned(),
        });
    }
    let base = base.clone();
    Ok(match tested {
        Tested::Holds { .. } => TestedCheck::Holds,
        Tested::Merged { .. } => TestedCheck::Merged { base },
        Tested::Conflict { .. } => TestedCheck::Conflict { base },
    })
}

fn short(sha: &CommitSha) -> &str {
    sha.as_str().get(..7).unwrap_or(sha.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_branch_is_fast_forwarded_only_without_commits_of_its_own() {
        assert_eq!(catch_up(0, 0), CatchUp::UpToDate);
        assert_eq!(catch_up(3, 0), CatchUp::UpToDate);
        assert_eq!(catch_up(0, 2), CatchUp::FastForward);
        assert_eq!(catch_up(1, 2), CatchUp::Merge);
    }

    #[test]
    fn the_branch_line_says_where_the_branch_started_and_what_it_holds() {
        let start = |how| BranchStart {
            story_branch: "taskgate/story-1".into(),
            story_sha: crate::ids::sha("0123456789abcdef0123456789abcdef01234567"),
            how,
        };
        let deps = ["#2 Core".to_string()];
        let merged = StartHow::Merged {
            merge: crate::ids::sha("fedcba9876543210fedcba9876543210fedcba98"),
        };
        let lines: Vec<String> = [
            (StartHow::Created, &deps[..]),
            (StartHow::Created, &[][..]),
            (StartHow::UpToDate, &deps[..]),
            (StartHow::FastForwarded, &deps[..]),
            (merged, &deps[..]),
            (StartHow::Conflict, &deps[..]),
        ]
        .into_iter()
        .map(|(how, deps)| render_branch_line("taskgate/task-3-cli", &start(how), deps))
        .collect();
        insta::assert_snapshot!(lines.join("\n"), @r"
        `taskgate/task-3-cli` was started from the story branch `taskgate/story-1` at `0123456`, with the merged work of #2 Core.
        `taskgate/task-3-cli` was started from the story branch `taskgate/story-1` at `0123456`.
        `taskgate/task-3-cli` already held the story branch `taskgate/story-1` at `0123456`, with the merged work of #2 Core.
        `taskgate/task-3-cli` had no commits of its own and was fast-forwarded to the story branch `taskgate/story-1` at `0123456`, with the merged work of #2 Core.
        `taskgate/task-3-cli` was brought up to date: the story branch `taskgate/story-1` at `0123456` was merged into it (`fedcba9`), with the merged work of #2 Core.
        `taskgate/task-3-cli` could not be brought up to date: the story branch `taskgate/story-1` at `0123456` conflicts with it. Merge it by hand.
        ");
    }

    #[test]
    fn what_the_gates_say_about_the_commit_they_tested() {
        let sha = crate::ids::sha("0123456789abcdef0123456789abcdef01234567");
        insta::assert_snapshot!(render_tested_merged("taskgate/story-1", &sha), @"tested merged with the story branch `taskgate/story-1` at `0123456`, as CI on a pull request is: the branch lacks some of its commits");
        insta::assert_snapshot!(render_tested_alone("taskgate/story-1", &sha), @"tested the head alone: it conflicts with the story branch `taskgate/story-1` at `0123456`; merge the story branch into it");
    }

    #[test]
    fn a_report_may_say_it_tested_less_than_was_dispatched_never_more() {
        let base = crate::ids::sha("0123456789abcdef0123456789abcdef01234567");
        let other = "fedcba9876543210fedcba9876543210fedcba98".to_string();
        let said = |b: &str| Tested::Merged {
            base: b.into(),
            merge: "m".into(),
        };
        let check = |d: Option<&CommitSha>, t: Option<Tested>| check_tested(d, t.as_ref());
        assert_eq!(check(None, None), Ok(TestedCheck::AsIs));
        assert_eq!(
            check(Some(&base), None),
            Ok(TestedCheck::NotMerged { base: base.clone() })
        );
        assert_eq!(
            check(Some(&base), Some(said(base.as_str()))),
            Ok(TestedCheck::Merged { base: base.clone() })
        );
        let holds = Tested::Holds {
            base: base.as_str().to_owned(),
        };
        assert_eq!(check(Some(&base), Some(holds)), Ok(TestedCheck::Holds));
        let conflict = Tested::Conflict {
            base: base.as_str().to_owned(),
        };
        assert_eq!(
            check(Some(&base), Some(conflict)),
            Ok(TestedCheck::Conflict { base: base.clone() })
        );
        let wrong = check(Some(&base), Some(said(&other))).unwrap_err();
        insta::assert_snapshot!(wrong, @"the report says the head was tested with the story branch at fedcba9876543210fedcba9876543210fedcba98, but 0123456789abcdef0123456789abcdef01234567 was dispatched");
        let unasked = check(None, Some(said(&other))).unwrap_err();
        insta::assert_snapshot!(unasked, @"the report says the head was tested with the story branch at fedcba9876543210fedcba9876543210fedcba98, but no story branch was dispatched");
        insta::assert_snapshot!(render_not_merged("taskgate/story-1", &base), @"tested the head alone: the workflow run did not merge the story branch `taskgate/story-1` at `0123456` into it (run `taskgate init --force` to update the workflow)");
        insta::assert_snapshot!(render_conflict_not_run("taskgate/story-1", &base), @"the head conflicts with the story branch `taskgate/story-1` at `0123456`, so it cannot be tested merged with it as a pull request is; merge the story branch into the task branch and push");
    }

    #[test]
    fn the_merge_message_and_the_conflict_note() {
        insta::assert_snapshot!(
            render_catch_up_message("taskgate/story-1", "taskgate/task-3-cli"),
            @r"
        Merge branch 'taskgate/story-1' into taskgate/task-3-cli

        taskgate: the task is ready, so its branch takes its dependencies' merged work.
        "
        );
        insta::assert_snapshot!(
            render_catch_up_conflict("taskgate/story-1", "taskgate/task-3-cli", "Merge conflict."),
            @"This task is ready, but its branch `taskgate/task-3-cli` could not be brought up to date: the story branch `taskgate/story-1` does not merge into it cleanly (Merge conflict). Merge `taskgate/story-1` into `taskgate/task-3-cli` and push; its tests need its dependencies' work."
        );
    }
}
