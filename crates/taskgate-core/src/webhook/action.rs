//! The `action` of each GitHub event taskgate subscribes to, as enums.
//!
//! Owns: which actions taskgate acts on. Each enum names exactly those;
//! every other action GitHub sends (today's or a future one) is `Other`,
//! kept verbatim for logs and outcomes. So "which deliveries matter" is
//! read off the type (the intake's `WebhookKind::matters`) rather than
//! kept in a list, and adding a variant is the one step that makes taskgate
//! read such deliveries: the compiler then asks each handler that matches
//! the enum what to do with it.
//! Must not: decide anything beyond the name.

use std::fmt;

/// Declares an action enum: its acted-on variants with GitHub's spelling,
/// plus `Other(String)`.
macro_rules! actions {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// An action taskgate does not act on.
            Other(String),
        }

        impl $name {
            /// The actions taskgate acts on, as GitHub spells them.
            pub const ACTED_ON: &'static [&'static str] = &[$($text),*];

            pub fn parse(text: &str) -> Self {
                match text {
                    $($text => Self::$variant,)*
                    other => Self::Other(other.to_owned()),
                }
            }

            /// GitHub's spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Other(text) => text,
                }
            }

            /// Whether taskgate acts on this action at all.
            pub fn is_acted_on(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Ok(Self::parse(&text))
            }
        }
    };
}

actions! {
    /// `installation`: the App was installed, uninstalled or given back.
    InstallationAction {
        Created = "created",
        Deleted = "deleted",
        NewPermissionsAccepted = "new_permissions_accepted",
        Unsuspend = "unsuspend",
    }
}

actions! {
    /// `installation_repositories`: repositories added to or removed from
    /// an installation.
    InstallationRepositoriesAction {
        Added = "added",
        Removed = "removed",
    }
}

actions! {
    /// `issues`: taskgate keeps its issues itself and acts on none of
    /// these (a person's edits are read back at the next reconciliation).
    IssuesAction {}
}

actions! {
    /// `issue_comment`: a new comment, or an edit that may add a command.
    IssueCommentAction {
        Created = "created",
        Edited = "edited",
    }
}

actions! {
    /// `pull_request`: a task's or a story's pull request moved.
    PullRequestAction {
        Opened = "opened",
        Synchronize = "synchronize",
        Reopened = "reopened",
        ReadyForReview = "ready_for_review",
        /// "Convert to draft": whoever did it holds the PR (`task::ready`).
        ConvertedToDraft = "converted_to_draft",
        Closed = "closed",
        /// The `ship` label (and any other).
        Labeled = "labeled",
        /// Title, body or base changed: only a base change moves
        /// anything (an agent's fix moved onto its task branch).
        Edited = "edited",
    }
}

actions! {
    /// `check_suite`: GitHub asks for checks, or a person asks again.
    CheckSuiteAction {
        /// Sent on every push; answered with "runs start from the push".
        Requested = "requested",
        Rerequested = "rerequested",
    }
}

actions! {
    /// `check_run`: "Re-run" or one of taskgate's buttons.
    CheckRunAction {
        Rerequested = "rerequested",
        RequestedAction = "requested_action",
    }
}

actions! {
    /// `workflow_run`: the Actions runner's runs and a story's workflows.
    WorkflowRunAction {
        InProgress = "in_progress",
        Completed = "completed",
    }
}

actions! {
    /// `merge_group`: GitHub's merge queue asks for checks on a merge
    /// group, or destroys one (merged, invalidated, dequeued).
    MergeGroupAction {
        ChecksRequested = "checks_requested",
        Destroyed = "destroyed",
    }
}

actions! {
    /// `pull_request_review`: a review of a task pull request submitted
    /// ("Approve", "Request changes", "Comment"), or dismissed. An edit
    /// changes only a review's text, never its verdict: not acted on.
    PullRequestReviewAction {
        Submitted = "submitted",
        Dismissed = "dismissed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_actions_are_variants_and_the_rest_keep_their_name() {
        assert_eq!(
            PullRequestAction::parse("labeled"),
            PullRequestAction::Labeled
        );
        let other = PullRequestAction::parse("auto_merge_enabled");
        assert_eq!(other.as_str(), "auto_merge_enabled");
        assert!(!other.is_acted_on());
        assert!(!IssuesAction::parse("opened").is_acted_on());
    }

    #[test]
    fn actions_deserialise_from_json_strings() {
        let a: CheckRunAction = serde_json::from_str(r#""requested_action""#).unwrap();
        assert_eq!(a, CheckRunAction::RequestedAction);
        let escaped: WorkflowRunAction = serde_json::from_str(r#""in\u005fprogress""#).unwrap();
        assert_eq!(escaped, WorkflowRunAction::InProgress);
    }
}
