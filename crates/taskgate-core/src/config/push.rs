//! The repository's config as read from its default branch, after a push
//! that changed `.github/taskgate.yml` or by a plan sync: recorded when it
//! loads, reported when it does not.
//!
//! Owns: which config text becomes the repository's current one
//! ([`Change::RepoConfigChanged`]), and the failing `taskgate/plan` check
//! run on the pushed commit that says why a config was not taken (the
//! same check run plan problems get). Must not: read the file (the shell
//! hands over its text) or apply the record (`store::repo_config`).
//!
//! One idea a reader needs: a config with problems is never recorded, so
//! the last good one stays in force; a loosening or a tightening takes
//! effect only as a whole, valid file. A repository read for the first
//! time (just installed, or nothing recorded) has no record to keep: its
//! last good config, the defaults, is recorded in place of a config with
//! problems ([`decide_first_config_read`]), so it is read and reported
//! once, not at every comment.

use super::{load_config, CONFIG_PATH};
use crate::decide::Decision;
use crate::event::Change;
use crate::ids::{CommitSha, RepoName};
use crate::plan::{render_check_problems, Problem};
use crate::sync::PLAN_CHECK;
use crate::CheckConclusion;
use crate::{CheckRunSpec, Effect};

/// Whether problems in the config are said here, or by the plan decision
/// of the same push (which refuses its plans with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problems {
    Report,
    ReportedWithThePlans,
}

/// The config at `sha` (`None`: no file there, the defaults) becomes
/// `repo`'s current config when it loads; otherwise the last good one
/// stays, and (with [`Problems::Report`]) the commit's check run says so.
pub fn decide_config_read(
    repo: &RepoName,
    sha: &CommitSha,
    config: Option<String>,
    problems: Problems,
) -> Decision {
    match load_config(config.as_deref()) {
        Ok(_) => Decision {
            outcome: format!(
                "{CONFIG_PATH} at {} is the repository's config",
                sha.short()
            ),
            changes: vec![Change::RepoConfigChanged {
                repo: repo.clone(),
                sha: sha.clone(),
                config,
            }],
            effects: vec![],
        },
        Err(found) => {
            let outcome = format!(
                "{CONFIG_PATH} at {} has problems: the last good config stays",
                sha.short()
            );
            let effects = match problems {
                Problems::Report => vec![config_refused(repo, sha, &found)],
                Problems::ReportedWithThePlans => vec![],
            };
            Decision {
                outcome,
                changes: vec![],
                effects,
            }
        }
    }
}

/// The first read of `repo`'s config, at its default branch's head `sha`
/// (nothing recorded yet: the App was just installed, or installed while
/// taskgate was down, or the database lost the record). As
/// [`decide_config_read`], except that a config with problems records
/// `last_good` in its place (`None`: the defaults; else the copy saved
/// with the repository's latest plan) and its problems are said on
/// `sha`'s `taskgate/plan` check run: the repository follows its last good
/// config, and is not read again until a push changes the file.
pub fn decide_first_config_read(
    repo: &RepoName,
    sha: &CommitSha,
    config: Option<String>,
    last_good: Option<String>,
) -> Decision {
    let mut decision = decide_config_read(repo, sha, config, Problems::Report);
    if decision.changes.is_empty() {
        decision.outcome = format!(
            "{CONFIG_PATH} at {} has problems: the repository keeps its last good config ({})",
            sha.short(),
            if last_good.is_some() {
                "its latest plan's"
            } else {
                "the defaults"
            }
        );
        decision.changes.push(Change::RepoConfigChanged {
            repo: repo.clone(),
            sha: sha.clone(),
            config: last_good,
        });
    }
    decision
}

/// The failing check run on `sha` listing the config's problems.
fn config_refused(repo: &RepoName, sha: &CommitSha, problems: &[Problem]) -> Effect {
    let errors = problems.iter().filter(|p| p.is_error()).count();
    let annotations = Problem::annotations(CONFIG_PATH, problems);
    let report = render_check_problems(CONFIG_PATH, problems);
    Effect::CreateCheckRun {
        repo: repo.clone(),
        check: CheckRunSpec {
            name: PLAN_CHECK.to_owned(),
            head_sha: sha.clone(),
            conclusion: CheckConclusion::Failure,
            title: format!(
                "{errors} problem(s) in {CONFIG_PATH}; taskgate keeps the last good config"
            ),
            summary: format!(
                "taskgate read `{CONFIG_PATH}` and found problems, so it did not take this config: \
                 every story keeps following the last config that loaded (permissions, gates, \
                 freeze windows, the runner's network). Fix them and push again.\n\n```text\n{}\n```",
                report.trim_end().replace("```", "'''")
            ),
            annotations,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> RepoName {
        RepoName::parse("acme/widgets").unwrap()
    }

    fn sha() -> CommitSha {
        crate::ids::sha(&("c0ffee".repeat(6) + "0000"))
    }

    #[test]
    fn a_config_that_loads_becomes_the_repositorys() {
        let text = "commands:\n  permissions:\n    ship: admin\n";
        let d = decide_config_read(&repo(), &sha(), Some(text.into()), Problems::Report);
        assert!(d.effects.is_empty());
        assert_eq!(
            d.changes,
            vec![Change::RepoConfigChanged {
                repo: repo(),
                sha: sha(),
                config: Some(text.into())
            }]
        );
        let removed = decide_config_read(&repo(), &sha(), None, Problems::Report);
        assert!(
            matches!(
                &removed.changes[..],
                [Change::RepoConfigChanged { config: None, .. }]
            ),
            "no file: the defaults"
        );
    }

    #[test]
    fn a_config_with_problems_is_not_taken_and_the_commit_says_why_once() {
        let text = "commands:\n  permissions:\n    ship: owner\n";
        let d = decide_config_read(&repo(), &sha(), Some(text.into()), Problems::Report);
        assert!(d.changes.is_empty(), "the last good config stays");
        let [Effect::CreateCheckRun { check, .. }] = &d.effects[..] else {
            panic!("one check run: {:?}", d.effects);
        };
        assert_eq!(check.name, PLAN_CHECK);
        assert_eq!(check.conclusion.as_str(), "failure");
        insta::assert_snapshot!(format!("{}\n\n{}", check.title, check.summary), @r"
        1 problem(s) in .github/taskgate.yml; taskgate keeps the last good config

        taskgate read `.github/taskgate.yml` and found problems, so it did not take this config: every story keeps following the last config that loaded (permissions, gates, freeze windows, the runner's network). Fix them and push again.

        ```text
        .github/taskgate.yml:3:11: error: `permissions.ship: owner` is not valid; expected one of: read, triage, write, maintain, admin (at /commands/permissions/ship)
        ```
        ");
        let quiet = decide_config_read(
            &repo(),
            &sha(),
            Some(text.into()),
            Problems::ReportedWithThePlans,
        );
        assert!(quiet.changes.is_empty() && quiet.effects.is_empty());
    }

    #[test]
    fn a_first_read_records_the_config_or_in_place_of_one_with_problems_the_last_good() {
        let good = "commands:\n  permissions:\n    ship: admin\n";
        let d = decide_first_config_read(&repo(), &sha(), Some(good.into()), None);
        assert_eq!(
            d,
            decide_config_read(&repo(), &sha(), Some(good.into()), Problems::Report)
        );

        let broken = "commands:\n  permissions:\n    ship: owner\n";
        let d = decide_first_config_read(&repo(), &sha(), Some(broken.into()), None);
        assert_eq!(
            d.changes,
            vec![Change::RepoConfigChanged {
                repo: repo(),
                sha: sha(),
                config: None
            }],
            "the defaults are recorded: read once"
        );
        assert!(
            matches!(&d.effects[..], [Effect::CreateCheckRun { check, .. }] if check.conclusion == CheckConclusion::Failure),
            "and the problems said on the commit"
        );
        insta::assert_snapshot!(d.outcome, @".github/taskgate.yml at c0ffeec has problems: the repository keeps its last good config (the defaults)");
        let planned =
            decide_first_config_read(&repo(), &sha(), Some(broken.into()), Some(good.into()));
        assert!(matches!(
            &planned.changes[..],
            [Change::RepoConfigChanged { config: Some(c), .. }] if c == good
        ));
    }
}
