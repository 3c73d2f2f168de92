//! Sub-issue links GitHub refuses for its limits (100 sub-issues under one
//! issue, eight levels of nesting): said once on the child, and done.
//!
//! Owns: turning such a refusal of `LinkSubIssue` into one upserted comment
//! on the child issue (the sentence is `core::story::render_sub_issue_refused`)
//! and a record that stops the sync from asking again.
//! Must not: retry the link: no wait makes room under the parent, and a
//! failed effect asked for again by every pass would never end.

use super::{upsert_comment, Ctx};
use crate::github::client::GitHubError;
use taskgate_core::ids::RepoName;
use taskgate_core::story::{render_sub_issue_refused, SUB_ISSUE_REFUSED_MARKER};
use taskgate_core::sync::IssueRecord;

/// Whether `err` is GitHub refusing the link itself: a 422 other than the
/// duplicate a lost answer leaves and than an issue GitHub does not show
/// yet (its reads lag). GitHub's docs give the limits, not the words, so
/// the refusal is told by what it is not.
pub(super) fn is_refused_link(err: &GitHubError) -> bool {
    let GitHubError::Http {
        status: 422,
        message,
        ..
    } = err
    else {
        return false;
    };
    let m = message.to_lowercase();
    !(m.contains("duplicate sub-issues")
        || m.contains("not found")
        || m.contains("could not resolve"))
}

/// Says on the child (in `repo`, which may not be the parent's) why it is
/// not under its parent. The caller then
/// records the child with the parent it asked for: the sync compares the
/// record with the plan, so it does not link it again on every pass.
pub(super) async fn say_link_refused(
    ctx: &Ctx<'_>,
    (repo, parent_repo): (&RepoName, &RepoName),
    parent: &IssueRecord,
    child: &IssueRecord,
    err: &GitHubError,
) -> Result<(), GitHubError> {
    let GitHubError::Http {
        status, message, ..
    } = err
    else {
        return Ok(());
    };
    let elsewhere = (parent_repo != repo).then_some(parent_repo);
    let note = render_sub_issue_refused((parent.number, elsewhere), *status, message);
    upsert_comment(ctx, repo, child.number, SUB_ISSUE_REFUSED_MARKER, &note).await?;
    Ok(())
}
