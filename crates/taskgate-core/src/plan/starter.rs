//! The plan `taskgate plan new "title"` writes: one story, one task, the
//! schema modeline and comments saying what each key does.
//!
//! Owns: the starter's text and its file name. Must not: write it (the CLI
//! does) or validate it (the CLI runs `check_plan` on it, as on any plan).

use crate::schema::modeline;

/// Where plan files live in a repository.
pub const STORIES_DIR: &str = ".taskgate/stories";

/// The longest id the starter makes from a title.
const MAX_SLUG: usize = 40;

/// A starter plan: its path in the repository and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    pub path: String,
    pub text: String,
}

/// `title` as an id: lower-case letters and digits, words joined by `-`
/// (`"Momentum strategy (RSI)"` → `momentum-strategy-rsi`); `story` when
/// nothing is left.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= MAX_SLUG {
            break;
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "story".into()
    } else {
        out.into()
    }
}

/// The plan for a story called `title`.
pub fn starter(title: &str) -> Starter {
    let id = slug(title);
    // A JSON string is a YAML double-quoted scalar: any title reads back.
    let quoted = serde_json::Value::String(title.trim().to_owned()).to_string();
    let text = format!(
        r#"{modeline}
# A taskgate plan: a story, its tasks, and what proves each task done.
# When this file reaches the default branch, taskgate opens the story's
# issue and one sub-issue per task. Check it before you push:
#   taskgate plan validate {STORIES_DIR}/{id}.yml
# A pull request that changes it gets a `taskgate/plan` check run saying
# what merging it would create.
story: {quoted}
tasks:
  # Each task: an id (letters, digits, `-` and `_`; it names the branch),
  # a title, a description and the tests that prove it done.
  - id: {id}
    title: {quoted}
    description: |
      What to do, in Markdown: this becomes the task issue's body.
    # Tasks (by id) that must be complete before this one is ready:
    # depends_on: [another-task]
    acceptance:
      # Commands that must pass on the task's branch, each a check run in
      # its gate (`test` unless it names one: `{{ cmd: "ruff check .", gate: lint }}`).
      tests:
        - "make test"
"#,
        modeline = modeline("plan"),
    );
    Starter {
        path: format!("{STORIES_DIR}/{id}.yml"),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RepoConfig;
    use crate::plan::{check_plan, NoFiles};

    #[test]
    fn titles_become_ids() {
        assert_eq!(slug("Momentum strategy (RSI)"), "momentum-strategy-rsi");
        assert_eq!(slug("  ¿Qué?  "), "qu");
        assert_eq!(slug("!!!"), "story");
        assert_eq!(slug(&"a".repeat(100)).len(), MAX_SLUG);
    }

    #[test]
    fn the_starter_is_a_valid_plan_with_its_modeline() {
        let s = starter("Export \"daily\" reports: CSV");
        assert_eq!(s.path, ".taskgate/stories/export-daily-reports-csv.yml");
        let report = check_plan(&s.path, &s.text, &RepoConfig::default(), &NoFiles);
        assert!(report.is_ok(), "{:?}", report.problems);
        let plan = report.plan.unwrap();
        assert_eq!(plan.story, "Export \"daily\" reports: CSV");
        assert_eq!(plan.tasks.len(), 1);
        insta::assert_snapshot!(s.text);
    }
}
