//! GitHub's `workflows` permission: an App may create or change a file
//! under `.github/workflows/` only when its installation was granted
//! `workflows: write`. A ref update, a merge through the merges API or a
//! pull request's merge that would change one is refused with GitHub's
//! words, "refusing to allow a GitHub App to create or update workflow
//! `<file>` without `workflows` permission" (the git push's error, which
//! GitHub's REST API answers too), and nothing moves.
//!
//! Owns: telling whether a change between two commits touches a workflow
//! file, and the refusal. Must not: apply anything.

use crate::auth::Caller;
use crate::routes::{Reply, Req};
use crate::state::{Repo, State};

const WORKFLOWS_DIR: &str = ".github/workflows/";

/// The first workflow file that differs between commits `from` and `to`.
fn changed_workflow(repo: &Repo, from: &str, to: &str) -> Option<String> {
    let (old, new) = (&repo.commits.get(from)?.files, &repo.commits.get(to)?.files);
    old.keys()
        .chain(new.keys())
        .filter(|path| path.starts_with(WORKFLOWS_DIR))
        .find(|path| old.get(*path) != new.get(*path))
        .cloned()
}

/// Whether the calling installation may write workflow files.
fn may_write_workflows(st: &State, req: &Req) -> bool {
    let Some(Caller::Installation(id)) = req.caller else {
        return true;
    };
    let permissions = st
        .installations
        .get(&id)
        .and_then(|i| i.permissions.clone());
    let permissions = permissions.unwrap_or_else(crate::render::permissions);
    permissions.get("workflows").and_then(|v| v.as_str()) == Some("write")
}

/// GitHub's refusal (answered with `status`) of moving a branch of `repo`
/// from commit `from` to commit `to`, when that changes a workflow file and
/// the caller lacks `workflows: write`.
pub(crate) fn refused(
    st: &State,
    req: &Req,
    repo: &Repo,
    (from, to): (&str, &str),
    status: u16,
) -> Option<Reply> {
    if may_write_workflows(st, req) {
        return None;
    }
    let file = changed_workflow(repo, from, to)?;
    Some(Reply::error(
        status,
        &format!(
            "refusing to allow a GitHub App to create or update workflow `{file}` without `workflows` permission"
        ),
    ))
}
