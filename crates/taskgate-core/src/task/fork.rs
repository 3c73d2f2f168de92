//! Pull requests from forks: never run, since their code would run on
//! taskgate's runner with the repository's access.

use crate::ids::{CommitSha, RepoName};
use crate::CheckConclusion;
use crate::{CheckRunSpec, Decision, Effect};

/// A fork's pull request that aims at a task or a story: a neutral
/// `taskgate/acceptance` check run on each new head says why it is not run.
pub fn decide_fork_pull(repo: &RepoName, head_sha: &CommitSha, new_head: bool) -> Decision {
    if !new_head {
        return Decision::nothing("fork pull request");
    }
    Decision {
        changes: vec![],
        effects: vec![Effect::CreateCheckRun {
            repo: repo.clone(),
            check: CheckRunSpec {
                name: "taskgate/acceptance".into(),
                head_sha: head_sha.clone(),
                conclusion: CheckConclusion::Neutral,
                title: "Not run: pull request from a fork".into(),
                summary: super::render_fork_summary(),
                annotations: vec![],
            },
        }],
        outcome: "fork pull request: not run".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_head_gets_one_neutral_check_run_and_other_actions_nothing() {
        let repo = RepoName::parse("o/r").unwrap();
        let sha = crate::ids::sha(&"a".repeat(40));
        let d = decide_fork_pull(&repo, &sha, true);
        let [Effect::CreateCheckRun { check, .. }] = d.effects.as_slice() else {
            panic!("one check run: {:?}", d.effects)
        };
        assert_eq!(
            (check.conclusion.as_str(), &check.head_sha),
            ("neutral", &sha)
        );
        assert!(decide_fork_pull(&repo, &sha, false).effects.is_empty());
    }
}
