//! Why a completed Actions run's report is not accepted.
//!
//! Owns: [`NotAccepted`], the typed reason [`super::ActionsRuns`]'s report
//! check returns, whose Display is the summary of the `tooling_error`
//! stand-in the attempt ends with. Must not: fetch or check the artifact.

use std::fmt;

use crate::runner::actions::{ArtifactError, REPORT_ARTIFACT};
use taskgate_core::story::start::TestedMismatch;

/// Why a run's report is not believed: nothing was uploaded, the artifact
/// was refused, or it tested something other than what was dispatched.
#[derive(Debug)]
pub enum NotAccepted {
    /// The artifact was missing or refused (never a transient GitHub error:
    /// that is retried instead), with how the run concluded, if it did.
    Artifact {
        cause: ArtifactError,
        conclusion: Option<String>,
    },
    /// The report's tested commit does not match the dispatch.
    Tested(TestedMismatch),
}

impl fmt::Display for NotAccepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAccepted::Artifact { cause, conclusion } => {
                match cause {
                    ArtifactError::NoReport { .. } => write!(
                        f,
                        "no `{REPORT_ARTIFACT}` artifact was uploaded (did the job reach its upload step?)"
                    )?,
                    cause => write!(f, "{cause}")?,
                }
                match conclusion {
                    Some(conclusion) => write!(f, "; the run concluded `{conclusion}`"),
                    None => Ok(()),
                }
            }
            NotAccepted::Tested(mismatch) => write!(f, "{mismatch}"),
        }
    }
}

impl std::error::Error for NotAccepted {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_not_accepted_says_why_and_how_the_run_concluded() {
        let missing = NotAccepted::Artifact {
            cause: ArtifactError::NoReport {
                run_url: "https://github.com/o/r/actions/runs/7".into(),
            },
            conclusion: Some("failure".into()),
        };
        insta::assert_snapshot!(missing, @"no `taskgate-report` artifact was uploaded (did the job reach its upload step?); the run concluded `failure`");
        let refused = NotAccepted::Artifact {
            cause: ArtifactError::UnsafePath("../etc/passwd".into()),
            conclusion: None,
        };
        insta::assert_snapshot!(refused, @"the `taskgate-report` artifact holds an unsafe path `../etc/passwd` (absolute, with `..` or a backslash); refusing it");
    }
}
