//! Which dependencies from other repositories a run carries (issue 49,
//! step 6): each task the run's task `depends_on` that lives in another
//! repository and is proven, with its proven head. The runner fetches
//! each one and shows it read-only at `deps/<id>`, with
//! `TASKGATE_DEP_<ID>_SHA` in the gates' environment.
//!
//! Owns: [`RunDep`], [`run_deps`] (the choice), [`proven_head`] (what
//! "proven" means for a task record), the variable's name
//! ([`RunDep::env_name`]) and the Actions runner's note that it does not
//! carry them yet ([`render_actions_unsupported`]).
//! Must not: fetch anything, or decide whether the task may start (the
//! reconciler's `pending` does: a dependency not yet complete keeps it
//! pending, in any repository).

use serde::{Deserialize, Serialize};

use super::TaskRecord;
use crate::ids::{CommitSha, RepoName, TaskId};
use crate::plan::{Plan, Task, TaskState};

/// One dependency a run carries: a task of another repository and the
/// commit of that repository its gates passed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDep {
    pub task: TaskId,
    pub repo: RepoName,
    pub sha: CommitSha,
}

impl RunDep {
    /// `TASKGATE_DEP_<ID>_SHA`: the task id upper-cased, every character
    /// but an ASCII letter or digit written `_` (`api-v2` →
    /// `TASKGATE_DEP_API_V2_SHA`).
    pub fn env_name(&self) -> String {
        env_name(&self.task)
    }

    /// Where the runner checks it out, relative to the workspace:
    /// `deps/<id>` (plan ids are `[A-Za-z0-9_-]+`, so the id is one safe
    /// path segment).
    pub fn dir(&self) -> String {
        format!("deps/{}", self.task.as_str())
    }
}

/// [`RunDep::env_name`] for a task id.
pub fn env_name(task: &TaskId) -> String {
    let id: String = task
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("TASKGATE_DEP_{id}_SHA")
}

/// The head a task was proven at: completed, and every gate's last
/// verdict passed at its head. `None` for any other record (a task
/// accepted by `/approve --override` without passing gates is not proven:
/// there is no commit whose gates said so).
pub fn proven_head(record: &TaskRecord) -> Option<CommitSha> {
    let head = record.head.as_ref()?;
    let completed = record.state == Some(TaskState::Completed);
    let passed =
        !record.verdicts.is_empty() && record.verdicts.values().all(|v| v.passed && v.sha == *head);
    (completed && passed).then(|| head.clone())
}

/// The dependencies `task`'s run carries, in plan order: each leaf it
/// `depends_on` (a parent stands for its leaves) whose repository is not
/// `task`'s own and that is proven (`proven` gives its head). A
/// dependency in the task's own repository is on its story branch
/// already; one not proven is not carried (the task is pending until it
/// is complete anyway). `home` is the plan's repository, the repository of
/// a task without `repo:`.
pub fn run_deps(
    plan: &Plan,
    task: &Task,
    home: &RepoName,
    proven: impl Fn(&TaskId) -> Option<CommitSha>,
) -> Vec<RunDep> {
    let repo_of = |t: &Task| t.repo.as_ref().map_or(home, |r| &r.value).clone();
    let own = repo_of(task);
    let mut out: Vec<RunDep> = Vec::new();
    for dep in &task.depends_on {
        let Some(found) = plan.task(&dep.value) else {
            continue;
        };
        let mut leaves = Vec::new();
        leaves_of(found, &mut leaves);
        for leaf in leaves {
            let repo = repo_of(leaf);
            let id = &leaf.id.value;
            if repo == own || out.iter().any(|d| d.task == *id) {
                continue;
            }
            if let Some(sha) = proven(id) {
                out.push(RunDep {
                    task: id.clone(),
                    repo,
                    sha,
                });
            }
        }
    }
    out
}

fn leaves_of<'p>(t: &'p Task, out: &mut Vec<&'p Task>) {
    if t.is_parent() {
        t.tasks.iter().for_each(|c| leaves_of(c, out));
    } else {
        out.push(t);
    }
}

/// What an Actions run says once, in its check run, when its task has
/// dependencies in other repositories: the workflow is not given them
/// yet (a `workflow_dispatch` refuses inputs the workflow does not
/// declare, and `taskgate run` in the workflow has no token to fetch
/// another repository).
pub fn render_actions_unsupported(deps: &[RunDep]) -> Option<String> {
    if deps.is_empty() {
        return None;
    }
    let mut out = String::from(
        "The `actions` runner does not check out dependencies from other repositories yet: \
         this run has neither `deps/<id>` nor `TASKGATE_DEP_<ID>_SHA` for\n",
    );
    for d in deps {
        out.push_str(&format!(
            "- `{}` ({} at {})\n",
            d.task.as_str(),
            d.repo.as_str(),
            d.sha.as_str()
        ));
    }
    out.push_str("Use `runner: local` in this repository's `.github/taskgate.yml` for them.\n");
    Some(out)
}

#[cfg(test)]
mod tests;
