//! Texts of a task's runs that people read: check-run titles and summaries
//! before and around a run (the verdict itself is `core::report`), and the
//! draft pull request's body.

use crate::ids::{CommitSha, IssueNumber};
use crate::report::{plain_text, CheckOutput};

/// `taskgate/<gate>` (SPEC §1).
pub fn check_name(gate: &str) -> String {
    format!("taskgate/{gate}")
}

pub fn queued_summary(task: &str, attempt: u32) -> String {
    format!(
        "Attempt {attempt} of task `{}` is queued and starts when a runner is free.",
        plain_text(task)
    )
}

pub fn running_summary(attempt: u32, sha: &CommitSha) -> String {
    format!(
        "Attempt {attempt} is running the acceptance tests on `{}` in a fresh checkout.",
        sha.as_str()
    )
}

pub fn waiting_output(ahead: usize) -> CheckOutput {
    let runs = if ahead == 1 { "run" } else { "runs" };
    CheckOutput {
        title: format!("Queued behind {ahead} {runs}"),
        summary: format!(
            "All runners are busy: {ahead} {runs} ahead of this one. It starts by itself when one finishes."
        ),
        text: String::new(),
        annotations: vec![],
    }
}

/// A queued run the runner's host holds back: its disk is below the
/// operator's floor.
pub fn held_output(low: &crate::host_disk::LowDisk) -> CheckOutput {
    CheckOutput {
        title: "Queued: taskgate's host is low on disk".into(),
        summary: format!(
            "{}. This run stays queued and starts by itself once space is freed under taskgate's work directory.",
            low.says()
        ),
        text: String::new(),
        annotations: vec![],
    }
}

/// `by`: the short sha of the newer run's head; `None` when the task has
/// no head to name (its pull request was merged).
pub fn superseded_output(attempt: u32, by: Option<&str>) -> CheckOutput {
    let why = match by {
        Some(by) => format!("a newer run at `{by}` replaced it"),
        None => "the task's pull request was merged".to_string(),
    };
    CheckOutput {
        title: "Cancelled: superseded".into(),
        summary: format!("Attempt {attempt} was stopped because {why}."),
        text: String::new(),
        annotations: vec![],
    }
}

pub fn skipped_output(why: &str) -> CheckOutput {
    CheckOutput {
        title: "Not run".into(),
        summary: format!(
            "Nothing was run: {}. A newer push is tested by itself; press Retry to try again.",
            plain_text(why)
        ),
        text: String::new(),
        annotations: vec![],
    }
}

pub fn missing_gate_output(gate: &str) -> CheckOutput {
    CheckOutput {
        title: "No result — tooling_error".into(),
        summary: format!(
            "The runner finished without a result for gate `{}`. This is a fault of the runner, not of the code; press Retry.",
            plain_text(gate)
        ),
        text: String::new(),
        annotations: vec![],
    }
}

/// Said on the task when GitHub refuses to merge its pull request.
pub fn render_merge_refused(pr: IssueNumber, status: u16, message: &str) -> String {
    if let Some(file) = workflow_refused(message) {
        return render_workflow_merge_refused(pr, &file);
    }
    let why = match status {
        409 => "its branch moved after the run that proved it; the new head is tested by itself",
        _ => "GitHub cannot merge it as it is (a merge conflict with the story branch, or a branch protection rule)",
    };
    format!(
        "The task's pull request #{pr} passed its acceptance tests, but merging it into the story branch was refused: {why}. GitHub said: \"{}\". The story is not affected; once the conflict is resolved and pushed, the new head is tested and merged.",
        plain_text(message)
    )
}

/// The workflow file GitHub's refusal `message` names, when it refused
/// for want of the `workflows` permission: then the refusal is said on the
/// pull request itself, whose change it is.
pub fn workflow_refused(message: &str) -> Option<String> {
    crate::ship::violations(message)
        .into_iter()
        .find_map(|v| match v {
            crate::ship::Violation::WorkflowsPermission { file } => Some(file),
            _ => None,
        })
}

/// A task pull request that changes a workflow file, which GitHub lets
/// taskgate merge only with the `workflows` permission.
fn render_workflow_merge_refused(pr: IssueNumber, file: &str) -> String {
    format!(
        "This pull request (#{pr}) passed its acceptance tests, but GitHub refused to merge it into the story branch: it changes `{}`, and taskgate's installation lacks the `workflows` permission, which GitHub requires of an App that changes a workflow file.\n\n\
         To let it merge, grant the taskgate App the `Workflows: Read and write` repository permission and accept it on the installation ([GitHub's docs]({})), then push to the task's branch again: its new head is tested and merged. Or leave the workflow change out of the task.",
        plain_text(file),
        crate::ship::WORKFLOWS_DOC
    )
}

/// The neutral check run on a commit pushed to a task that is still
/// pending.
pub(super) const PENDING_CHECK: &str = "taskgate/acceptance";

/// "waiting for #3 and #5".
pub(super) fn waiting_for(issues: &[IssueNumber]) -> String {
    let refs: Vec<String> = issues.iter().map(|n| format!("#{n}")).collect();
    let list = match refs.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("waiting for {list}")
}

pub(super) fn pending_summary(issues: &[IssueNumber]) -> String {
    format!(
        "This task depends on work that is not complete yet ({}), so its acceptance tests do not run now: a failure here would only reflect the missing work. The latest commit pushed here is tested as soon as the last dependency completes.",
        waiting_for(issues)
    )
}

pub fn render_fork_summary() -> String {
    "taskgate does not run pull requests from forks: their code would run on taskgate's runner with the repository's access. Push the branch to this repository to have it tested.".into()
}

pub fn task_pull_body(task_issue: IssueNumber) -> String {
    format!(
        "Work on #{task_issue}. taskgate tests every push to this branch with the task's acceptance tests and reports them as check runs.\n\nMark this pull request ready for review when the work is done."
    )
}

/// A gate's check run when the runner itself failed: failed (the commit
/// is not proven) but named a fault of taskgate's host, not of the code.
pub fn runner_fault_output(why: &str) -> CheckOutput {
    CheckOutput {
        title: "Not run — tooling_error (taskgate's runner)".into(),
        summary: format!(
            "taskgate could not run this gate: {}. This is a fault of taskgate's runner on its host, not a verdict on the code: no branch todo was opened. Press Retry once the host is fixed (`taskgate doctor` on the host says what it lacks).",
            plain_text(why.trim_end_matches('.'))
        ),
        text: String::new(),
        annotations: vec![],
    }
}

/// Said once on the task issue (and kept current) when the runner itself
/// failed: what happened, that it counts for nothing, and who can fix it.
pub fn render_runner_fault(attempt: u32, sha: &CommitSha, why: &str) -> String {
    format!(
        "**taskgate could not run this task's acceptance tests** (attempt {attempt}, commit `{}`).\n\n\
         > {}\n\n\
         This is a fault of taskgate's runner on its host, not of the code: no branch todo was opened and the attempt does not count against the task's bounds.\n\n\
         **To fix it**, whoever runs taskgate: run `taskgate doctor` on the host, which says what it lacks, then comment `/taskgate retry` here or press Retry on a check run.",
        sha.short(),
        plain_text(why.trim_end_matches('.')).replace('\n', "\n> ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        insta::assert_snapshot!(queued_summary("data", 2), @"Attempt 2 of task `data` is queued and starts when a runner is free.");
        let w = waiting_output(1);
        insta::assert_snapshot!(format!("{}\n{}", w.title, w.summary), @r"
        Queued behind 1 run
        All runners are busy: 1 run ahead of this one. It starts by itself when one finishes.
        ");
        let h = held_output(&crate::host_disk::LowDisk {
            free_mib: 100,
            floor_mib: 2048,
        });
        insta::assert_snapshot!(format!("{}\n{}", h.title, h.summary), @r"
        Queued: taskgate's host is low on disk
        taskgate's runner host has 100 MiB of disk free, below its floor of 2048 MiB (TASKGATE_MIN_FREE_MIB), so no run starts. This run stays queued and starts by itself once space is freed under taskgate's work directory.
        ");
        let s = superseded_output(3, Some("abc1234"));
        insta::assert_snapshot!(s.summary, @"Attempt 3 was stopped because a newer run at `abc1234` replaced it.");
        insta::assert_snapshot!(superseded_output(3, None).summary, @"Attempt 3 was stopped because the task's pull request was merged.");
        insta::assert_snapshot!(skipped_output("commit 0123 no longer exists").summary, @"Nothing was run: commit 0123 no longer exists. A newer push is tested by itself; press Retry to try again.");
        insta::assert_snapshot!(task_pull_body(IssueNumber::new(14)), @r"
        Work on #14. taskgate tests every push to this branch with the task's acceptance tests and reports them as check runs.

        Mark this pull request ready for review when the work is done.
        ");
    }
}
