//! GitHub's auto-merge, as GitHub documents it ("Automatically merging a
//! pull request", GraphQL's `enablePullRequestAutoMerge`): a user with
//! write access turns it on for a pull request that cannot merge yet, and
//! GitHub merges it, as that user, once the base branch's requirements
//! are met on its head (its required status checks pass). Turning it on
//! for a pull request that could merge now is refused: GitHub answers
//! "Pull request Pull request is in clean status" (nothing required is
//! pending) or "… unstable status" (only checks that are not required
//! fail), as its users report (peter-evans/enable-pull-request-automerge
//! issues 343 and 355); tools then merge directly.
//!
//! Owns: the pull requests waiting for auto-merge ([`Repo::auto_merge`]:
//! number → the user who turned it on) and merging them when a check on
//! their head completes. Must not: judge a rule itself (`state::rules`
//! does, for the user who turned it on) or answer HTTP (a test turns it
//! on through [`crate::RepoHandle::enable_auto_merge_as`], as an agent's
//! own token would; the check-run routes call [`on_check`]).
//!
//! Not modelled: turning it off, and a push by someone without write
//! access turning it off.

use crate::emit::At;
use crate::state::{Actor, Change, Repo, State};

/// Why GitHub refuses to turn auto-merge on for pull request `number`
/// that `login` could merge now, or a draft; `None`: it waits.
pub(crate) fn refusal(repo: &Repo, number: u64, login: &str) -> Option<String> {
    let Some(p) = repo.pulls.get(&number) else {
        return Some("Could not resolve to a PullRequest".to_owned());
    };
    if p.merged || p.state != "open" {
        return Some("Pull request is closed".to_owned());
    }
    let status = if p.draft {
        "draft"
    } else if blocked(repo, number, login) {
        return None;
    } else if head_has_failure(repo, number) {
        "unstable"
    } else {
        "clean"
    };
    Some(format!("Pull request Pull request is in {status} status"))
}

/// The base's rules refuse `login`'s merge of `number` now.
fn blocked(repo: &Repo, number: u64, login: &str) -> bool {
    let p = &repo.pulls[&number];
    let Some(head) = repo.branches.get(&p.head) else {
        return true;
    };
    let change = Change::MergePull {
        pull: number,
        head,
        method: "merge",
    };
    repo.violations(&p.base, &Actor::User(login.to_owned()), &change)
        .is_some()
}

fn head_has_failure(repo: &Repo, number: u64) -> bool {
    let p = &repo.pulls[&number];
    let head = repo.branches.get(&p.head);
    repo.check_runs.iter().any(|c| {
        Some(&c.head_sha) == head
            && c.status == "completed"
            && !matches!(
                c.conclusion.as_deref(),
                Some("success" | "neutral" | "skipped")
            )
    })
}

/// A check on `sha` changed: each pull request waiting for auto-merge
/// whose head it is merges, as the user who turned it on, once the base's
/// rules let that user merge it.
pub(crate) fn on_check(st: &mut State, at: At, sha: &str) {
    let repo = &st.repos[at.key];
    let ready: Vec<(u64, String)> = repo
        .auto_merge
        .iter()
        .filter(|(number, login)| {
            repo.pulls.get(number).is_some_and(|p| {
                p.state == "open" && repo.branches.get(&p.head).map(String::as_str) == Some(sha)
            }) && !blocked(repo, **number, login)
        })
        .map(|(n, l)| (*n, l.clone()))
        .collect();
    for (number, login) in ready {
        let r = st.repos.get_mut(at.key).expect("repository exists");
        r.auto_merge.remove(&number);
        if let Ok((_, base_before)) =
            crate::routes::pulls::merge(r, number, ("merge", None), &login)
        {
            crate::emit::pull_merged(st, at, number, &login, &base_before);
        }
    }
}
