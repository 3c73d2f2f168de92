//! Telling people about a 403 that is not a rate limit.
//!
//! Owns: where a refused effect is reported (the issue it is about, else
//! the issue its branch or its marker's story names) and the dedupe of
//! those reports. Must not: retry the effect or pause anything: a missing
//! permission stays missing until a person changes the installation, so
//! the executor fails the effect at once and moves on.
//!
//! The idea a reader needs: one refusal, one note. The note's hidden marker
//! names the kind of effect and a hash of GitHub's message, and an existing
//! note with that marker on the issue is found before posting, so a refusal
//! GitHub repeats for every effect of a plan is said once per issue.

use super::client::GitHubError;
use super::perform::Ctx;
use taskgate_core::ids::IssueNumber;
use taskgate_core::story::Marker;
use taskgate_core::{hidden_marker, Effect};

/// Posts GitHub's refusal of `ctx`'s effect where a person will see it,
/// once per issue, kind of effect and message. `Ok(None)` when the effect
/// names no issue (a check run, a label, a reaction) or is a comment (the
/// same refusal would meet the note).
pub(super) async fn report_refusal(
    ctx: &Ctx<'_>,
    message: &str,
) -> Result<Option<IssueNumber>, GitHubError> {
    let effect = &ctx.row.effect;
    let Some(issue) = issue_to_tell(ctx).await else {
        return Ok(None);
    };
    let repo = effect.repo();
    let hidden = hidden_marker(&format!(
        "refused effect={} why={:016x}",
        effect.name(),
        fnv1a(message.as_bytes())
    ));
    let gh = ctx.repo(repo);
    if gh
        .find_comment(&ctx.own, issue, &hidden, None)
        .await?
        .is_some()
    {
        return Ok(Some(issue));
    }
    let note = taskgate_core::render::render_refused_by_github(effect, message);
    gh.create_comment(issue, &format!("{note}\n\n{hidden}"))
        .await?;
    Ok(Some(issue))
}

/// The issue a refused effect is about, as far as taskgate knows it.
async fn issue_to_tell(ctx: &Ctx<'_>) -> Option<IssueNumber> {
    let by_marker = |marker: &str| marker.to_owned();
    let marker = match &ctx.row.effect {
        // A refused comment cannot be answered by another comment.
        Effect::PostComment { .. }
        | Effect::UpsertComment { .. }
        | Effect::CommentOnMarker { .. } => return None,
        Effect::LabelIssue { issue, .. } => return Some(*issue),
        Effect::UpdatePullRequest { number, .. } | Effect::MarkPullRequestReady { number, .. } => {
            return Some(*number)
        }
        Effect::CreateBranch { name, .. } | Effect::StartTaskBranch { name, .. } => {
            return branch_issue(name)
        }
        Effect::CreatePullRequest { head, .. } => return branch_issue(head),
        Effect::LabelMarked { marker, .. }
        | Effect::UnassignMarked { marker, .. }
        | Effect::UpdateIssue { marker, .. }
        | Effect::AddBlockedBy { marker, .. }
        | Effect::RemoveBlockedBy { marker, .. } => by_marker(marker),
        Effect::LinkSubIssue { child, .. } => by_marker(child),
        Effect::MergePullRequest { report_to, .. } => by_marker(report_to),
        Effect::DispatchWorkflow {
            report_to: Some(marker),
            ..
        } => by_marker(marker),
        Effect::DispatchRun { job, .. } => Marker::Task {
            story: job.story.clone(),
            task: taskgate_core::plan::TaskId::new(job.task.key()),
        }
        .key(),
        // Not made yet: its story's issue is where the plan lives.
        Effect::CreateIssue { marker, .. } => {
            let story = Marker::from_key(marker)?;
            if matches!(story, Marker::Story { .. }) {
                return None;
            }
            Marker::Story {
                story: story.story().to_owned(),
            }
            .key()
        }
        _ => return None,
    };
    let repo = ctx.row.effect.repo();
    match ctx.store.issue_record(repo, &marker).await {
        Ok(record) => record.map(|r| r.number),
        Err(e) => {
            tracing::warn!(error = %e, "could not look up where to report a refusal");
            None
        }
    }
}

/// The issue number in `taskgate/task-<n>-<slug>` or `taskgate/story-<n>`.
fn branch_issue(branch: &str) -> Option<IssueNumber> {
    taskgate_core::story::BranchName::parse(branch).issue()
}

/// FNV-1a: a hash that stays the same across runs and Rust versions, as a
/// marker written today must be found next year.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_and_story_branches_name_their_issue() {
        assert_eq!(
            branch_issue("taskgate/task-14-entry"),
            Some(IssueNumber::new(14))
        );
        assert_eq!(branch_issue("taskgate/story-3"), Some(IssueNumber::new(3)));
        assert_eq!(branch_issue("feature/x"), None);
        assert_eq!(branch_issue("taskgate/task-x-entry"), None);
    }

    #[test]
    fn the_dedupe_hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
