//! A ship the default branch's review rules refused (issue 45 item 4):
//! the story waits for approving reviews of its story PR, says once how
//! many are missing and from whom, and ships again by itself as soon as
//! an approval arrives.
//!
//! Owns: [`ApprovalFacts`] (what the shell read when GitHub refused: the
//! story PR's reviews, the base's `CODEOWNERS`, the changed paths),
//! counting what is missing ([`missing`]), `CODEOWNERS` matched as GitHub's
//! docs describe it, [`ApprovalWait`], the refusal that waits
//! ([`await_approvals`]) and [`on_story_review`]. Must not: read GitHub,
//! approve anything (taskgate never approves its own pull request), or
//! land (the queue does, when the ship is requested again).
//!
//! Ideas a reader needs:
//! - **GitHub's refusal says which rules hold.** Classic protection hides
//!   its review settings from an App, so the sentences GitHub refused the
//!   merge with ("At least N approving reviews…", "Waiting on code owner
//!   review…") say what is required; the facts say who has approved.
//! - **No timer.** The merge is tried once per ship; after a refusal only
//!   a `pull_request_review` approving the story PR starts the next try.

use serde::{Deserialize, Serialize};

use super::decide::{comment, ShipContext, ShipDecision};
use super::landing::{out_of_queue_keep, rule_line};
use super::rules::Violation;
use super::{ShipState, Shipper, StoryRecord};
use crate::ids::CommitSha;
use crate::report::plain_text;

/// One review of the story PR, as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewFact {
    pub login: String,
    /// GitHub's state: `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`,
    /// `DISMISSED`.
    pub state: String,
}

/// What the shell read when GitHub refused the story PR's merge for its
/// reviews.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalFacts {
    /// The story PR's reviews, oldest first.
    pub reviews: Vec<ReviewFact>,
    /// The default branch's `CODEOWNERS` (the first of `.github/`, the
    /// root, `docs/`), when it has one.
    pub codeowners: Option<String>,
    /// The paths the story changes.
    pub paths: Vec<String>,
    /// Approvers GitHub says are active members of a team `CODEOWNERS`
    /// names (asked as [`team_questions`] lists): GitHub counts a team
    /// member's approval as the team's.
    #[serde(default)]
    pub team_members: Vec<TeamMember>,
}

/// An approver who is an active member of a code-owning team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMember {
    /// `org/team-slug`, as `CODEOWNERS` names it (without the `@`).
    pub team: String,
    pub login: String,
}

/// Whether `login` is an active member of `team`, to ask GitHub
/// (`GET /orgs/{org}/teams/{team_slug}/memberships/{username}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamQuestion {
    pub org: String,
    pub team_slug: String,
    pub login: String,
}

/// A `CODEOWNERS` owner that is a team (`@org/team-slug`): its org and
/// slug, each of the letters, digits, `-` and `_` GitHub allows (so that
/// one is a URL path segment as it is).
pub fn team_of(owner: &str) -> Option<(&str, &str)> {
    let (org, slug) = owner.strip_prefix('@')?.split_once('/')?;
    (github_name(org) && github_name(slug)).then_some((org, slug))
}

/// Letters, digits, `-` and `_`: a login, org or team slug GitHub allows
/// (a bot's `name[bot]` is none, and is in no team).
fn github_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The memberships to ask GitHub about before [`missing`] can tell whether
/// a code-owning team approved: each team owning a changed path, against
/// each approver (none when no team owns one, or nobody approved).
pub fn team_questions(facts: &ApprovalFacts) -> Vec<TeamQuestion> {
    let Some(file) = &facts.codeowners else {
        return vec![];
    };
    let approvers = approvers(&facts.reviews);
    let mut out: Vec<TeamQuestion> = Vec::new();
    for path in &facts.paths {
        for (org, slug) in owners_of(file, path).iter().filter_map(|o| team_of(o)) {
            for login in approvers.iter().filter(|l| github_name(l)) {
                let q = TeamQuestion {
                    org: org.to_owned(),
                    team_slug: slug.to_owned(),
                    login: login.clone(),
                };
                if !out.contains(&q) {
                    out.push(q);
                }
            }
        }
    }
    out
}

/// Where GitHub looks for `CODEOWNERS`, in order.
pub const CODEOWNERS_PATHS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// Code owners none of whom approved, and the changed paths they own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnersWaited {
    pub owners: Vec<String>,
    pub paths: Vec<String>,
}

/// What the review rules still want.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Missing {
    /// Approving reviews required (GitHub's number), and given.
    pub required: u32,
    pub approvers: Vec<String>,
    /// Code owners still to approve, by path.
    pub owners: Vec<OwnersWaited>,
}

impl Missing {
    /// Approving reviews still missing.
    pub fn count(&self) -> u32 {
        self.required
            .saturating_sub(u32::try_from(self.approvers.len()).unwrap_or(u32::MAX))
    }
}

/// The story waits for approvals of `head`; `shipper` ships it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalWait {
    pub head: CommitSha,
    pub shipper: Shipper,
    /// The note was posted for this head (said once per head).
    #[serde(default)]
    pub said: bool,
}

/// Whether GitHub's refusal is only about reviews.
pub fn only_reviews(violations: &[Violation]) -> bool {
    !violations.is_empty()
        && violations
            .iter()
            .all(|v| matches!(v, Violation::Reviews(_)))
}

/// What is missing, from GitHub's sentences and the facts.
pub fn missing(violations: &[Violation], facts: &ApprovalFacts) -> Missing {
    let mut required = 0;
    let mut code_owners = false;
    for v in violations {
        if let Violation::Reviews(said) = v {
            required = required.max(required_count(said));
            code_owners |= said.to_ascii_lowercase().contains("code owner");
        }
    }
    let approvers = approvers(&facts.reviews);
    let owners = match (&facts.codeowners, code_owners) {
        (Some(file), true) => owners_waited(file, facts, &approvers),
        _ => vec![],
    };
    Missing {
        required,
        approvers,
        owners,
    }
}

/// "At least 2 approving reviews …" → 2.
fn required_count(said: &str) -> u32 {
    said.split_whitespace()
        .skip_while(|w| !w.eq_ignore_ascii_case("least"))
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The logins whose latest verdict approves (a comment changes nothing).
fn approvers(reviews: &[ReviewFact]) -> Vec<String> {
    let mut verdicts: Vec<(&str, &str)> = Vec::new();
    for r in reviews {
        if !matches!(
            r.state.as_str(),
            "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
        ) {
            continue;
        }
        match verdicts
            .iter_mut()
            .find(|(l, _)| l.eq_ignore_ascii_case(&r.login))
        {
            Some(v) => v.1 = &r.state,
            None => verdicts.push((&r.login, &r.state)),
        }
    }
    verdicts
        .into_iter()
        .filter(|(_, s)| *s == "APPROVED")
        .map(|(l, _)| l.to_owned())
        .collect()
}

/// Whether `approver`'s approval is owner `owner`'s: the owner itself, or
/// an active member of the team it is.
fn approves_for(owner: &str, approver: &str, members: &[TeamMember]) -> bool {
    let name = owner.trim_start_matches('@');
    match team_of(owner) {
        None => approver.eq_ignore_ascii_case(name),
        Some(_) => members
            .iter()
            .any(|m| m.team.eq_ignore_ascii_case(name) && m.login.eq_ignore_ascii_case(approver)),
    }
}

fn owners_waited(file: &str, facts: &ApprovalFacts, approvers: &[String]) -> Vec<OwnersWaited> {
    let mut out: Vec<OwnersWaited> = Vec::new();
    for path in &facts.paths {
        let owners = owners_of(file, path);
        let approved = owners.iter().any(|o| {
            approvers
                .iter()
                .any(|a| approves_for(o, a, &facts.team_members))
        });
        if owners.is_empty() || approved {
            continue;
        }
        match out.iter_mut().find(|w| w.owners == owners) {
            Some(w) => w.paths.push(path.clone()),
            None => out.push(OwnersWaited {
                owners,
                paths: vec![path.clone()],
            }),
        }
    }
    out
}

/// The owners `CODEOWNERS` text `file` gives `path`: its last matching
/// line's (a line without owners leaves the path unowned).
pub fn owners_of(file: &str, path: &str) -> Vec<String> {
    let mut owners = Vec::new();
    for line in file.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(pattern) = words.next() else {
            continue;
        };
        if pattern_matches(pattern, path) {
            owners = words.map(str::to_owned).collect();
        }
    }
    owners
}

/// Whether `CODEOWNERS` pattern `pattern` matches file `path`: without an
/// inner `/` at any depth, a leading `/` anchors, a directory matches what
/// it holds, a trailing `/*` only that directory's files, `**` any depth.
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let dir_only = pattern.ends_with('/');
    let trimmed = pattern.trim_end_matches('/');
    let anchored = trimmed.starts_with('/') || trimmed.contains('/');
    let mut pat: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
    if !anchored {
        pat.insert(0, "**");
    }
    let files_only = pat.last() == Some(&"*");
    let segments: Vec<&str> = path.split('/').collect();
    (1..=segments.len()).any(|k| {
        let whole = k == segments.len();
        !((whole && dir_only) || (!whole && files_only)) && segments_match(&pat, &segments[..k])
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

fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.split_first(), s.split_first()) {
        (None, _) => s.is_empty(),
        (Some((b'*', rest)), _) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        (Some((b'?', rest)), Some((_, more))) => glob(rest, more),
        (Some((c, rest)), Some((d, more))) => c == d && glob(rest, more),
        (Some(_), None) => false,
    }
}

/// The gate's lines: how many approvals are missing, and from whom.
pub fn missing_lines(m: &Missing, branch: &str) -> Vec<String> {
    let branch = plain_text(branch);
    let mut out = Vec::new();
    if m.count() > 0 {
        let given = if m.approvers.is_empty() {
            "none yet".to_owned()
        } else {
            m.approvers
                .iter()
                .map(|a| format!("@{}", plain_text(a)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(format!(
            "`{branch}` requires {} approving review{} of the story PR: {} more missing (approved by {given})",
            m.required,
            if m.required == 1 { "" } else { "s" },
            m.count()
        ));
    }
    for w in &m.owners {
        let owners: Vec<String> = w.owners.iter().map(|o| plain_text(o)).collect();
        let paths: Vec<String> = w
            .paths
            .iter()
            .map(|p| format!("`{}`", plain_text(p)))
            .collect();
        out.push(format!(
            "`{branch}` requires a code owner's approval: {} for {}",
            owners.join(" or "),
            paths.join(", ")
        ));
    }
    out
}

/// GitHub refused the story PR's merge for its reviews alone: the story
/// leaves the queue and waits for an approval, said once per head on the
/// story PR with what is missing and from whom; the gate red with it.
pub(super) fn await_approvals(
    record: &StoryRecord,
    violations: &[Violation],
    facts: &ApprovalFacts,
    ctx: &ShipContext,
) -> ShipDecision {
    let m = missing(violations, facts);
    let mut lines = missing_lines(&m, ctx.default_branch);
    if lines.is_empty() {
        // GitHub refused for reviews the facts do not explain: its words.
        lines = violations
            .iter()
            .map(|v| rule_line(v, ctx.default_branch))
            .collect();
    }
    let head = record.head.clone();
    let said = match (&record.awaiting, &head) {
        (Some(w), Some(h)) => w.said && w.head == *h,
        _ => false,
    };
    let mut d = out_of_queue_keep(record, lines.clone(), "awaiting-approvals", ctx);
    if let (Some(head), Some(shipper)) = (head, record.shipped_by.clone()) {
        if !said {
            if let Some(pr) = record.pr {
                let note = awaiting_note(&lines, ctx);
                let marker = format!("awaiting-approvals head={}", head.short());
                d.effects.insert(0, comment(ctx, pr, note, marker));
            }
        }
        d.record.awaiting = Some(ApprovalWait {
            head,
            shipper,
            said: true,
        });
    }
    d.outcome = format!("ship waits for approving reviews: {}", lines.join("; "));
    d
}

fn awaiting_note(lines: &[String], ctx: &ShipContext) -> String {
    let listed: Vec<String> = lines.iter().map(|l| format!("- {l}.")).collect();
    format!(
        "**Waiting for approvals: the rules of `{}` require approving reviews of this pull request before it lands.** The story's proof passed; nothing landed, and the `{}` label was removed.\n\n{}\n\nApprove this pull request on GitHub (\"Review changes\" → \"Approve\"). taskgate ships it again as soon as an approving review arrives: no second ship is needed. taskgate never approves its own pull request.",
        plain_text(ctx.default_branch),
        plain_text(&ctx.config.ship_label),
        listed.join("\n"),
    )
}

/// An approving review of the story PR arrived: a story waiting for
/// approvals of its current head is shipped again, as the person who
/// shipped it (the shell makes that request); otherwise why not.
pub fn on_story_approved(record: &StoryRecord) -> Result<Shipper, &'static str> {
    let Some(wait) = &record.awaiting else {
        return Err("an approval of a story PR not waiting for one: nothing to do");
    };
    if record.head.as_ref() != Some(&wait.head) {
        return Err("the story moved on since its ship waited: nothing to do");
    }
    if record.state != ShipState::Shippable {
        return Err("the story is not waiting to ship: nothing to do");
    }
    Ok(wait.shipper.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codeowners_patterns_match_as_githubs_docs_say_and_the_last_match_wins() {
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
        let file = "* @global\n/src/ @alice @org/team\n# comment\n*.md @docs\n/src/unowned.rs\n";
        assert_eq!(owners_of(file, "README.md"), ["@docs"]);
        assert_eq!(owners_of(file, "src/lib.rs"), ["@alice", "@org/team"]);
        assert_eq!(owners_of(file, "Cargo.toml"), ["@global"]);
        assert!(owners_of(file, "src/unowned.rs").is_empty());
    }

    #[test]
    fn what_is_missing_counts_latest_verdicts_and_names_the_owners_of_unapproved_paths() {
        let reviews = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(l, s)| ReviewFact {
                    login: (*l).into(),
                    state: (*s).into(),
                })
                .collect()
        };
        let facts = ApprovalFacts {
            reviews: reviews(&[
                ("bob", "APPROVED"),
                ("carol", "APPROVED"),
                ("carol", "COMMENTED"),
                ("dave", "APPROVED"),
                ("dave", "DISMISSED"),
            ]),
            codeowners: Some("* @global\n/src/ @alice\n*.md @bob\n".into()),
            paths: vec!["src/a.rs".into(), "src/b.rs".into(), "README.md".into()],
            team_members: vec![],
        };
        let said = [
            Violation::Reviews(
                "At least 3 approving reviews is required by reviewers with write access.".into(),
            ),
            Violation::Reviews("Waiting on code owner review from alice.".into()),
        ];
        let m = missing(&said, &facts);
        assert_eq!(m.required, 3);
        assert_eq!(m.approvers, ["bob", "carol"]);
        assert_eq!(m.count(), 1);
        assert_eq!(
            m.owners,
            [OwnersWaited {
                owners: vec!["@alice".into()],
                paths: vec!["src/a.rs".into(), "src/b.rs".into()]
            }]
        );
        assert_eq!(
            missing_lines(&m, "main"),
            [
                "`main` requires 3 approving reviews of the story PR: 1 more missing (approved by @bob, @carol)",
                "`main` requires a code owner's approval: @alice for `src/a.rs`, `src/b.rs`"
            ]
        );
    }

    #[test]
    fn a_code_owning_team_is_approved_by_an_active_member_only() {
        let facts = |members: Vec<TeamMember>| ApprovalFacts {
            reviews: vec![
                ReviewFact {
                    login: "Mona".into(),
                    state: "APPROVED".into(),
                },
                ReviewFact {
                    login: "eve".into(),
                    state: "APPROVED".into(),
                },
            ],
            codeowners: Some("* @global\n/src/ @octo-org/Core @alice\n".into()),
            paths: vec!["src/a.rs".into(), "src/b.rs".into()],
            team_members: members,
        };
        let q = |login: &str| TeamQuestion {
            org: "octo-org".into(),
            team_slug: "Core".into(),
            login: login.into(),
        };
        // Each approver asked about once, for the one team owning a path.
        assert_eq!(team_questions(&facts(vec![])), [q("Mona"), q("eve")]);
        let said = [Violation::Reviews(
            "Waiting on code owner review from octo-org/core.".into(),
        )];
        // Nobody GitHub called a member: the team still waits.
        let m = missing(&said, &facts(vec![]));
        assert_eq!(m.owners.len(), 1, "{m:?}");
        assert_eq!(m.owners[0].owners, ["@octo-org/Core", "@alice"]);
        // A member of another team does not count either.
        let other = TeamMember {
            team: "octo-org/docs".into(),
            login: "eve".into(),
        };
        assert_eq!(missing(&said, &facts(vec![other])).owners.len(), 1);
        // An active member's approval is the team's (names compared as
        // GitHub does, without regard to case).
        let member = TeamMember {
            team: "Octo-Org/core".into(),
            login: "mona".into(),
        };
        assert!(missing(&said, &facts(vec![member])).owners.is_empty());
        assert_eq!(team_of("@octo-org/core"), Some(("octo-org", "core")));
        assert_eq!(team_of("@alice"), None);
        assert_eq!(team_of("someone@example.com"), None);
        assert_eq!(team_of("@../teams"), None);
        assert_eq!(team_of("@org/a/b"), None);
    }
}
