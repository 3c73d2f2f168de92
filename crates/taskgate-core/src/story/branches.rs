//! Branch names (SPEC §1): `taskgate/story-<issue>` for a story and
//! `taskgate/task-<issue>-<slug>` for a leaf task, branched from the story
//! branch. The issue number makes a name unique; the slug only helps people
//! read it, so it is reduced to what every git ref and every shell accepts:
//! lowercase ASCII letters, digits and single dashes.

use std::fmt;

use crate::ids::IssueNumber;

/// Longest slug kept, in characters.
pub const MAX_SLUG_CHARS: usize = 40;

/// The slug used when a title has no ASCII letter or digit at all.
const FALLBACK_SLUG: &str = "task";

/// One of taskgate's branch names, parsed, or a branch that is not ours.
/// [`BranchName::parse`] and [`fmt::Display`] are each other's inverse on
/// every name taskgate writes, so no other module strips `taskgate/` itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BranchName {
    /// `taskgate/story-<n>`.
    Story(IssueNumber),
    /// `taskgate/task-<n>-<slug>` (or `taskgate/task-<n>`, slug empty).
    Task { issue: IssueNumber, slug: String },
    /// `taskgate/revert-<n>`: the revert of story `n`.
    Revert(IssueNumber),
    /// `taskgate/part-<n>-<home owner>-<home name>`: a part of the story
    /// whose issue is `n` *in its home* (issue 49, `story::parts`). `home`
    /// is the name's tail as written; owners and names may hold `-`, so it
    /// is compared with [`super::parts::part_branch`], never split.
    Part { story: IssueNumber, home: String },
    /// Any other branch (`main`, a person's branch, a malformed name).
    NotOurs(String),
}

impl BranchName {
    /// Parses a branch name, with or without `refs/heads/`.
    pub fn parse(branch: &str) -> Self {
        let name = branch.strip_prefix("refs/heads/").unwrap_or(branch);
        Self::parse_ours(name).unwrap_or_else(|| Self::NotOurs(name.to_string()))
    }

    fn parse_ours(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("taskgate/")?;
        if let Some(digits) = rest.strip_prefix("story-") {
            return number(digits).map(Self::Story);
        }
        if let Some(digits) = rest.strip_prefix("revert-") {
            return number(digits).map(Self::Revert);
        }
        if let Some(rest) = rest.strip_prefix("part-") {
            let (digits, home) = rest.split_once('-')?;
            let story = number(digits)?;
            return (!home.is_empty()).then(|| Self::Part {
                story,
                home: home.to_string(),
            });
        }
        let rest = rest.strip_prefix("task-")?;
        let (digits, slug) = match rest.split_once('-') {
            Some((digits, slug)) => (digits, slug),
            None => (rest, ""),
        };
        let issue = number(digits)?;
        Some(Self::Task {
            issue,
            slug: slug.to_string(),
        })
    }

    /// The issue a story or task branch belongs to, in its repository (a
    /// part branch's number is the home's story issue: `None`).
    pub fn issue(&self) -> Option<IssueNumber> {
        match self {
            Self::Story(n) | Self::Task { issue: n, .. } => Some(*n),
            Self::Revert(_) | Self::Part { .. } | Self::NotOurs(_) => None,
        }
    }
}

impl fmt::Display for BranchName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Story(n) => write!(f, "taskgate/story-{n}"),
            Self::Task { issue, slug } if slug.is_empty() => write!(f, "taskgate/task-{issue}"),
            Self::Task { issue, slug } => write!(f, "taskgate/task-{issue}-{slug}"),
            Self::Revert(n) => write!(f, "taskgate/revert-{n}"),
            Self::Part { story, home } => write!(f, "taskgate/part-{story}-{home}"),
            Self::NotOurs(name) => f.write_str(name),
        }
    }
}

/// A non-empty run of ASCII digits that fits an issue number.
fn number(digits: &str) -> Option<IssueNumber> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(IssueNumber::new)
}

/// `taskgate/story-12`.
pub fn story_branch(story_issue: u64) -> String {
    BranchName::Story(IssueNumber::new(story_issue)).to_string()
}

/// The story issue number in a story branch name: `taskgate/story-12` → 12.
pub fn story_issue_of_branch(branch: &str) -> Option<IssueNumber> {
    match BranchName::parse(branch) {
        BranchName::Story(n) => Some(n),
        _ => None,
    }
}

/// The issue number in a task branch name: `taskgate/task-14-entry` → 14.
pub fn task_issue_of_branch(branch: &str) -> Option<IssueNumber> {
    match BranchName::parse(branch) {
        BranchName::Task { issue, .. } => Some(issue),
        _ => None,
    }
}

/// The story issue number in a revert branch name: `taskgate/revert-12`.
pub fn revert_issue_of_branch(branch: &str) -> Option<IssueNumber> {
    match BranchName::parse(branch) {
        BranchName::Revert(n) => Some(n),
        _ => None,
    }
}

/// `taskgate/task-14-entry-conditions`.
pub fn task_branch(task_issue: u64, title: &str) -> String {
    BranchName::Task {
        issue: IssueNumber::new(task_issue),
        slug: slug(title),
    }
    .to_string()
}

/// `Entry conditions (RSI > 70)!` → `entry-conditions-rsi-70`: lowercase
/// ASCII letters and digits, every other run of characters one `-`, no
/// leading or trailing `-`, at most [`MAX_SLUG_CHARS`], never empty.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if out.len() == MAX_SLUG_CHARS {
                break;
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            if out.len() + 1 >= MAX_SLUG_CHARS {
                break;
            }
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        FALLBACK_SLUG.to_string()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours() -> impl Strategy<Value = BranchName> {
        let issue = any::<u64>().prop_map(IssueNumber::new);
        prop_oneof![
            issue.clone().prop_map(BranchName::Story),
            issue.clone().prop_map(BranchName::Revert),
            (issue, "([a-z0-9]+(-[a-z0-9]+)*)?")
                .prop_map(|(issue, slug)| BranchName::Task { issue, slug }),
        ]
    }

    proptest! {
        #[test]
        fn parse_inverts_format(name in ours()) {
            prop_assert_eq!(BranchName::parse(&name.to_string()), name.clone());
            prop_assert_eq!(BranchName::parse(&format!("refs/heads/{name}")), name);
        }

        #[test]
        fn format_inverts_parse(
            branch in "(refs/heads/)?(taskgate/)?(story-|task-|revert-)?([1-9][0-9]{0,5})?[a-z-]{0,8}[a-z]"
        ) {
            let parsed = BranchName::parse(&branch);
            let bare = branch.strip_prefix("refs/heads/").unwrap_or(&branch);
            prop_assert_eq!(parsed.to_string(), bare);
        }
    }

    #[test]
    fn names_that_are_not_ours() {
        for bad in [
            "main",
            "taskgate/task-x-entry",
            "taskgate/task-",
            "taskgate/task--entry",
            "taskgate/story-",
            "taskgate/story-12-x",
            "taskgate/story-1a",
            "taskgate/revert-",
            "taskgate/revert-x",
            "taskgate/ship-3",
            "taskgate/story-99999999999999999999999",
            "feature/taskgate/story-1",
        ] {
            assert_eq!(
                BranchName::parse(bad),
                BranchName::NotOurs(bad.to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn names_that_are_ours() {
        assert_eq!(
            BranchName::parse("taskgate/story-12"),
            BranchName::Story(IssueNumber::new(12))
        );
        assert_eq!(
            BranchName::parse("refs/heads/taskgate/task-14-entry-x"),
            BranchName::Task {
                issue: IssueNumber::new(14),
                slug: "entry-x".into()
            }
        );
        assert_eq!(
            task_issue_of_branch("taskgate/task-14"),
            Some(IssueNumber::new(14))
        );
        assert_eq!(
            revert_issue_of_branch("taskgate/revert-3"),
            Some(IssueNumber::new(3))
        );
        assert_eq!(story_issue_of_branch("taskgate/task-3-x"), None);
    }

    /// `git check-ref-format`'s rules (git-check-ref-format(1)), for a full
    /// ref name such as `refs/heads/<branch>`.
    fn valid_ref(name: &str) -> bool {
        let components_ok = name
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock"));
        components_ok
            && name.contains('/')
            && !name.contains("..")
            && !name.contains("@{")
            && name != "@"
            && !name.ends_with('.')
            && !name.ends_with('/')
            && !name
                .chars()
                .any(|c| c.is_ascii_control() || c == ' ' || "~^:?*[\\".contains(c))
    }

    #[test]
    fn the_ref_rules_used_here_reject_what_git_rejects() {
        for bad in [
            "refs/heads/a..b",
            "refs/heads/a.lock",
            "refs/heads/a@{1}",
            "refs/heads/.a",
            "refs/heads/a.",
            "refs/heads/a b",
            "refs/heads/a~1",
            "refs/heads/a:b",
            "refs/heads//a",
            "refs/heads/a/",
        ] {
            assert!(!valid_ref(bad), "{bad}");
        }
        assert!(valid_ref("refs/heads/taskgate/task-1-x"));
    }

    #[test]
    fn branch_names() {
        assert_eq!(story_branch(12), "taskgate/story-12");
        assert_eq!(
            task_branch(14, "Entry conditions (RSI > 70)!"),
            "taskgate/task-14-entry-conditions-rsi-70"
        );
        assert_eq!(
            task_branch(15, "Data loading integration"),
            "taskgate/task-15-data-loading-integration"
        );
        assert_eq!(task_branch(3, "データ取得"), "taskgate/task-3-task");
        assert_eq!(task_branch(3, "--- .lock ---"), "taskgate/task-3-lock");
        assert_eq!(task_branch(4, "Café crème"), "taskgate/task-4-caf-cr-me");
    }

    #[test]
    fn slugs_are_short_collapsed_and_never_empty() {
        assert_eq!(slug("a--b  c__d"), "a-b-c-d");
        assert_eq!(slug(""), "task");
        assert_eq!(slug("@{..}"), "task");
        let long = slug(&"word ".repeat(30));
        assert!(long.len() <= MAX_SLUG_CHARS, "{long}");
        assert!(!long.ends_with('-'), "{long}");
        assert_eq!(slug(&"x".repeat(100)).len(), MAX_SLUG_CHARS);
    }

    #[test]
    fn every_generated_title_gives_a_valid_ref() {
        let alphabet: Vec<char> = "aZ9 -._/@{}~^:?*[\\\t\n.lockéü日🚀".chars().collect();
        let mut state: u64 = 11;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n
        };
        for _ in 0..5000 {
            let len = next(60);
            let title: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            let issue = next(100_000) as u64;
            for branch in [task_branch(issue, &title), story_branch(issue)] {
                assert!(
                    valid_ref(&format!("refs/heads/{branch}")),
                    "{title:?} → {branch}"
                );
            }
            let s = slug(&title);
            assert!(!s.is_empty() && s.len() <= MAX_SLUG_CHARS, "{s}");
            assert!(s
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
            assert!(
                !s.contains("--") && !s.starts_with('-') && !s.ends_with('-'),
                "{s}"
            );
        }
    }
}
