//! What taskgate says when GitHub refuses to place an issue under its
//! parent: GitHub allows at most 100 sub-issues under one issue and eight
//! levels of nesting ("Adding sub-issues" in GitHub's docs).
//!
//! Owns: [`render_sub_issue_refused`], the one sentence for it, said on the
//! child issue (an upserted comment, so it is said once).
//! Must not: do IO or decide anything else: the hierarchy stays in the
//! parent's body, and the work goes on.

use crate::ids::{IssueNumber, RepoName};

/// The marker of the comment that says it, on the child issue.
pub const SUB_ISSUE_REFUSED_MARKER: &str = "sub-issue-refused";

/// GitHub's documented limits on sub-issues.
pub const MAX_SUB_ISSUES: usize = 100;
pub const MAX_SUB_ISSUE_LEVELS: usize = 8;

/// Why this issue is not a sub-issue of `parent`: GitHub's refusal, its
/// limits, and what taskgate does about it. `elsewhere`: the parent's
/// repository when it is not the child's (a task of a story planned in
/// another repository, issue 49), so the reference leads there.
pub fn render_sub_issue_refused(
    (parent, elsewhere): (IssueNumber, Option<&RepoName>),
    status: u16,
    message: &str,
) -> String {
    let parent = match elsewhere {
        None => format!("#{parent}"),
        Some(repo) => format!("{repo}#{parent}"),
    };
    let message = message.trim().replace('\n', " ");
    format!(
        "GitHub refused to make this issue a sub-issue of {parent} ({status}: \
         “{message}”). GitHub allows at most {MAX_SUB_ISSUES} sub-issues under one issue \
         and {MAX_SUB_ISSUE_LEVELS} levels of nesting.\n\n\
         Nothing else is held up: {parent} still lists this issue in its body, and taskgate \
         tracks, tests and ships it as before. To see it in GitHub's hierarchy, make room \
         under {parent} (or split the plan into smaller parts), then link it there by hand."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_link_names_the_parent_the_limits_and_that_nothing_stops() {
        insta::assert_snapshot!(
            render_sub_issue_refused(
                (IssueNumber::new(12), None),
                422,
                "Parent issue has reached the maximum number of sub-issues (100)"
            ),
            @r"
        GitHub refused to make this issue a sub-issue of #12 (422: “Parent issue has reached the maximum number of sub-issues (100)”). GitHub allows at most 100 sub-issues under one issue and 8 levels of nesting.

        Nothing else is held up: #12 still lists this issue in its body, and taskgate tracks, tests and ships it as before. To see it in GitHub's hierarchy, make room under #12 (or split the plan into smaller parts), then link it there by hand.
        "
        );
    }

    #[test]
    fn a_parent_in_another_repository_is_named_with_its_repository() {
        let home = RepoName::parse("acme/payments-api").unwrap();
        let note = render_sub_issue_refused((IssueNumber::new(12), Some(&home)), 422, "Too many");
        insta::assert_snapshot!(note, @r"
        GitHub refused to make this issue a sub-issue of acme/payments-api#12 (422: “Too many”). GitHub allows at most 100 sub-issues under one issue and 8 levels of nesting.

        Nothing else is held up: acme/payments-api#12 still lists this issue in its body, and taskgate tracks, tests and ships it as before. To see it in GitHub's hierarchy, make room under acme/payments-api#12 (or split the plan into smaller parts), then link it there by hand.
        ");
    }
}
