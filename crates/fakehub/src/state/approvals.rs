//! The review half of a `pull_request` rule (a ruleset's parameters, or
//! classic protection's `required_pull_request_reviews`), as GitHub
//! judges a pull request's merge against it: how many approving reviews
//! count, whose approval a code owner rule waits for (the `CODEOWNERS`
//! file of the base branch), the last pusher's own approval under
//! `require_last_push_approval`, and approvals dismissed by a push under
//! `dismiss_stale_reviews_on_push`.
//!
//! Owns: counting approvals and the sentences GitHub refuses a merge
//! with ("At least 1 approving review is required by reviewers with
//! write access.", "Waiting on code owner review from …."), `CODEOWNERS`
//! read and matched as GitHub's docs describe it, and which approvals a
//! push makes stale. Must not: answer HTTP, send webhooks (`emit`
//! dismisses and sends), or know who may bypass (`state::rules`).
//!
//! GitHub's rules modelled (docs: "About protected branches", "About code
//! owners"): a reviewer's latest approving, change-requesting or dismissed
//! review is their verdict (a comment changes nothing); the file is the
//! first of `.github/CODEOWNERS`, `CODEOWNERS`, `docs/CODEOWNERS` on the
//! base branch; its last matching pattern wins, and a pattern with no
//! owners leaves the path unowned; an owner `@org/team` is approved by an
//! active member of that team (`crate::teams`). Every user of the fake has write access.

use std::collections::BTreeMap;

use super::Repo;

/// What a `pull_request` rule asks of reviews.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReviewAsk {
    pub required_approvals: u32,
    pub code_owners: bool,
    pub last_push: bool,
}

/// Where GitHub looks for `CODEOWNERS`, in order.
pub const CODEOWNERS_PATHS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

impl Repo {
    /// The logins whose latest verdict on pull request `pull` approves it.
    fn approvers(&self, pull: u64) -> Vec<String> {
        let mut verdict: BTreeMap<&str, &str> = BTreeMap::new();
        for r in self.reviews.iter().filter(|r| r.pull == pull) {
            if matches!(
                r.state.as_str(),
                "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
            ) {
                verdict.insert(&r.user, &r.state);
            }
        }
        verdict
            .into_iter()
            .filter(|(_, s)| *s == "APPROVED")
            .map(|(u, _)| u.to_owned())
            .collect()
    }

    /// The sentences `ask` says against merging pull request `pull` now;
    /// none when its reviews meet it.
    pub(super) fn reviews_missing(&self, pull: u64, ask: ReviewAsk) -> Vec<String> {
        let Some(p) = self.pulls.get(&pull) else {
            return vec![];
        };
        let last_pusher = self.pushers.get(&p.head);
        let approvers: Vec<String> = self
            .approvers(pull)
            .into_iter()
            .filter(|u| *u != p.author)
            .filter(|u| !(ask.last_push && last_pusher.is_some_and(|l| l.eq_ignore_ascii_case(u))))
            .collect();
        let mut out = Vec::new();
        let n = ask.required_approvals;
        if n > 0 && approvers.len() < n as usize {
            let s = if n == 1 { "" } else { "s" };
            out.push(format!(
                "At least {n} approving review{s} is required by reviewers with write access."
            ));
        }
        if ask.code_owners {
            let waiting = self.owners_waiting(pull, &approvers);
            if !waiting.is_empty() {
                out.push(format!(
                    "Waiting on code owner review from {}.",
                    waiting.join(", ")
                ));
            }
        }
        out
    }

    /// The code owners (as `CODEOWNERS` names them, without `@`) of the
    /// files pull request `pull` changes whose owners none of `approvers`
    /// is.
    fn owners_waiting(&self, pull: u64, approvers: &[String]) -> Vec<String> {
        let p = &self.pulls[&pull];
        let (Some(base), Some(head)) = (self.branches.get(&p.base), self.branches.get(&p.head))
        else {
            return vec![];
        };
        let Some(file) = CODEOWNERS_PATHS
            .iter()
            .find_map(|path| self.commits.get(base)?.files.get(*path))
        else {
            return vec![];
        };
        let since = self.merge_base(base, head).unwrap_or_else(|| base.clone());
        let (old, new) = (&self.commits[&since].files, &self.commits[head].files);
        let changed = old
            .keys()
            .chain(new.keys())
            .filter(|path| old.get(*path) != new.get(*path));
        let mut out: Vec<String> = Vec::new();
        for path in changed {
            let owners = owners_of(file, path);
            // An owner `org/team` is a team: an active member approves
            // for it.
            let approved = owners.iter().any(|o| {
                approvers.iter().any(|a| {
                    a.eq_ignore_ascii_case(o) || (o.contains('/') && self.teams.active_member(o, a))
                })
            });
            if !approved {
                for o in owners {
                    if !out.contains(&o) {
                        out.push(o);
                    }
                }
            }
        }
        out
    }

    /// The approvals of pull requests whose head is `branch` that a push
    /// to `after` makes stale, where the base's rules dismiss them: their
    /// `(pull, review)` ids.
    pub fn stale_approvals(&self, branch: &str, after: &str) -> Vec<(u64, u64)> {
        let dismissing = |base: &str| {
            self.rules_for(base).any(|set| {
                set.rules.iter().any(|r| {
                    matches!(
                        r,
                        super::Rule::PullRequest {
                            dismiss_stale: true,
                            ..
                        }
                    )
                })
            })
        };
        self.pulls
            .values()
            .filter(|p| p.state == "open" && p.head == branch && dismissing(&p.base))
            .flat_map(|p| {
                self.reviews
                    .iter()
                    .filter(move |r| r.pull == p.number && r.state == "APPROVED")
                    .filter(|r| r.commit_id != after)
                    .map(|r| (r.pull, r.id))
            })
            .collect()
    }
}

/// The owners `CODEOWNERS` text `file` gives `path`: its last matching
/// line's, without `@`.
pub fn owners_of(file: &str, path: &str) -> Vec<String> {
    let mut owners = Vec::new();
    for line in file.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(pattern) = words.next() else {
            continue;
        };
        if pattern_matches(pattern, path) {
            owners = words
                .map(|w| w.trim_start_matches('@').to_owned())
                .collect();
        }
    }
    owners
}

/// Whether `CODEOWNERS` pattern `pattern` matches file `path` (GitHub's
/// gitignore-like rules: a pattern without an inner `/` matches at any
/// depth; a leading `/` anchors; a directory matches what it holds; a
/// trailing `/*` matches that directory's files only; `**` any depth).
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let dir_only = pattern.ends_with('/');
    let trimmed = pattern.trim_end_matches('/');
    let anchored = trimmed.starts_with('/') || trimmed.contains('/');
    let trimmed = trimmed.trim_start_matches('/');
    let mut pat: Vec<&str> = trimmed.split('/').collect();
    if !anchored {
        pat.insert(0, "**");
    }
    let files_only = pat.last() == Some(&"*");
    let segments: Vec<&str> = path.split('/').collect();
    (1..=segments.len()).any(|k| {
        let whole = k == segments.len();
        // `apps/` names a directory, not a file; `docs/*` files directly in it.
        if (whole && dir_only) || (!whole && files_only) {
            return false;
        }
        segments_match(&pat, &segments[..k])
    })
}

fn segments_match(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => (0..=segs.len()).any(|i| segments_match(rest, &segs[i..])),
        Some((p, rest)) => segs.split_first().is_some_and(|(s, more)| {
            glob(p.as_bytes(), s.as_bytes()) && segments_match(rest, more)
        }),
    }
}

/// One path segment against a glob of `*` and `?`.
fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.split_first(), s.split_first()) {
        (None, _) => s.is_empty(),
        (Some((b'*', rest)), _) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        (Some((b'?', rest)), Some((_, more))) => glob(rest, more),
        (Some((c, rest)), Some((d, more))) => c == d && glob(rest, more),
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codeowners_patterns_match_as_githubs_docs_say() {
        assert!(pattern_matches("*", "a/b.rs"));
        assert!(pattern_matches("*.js", "src/app/x.js"));
        assert!(!pattern_matches("*.js", "src/app/x.rs"));
        assert!(pattern_matches("/build/logs/", "build/logs/a/b.txt"));
        assert!(!pattern_matches("/build/logs/", "x/build/logs/a.txt"));
        assert!(pattern_matches("apps/", "x/apps/y.rs"));
        assert!(pattern_matches("docs/*", "docs/getting-started.md"));
        assert!(!pattern_matches(
            "docs/*",
            "docs/build-app/troubleshooting.md"
        ));
        assert!(pattern_matches("**/logs", "a/b/logs/x.txt"));
        assert!(pattern_matches("/src/", "src/lib.rs"));
        assert!(!pattern_matches("/src/", "lib/src.rs"));
        let file = "* @global\n/src/ @alice @bob\n# comment\n*.md @docs\n/src/unowned.rs\n";
        assert_eq!(owners_of(file, "README.md"), ["docs"]);
        assert_eq!(owners_of(file, "src/lib.rs"), ["alice", "bob"]);
        assert_eq!(owners_of(file, "Cargo.toml"), ["global"]);
        assert!(owners_of(file, "src/unowned.rs").is_empty());
    }
}
