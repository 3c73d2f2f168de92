//! Branch names (SPEC §1): `taskgate/story-<issue>` for a story and
//! `taskgate/task-<issue>-<slug>` for a leaf task, branched from the story
//! branch. The issue number makes a name unique; the slug only helps people
//! read it, so it is reduced to what every git ref and every shell accepts:
//! lowercase ASCII letters, digits and single dashes.

/// Longest slug kept, in characters.
pub const MAX_SLUG_CHARS: usize = 40;

/// The slug used when a title has no ASCII letter or digit at all.
const FALLBACK_SLUG: &str = "task";

/// `taskgate/story-12`.
pub fn story_branch(story_issue: u64) -> String {
    format!("taskgate/story-{story_issue}")
}

/// The story issue number in a story branch name: `taskgate/story-12` → 12.
pub fn story_issue_of_branch(branch: &str) -> Option<crate::ids::IssueNumber> {
    let digits = branch
        .strip_prefix("refs/heads/")
        .unwrap_or(branch)
        .strip_prefix("taskgate/story-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(crate::ids::IssueNumber)
}

/// `taskgate/task-14-entry-conditions`.
pub fn task_branch(task_issue: u64, title: &str) -> String {
    format!("taskgate/task-{task_issue}-{}", slug(title))
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
